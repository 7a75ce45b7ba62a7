//! Entry points for the fuzz targets (`fuzz/`, run by `scripts/fuzz`): each hands untrusted
//! bytes to one parser exactly as the pipeline does and returns what it made, so that a target
//! can check the parser's invariants on it. Not part of sluice's API; nothing else uses it.
//!
//! Every function here is total: whatever the bytes, it returns (an error is a value, never a
//! panic) and allocates no more than the input and the limits it is given allow.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use crate::binlog::json_diff;
use crate::binlog::payload::{parse_payload_header, PayloadReader};
use crate::binlog::rows::{jsonb_to_json, parse_rows_event, RowDecoder, RowImage};
use crate::binlog::table_map::RawTableMap;
use crate::binlog::verify::EventDecoder;
use crate::capture::{Assembler, SkipSet, Tracker};
use crate::config::{Config, ConfigError, Router};
use crate::model::flavor::Flavor;
use crate::pipeline::Change;
use crate::position::GtidSet;
use crate::schema::{ServerFlavor, TableSchema};

/// The pipeline the binlog target assembles for: every table of `db` included.
const ROUTER_CONFIG: &str = r#"
name = "fuzz"
[source]
url = "mysql://u:p@127.0.0.1:3306"
server_id = 5401
include = ["db\\..*"]
[kafka]
bootstrap_servers = "127.0.0.1:9092"
"#;

/// What [`binlog_stream`] saw.
#[derive(Debug, Default)]
pub struct StreamOutcome {
    /// Events that passed [`EventDecoder::decode`].
    pub decoded: usize,
    /// Events the assembler accepted.
    pub accepted: usize,
    /// Changes the assembler emitted.
    pub changes: usize,
}

/// Raw events of one replication connection (each a dump packet without its leading 0x00)
/// checked and decoded by [`EventDecoder`], then assembled into changes by the capture
/// stage's assembler for a server of `flavor`, which caps decompressed data at
/// `max_event_bytes`. The first error ends the stream, as it ends an attempt.
pub fn binlog_stream(flavor: Flavor, events: &[&[u8]], max_event_bytes: u64) -> StreamOutcome {
    // Built once: compiling the routes' patterns would take most of each run.
    static ROUTER: OnceLock<Arc<Router>> = OnceLock::new();
    let router = ROUTER
        .get_or_init(|| {
            Config::from_str_with_env(ROUTER_CONFIG, Vec::new())
                .and_then(|c| c.router())
                .map(Arc::new)
                .expect("the fixed configuration is valid")
        })
        .clone();
    let tracker = Tracker {
        file: "binlog.000001".into(),
        pos: 4,
        mysql: (flavor == Flavor::MySql).then(GtidSet::new),
        mariadb: None,
        xa_prepared: BTreeMap::new(),
    };
    let mut asm = Assembler::new(flavor, router, tracker, SkipSet::default());
    asm.set_max_event_bytes(max_event_bytes);
    let mut dec = EventDecoder::new();
    let mut seen = StreamOutcome::default();
    let mut out: Vec<Change> = Vec::new();
    for raw in events {
        let Ok(ev) = dec.decode(raw) else { break };
        seen.decoded += 1;
        if asm.on_event(&ev, &mut out).is_err() {
            break;
        }
        seen.accepted += 1;
        seen.changes += out.len();
        out.clear();
    }
    seen
}

/// A rows event decoded as the assembler decodes it: the TABLE_MAP body `table_map` (6-byte
/// table ids) gives the schema (read as `flavor`) and the decoder's plan; the rows event of
/// type `event_type` with body `rows` (checksum removed) is split under `post_header_len` and
/// decoded. Returns the schema's column count with the images.
pub fn rows_event(
    table_map: &[u8],
    flavor: ServerFlavor,
    event_type: u8,
    post_header_len: u8,
    rows: &[u8],
) -> Result<(usize, Vec<RowImage>), String> {
    let raw = RawTableMap::parse(table_map, 6).map_err(|e| e.to_string())?;
    let schema = Arc::new(TableSchema::from_raw(&raw, flavor).map_err(|e| e.to_string())?);
    let columns = schema.columns.len();
    let decoder = RowDecoder::from_raw(schema, &raw).map_err(|e| e.to_string())?;
    let hdr = parse_rows_event(event_type, post_header_len, rows).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    decoder.decode(&hdr, &mut out).map_err(|e| e.to_string())?;
    Ok((columns, out))
}

