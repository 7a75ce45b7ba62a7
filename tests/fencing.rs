//! Fencing: a second sluice with the same `name` takes over; the first stops with a clear
//! message and exit code 3, and no change is duplicated or lost.

mod support;

use std::time::{Duration, Instant};

use support::*;

async fn a_second_instance_fences_the_first(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "fence", "");
    let db = &p.db;
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)"),
        ],
    )
    .await;
    let mut first = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let mut id = 0;
    for _ in 0..50 {
        id += 1;
        exec(&mut c, &[&format!("INSERT INTO {db}.t VALUES ({id}, 0)")]).await;
    }
    let mut second = p.spawn();
    // Keep writing so the first instance tries to commit and learns it was fenced.
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        id += 1;
        exec(&mut c, &[&format!("INSERT INTO {db}.t VALUES ({id}, 0)")]).await;
        if let Some(st) = first.try_wait().expect("try_wait") {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "[{name}] first instance kept running; log:\n{}",
            p.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for _ in 0..50 {
        id += 1;
        exec(&mut c, &[&format!("INSERT INTO {db}.t VALUES ({id}, 0)")]).await;
    }
    assert_eq!(
        status.code(),
        Some(3),
        "[{name}] fenced exit code; log:\n{}",
        p.log()
    );
    assert!(
        p.log().contains("fenced"),
        "[{name}] log names the fencing:\n{}",
        p.log()
    );
    let recs = consume(
        &[p.topic("t")],
        "read_committed",
        id as usize,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    terminate(&mut second);
    let mut ids: Vec<i64> = recs
        .iter()
        .map(|r| r.key.as_ref().unwrap()["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    let want: Vec<i64> = (1..=id as i64).collect();
    assert_eq!(ids, want, "[{name}] every insert exactly once");
}

per_flavor!(a_second_instance_fences_the_first,);
