//! Environment-variable overrides, applied to the parsed TOML tree before it is
//! deserialized into a [`Config`](super::Config), so an override behaves exactly like the
//! same value written in the file (and is checked the same way).
//!
//! - `SLUICE_<SECTION>_<FIELD>` (upper case) for every scalar field of the top level,
//!   `[source]`, `[kafka]`, `[commit]`, `[snapshot]`, `[schema_registry]`, `[api]`, `[transaction_metadata]` and `[heartbeat]`, listed
//!   in one table (`FIELDS`, see [`known_env_vars`]); the value is parsed as an integer,
//!   number, boolean, string or comma-separated list according to the field. E.g. `SLUICE_NAME`, `SLUICE_SOURCE_URL`, `SLUICE_SOURCE_SERVER_ID`,
//!   `SLUICE_SOURCE_INCLUDE=shop\..*,crm\..*`, `SLUICE_COMMIT_MAX_MS=250`,
//!   `SLUICE_SCHEMA_REGISTRY_PASSWORD`, `SLUICE_API_TOKEN`.
//!   (Comma-separated lists cannot hold a regex containing a comma: put such a
//!   pattern in the file.)
//! - `SLUICE_KAFKA_PROPERTY_<NAME>`: librdkafka property `<name>` with `_` replaced by
//!   `.` and lower-cased, e.g. `SLUICE_KAFKA_PROPERTY_SASL_PASSWORD` → `sasl.password`.
//! - `SLUICE_KAFKA_TOPIC_CONFIG_<NAME>`: the same for `kafka.topic_config`.
//!
//! Any other variable starting with `SLUICE_` is an error naming it (a typo must not be
//! silently ignored), except those read by other parts of sluice:
//! [`ENV_READ_ELSEWHERE`] and the prefixes [`ENV_READ_ELSEWHERE_PREFIXES`].
//! Values of secret settings never appear in error messages.

use std::collections::BTreeMap;
use std::ffi::OsString;

use toml::{Table, Value};

use super::ConfigError;

/// Prefix of every sluice environment variable.
pub const ENV_PREFIX: &str = "SLUICE_";

/// `SLUICE_` variables that other parts of sluice read; the configuration ignores them.
/// Besides the binary's own (`SLUICE_LOG`, `SLUICE_LOG_FORMAT`, `SLUICE_CONFIG`,
/// `SLUICE_CACHE_DIR`), these are
/// the knobs of the development scripts (`scripts/services`, `scripts/lib`), which a
/// developer may have exported in the shell that runs sluice.
pub const ENV_READ_ELSEWHERE: &[&str] = &[
    "SLUICE_LOG",
    "SLUICE_LOG_FORMAT",
    "SLUICE_CONFIG",
    "SLUICE_CACHE_DIR",
    "SLUICE_ROOT",
    "SLUICE_LIB",
    "SLUICE_MARIADB_PORT",
    "SLUICE_MARIADB_REPLICA_PORT",
    "SLUICE_MARIADB_SCRATCH_PORT",
    "SLUICE_MYSQL_PORT",
    "SLUICE_MYSQL_REPLICA_PORT",
    "SLUICE_MYSQL_SCRATCH_PORT",
    "SLUICE_KAFKA_PORT",
    "SLUICE_KAFKA_CONTROLLER_PORT",
    "SLUICE_KAFKA_CLUSTER_PORTS",
    "SLUICE_KAFKA_CLUSTER_CONTROLLER_PORTS",
    "SLUICE_REGISTRY_PORT",
    "SLUICE_REGISTRY_MANAGEMENT_PORT",
    "SLUICE_PROMETHEUS_PORT",
];

/// Prefixes of `SLUICE_` variables that the configuration ignores (tests, benchmarks, the
/// chaos run).
pub const ENV_READ_ELSEWHERE_PREFIXES: &[&str] =
    &["SLUICE_TEST_", "SLUICE_BENCH_", "SLUICE_CHAOS_"];

/// Prefix of variables setting a librdkafka property (`kafka.properties`).
pub const ENV_KAFKA_PROPERTY_PREFIX: &str = "SLUICE_KAFKA_PROPERTY_";

