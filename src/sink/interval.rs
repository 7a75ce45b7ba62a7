//! Where `commit.max_ms` of the open transaction counts from. Pure bookkeeping of instants.
//!
//! `commit.max_ms` bounds how long a change waits in an open transaction before the commit
//! that makes it visible starts. The sink takes changes off the channel only between
//! commits, so a change that arrived while a commit (and the check of its markers) ran is
//! taken when that commit ends, and counting from then added the whole commit to its wait
//! (measured: the next commit came `max_ms` plus one commit's time after it, and the p99
//! latency at half load was two commits above `max_ms`). When a change is already waiting
//! as a commit ends, the next transaction's interval counts from that commit's *start*
//! instead: the change came in after it (the sink had taken everything before), or earlier
//! when the sink is behind, where an earlier commit is right too. A change that arrives
//! while the sink idles starts the interval itself, as before.

use std::time::{Duration, Instant};

/// The commit interval's start, carried from one commit to the next transaction.
#[derive(Debug)]
pub struct CommitInterval {
    /// The open transaction's interval start.
    from: Instant,
    /// The start of the commit that just ended, until the channel has been looked at.
    commit_began: Option<Instant>,
    /// That start, when a change was waiting as the commit ended: the next transaction's.
    carried: Option<Instant>,
}

impl CommitInterval {
    /// No commit yet; the interval starts with the first transaction.
    pub fn new(now: Instant) -> Self {
        CommitInterval {
            from: now,
            commit_began: None,
            carried: None,
        }
    }

    /// A commit that started at `started` ended.
    pub fn committed(&mut self, started: Instant) {
        self.commit_began = Some(started);
    }

    /// The sink is about to wait for the next change; `queued`: one is already waiting. Only
    /// the first look after a commit carries anything; any later one clears it.
    pub fn looked(&mut self, queued: impl FnOnce() -> bool) {
        self.carried = self.commit_began.take().filter(|_| queued());
    }

    /// A transaction began at `now`.
    pub fn began(&mut self, now: Instant) {
        self.from = self.carried.take().unwrap_or(now);
    }

    /// Time left at `now` before the commit is due after `max`.
    pub fn due_in(&self, max: Duration, now: Instant) -> Duration {
        max.saturating_sub(now.saturating_duration_since(self.from))
    }

    /// The commit is due at `now` after `max`.
    pub fn due(&self, max: Duration, now: Instant) -> bool {
        now.saturating_duration_since(self.from) >= max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: Duration = Duration::from_millis(100);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_change_waiting_as_a_commit_ends_counts_from_that_commits_start() {
        let t0 = Instant::now();
        let mut i = CommitInterval::new(t0);
        i.began(t0);
        // The commit ran from 100 to 130 ms; a change came in meanwhile.
        i.committed(t0 + ms(100));
        i.looked(|| true);
        i.began(t0 + ms(130));
        assert_eq!(i.due_in(MAX, t0 + ms(130)), ms(70));
        assert!(!i.due(MAX, t0 + ms(199)));
        assert!(i.due(MAX, t0 + ms(200)));
    }

    #[test]
    fn a_change_after_an_idle_wait_starts_the_interval_itself() {
        let t0 = Instant::now();
        let mut i = CommitInterval::new(t0);
        i.committed(t0);
        i.looked(|| false);
        i.began(t0 + ms(500));
        assert_eq!(i.due_in(MAX, t0 + ms(500)), MAX);
        assert!(!i.due(MAX, t0 + ms(599)));
        assert!(i.due(MAX, t0 + ms(600)));
    }

    #[test]
    fn only_the_first_look_after_a_commit_carries_its_start() {
        let t0 = Instant::now();
        let mut i = CommitInterval::new(t0);
        i.committed(t0);
        i.looked(|| true);
        // The change taken was not one that begins a transaction (a progress mark); the
        // next look finds nothing left of that commit.
        i.looked(|| true);
        i.began(t0 + ms(300));
        assert_eq!(i.due_in(MAX, t0 + ms(300)), MAX);
        // And a carried start is used once.
        i.committed(t0 + ms(400));
        i.looked(|| true);
        i.began(t0 + ms(420));
        i.began(t0 + ms(450));
        assert_eq!(i.due_in(MAX, t0 + ms(450)), MAX);
    }

    #[test]
    fn the_channel_is_only_asked_after_a_commit() {
        let t0 = Instant::now();
        let mut i = CommitInterval::new(t0);
        let mut asked = 0;
        i.looked(|| {
            asked += 1;
            true
        });
        assert_eq!(asked, 0, "no commit ended: nothing to ask");
        i.committed(t0);
        i.looked(|| {
            asked += 1;
            true
        });
        assert_eq!(asked, 1);
    }

    #[test]
    fn a_late_check_is_due_at_once_and_never_negative() {
        let t0 = Instant::now();
        let mut i = CommitInterval::new(t0);
        i.began(t0);
        assert_eq!(i.due_in(MAX, t0 + ms(250)), Duration::ZERO);
        assert!(i.due(MAX, t0 + ms(250)));
        // An instant before the start (a clock read earlier) counts as no time passed.
        assert_eq!(i.due_in(MAX, t0), MAX);
    }
}
