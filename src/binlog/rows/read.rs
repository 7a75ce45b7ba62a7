//! Bounds-checked reads of one value's bytes from the rows data ([`fixed`], [`take`],
//! [`length_prefix`], [`be_uint`]), and the [`Problem`] a bad value is.
//!
//! Invariant: a read never indexes past the data; when too few bytes remain it returns
//! [`Problem::Truncated`] and leaves the position where it was.

/// What was wrong with one value (turned into [`RowsError`](super::RowsError) by the caller).
#[derive(Debug)]
pub(super) enum Problem {
    Truncated { need: usize, have: usize },
    Invalid(&'static str),
    Json(String),
}

impl Problem {
    pub(super) fn describe(&self) -> String {
        match self {
            Problem::Truncated { need, have } => {
                format!("value needs {need} bytes but only {have} remain")
            }
            Problem::Invalid(what) => (*what).to_owned(),
            Problem::Json(what) => format!("invalid binary JSON: {what}"),
        }
    }
}

#[inline(always)]
pub(super) fn fixed<const N: usize>(data: &[u8], pos: &mut usize) -> Result<[u8; N], Problem> {
    match data.get(*pos..).and_then(|s| s.first_chunk::<N>()) {
        Some(a) => {
            *pos += N;
            Ok(*a)
        }
        None => Err(Problem::Truncated {
            need: N,
            have: data.len().saturating_sub(*pos),
        }),
    }
}

#[inline(always)]
pub(super) fn take<'a>(data: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], Problem> {
    match data.get(*pos..).and_then(|s| s.get(..n)) {
        Some(s) => {
            *pos += n;
            Ok(s)
        }
        None => Err(Problem::Truncated {
            need: n,
            have: data.len().saturating_sub(*pos),
        }),
    }
}

/// Unsigned little-endian integer of `n` (1..=4) bytes.
#[inline(always)]
pub(super) fn length_prefix(data: &[u8], pos: &mut usize, n: u8) -> Result<usize, Problem> {
    let s = take(data, pos, usize::from(n))?;
    let v = s
        .iter()
        .rev()
        .fold(0u32, |acc, &b| (acc << 8) | u32::from(b));
    Ok(v as usize)
}

#[inline(always)]
pub(super) fn be_uint(s: &[u8]) -> u64 {
    s.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}
