//! Runs `sluice run` like a service manager would: whenever the process exits (other than
//! when it is told to stop) it is started again after a short delay, and every exit is
//! recorded with its code or signal and the last error line of its log.
//!
//! Dropping the supervisor kills the running process (SIGCONT first, in case it is stopped).
#![allow(dead_code)]

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Delay before a restart (a service manager's `RestartSec`).
const RESTART_DELAY: Duration = Duration::from_millis(300);

/// One exit of a sluice process.
#[derive(Debug, Clone)]
pub struct Exit {
    /// Time since the supervisor started.
    pub at: Duration,
    /// Exit code, when it exited by itself.
    pub code: Option<i32>,
    /// Signal that ended it.
    pub signal: Option<i32>,
    /// Whether the test caused it (SIGKILL fault, final stop).
    pub expected: bool,
    /// The last error line the process logged.
    pub last_error: String,
}

impl Exit {
    /// "exit 3", "signal 9".
    pub fn how(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("signal {s}"),
            _ => "unknown".into(),
        }
    }
}

struct State {
    child: Option<Child>,
    /// Where the running instance's log starts.
    log_from: u64,
    /// The next exit is the test's doing.
    expect_exit: bool,
    /// No more restarts.
    stopping: bool,
    /// When the last instance exited (restart after [`RESTART_DELAY`]).
    died_at: Option<Instant>,
    exits: Vec<Exit>,
    starts: u32,
    /// A spawn failed: why.
    spawn_error: Option<String>,
}

/// The supervised sluice.
pub struct Supervisor {
    state: Arc<Mutex<State>>,
    thread: Option<JoinHandle<()>>,
    log: PathBuf,
}

fn lock(s: &Mutex<State>) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts `sluice run --config <config>`, stderr appended to `log`.
fn spawn(config: &Path, log: &Path) -> std::io::Result<Child> {
    // Killed by the kernel should the test binary die without dropping the supervisor.
    let mut cmd = crate::support::sluice_command();
    cmd.args(["run", "--config"]).arg(config);
    // sluice refuses unknown SLUICE_* variables: keep the harness's own knobs from it.
    for (k, _) in std::env::vars() {
        if k.starts_with("SLUICE_CHAOS_")
            || k.starts_with("SLUICE_KAFKA_PROXY")
            || k.starts_with("SLUICE_KAFKA_CLUSTER_")
        {
            cmd.env_remove(k);
        }
    }
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    cmd.env("SLUICE_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(err))
        .spawn()
}

fn log_len(log: &Path) -> u64 {
    std::fs::metadata(log).map(|m| m.len()).unwrap_or(0)
}

/// The last line logged at level ERROR (or `error:`) after byte `from` of `log`.
fn last_error(log: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(log) {
        let _ = f.seek(SeekFrom::Start(from));
        let mut buf = Vec::new();
        let _ = f.read_to_end(&mut buf);
        text = String::from_utf8_lossy(&buf).into_owned();
    }
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains(" ERROR ") || l.starts_with("error:"))
        .unwrap_or("");
    line.chars().take(400).collect()
}

fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

impl Supervisor {
    /// Starts sluice on `config` and keeps it running.
    pub fn start(config: &Path, log: &Path) -> Supervisor {
        let child = spawn(config, log).expect("spawn sluice");
        let state = Arc::new(Mutex::new(State {
            child: Some(child),
            log_from: 0,
            expect_exit: false,
            stopping: false,
            died_at: None,
            exits: Vec::new(),
            starts: 1,
            spawn_error: None,
        }));
        let s = state.clone();
        let (config, log_path) = (config.to_path_buf(), log.to_path_buf());
        let thread = std::thread::spawn(move || watch(&s, &config, &log_path));
        Supervisor {
            state,
            thread: Some(thread),
            log: log.to_path_buf(),
        }
    }

    /// The log of every instance.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `n` lines of the log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// The pid of the running instance.
    pub fn pid(&self) -> Option<u32> {
        lock(&self.state).child.as_ref().map(Child::id)
    }

