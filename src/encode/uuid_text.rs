//! MariaDB's `UUID` as text: the 16 stored bytes (MariaDB keeps them in the order of the
//! text's hex digits, so `CAST(u AS BINARY(16))` and the binlog give the same bytes) as the
//! lowercase `8-4-4-4-12` form MariaDB prints and Debezium writes (`io.debezium.data.Uuid`).
//! A leaf module; pure.

/// The text of a stored UUID, or `None` when `bytes` is not 16 bytes long.
pub fn uuid_text(bytes: &[u8]) -> Option<[u8; 36]> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes: &[u8; 16] = bytes.try_into().ok()?;
    let mut out = [b'-'; 36];
    let mut at = 0;
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            at += 1;
        }
        out[at] = HEX[usize::from(b >> 4)];
        out[at + 1] = HEX[usize::from(b & 0xf)];
        at += 2;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(b: &[u8]) -> Option<String> {
        uuid_text(b).map(|t| String::from_utf8(t.to_vec()).unwrap())
    }

    #[test]
    fn the_stored_bytes_print_in_order() {
        let b = [
            0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17,
            0x40, 0x00,
        ];
        assert_eq!(
            text(&b).as_deref(),
            Some("123e4567-e89b-12d3-a456-426614174000")
        );
        assert_eq!(
            text(&[0; 16]).as_deref(),
            Some("00000000-0000-0000-0000-000000000000")
        );
        assert_eq!(
            text(&[0xff; 16]).as_deref(),
            Some("ffffffff-ffff-ffff-ffff-ffffffffffff")
        );
    }

    #[test]
    fn other_lengths_have_no_text() {
        assert_eq!(text(&[]), None);
        assert_eq!(text(&[0; 15]), None);
        assert_eq!(text(&[0; 17]), None);
    }

    proptest! {
        #[test]
        fn the_text_parses_back_to_the_bytes(b in proptest::array::uniform16(any::<u8>())) {
            let t = text(&b).unwrap();
            let hex: String = t.chars().filter(|c| *c != '-').collect();
            let back: Vec<u8> = (0..16)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            prop_assert_eq!(back, b.to_vec());
            prop_assert_eq!(
                t.split('-').map(str::len).collect::<Vec<_>>(),
                vec![8, 4, 4, 4, 12]
            );
        }
    }
}
