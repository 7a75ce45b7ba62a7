//! `[logging]` of a process file: the process's log level and line format, so a process that
//! runs many pipelines is configured in one place. The command line and the environment take
//! precedence (`--log-format` / `SLUICE_LOG_FORMAT`, `SLUICE_LOG`), as for every setting they
//! override; a single pipeline file has no `[logging]` (those two are its only log settings).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Problem;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines: time, level, the pipeline's span, message, fields as key=value.
    Text,
    /// One JSON object per line with the structured fields, for log shippers.
    Json,
}

/// The process's logging (`[logging]` in a process file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoggingConfig {
    /// Levels, as `SLUICE_LOG` takes them (tracing filter directives): `"info"`,
    /// `"info,sluice::sink=debug"`, or one pipeline louder than the others with a span
    /// filter, `"info,[pipeline{pipeline=shop}]=debug"`. `SLUICE_LOG` takes precedence.
    /// Default: `"info"`.
    #[serde(default)]
    pub level: Option<String>,
    /// `"text"` or `"json"`. `--log-format` / `SLUICE_LOG_FORMAT` take precedence.
    /// Default: `"text"`.
    #[serde(default)]
    pub format: Option<LogFormat>,
}

/// Checks `[logging]`: the level must parse as filter directives.
pub(super) fn validate(l: &LoggingConfig, problems: &mut Vec<Problem>) {
    if let Some(level) = &l.level {
        if let Err(e) = tracing_subscriber::EnvFilter::builder().parse(level) {
            problems.push(Problem::new(
                "logging.level",
                format!("{level:?} ({e})"),
                "a level (error, warn, info, debug, trace) or filter directives such as \
                 \"info,sluice::sink=debug\" or \"info,[pipeline{pipeline=shop}]=debug\"",
                "write the level as SLUICE_LOG takes it",
            ));
        }
    }
}

/// The `[logging]` of the process file at `path`, read before logging starts (so before the
/// file is loaded and checked in full): `None` for a pipeline file, an unreadable file or a
/// `[logging]` that does not parse — the full load that follows reports those.
pub fn peek(path: &Path) -> Option<LoggingConfig> {
    let text = std::fs::read_to_string(path).ok()?;
    let tree: toml::Table = text.parse().ok()?;
    if !tree.contains_key("pipelines") {
        return None;
    }
    let logging = tree.get("logging")?.clone();
    let l: LoggingConfig = logging.try_into().ok()?;
    let mut problems = Vec::new();
    validate(&l, &mut problems);
    problems.is_empty().then_some(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(l: &LoggingConfig) -> Vec<Problem> {
        let mut p = Vec::new();
        validate(l, &mut p);
        p
    }

    #[test]
    fn levels_and_span_filters_are_accepted() {
        for level in [
            "info",
            "debug",
            "info,sluice::sink=debug",
            "warn,[pipeline{pipeline=shop}]=debug",
        ] {
            let l = LoggingConfig {
                level: Some(level.into()),
                format: None,
            };
            assert!(problems(&l).is_empty(), "{level}: {:?}", problems(&l));
        }
    }

    #[test]
    fn a_bad_level_names_the_setting() {
        let l = LoggingConfig {
            level: Some("sluice=loud".into()),
            format: Some(LogFormat::Json),
        };
        let p = problems(&l);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].path, "logging.level");
        assert!(p[0].found.contains("loud"), "{:?}", p[0]);
    }

    #[test]
    fn peek_reads_the_section_of_a_process_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let process = write(
            "p.toml",
            "pipelines = [\"x.toml\"]\n[logging]\nlevel = \"debug\"\nformat = \"json\"\n",
        );
        assert_eq!(
            peek(&process),
            Some(LoggingConfig {
                level: Some("debug".into()),
                format: Some(LogFormat::Json),
            })
        );
        let single = write("s.toml", "name = \"x\"\n[logging]\nlevel = \"debug\"\n");
        assert_eq!(peek(&single), None);
        let bad = write("b.toml", "pipelines = []\n[logging]\nformat = \"xml\"\n");
        assert_eq!(peek(&bad), None);
        let none = write("n.toml", "pipelines = []\n");
        assert_eq!(peek(&none), None);
        assert_eq!(peek(&dir.path().join("missing.toml")), None);
    }
}
