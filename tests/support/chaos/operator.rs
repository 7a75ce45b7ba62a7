//! The operator of a chaos run: follows sluice's log and does what its errors tell a person to
//! do, where that is part of the documented procedure. Today one thing: a transaction Kafka
//! left open on a partition sluice writes to (see `src/sink/hanging.rs`) is aborted with
//! Kafka's own `TransactionsCommand abort`, the command the error names. Every action is
//! counted and reported, so a run shows how often the operator was needed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One abort the operator ran.
#[derive(Debug, Clone)]
pub struct Abort {
    /// `topic/partition@offset`.
    pub what: String,
    /// Whether Kafka's tool reported success.
    pub ok: bool,
}

/// A running operator; stops when dropped.
pub struct Operator {
    stop: Arc<AtomicBool>,
    done: Arc<Mutex<Vec<Abort>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// `(topic, partition, start offset)` of every abort command named in `text`.
pub fn abort_commands(text: &str) -> BTreeSet<(String, i32, i64)> {
    let mut out = BTreeSet::new();
    for piece in text.split("abort --topic ").skip(1) {
        let mut words = piece.split_whitespace();
        let topic = words.next().unwrap_or_default().to_string();
        let (Some("--partition"), Some(p), Some("--start-offset"), Some(o)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            continue;
        };
        let o = o.trim_end_matches(|c: char| !c.is_ascii_digit());
        if let (Ok(p), Ok(o)) = (p.parse(), o.parse()) {
            out.insert((topic, p, o));
        }
    }
    out
}

fn kafka_run_class() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lib/kafka-run-class")
}

impl Operator {
    /// Follows `log`; aborts through the broker at `bootstrap` (not through a fault proxy).
    pub fn start(log: &Path, bootstrap: &str) -> Operator {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(Mutex::new(Vec::new()));
        let (log, bootstrap) = (log.to_path_buf(), bootstrap.to_string());
        let thread = {
            let (stop, done) = (stop.clone(), done.clone());
            std::thread::spawn(move || {
                let mut handled = BTreeSet::new();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(500));
                    let text = std::fs::read_to_string(&log).unwrap_or_default();
                    for cmd in abort_commands(&text) {
                        if !handled.insert(cmd.clone()) {
                            continue;
                        }
                        let (topic, p, o) = cmd;
                        let ok = Command::new(kafka_run_class())
                            .args([
                                "org.apache.kafka.tools.TransactionsCommand",
                                "--bootstrap-server",
                                &bootstrap,
                                "abort",
                                "--topic",
                                &topic,
                                "--partition",
                                &p.to_string(),
                                "--start-offset",
                                &o.to_string(),
                            ])
                            .output()
                            .map(|o| o.status.success())
                            .unwrap_or(false);
                        let what = format!("{topic}/{p}@{o}");
                        eprintln!("operator: aborted the hanging transaction at {what}: ok={ok}");
                        done.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(Abort { what, ok });
                    }
                }
            })
        };
        Operator {
            stop,
            done,
            thread: Some(thread),
        }
    }

    /// The aborts so far.
    pub fn aborts(&self) -> Vec<Abort> {
        self.done.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abort_commands_are_read_from_the_advice() {
        let line = "… abort it with `kafka-transactions.sh --bootstrap-server b:1 abort --topic \
                    db.ledger --partition 1 --start-offset 1210`; `x` partition 0 … abort \
                    --topic x --partition 0 --start-offset 7`. A transaction";
        let got = abort_commands(line);
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            vec![("db.ledger".to_string(), 1, 1210), ("x".to_string(), 0, 7)]
        );
        assert!(abort_commands("abort --topic t --partition x --start-offset 1").is_empty());
    }
}
