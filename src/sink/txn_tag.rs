//! The header that names the pipeline transaction of every record sluice writes, and its
//! parser: how the records Kafka leaves without a transaction marker are told apart
//! ([`super::unmarked`]). Pure data, no I/O.

/// The header naming the pipeline transaction a record belongs to: `<pipeline>:<txn>`
/// (`<pipeline>:claim` on claim records).
pub const TXN_HEADER: &str = "sluice.txn";

/// What a [`TXN_HEADER`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// The pipeline that wrote the record.
    pub pipeline: String,
    /// Its pipeline transaction; `None` on a claim record.
    pub txn: Option<u64>,
}

impl Tag {
    /// The header value of the records of pipeline transaction `txn`.
    pub fn txn_value(pipeline: &str, txn: u64) -> Vec<u8> {
        format!("{pipeline}:{txn}").into_bytes()
    }

    /// The header value of a claim record.
    pub fn claim_value(pipeline: &str) -> Vec<u8> {
        format!("{pipeline}:claim").into_bytes()
    }

    /// Parses a header value; `None` for anything not written by [`Tag::txn_value`] or
    /// [`Tag::claim_value`].
    pub fn parse(value: &[u8]) -> Option<Tag> {
        let text = std::str::from_utf8(value).ok()?;
        let (pipeline, rest) = text.rsplit_once(':')?;
        if pipeline.is_empty() {
            return None;
        }
        let txn = match rest {
            "claim" => None,
            n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Some(n.parse().ok()?),
            _ => return None,
        };
        Some(Tag {
            pipeline: pipeline.to_string(),
            txn,
        })
    }
}
