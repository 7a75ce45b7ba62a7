//! `shutdown_timeout_ms`: how long `sluice run` may take to stop after SIGTERM/SIGINT.
//!
//! A top-level setting rather than one of `[kafka]`: it bounds the whole process's exit (the
//! source stopping, the sink finishing or giving up on its Kafka transaction, the API
//! draining), not one Kafka call; a stuck commit is only the likeliest thing to wait on.
//! See `crate::shutdown` for how the time is split and why giving up is safe.

use super::Problem;

/// The default `shutdown_timeout_ms`: 30 s. A process manager that sends SIGKILL a fixed
/// time after SIGTERM (Kubernetes' `terminationGracePeriodSeconds`, 30 s by default;
/// systemd's `TimeoutStopSec`) should get a setting below its own grace, so that sluice's
/// bound and exit code come first (a SIGKILL is safe too, only less informative).
pub const DEFAULT_SHUTDOWN_TIMEOUT_MS: u64 = 30_000;

/// The smallest `shutdown_timeout_ms` accepted.
pub const MIN_SHUTDOWN_TIMEOUT_MS: u64 = 1_000;

/// The largest `shutdown_timeout_ms` accepted (1 hour).
pub const MAX_SHUTDOWN_TIMEOUT_MS: u64 = 3_600_000;

pub(super) fn default_shutdown_timeout_ms() -> u64 {
    DEFAULT_SHUTDOWN_TIMEOUT_MS
}

/// Checks `shutdown_timeout_ms` (its value `v`).
pub(super) fn validate(v: u64, problems: &mut Vec<Problem>) {
    if !(MIN_SHUTDOWN_TIMEOUT_MS..=MAX_SHUTDOWN_TIMEOUT_MS).contains(&v) {
        problems.push(Problem::new(
            "shutdown_timeout_ms",
            v.to_string(),
            format!("milliseconds between {MIN_SHUTDOWN_TIMEOUT_MS} and {MAX_SHUTDOWN_TIMEOUT_MS}"),
            "set shutdown_timeout_ms (or SLUICE_SHUTDOWN_TIMEOUT_MS), e.g. 30000 (the default); \
             keep it below the time your process manager waits before SIGKILL",
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::Config;
    use super::*;

    const MINIMAL: &str = r#"
name = "shop"
[source]
url = "mysql://sluice:sluice@127.0.0.1:3306"
server_id = 5401
[kafka]
bootstrap_servers = "127.0.0.1:9092"
"#;

    fn parse(text: &str, env: &[(&str, &str)]) -> Result<Config, super::super::ConfigError> {
        Config::from_str_with_env(
            text,
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn defaults_to_thirty_seconds() {
        let c = parse(MINIMAL, &[]).unwrap();
        assert_eq!(c.shutdown_timeout_ms, DEFAULT_SHUTDOWN_TIMEOUT_MS);
        assert_eq!(c.shutdown_timeout(), Duration::from_secs(30));
    }

    #[test]
    fn is_read_from_the_top_level_and_the_environment() {
        let text = format!("shutdown_timeout_ms = 5000\n{MINIMAL}");
        assert_eq!(parse(&text, &[]).unwrap().shutdown_timeout_ms, 5000);
        let c = parse(&text, &[("SLUICE_SHUTDOWN_TIMEOUT_MS", "12000")]).unwrap();
        assert_eq!(c.shutdown_timeout_ms, 12_000);
        let e = parse(MINIMAL, &[("SLUICE_SHUTDOWN_TIMEOUT_MS", "soon")]).unwrap_err();
        assert!(e.to_string().contains("SLUICE_SHUTDOWN_TIMEOUT_MS"), "{e}");
    }

    #[test]
    fn is_not_a_kafka_setting() {
        let text = MINIMAL.replace(
            "bootstrap_servers = \"127.0.0.1:9092\"",
            "bootstrap_servers = \"127.0.0.1:9092\"\nshutdown_timeout_ms = 5000",
        );
        let e = parse(&text, &[]).unwrap_err().to_string();
        assert!(e.contains("shutdown_timeout_ms"), "{e}");
    }

    #[test]
    fn out_of_range_values_name_the_setting_and_the_range() {
        for bad in ["0", "999", "3600001"] {
            let text = format!("shutdown_timeout_ms = {bad}\n{MINIMAL}");
            let e = parse(&text, &[]).unwrap_err();
            let p = e
                .problems()
                .iter()
                .find(|p| p.path == "shutdown_timeout_ms")
                .unwrap_or_else(|| panic!("{bad}: {e}"));
            assert_eq!(p.found, bad);
            assert!(p.expected.contains("1000") && p.expected.contains("3600000"));
            assert!(p.fix.contains("SLUICE_SHUTDOWN_TIMEOUT_MS"));
        }
        for good in ["1000", "3600000"] {
            let text = format!("shutdown_timeout_ms = {good}\n{MINIMAL}");
            assert!(parse(&text, &[]).is_ok(), "{good}");
        }
    }
}
