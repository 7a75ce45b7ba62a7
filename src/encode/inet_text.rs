//! MariaDB's `INET6` and `INET4` as text: the stored bytes (network order; the binlog logs
//! them as `BINARY(16)` / `BINARY(4)`) printed the way the server prints them, so a consumer
//! sees what `SELECT` shows. A leaf module; pure.
//!
//! The server's IPv6 form (checked against the server by `tests/types.rs`):
//! * eight groups of lowercase hex without leading zeros, separated by `:`;
//! * the longest run of zero groups — the first of equally long runs, and also a run of
//!   one group (where RFC 5952 would keep a lone `0`) — is written as `::`;
//! * an IPv4-compatible address (the first six groups zero, the seventh not) ends in dotted
//!   quad (`::1.2.3.4`), as does an IPv4-mapped one (`::ffff:1.2.3.4`).

/// Longest text: eight groups of four hex digits and seven colons.
const MAX_TEXT: usize = 39;

/// The text of an address, kept on the stack.
#[derive(Clone, Copy)]
pub struct InetText {
    buf: [u8; MAX_TEXT],
    len: usize,
}

impl InetText {
    /// The text's bytes (ASCII).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn new() -> Self {
        Self {
            buf: [0; MAX_TEXT],
            len: 0,
        }
    }

    fn push(&mut self, b: u8) {
        // Never full: the longest form is MAX_TEXT bytes.
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn push_decimal(&mut self, n: u8) {
        if n >= 100 {
            self.push(b'0' + n / 100);
        }
        if n >= 10 {
            self.push(b'0' + n / 10 % 10);
        }
        self.push(b'0' + n % 10);
    }

    fn push_hex(&mut self, group: u16) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut started = false;
        for shift in [12u16, 8, 4, 0] {
            let digit = usize::from((group >> shift) & 0xf);
            if digit != 0 || started || shift == 0 {
                self.push(HEX[digit]);
                started = true;
            }
        }
    }

    fn push_dotted(&mut self, octets: &[u8]) {
        for (i, &o) in octets.iter().enumerate() {
            if i > 0 {
                self.push(b'.');
            }
            self.push_decimal(o);
        }
    }
}

/// The text of an `INET4` value (`a.b.c.d`), or `None` when `bytes` is not 4 bytes long.
pub fn inet4_text(bytes: &[u8]) -> Option<InetText> {
    let octets: &[u8; 4] = bytes.try_into().ok()?;
    let mut t = InetText::new();
    t.push_dotted(octets);
    Some(t)
}