/// Prefix of variables setting a topic config (`kafka.topic_config`).
pub const ENV_KAFKA_TOPIC_CONFIG_PREFIX: &str = "SLUICE_KAFKA_TOPIC_CONFIG_";

/// How an environment value is turned into a TOML value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Taken as is.
    Str,
    /// A decimal integer.
    Int,
    /// A decimal number, e.g. `60` or `2.5`.
    Float,
    /// `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`), case-insensitive.
    Bool,
    /// Comma-separated strings, each trimmed; empty items dropped.
    List,
}

/// A setting that can be overridden from the environment.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field {
    /// TOML path, e.g. `["source", "server_id"]`; the variable is `SLUICE_SOURCE_SERVER_ID`.
    pub(super) path: &'static [&'static str],
    /// How to parse the value.
    pub(super) kind: Kind,
    /// Whether the value is secret (never quoted in errors).
    pub(super) secret: bool,
}

const fn field(path: &'static [&'static str], kind: Kind) -> Field {
    Field {
        path,
        kind,
        secret: false,
    }
}

/// Every setting overridable as `SLUICE_<PATH>`. Keep in sync with the structs in
/// `mod.rs` (a test checks it).
pub(super) const FIELDS: &[Field] = &[
    field(&["name"], Kind::Str),
    field(&["delivery"], Kind::Str),
    field(&["shutdown_timeout_ms"], Kind::Int),
    Field {
        path: &["source", "url"],
        kind: Kind::Str,
        secret: true,
    },
    field(&["source", "server_id"], Kind::Int),
    field(&["source", "include"], Kind::List),
    field(&["source", "exclude"], Kind::List),
    field(&["source", "include_system_schemas"], Kind::Bool),
    field(&["source", "start"], Kind::Str),
    field(&["source", "heartbeat_ms"], Kind::Int),
    field(&["source", "connect_timeout_ms"], Kind::Int),
    field(&["source", "reconnect_backoff_min_ms"], Kind::Int),
    field(&["source", "reconnect_backoff_max_ms"], Kind::Int),
    field(&["source", "max_reconnect_attempts"], Kind::Int),
    field(&["source", "ssl_mode"], Kind::Str),
    field(&["source", "ssl_ca"], Kind::Str),
    field(&["source", "ssl_cert"], Kind::Str),
    field(&["source", "ssl_key"], Kind::Str),
    field(&["source", "max_event_bytes"], Kind::Int),
    field(&["source", "channel_max_bytes"], Kind::Int),
    field(&["source", "query_timeout_ms"], Kind::Int),
    field(&["kafka", "bootstrap_servers"], Kind::Str),
    field(&["kafka", "offsets_topic"], Kind::Str),
    field(&["kafka", "schema_changes_topic"], Kind::Str),
    field(&["kafka", "schema_history_topic"], Kind::Str),
    field(&["kafka", "dlq_topic"], Kind::Str),
    field(&["kafka", "partitions"], Kind::Int),
    field(&["kafka", "replication_factor"], Kind::Int),
    field(&["kafka", "transaction_timeout_ms"], Kind::Int),
    field(&["kafka", "max_buffer_kbytes"], Kind::Int),
    field(&["kafka", "context_headers"], Kind::Bool),
    field(&["transaction_metadata", "enabled"], Kind::Bool),
    field(&["transaction_metadata", "topic"], Kind::Str),
    field(&["transaction_metadata", "format"], Kind::Str),
    field(&["transaction_metadata", "json_schemas"], Kind::Bool),
    field(&["heartbeat", "interval_ms"], Kind::Int),
    field(&["heartbeat", "topic"], Kind::Str),
    field(&["heartbeat", "format"], Kind::Str),
    field(&["heartbeat", "json_schemas"], Kind::Bool),
    field(&["commit", "max_ms"], Kind::Int),
    field(&["commit", "max_events"], Kind::Int),
    field(&["commit", "idle_offset_ms"], Kind::Int),
    field(&["commit", "mode"], Kind::Str),
    field(&["snapshot", "chunk_size"], Kind::Int),
    field(&["snapshot", "parallelism"], Kind::Int),
    field(&["snapshot", "on_purged"], Kind::Str),
    field(&["snapshot", "max_window_changes"], Kind::Int),
    field(&["snapshot", "chunk_max_bytes"], Kind::Int),
    field(&["snapshot", "signal_table"], Kind::Str),
    field(&["schema_registry", "url"], Kind::Str),
    field(&["schema_registry", "username"], Kind::Str),
    Field {
        path: &["schema_registry", "password"],
        kind: Kind::Str,
        secret: true,
    },
    field(&["schema_registry", "ssl_ca"], Kind::Str),
    field(&["schema_registry", "ssl_cert"], Kind::Str),
    field(&["schema_registry", "ssl_key"], Kind::Str),
    field(&["schema_registry", "timeout_ms"], Kind::Int),
    field(&["schema_registry", "subject_name_strategy"], Kind::Str),
    field(&["schema_registry", "retry_backoff_max_ms"], Kind::Int),
    field(&["api", "enabled"], Kind::Bool),
    field(&["api", "listen"], Kind::Str),
    Field {
        path: &["api", "token"],
        kind: Kind::Str,
        secret: true,
    },
    field(&["api", "ready_max_lag_seconds"], Kind::Float),
    field(&["api", "token_file"], Kind::Str),
    field(&["source", "password_file"], Kind::Str),
    field(&["source", "allow_public_key_retrieval"], Kind::Bool),
    field(&["snapshot", "statement_timeout_ms"], Kind::Int),
    field(&["schema_registry", "password_file"], Kind::Str),
    field(&["api", "allowed_hosts"], Kind::List),
    field(&["api", "allowed_origins"], Kind::List),
    field(&["api", "header_timeout_ms"], Kind::Int),
    field(&["api", "request_timeout_ms"], Kind::Int),
    field(&["api", "max_connections"], Kind::Int),
    field(&["kafka", "security", "protocol"], Kind::Str),
    field(&["kafka", "security", "mechanism"], Kind::Str),
    field(&["kafka", "security", "username"], Kind::Str),
    Field {
        path: &["kafka", "security", "password"],
        kind: Kind::Str,
        secret: true,
    },
    field(&["kafka", "security", "password_file"], Kind::Str),
    field(&["kafka", "security", "ca_file"], Kind::Str),
    field(&["kafka", "security", "cert_file"], Kind::Str),
    field(&["kafka", "security", "key_file"], Kind::Str),
    Field {
        path: &["kafka", "security", "key_password"],
        kind: Kind::Str,
        secret: true,
    },
    field(&["kafka", "security", "key_password_file"], Kind::Str),
    field(&["kafka", "security", "verify_hostname"], Kind::Bool),
];

