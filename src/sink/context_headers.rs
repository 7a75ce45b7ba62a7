//! Debezium 3's context headers (`kafka.context_headers`): `__debezium.context.*` on every
//! record of Debezium's shape, naming the pipeline, the connector family, the task and the
//! run. Kafka Connect's `SimpleHeaderConverter` writes Debezium's string headers as their
//! plain UTF-8 text, so the values here are the text's bytes.

use std::sync::OnceLock;

/// Header naming the pipeline (Debezium: the connector's `topic.prefix`).
pub const LOGICAL_NAME: &str = "__debezium.context.connectorLogicalName";
/// Header naming the task (sluice runs one: `0`).
pub const TASK_ID: &str = "__debezium.context.taskId";
/// Header naming the connector family (`mysql` / `mariadb`).
pub const CONNECTOR_NAME: &str = "__debezium.context.connectorName";
/// Header naming this run: random per process start.
pub const RUN_ID: &str = "__debezium.context.runId";

/// The header values of one pipeline's records, built once, borrowed per record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextHeaders {
    /// The pipeline's `name`.
    logical_name: Vec<u8>,
    /// `mysql` / `mariadb`, once the source's family is known (the first transaction
    /// names it); until then the header is left out.
    connector: Option<&'static str>,
    /// [`run_id`].
    run_id: &'static str,
}

impl ContextHeaders {
    /// The headers of pipeline `name`'s records in this process.
    pub fn new(name: &str) -> Self {
        ContextHeaders {
            logical_name: name.as_bytes().to_vec(),
            connector: None,
            run_id: run_id(),
        }
    }

    /// Records the source's family (the envelope's `source.connector` value).
    pub fn set_connector(&mut self, connector: &'static str) {
        self.connector = Some(connector);
    }

    /// The (name, value) pairs, in Debezium's order.
    pub fn pairs(&self) -> impl Iterator<Item = (&'static str, &[u8])> {
        [
            Some((LOGICAL_NAME, self.logical_name.as_slice())),
            Some((TASK_ID, b"0".as_slice())),
            self.connector.map(|c| (CONNECTOR_NAME, c.as_bytes())),
            Some((RUN_ID, self.run_id.as_bytes())),
        ]
        .into_iter()
        .flatten()
    }
}

/// This process's run id: a random UUID (version 4) text, fixed for the process's life, so
/// a restarted process (Debezium: a restarted task) is told apart from the one before.
pub fn run_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| uuid_v4_text(rand::random::<u128>()))
}

/// `bits` as a version-4, variant-1 UUID in its 8-4-4-4-12 hex text.
fn uuid_v4_text(bits: u128) -> String {
    let b = (bits & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
    let h = format!("{b:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_name_the_pipeline_task_connector_and_run() {
        let mut h = ContextHeaders::new("inventory");
        let before: Vec<_> = h.pairs().map(|(n, _)| n).collect();
        assert_eq!(before, [LOGICAL_NAME, TASK_ID, RUN_ID]);
        h.set_connector("mariadb");
        let got: Vec<(&str, String)> = h
            .pairs()
            .map(|(n, v)| (n, String::from_utf8(v.to_vec()).unwrap()))
            .collect();
        assert_eq!(got.len(), 4);
        assert_eq!(
            got[..3],
            [
                (LOGICAL_NAME, "inventory".to_string()),
                (TASK_ID, "0".to_string()),
                (CONNECTOR_NAME, "mariadb".to_string()),
            ]
        );
        assert_eq!(got[3], (RUN_ID, run_id().to_string()));
    }

    #[test]
    fn the_run_id_is_fixed_per_process_and_a_v4_uuid() {
        assert_eq!(run_id(), run_id());
        let id = run_id();
        let groups: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{id}");
        assert_eq!(&id[14..15], "4", "{id}");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
    }

    #[test]
    fn uuid_text_sets_version_and_variant_bits_only() {
        assert_eq!(uuid_v4_text(0), "00000000-0000-4000-8000-000000000000");
        assert_eq!(
            uuid_v4_text(u128::MAX),
            "ffffffff-ffff-4fff-bfff-ffffffffffff"
        );
    }
}