/// The text of an `INET6` value, or `None` when `bytes` is not 16 bytes long.
pub fn inet6_text(bytes: &[u8]) -> Option<InetText> {
    let bytes: &[u8; 16] = bytes.try_into().ok()?;
    let mut groups = [0u16; 8];
    for (g, pair) in groups.iter_mut().zip(bytes.chunks_exact(2)) {
        *g = u16::from_be_bytes([pair[0], pair[1]]);
    }
    // The longest run of zero groups (the first of equals), as (start, length).
    let mut gap: Option<(usize, usize)> = None;
    let mut run_start = None;
    for i in 0..=8 {
        match (groups.get(i), run_start) {
            (Some(0), None) => run_start = Some(i),
            (Some(0), Some(_)) => {}
            (_, Some(start)) => {
                let len = i - start;
                if gap.is_none_or(|(_, l)| len > l) {
                    gap = Some((start, len));
                }
                run_start = None;
            }
            (_, None) => {}
        }
    }
    let mut t = InetText::new();
    let mut i = 0;
    while i < 8 {
        match gap {
            Some((start, len)) if start == i => {
                if i == 0 {
                    t.push(b':');
                }
                t.push(b':');
                i += len;
                continue;
            }
            // IPv4-compatible (six zero groups) or IPv4-mapped (five, then ffff).
            Some((0, len)) if i == 6 && (len == 6 || (len == 5 && groups[5] == 0xffff)) => {
                t.push_dotted(&bytes[12..]);
                return Some(t);
            }
            _ => {}
        }
        t.push_hex(groups[i]);
        if i < 7 {
            t.push(b':');
        }
        i += 1;
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v6(text: &str) -> String {
        let bytes = text.parse::<Ipv6Addr>().unwrap().octets();
        String::from_utf8(inet6_text(&bytes).unwrap().as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn the_longest_zero_run_is_compressed() {
        assert_eq!(v6("::"), "::");
        assert_eq!(v6("::1"), "::1");
        assert_eq!(v6("1::"), "1::");
        assert_eq!(v6("2001:db8::ff00:42:8329"), "2001:db8::ff00:42:8329");
        assert_eq!(v6("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");
        assert_eq!(v6("1:0:0:2:0:0:0:3"), "1:0:0:2::3");
        assert_eq!(
            v6("fe80:abcd:ef01:2345:6789:abcd:ef01:2345"),
            "fe80:abcd:ef01:2345:6789:abcd:ef01:2345"
        );
    }

    #[test]
    fn a_single_zero_group_is_compressed_too() {
        // The server's form (RFC 5952 would write `1:0:2:3:4:5:6:7`).
        assert_eq!(v6("1:0:2:3:4:5:6:7"), "1::2:3:4:5:6:7");
        assert_eq!(v6("1:2:3:4:5:6:7:0"), "1:2:3:4:5:6:7::");
    }

    #[test]
    fn ipv4_compatible_and_mapped_addresses_end_in_dotted_quad() {
        assert_eq!(v6("::ffff:192.168.0.1"), "::ffff:192.168.0.1");
        assert_eq!(v6("::ffff:0.0.0.0"), "::ffff:0.0.0.0");
        assert_eq!(v6("::1.2.3.4"), "::1.2.3.4");
        assert_eq!(v6("::1:0"), "::0.1.0.0");
        // Seven zero groups are not IPv4-compatible.
        assert_eq!(v6("::102"), "::102");
        // ffff elsewhere is not IPv4-mapped.
        assert_eq!(v6("::ffff:0:1.2.3.4"), "::ffff:0:102:304");
    }

    #[test]
    fn ipv4_text_is_dotted_decimal() {
        let t = |b: [u8; 4]| String::from_utf8(inet4_text(&b).unwrap().as_bytes().to_vec());
        assert_eq!(t([0, 0, 0, 0]).unwrap(), "0.0.0.0");
        assert_eq!(t([192, 168, 10, 255]).unwrap(), "192.168.10.255");
        assert_eq!(t([1, 20, 100, 9]).unwrap(), "1.20.100.9");
    }

    #[test]
    fn other_lengths_have_no_text() {
        assert!(inet6_text(&[0; 15]).is_none());
        assert!(inet6_text(&[0; 17]).is_none());
        assert!(inet4_text(&[0; 3]).is_none());
        assert!(inet4_text(&[0; 16]).is_none());
    }

    proptest! {
        /// Every address's text parses back to the same address; zero-heavy addresses are
        /// drawn often so the gap rules run.
        #[test]
        fn ipv6_text_round_trips(groups in proptest::array::uniform8(
            prop_oneof![3 => Just(0u16), 1 => Just(0xffffu16), 4 => any::<u16>()]
        )) {
            let mut bytes = [0u8; 16];
            for (pair, g) in bytes.chunks_exact_mut(2).zip(groups) {
                pair.copy_from_slice(&g.to_be_bytes());
            }
            let text = inet6_text(&bytes).unwrap();
            let text = std::str::from_utf8(text.as_bytes()).unwrap();
            prop_assert!(text.len() <= MAX_TEXT);
            prop_assert_eq!(text.parse::<Ipv6Addr>().unwrap().octets(), bytes, "{}", text);
        }

        #[test]
        fn ipv4_text_round_trips(octets in any::<[u8; 4]>()) {
            let text = inet4_text(&octets).unwrap();
            let text = std::str::from_utf8(text.as_bytes()).unwrap();
            prop_assert_eq!(text.parse::<Ipv4Addr>().unwrap().octets(), octets);
        }
    }
}