/// The variable name for a TOML path: `SLUICE_` + the path joined by `_`, upper-cased.
pub fn env_var_name(path: &[&str]) -> String {
    format!("{ENV_PREFIX}{}", path.join("_").to_ascii_uppercase())
}

/// All variable names accepted for settings, in table order (without the
/// `SLUICE_KAFKA_PROPERTY_<NAME>` / `SLUICE_KAFKA_TOPIC_CONFIG_<NAME>` families).
pub fn known_env_vars() -> Vec<String> {
    FIELDS.iter().map(|f| env_var_name(f.path)).collect()
}

/// Whether `var` is a `SLUICE_` variable read by another part of sluice.
pub fn is_read_elsewhere(var: &str) -> bool {
    ENV_READ_ELSEWHERE.contains(&var)
        || ENV_READ_ELSEWHERE_PREFIXES
            .iter()
            .any(|p| var.starts_with(p))
}

/// The process environment's `SLUICE_` variables. A `SLUICE_` variable whose name or
/// value is not UTF-8 is an error (its value is not quoted).
pub fn process_env() -> Result<Vec<(String, String)>, ConfigError> {
    collect_env(std::env::vars_os())
}

fn collect_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (key, value) in vars {
        let key = match key.into_string() {
            Ok(k) => k,
            Err(raw) => {
                let lossy = raw.to_string_lossy().into_owned();
                if lossy.starts_with(ENV_PREFIX) {
                    return Err(ConfigError::Env {
                        var: lossy,
                        message: "the variable name is not valid UTF-8; fix: rename or unset it"
                            .to_string(),
                    });
                }
                continue;
            }
        };
        if !key.starts_with(ENV_PREFIX) {
            continue;
        }
        match value.into_string() {
            Ok(v) => out.push((key, v)),
            Err(_) => {
                return Err(ConfigError::Env {
                    var: key,
                    message: "the value is not valid UTF-8; fix: set it to UTF-8 text".to_string(),
                })
            }
        }
    }
    Ok(out)
}

