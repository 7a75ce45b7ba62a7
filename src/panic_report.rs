//! What a panic prints: the thread, where, and the message with credentials removed.
//!
//! Invariant: the process's panic hook writes nothing a `redact_text` of the message would
//! not (a URL's password, the value of a `password = ...`/`token = ...` line), so a panic
//! whose message quotes a configuration line or a connection URL leaks no secret to stderr
//! or to a log collector reading it.

use crate::config::redact_text;

/// The report of a panic in `thread` at `location` with `message`.
pub fn panic_report(thread: &str, location: Option<&str>, message: &str) -> String {
    let at = location.map(|l| format!(" at {l}")).unwrap_or_default();
    format!("thread '{thread}' panicked{at}:\n{}", redact_text(message))
}

/// Replaces the default panic hook with one that prints [`panic_report`] (and the backtrace
/// when `RUST_BACKTRACE` asks for one).
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a panic without a message)".to_string());
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
        let thread = std::thread::current();
        let report = panic_report(
            thread.name().unwrap_or("<unnamed>"),
            location.as_deref(),
            &message,
        );
        let backtrace = std::backtrace::Backtrace::capture();
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            eprintln!("{report}\nstack backtrace:\n{backtrace}");
        } else {
            eprintln!("{report}\nnote: run with `RUST_BACKTRACE=1` to display a backtrace");
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_message_loses_its_credentials() {
        let r = panic_report(
            "main",
            Some("src/x.rs:1:2"),
            "cannot connect to mysql://sluice:Pa55w0rd@db:3306/shop\npassword = \"hunter2\"",
        );
        assert!(
            r.starts_with("thread 'main' panicked at src/x.rs:1:2:\n"),
            "{r}"
        );
        assert!(!r.contains("Pa55w0rd") && !r.contains("hunter2"), "{r}");
        assert!(r.contains("mysql://sluice:***@db:3306/shop"), "{r}");
        assert_eq!(
            panic_report("t", None, "index out of bounds"),
            "thread 't' panicked:\nindex out of bounds"
        );
    }
}