    /// Instances started so far.
    pub fn starts(&self) -> u32 {
        lock(&self.state).starts
    }

    /// Every exit so far.
    pub fn exits(&self) -> Vec<Exit> {
        lock(&self.state).exits.clone()
    }

    /// Why the last restart failed, if it did.
    pub fn spawn_error(&self) -> Option<String> {
        lock(&self.state).spawn_error.clone()
    }

    /// SIGKILL of the running instance; returns once the next one has started (the
    /// supervisor restarts it), or panics after `timeout`.
    pub fn kill9(&self, timeout: Duration) {
        let starts = {
            let mut st = lock(&self.state);
            let starts = st.starts;
            if st.child.is_some() {
                st.expect_exit = true;
            }
            if let Some(c) = st.child.as_mut() {
                let _ = c.kill();
            }
            starts
        };
        let deadline = Instant::now() + timeout;
        while self.starts() == starts {
            assert!(
                Instant::now() < deadline,
                "sluice was not restarted within {timeout:?} after SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGSTOP of the running instance; its pid, to give to [`Supervisor::cont`].
    pub fn stop_signal(&self) -> Option<u32> {
        let pid = self.pid()?;
        signal(pid, "STOP");
        Some(pid)
    }

    /// SIGCONT of `pid`.
    pub fn cont(&self, pid: u32) {
        signal(pid, "CONT");
    }

    /// SIGTERM and no restart: waits for the exit (SIGKILL after `timeout`) and returns it.
    pub fn terminate(&self, timeout: Duration) -> Option<Exit> {
        let before = self.send_terminate();
        self.wait_terminated(before, timeout)
    }

    /// SIGTERM and no restart, without waiting; the number of exits before it, to give to
    /// [`Supervisor::wait_terminated`] (several instances told to stop at once).
    pub fn send_terminate(&self) -> usize {
        let mut st = lock(&self.state);
        st.stopping = true;
        st.expect_exit = true;
        if let Some(c) = st.child.as_ref() {
            signal(c.id(), "CONT");
            signal(c.id(), "TERM");
        }
        st.exits.len()
    }

    /// Waits for the exit after [`Supervisor::send_terminate`] (SIGKILL after `timeout`) and
    /// returns it.
    pub fn wait_terminated(&self, before: usize, timeout: Duration) -> Option<Exit> {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let mut st = lock(&self.state);
                if st.child.is_none() {
                    return st.exits.get(before).cloned();
                }
                if Instant::now() > deadline {
                    if let Some(c) = st.child.as_mut() {
                        let _ = c.kill();
                    }
                    st.expect_exit = false;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        {
            let mut st = lock(&self.state);
            st.stopping = true;
            st.expect_exit = true;
            if let Some(mut c) = st.child.take() {
                signal(c.id(), "CONT");
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn watch(state: &Mutex<State>, config: &Path, log: &Path) {
    let started = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let mut st = lock(state);
        if let Some(c) = st.child.as_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                let exit = Exit {
                    at: started.elapsed(),
                    code: status.code(),
                    signal: status.signal(),
                    expected: st.expect_exit,
                    last_error: last_error(log, st.log_from),
                };
                if !exit.expected {
                    eprintln!(
                        "supervisor: sluice ended by itself ({}) at {:.1?}: {}",
                        exit.how(),
                        exit.at,
                        exit.last_error
                    );
                }
                st.exits.push(exit);
                st.expect_exit = false;
                st.child = None;
                st.died_at = Some(Instant::now());
            }
        }
        if st.stopping {
            if st.child.is_none() {
                return;
            }
            continue;
        }
        let due = st.died_at.is_some_and(|t| t.elapsed() >= RESTART_DELAY);
        if st.child.is_none() && due {
            st.log_from = log_len(log);
            match spawn(config, log) {
                Ok(c) => {
                    st.child = Some(c);
                    st.starts += 1;
                    st.died_at = None;
                }
                Err(e) => {
                    st.spawn_error = Some(e.to_string());
                    st.died_at = Some(Instant::now());
                }
            }
        }
    }
}
