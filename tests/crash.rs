//! The exactly-once proof: a workload of per-key sequence numbers runs while sluice is killed
//! with SIGKILL at random moments and restarted; an independent `read_committed` consumer then
//! checks that every change arrived exactly once and in order per key (the scenario is
//! `support::crash`, which the security tests run over SASL_SSL and mutual TLS too).
//!
//! Sizes: SLUICE_TEST_CRASH_CHANGES (default 100000), SLUICE_TEST_CRASH_KILLS (default 20); on
//! MariaDB 11.8 (the third server, to keep CI's time) SLUICE_TEST_CRASH_CHANGES_11 (default
//! 25000) and SLUICE_TEST_CRASH_KILLS_11 (default 6).

mod support;

use support::*;

async fn sigkill_at_random_moments_loses_and_duplicates_nothing(flavor: Flavor) {
    let (changes, kills) = if flavor.mariadb11 {
        (
            env_usize("SLUICE_TEST_CRASH_CHANGES_11", 25_000),
            env_usize("SLUICE_TEST_CRASH_KILLS_11", 6),
        )
    } else {
        (
            env_usize("SLUICE_TEST_CRASH_CHANGES", 100_000),
            env_usize("SLUICE_TEST_CRASH_KILLS", 20),
        )
    };
    let p = Pipeline::new(flavor, "crash", "");
    crash::sigkill_at_random_moments(&p, changes, kills).await;
}

per_flavor!(all: sigkill_at_random_moments_loses_and_duplicates_nothing);