/// A binary JSON document rendered both ways sluice renders one: the full-image renderer
/// ([`jsonb_to_json`]) and the tree the partial-update path edits, rendered. Both must agree.
pub fn jsonb(doc: &[u8]) -> (Result<String, String>, Result<String, String>) {
    let direct = jsonb_to_json(doc);
    let tree = json_diff::jsonb_to_node(doc).and_then(|node| {
        let mut out = Vec::new();
        json_diff::render_node(&node, &mut out);
        String::from_utf8(out).map_err(|e| e.to_string())
    });
    (direct, tree)
}

/// A partial JSON update: the diff list `diffs` (the bytes after its 4-byte length) applied to
/// the before image's binary document `before`, rendered.
pub fn json_partial_update(before: &[u8], diffs: &[u8]) -> Result<String, String> {
    json_diff::rebuild(before, diffs).map_err(|e| format!("{e:?}"))
}

/// What [`transaction_payload`] read.
#[derive(Debug, Default)]
pub struct PayloadOutcome {
    /// The header's uncompressed size, when the header parsed.
    pub uncompressed_size: Option<u64>,
    /// The size of every inner event handed out, in order.
    pub inner_sizes: Vec<u64>,
    /// Whether the reader reached the end without an error.
    pub complete: bool,
}

/// A TRANSACTION_PAYLOAD event with body `body` (as read from a MySQL 8.0 binlog, checksum
/// off) opened and read to its end, one inner event at a time, with inner events over
/// `max_event_bytes` refused.
pub fn transaction_payload(body: &[u8], max_event_bytes: u64) -> PayloadOutcome {
    use mysql_common::binlog::consts::BinlogVersion;
    use mysql_common::binlog::events::{Event, FormatDescriptionEvent};

    let mut seen = PayloadOutcome {
        uncompressed_size: parse_payload_header(body).ok().map(|h| h.uncompressed_size),
        ..PayloadOutcome::default()
    };
    let Ok(size) = u32::try_from(body.len() + 19) else {
        return seen;
    };
    let mut raw = Vec::with_capacity(body.len() + 19);
    raw.extend_from_slice(&0u32.to_le_bytes());
    raw.push(crate::binlog::events::types::TRANSACTION_PAYLOAD);
    raw.extend_from_slice(&1u32.to_le_bytes());
    raw.extend_from_slice(&size.to_le_bytes());
    raw.extend_from_slice(&size.to_le_bytes());
    raw.extend_from_slice(&0u16.to_le_bytes());
    raw.extend_from_slice(body);
    let fde = FormatDescriptionEvent::new(BinlogVersion::Version4);
    let Ok(ev) = Event::read(&fde, &raw[..]) else {
        return seen;
    };
    let Ok(mut rd) = PayloadReader::open(&ev, "binlog.000001:4".into(), max_event_bytes) else {
        return seen;
    };
    loop {
        match rd.next_event() {
            Ok(Some(inner)) => seen
                .inner_sizes
                .push(u64::from(inner.header().event_size())),
            Ok(None) => {
                seen.complete = true;
                return seen;
            }
            Err(_) => return seen,
        }
    }
}

/// A configuration file's text with environment variables, loaded as `sluice run` loads it.
pub fn config(text: &str, env: Vec<(String, String)>) -> Result<Config, ConfigError> {
    Config::from_str_with_env(text, env)
}

/// The router of a loaded configuration: a configuration that loads must route.
pub fn router(config: &Config) -> Result<Router, ConfigError> {
    config.router()
}
