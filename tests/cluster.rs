//! Cluster mode against the real servers and Kafka: three instances of one process file with
//! `[cluster]` share six pipelines (three on MariaDB, three on MySQL) through a Kafka consumer
//! group. Sequenced workloads run on every pipeline while one instance is SIGKILLed (its
//! pipelines must stream on the others within the session timeout and a few seconds), the
//! killed one comes back (the group hands some pipelines to it: a cooperative revocation on
//! the others), one instance is stopped gracefully (it leaves the group: its pipelines move at
//! once) and one is SIGSTOPped past the session timeout and continued (the pipelines it lost
//! run elsewhere; it stops its stale runs, is fenced at worst, and its process lives on);
//! then all three are restarted one after the other (a rolling restart) while updates go on.
//! An independent `read_committed` reader then proves on every pipeline: every change once, in
//! order per key, through every move.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::processes::*;
use support::*;

const SESSION_MS: u64 = 6000;

struct Instance {
    log: PathBuf,
    child: Option<KillOnDrop>,
    addr: String,
}

impl Instance {
    fn start(file: &Path, log: PathBuf) -> Instance {
        let child = spawn(file, &log);
        let addr = api_addr(&log);
        Instance {
            log,
            child: Some(child),
            addr,
        }
    }

    fn restart(&mut self, file: &Path) {
        let before = std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches("api listening")
            .count();
        self.child = Some(spawn(file, &self.log));
        self.addr = wait_for("the restarted api", Duration::from_secs(30), || {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if text.matches("api listening").count() > before {
                Ok(api_addr(&self.log))
            } else {
                Err("not yet".into())
            }
        });
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().expect("try_wait").is_none())
    }

    /// Pipeline → state, of the pipelines assigned here (`None` when the API does not answer).
    fn assigned(&self) -> Option<BTreeMap<String, String>> {
        let addr = self.addr.clone();
        let answer = std::thread::spawn(move || {
            std::net::TcpStream::connect_timeout(
                &addr.parse().expect("addr"),
                Duration::from_millis(500),
            )
            .ok()?;
            Some(get(&addr, "/cluster"))
        })
        .join()
        .ok()
        .flatten()?;
        let (code, v) = answer;
        if code != 200 {
            return None;
        }
        Some(
            v["pipelines"]
                .as_array()?
                .iter()
                .filter(|p| p["assigned"] == true)
                .map(|p| {
                    (
                        p["name"].as_str().unwrap_or_default().to_string(),
                        p["state"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect(),
        )
    }
}

/// [`all_streaming`], and every one of `live` runs at least one pipeline (the group has
/// rebalanced onto a member that joined).
fn balanced(
    instances: &[Instance],
    live: &[usize],
    names: &BTreeSet<String>,
    timeout: Duration,
) -> BTreeMap<String, usize> {
    let started = Instant::now();
    loop {
        let (owners, _) = all_streaming(instances, live, names, timeout);
        if live.iter().all(|i| owners.values().any(|o| o == i)) {
            return owners;
        }
        assert!(
            started.elapsed() < timeout,
            "not balanced over {live:?} within {timeout:?}: {owners:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until every pipeline streams on exactly one of `live` instances; returns who runs
/// what and how long it took.
fn all_streaming(
    instances: &[Instance],
    live: &[usize],
    names: &BTreeSet<String>,
    timeout: Duration,
) -> (BTreeMap<String, usize>, Duration) {
    let started = Instant::now();
    let owners = wait_for("every pipeline streaming once", timeout, || {
        let mut owners: BTreeMap<String, usize> = BTreeMap::new();
        let mut states = Vec::new();
        for &i in live {
            let Some(list) = instances[i].assigned() else {
                return Err(format!("instance {i} does not answer"));
            };
            for (name, state) in list {
                states.push(format!("{i}:{name}={state}"));
                if state == "streaming" && owners.insert(name.clone(), i).is_some() {
                    return Err(format!("{name} streaming twice: {states:?}"));
                }
            }
        }
        let running: BTreeSet<String> = owners.keys().cloned().collect();
        if &running == names {
            Ok(owners)
        } else {
            Err(format!("{states:?}"))
        }
    });
    (owners, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_share_six_pipelines_through_every_move() {
    let members: Vec<Member> = (0..6)
        .map(|i| {
            let flavor = if i < 3 { MARIADB } else { MYSQL };
            Member::new(flavor, &format!("cl{i}"), "")
        })
        .collect();
    for m in &members {
        setup_table(m).await;
    }
    let names: BTreeSet<String> = members.iter().map(|m| m.name.clone()).collect();
    let group = unique("t_cluster");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_process(
        dir.path(),
        &members.iter().collect::<Vec<_>>(),
        &format!(
            "[cluster]\ngroup = \"{group}\"\nsession_timeout_ms = {SESSION_MS}\n\
             heartbeat_interval_ms = 1000\nrevoke_timeout_ms = 15000\n"
        ),
    );
    let mut instances: Vec<Instance> = (0..3)
        .map(|i| Instance::start(&file, dir.path().join(format!("sluice-{i}.log"))))
        .collect();
    let logs = |instances: &[Instance]| {
        instances
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let text = std::fs::read_to_string(&s.log).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                format!(
                    "--- instance {i}:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let started = Instant::now();
    let owners = balanced(&instances, &[0, 1, 2], &names, Duration::from_secs(90));
    eprintln!("start: {owners:?} in {:?}", started.elapsed());
    // `sluice check` sees the group and its topics.
    let out = sluice_command()
        .args(["check", "--config"])
        .arg(&file)
        .output()
        .expect("check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("ok       cluster group") && text.contains("3 member(s)"),
        "{text}"
    );
    assert!(text.contains("6 of 6 assignment topics exist"), "{text}");
    for m in &members {
        insert_rows(m).await;
    }
    let mut rounds = 0;
    // 1. SIGKILL the instance that runs the most pipelines, while updates run.
    let count = |o: &BTreeMap<String, usize>, i: usize| o.values().filter(|x| **x == i).count();
    let victim = (0..3)
        .max_by_key(|i| count(&owners, *i))
        .expect("an instance");
    let updates = {
        let ms: Vec<&Member> = members.iter().collect();
        async move {
            for m in ms {
                update_rounds(m, 1).await;
            }
        }
    };
    let kill = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        unsafe { libc::kill(instances[victim].pid(), libc::SIGKILL) };
    };
    tokio::join!(updates, kill);
    rounds += 1;
    let killed_at = Instant::now();
    let live: Vec<usize> = (0..3).filter(|i| *i != victim).collect();
    let (owners, _) = all_streaming(&instances, &live, &names, Duration::from_secs(60));
    let takeover = killed_at.elapsed();
    eprintln!("after SIGKILL of {victim}: {owners:?}; takeover {takeover:?}");
    assert!(
        takeover < Duration::from_millis(SESSION_MS) + Duration::from_secs(15),
        "takeover took {takeover:?}\n{}",
        logs(&instances)
    );
    // 2. It comes back; updates go on while the group hands it pipelines.
    instances[victim].restart(&file);
    for m in &members {
        update_rounds(m, 1).await;
    }
    rounds += 1;
    let owners = balanced(&instances, &[0, 1, 2], &names, Duration::from_secs(60));
    eprintln!("after the restart: {owners:?}");
    // 3. A graceful stop of another instance: it leaves the group, its pipelines move.
    let leaver = (victim + 1) % 3;
    let signalled = Instant::now();
    let status = terminate(instances[leaver].child.as_mut().expect("running"));
    let exited_at = Instant::now();
    assert!(status.success(), "{status:?}\n{}", logs(&instances));
    // Its pipelines stop at a boundary and it leaves the group at once: well within the
    // session timeout (and never waiting out cluster.revoke_timeout_ms).
    let exit_took = exited_at - signalled;
    assert!(
        exit_took < Duration::from_secs(5),
        "a graceful stop took {exit_took:?}\n{}",
        logs(&instances)
    );
    let live: Vec<usize> = (0..3).filter(|i| *i != leaver).collect();
    // The group hands its pipelines over at once (no session timeout to wait for): assigned
    // to the others well before `session_timeout_ms`, then started there.
    wait_for(
        "the leaver's pipelines assigned to the others",
        Duration::from_millis(SESSION_MS),
        || {
            let mut assigned = BTreeSet::new();
            for &i in &live {
                assigned.extend(instances[i].assigned().unwrap_or_default().into_keys());
            }
            if assigned == names {
                Ok(())
            } else {
                Err(format!("{assigned:?}\n{}", logs(&instances)))
            }
        },
    );
    let reassigned = exited_at.elapsed();
    let (owners, _) = all_streaming(&instances, &live, &names, Duration::from_secs(60));
    eprintln!(
        "after the graceful stop of {leaver}: {owners:?}; it exited {exit_took:?} after SIGTERM; \
         its pipelines assigned elsewhere {reassigned:?} and streaming {:?} after that",
        exited_at.elapsed()
    );
    for m in &members {
        update_rounds(m, 1).await;
    }
    rounds += 1;
    instances[leaver].restart(&file);
    let owners = balanced(&instances, &[0, 1, 2], &names, Duration::from_secs(60));
    // 4. SIGSTOP an instance that runs pipelines past the session timeout, then SIGCONT.
    let sleeper = (0..3)
        .max_by_key(|i| count(&owners, *i))
        .expect("an instance");
    unsafe { libc::kill(instances[sleeper].pid(), libc::SIGSTOP) };
    for m in &members {
        update_rounds(m, 1).await;
    }
    rounds += 1;
    let live: Vec<usize> = (0..3).filter(|i| *i != sleeper).collect();
    let (owners, _) = all_streaming(&instances, &live, &names, Duration::from_secs(60));
    eprintln!("while {sleeper} is stopped: {owners:?}");
    unsafe { libc::kill(instances[sleeper].pid(), libc::SIGCONT) };
    for m in &members {
        update_rounds(m, 1).await;
    }
    rounds += 1;
    let (owners, _) = all_streaming(&instances, &[0, 1, 2], &names, Duration::from_secs(90));
    eprintln!("after SIGCONT of {sleeper}: {owners:?}");
    assert!(
        instances[sleeper].alive(),
        "the continued instance exited\n{}",
        logs(&instances)
    );
    // It learnt that its assignment was lost and stopped those runs without committing.
    let text = std::fs::read_to_string(&instances[sleeper].log).unwrap_or_default();
    assert!(
        text.contains("lost=true"),
        "no lost assignment reported after SIGCONT\n{}",
        logs(&instances)
    );
    // 5. A rolling restart of all three, one after the other (SIGTERM, start again, wait until
    // the group has given it pipelines), while updates run on every pipeline throughout.
    let stop_writing = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop_writing.clone();
        let ms = members.clone();
        tokio::spawn(async move {
            let mut written = 0;
            while !stop.load(Ordering::SeqCst) {
                for m in &ms {
                    update_rounds(m, 1).await;
                }
                written += 1;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            written
        })
    };
    for i in 0..3 {
        let status = terminate(instances[i].child.as_mut().expect("running"));
        assert!(
            status.success(),
            "rolling restart, instance {i}: {status:?}\n{}",
            logs(&instances)
        );
        instances[i].restart(&file);
        let owners = balanced(&instances, &[0, 1, 2], &names, Duration::from_secs(60));
        eprintln!("rolling restart: instance {i} back, {owners:?}");
    }
    stop_writing.store(true, Ordering::SeqCst);
    let written = writer.await.expect("the writer");
    eprintln!("{written} update rounds ran through the rolling restart");
    assert!(
        written >= 3,
        "only {written} update rounds during the restarts"
    );
    rounds += written;
    // Every instance exports `sluice_pipeline_assigned` for every pipeline: 1 on exactly one.
    let mut assigned: BTreeMap<String, i64> = BTreeMap::new();
    for inst in &instances {
        let (_, text) = http_get(&inst.addr, "/metrics");
        for name in &names {
            let series = format!("sluice_pipeline_assigned{{pipeline=\"{name}\"}} ");
            let line = text.lines().find(|l| l.starts_with(&series));
            let v: i64 = line
                .and_then(|l| l[series.len()..].trim().parse().ok())
                .unwrap_or_else(|| panic!("no {series} on {}", inst.addr));
            *assigned.entry(name.clone()).or_default() += v;
        }
    }
    assert!(assigned.values().all(|v| *v == 1), "{assigned:?}");
    // Every change once, in order per key, on every pipeline.
    for m in &members {
        check_records(m, rounds);
    }
    for i in 0..3 {
        if instances[i].alive() {
            let status = terminate(instances[i].child.as_mut().expect("running"));
            assert!(
                status.success(),
                "instance {i}: {status:?}\n{}",
                logs(&instances)
            );
        }
    }
}