/// Applies every `SLUICE_` variable of `env` to the TOML tree `root`, in name order (a
/// variable given twice: the last value wins). Returns the names of the variables
/// applied.
pub(super) fn apply(
    root: &mut Table,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<String>, ConfigError> {
    let vars: BTreeMap<String, String> = env
        .into_iter()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX))
        .collect();
    let names = known_env_vars();
    let mut applied = Vec::new();
    for (var, value) in vars {
        if is_read_elsewhere(&var) {
            continue;
        }
        if let Some((field, _)) = FIELDS.iter().zip(&names).find(|(_, n)| **n == var) {
            let field = *field;
            let parsed = convert(&var, &value, field)?;
            set_path(root, field.path, parsed, &var)?;
        } else if let Some(rest) = var.strip_prefix(ENV_KAFKA_PROPERTY_PREFIX) {
            let key = map_key(&var, rest)?;
            set_map_entry(root, "properties", key, value, &var)?;
        } else if let Some(rest) = var.strip_prefix(ENV_KAFKA_TOPIC_CONFIG_PREFIX) {
            let key = map_key(&var, rest)?;
            set_map_entry(root, "topic_config", key, value, &var)?;
        } else {
            return Err(unknown_var(&var, &names));
        }
        applied.push(var);
    }
    Ok(applied)
}

fn convert(var: &str, value: &str, field: Field) -> Result<Value, ConfigError> {
    let shown = if field.secret {
        "(secret value not shown)".to_string()
    } else {
        format!("`{value}`")
    };
    match field.kind {
        Kind::Str => Ok(Value::String(value.to_string())),
        Kind::List => Ok(Value::Array(
            value
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.to_string()))
                .collect(),
        )),
        Kind::Int => value
            .trim()
            .parse::<i64>()
            .map(Value::Integer)
            .map_err(|_| ConfigError::Env {
                var: var.to_string(),
                message: format!(
                    "found {shown}; expected a decimal integer (e.g. 5000); fix: set it to a \
                     number or unset it"
                ),
            }),
        Kind::Float => value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Value::Float)
            .ok_or_else(|| ConfigError::Env {
                var: var.to_string(),
                message: format!(
                    "found {shown}; expected a decimal number (e.g. 60 or 2.5); fix: set it to \
                     a number or unset it"
                ),
            }),
        Kind::Bool => match value.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(Value::Boolean(true)),
            "false" | "0" | "no" | "off" => Ok(Value::Boolean(false)),
            _ => Err(ConfigError::Env {
                var: var.to_string(),
                message: format!(
                    "found {shown}; expected true or false; fix: set it to true or false or \
                     unset it"
                ),
            }),
        },
    }
}

fn section<'a>(root: &'a mut Table, name: &str, var: &str) -> Result<&'a mut Table, ConfigError> {
    let entry = root
        .entry(name.to_string())
        .or_insert_with(|| Value::Table(Table::new()));
    match entry {
        Value::Table(t) => Ok(t),
        other => Err(ConfigError::Env {
            var: var.to_string(),
            message: format!(
                "cannot be applied: `{name}` in the configuration file is a {}, not a table; \
                 fix: make `{name}` a [{name}] section",
                other.type_str()
            ),
        }),
    }
}

fn set_path(root: &mut Table, path: &[&str], value: Value, var: &str) -> Result<(), ConfigError> {
    let Some((leaf, parents)) = path.split_last() else {
        return Ok(());
    };
    let mut table = root;
    for p in parents {
        table = section(table, p, var)?;
    }
    table.insert((*leaf).to_string(), value);
    Ok(())
}

