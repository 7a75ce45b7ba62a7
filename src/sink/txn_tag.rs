//! The header that names the pipeline transaction of every record sluice writes, and its
//! parser: how the records Kafka leaves without a transaction marker are told apart
//! ([`super::unmarked`]). Pure data, no I/O.

/// The header naming the pipeline transaction attempt a record belongs to:
/// `<pipeline>:<txn>/<attempt>` (`<attempt>`: 16 hex digits, new for every Kafka transaction
/// begun, so the records of an attempt that was aborted are never taken for those of the
/// attempt of the same `txn` that committed); `<pipeline>:<txn>` in records of versions
/// before attempts; `<pipeline>:claim` on claim records.
pub const TXN_HEADER: &str = "sluice.txn";

/// What a [`TXN_HEADER`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// The pipeline that wrote the record.
    pub pipeline: String,
    /// Its pipeline transaction; `None` on a claim record.
    pub txn: Option<u64>,
    /// The attempt of that transaction; `None` on a claim record and in records of versions
    /// before attempts.
    pub attempt: Option<u64>,
}

/// A new attempt id: random, so two attempts of one pipeline transaction (in one process or
/// in two) differ.
pub fn new_attempt() -> u64 {
    rand::random::<u64>()
}

/// An attempt id as the offset record and the header write it.
pub fn attempt_text(attempt: u64) -> String {
    format!("{attempt:016x}")
}

/// Parses [`attempt_text`]'s form.
pub fn parse_attempt(text: &str) -> Option<u64> {
    if text.len() != 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(text, 16).ok()
}

impl Tag {
    /// The header value of the records of attempt `attempt` of pipeline transaction `txn`.
    pub fn txn_value(pipeline: &str, txn: u64, attempt: u64) -> Vec<u8> {
        format!("{pipeline}:{txn}/{}", attempt_text(attempt)).into_bytes()
    }

    /// The header value of a claim record.
    pub fn claim_value(pipeline: &str) -> Vec<u8> {
        format!("{pipeline}:claim").into_bytes()
    }

    /// The header value this tag was parsed from.
    pub fn value(&self) -> Vec<u8> {
        match (self.txn, self.attempt) {
            (Some(t), Some(a)) => Tag::txn_value(&self.pipeline, t, a),
            (Some(t), None) => format!("{}:{t}", self.pipeline).into_bytes(),
            (None, _) => Tag::claim_value(&self.pipeline),
        }
    }

    /// Parses a header value; `None` for anything not written by [`Tag::txn_value`],
    /// [`Tag::claim_value`] or an older version's `<pipeline>:<txn>`.
    pub fn parse(value: &[u8]) -> Option<Tag> {
        let text = std::str::from_utf8(value).ok()?;
        let (pipeline, rest) = text.rsplit_once(':')?;
        if pipeline.is_empty() {
            return None;
        }
        let digits = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
        let (txn, attempt) = match rest.split_once('/') {
            _ if rest == "claim" => (None, None),
            None if digits(rest) => (Some(rest.parse().ok()?), None),
            Some((n, a)) if digits(n) => (Some(n.parse().ok()?), Some(parse_attempt(a)?)),
            _ => return None,
        };
        Some(Tag {
            pipeline: pipeline.to_string(),
            txn,
            attempt,
        })
    }
}
