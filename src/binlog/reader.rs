//! [`Reader`], the bounds-checked little-endian byte reader that the table-map parser and the
//! row decoder read with.
//!
//! Invariant: no read goes past the end of the data and none panics; a short input is an `Err`
//! naming the offset and what was missing.

/// A bounds-checked little-endian byte reader; every method returns `Err` instead
/// of panicking on short input.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Reads from the start of `data`.
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    /// Current offset from the start.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// True when nothing is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread rest.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }

    /// Takes `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| {
                format!(
                    "needs {n} bytes at offset {}, only {} left",
                    self.pos,
                    self.remaining()
                )
            })?;
        let s = self.data.get(self.pos..end).unwrap_or(&[]);
        self.pos = end;
        Ok(s)
    }

    /// Skips `n` bytes.
    pub(crate) fn skip(&mut self, n: usize) -> Result<(), String> {
        self.take(n).map(|_| ())
    }

    /// Reads one byte.
    pub(crate) fn u8(&mut self) -> Result<u8, String> {
        self.take(1).map(|s| s.first().copied().unwrap_or(0))
    }

    /// Reads an unsigned little-endian integer of `n` (≤ 8) bytes.
    pub(crate) fn uint_le(&mut self, n: usize) -> Result<u64, String> {
        let s = self.take(n.min(8))?;
        Ok(s.iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// Reads a length-encoded integer (MySQL `net_field_length`).
    pub(crate) fn lenenc(&mut self) -> Result<u64, String> {
        match self.u8()? {
            x @ 0..=250 => Ok(u64::from(x)),
            0xfc => self.uint_le(2),
            0xfd => self.uint_le(3),
            0xfe => self.uint_le(8),
            x => Err(format!("invalid length-encoded integer prefix {x:#04x}")),
        }
    }

    /// Reads a length-encoded integer that must fit in `usize`.
    pub(crate) fn lenenc_usize(&mut self) -> Result<usize, String> {
        let x = self.lenenc()?;
        usize::try_from(x).map_err(|_| format!("length {x} too large"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::table_map_builder::put_lenenc;

    #[test]
    fn reader_lenenc() {
        let mut v = Vec::new();
        for x in [0u64, 250, 251, 65535, 65536, 1 << 24, u64::MAX] {
            put_lenenc(&mut v, x);
        }
        let mut r = Reader::new(&v);
        for x in [0u64, 250, 251, 65535, 65536, 1 << 24, u64::MAX] {
            assert_eq!(r.lenenc().unwrap(), x);
        }
        assert!(r.lenenc().is_err());
        assert!(Reader::new(&[0xfb]).lenenc().is_err());
    }
}