fn map_key(var: &str, rest: &str) -> Result<String, ConfigError> {
    let key = rest.replace('_', ".").to_ascii_lowercase();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(ConfigError::Env {
            var: var.to_string(),
            message: "found an empty or malformed name after the prefix; expected e.g. \
                      SLUICE_KAFKA_PROPERTY_SASL_MECHANISM for sasl.mechanism; fix: correct \
                      the name or unset it"
                .to_string(),
        });
    }
    Ok(key)
}

/// Sets `kafka.<map>.<key>`, first flattening the map's dotted-key sub-tables so the
/// variable replaces a value written either as `"a.b" = ..` or as `a.b = ..`.
fn set_map_entry(
    root: &mut Table,
    map: &str,
    key: String,
    value: String,
    var: &str,
) -> Result<(), ConfigError> {
    let kafka = section(root, "kafka", var)?;
    let current = section(kafka, map, var)?;
    let mut flat = Table::new();
    flatten_tree(map, "", current, &mut flat)?;
    flat.insert(key, Value::String(value));
    *current = flat;
    Ok(())
}

fn flatten_tree(
    map: &str,
    prefix: &str,
    table: &Table,
    out: &mut Table,
) -> Result<(), ConfigError> {
    for (k, v) in table {
        let full = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Table(inner) => flatten_tree(map, &full, inner, out)?,
            other => {
                if out.insert(full.clone(), other.clone()).is_some() {
                    return Err(ConfigError::Toml {
                        message: format!(
                            "kafka.{map}: `{full}` is given twice (once as a quoted key, once \
                             as a dotted key); fix: keep one"
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

fn unknown_var(var: &str, names: &[String]) -> ConfigError {
    let suggestion = names
        .iter()
        .map(|n| (edit_distance(var, n), n))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, n)| format!(" (did you mean {n}?)"))
        .unwrap_or_default();
    let property_hint = if var.starts_with("SLUICE_KAFKA_PROP") || var.contains("PROPERTIES") {
        " (librdkafka properties use SLUICE_KAFKA_PROPERTY_<NAME>)"
    } else {
        ""
    };
    ConfigError::Env {
        var: var.to_string(),
        message: format!(
            "found a SLUICE_ variable that is not a known setting{suggestion}{property_hint}; \
             expected one of {}, {ENV_KAFKA_PROPERTY_PREFIX}<NAME> (librdkafka property, `_` for \
             `.`), {ENV_KAFKA_TOPIC_CONFIG_PREFIX}<NAME>, or one read elsewhere ({}, {}); fix: \
             correct the name or unset it",
            names.join(", "),
            ENV_READ_ELSEWHERE.join(", "),
            ENV_READ_ELSEWHERE_PREFIXES
                .iter()
                .map(|p| format!("{p}*"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    }
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (pair, cb) in prev.windows(2).zip(&b) {
            if let [diag, up] = pair {
                let left = cur.last().copied().unwrap_or(0);
                let sub = diag + usize::from(ca != *cb);
                cur.push(sub.min(up + 1).min(left + 1));
            }
        }
        prev = cur;
    }
    prev.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_paths() {
        assert_eq!(
            env_var_name(&["source", "server_id"]),
            "SLUICE_SOURCE_SERVER_ID"
        );
        assert_eq!(env_var_name(&["name"]), "SLUICE_NAME");
        assert!(known_env_vars().contains(&"SLUICE_COMMIT_MAX_EVENTS".to_string()));
    }

    #[test]
    fn distance() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_sluice_value_is_an_error_without_the_value() {
        use std::os::unix::ffi::OsStringExt;
        let vars = vec![
            (OsString::from("PATH"), OsString::from_vec(vec![0xff])),
            (OsString::from("SLUICE_NAME"), OsString::from("x")),
        ];
        assert_eq!(
            collect_env(vars).unwrap(),
            vec![("SLUICE_NAME".to_string(), "x".to_string())]
        );
        let vars = vec![(
            OsString::from("SLUICE_SOURCE_URL"),
            OsString::from_vec(vec![0xff]),
        )];
        let err = collect_env(vars).unwrap_err().to_string();
        assert!(
            err.contains("SLUICE_SOURCE_URL") && err.contains("UTF-8"),
            "{err}"
        );
    }
}
