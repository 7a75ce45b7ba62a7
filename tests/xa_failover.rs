//! A prepared XA transaction is read again at `XA COMMIT` from the file:pos the offset record
//! keeps for it. After a failover that position belongs to another server's binlog: the replay
//! must emit the group only when the XA_PREPARE found there carries the same xid, and stop
//! with a definite error otherwise — never write another transaction's rows under its name.
//!
//! The test puts a wrong position into the committed offset (what a failover does to it): the
//! start of another prepared XA group, with its own rows, on the same server.

mod support;

use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use serde_json::Value;
use support::*;

/// Commits `record` as the pipeline's offset, fencing it the way `sluice offsets set` does.
fn commit_offset_record(p: &Pipeline, record: &Value) {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", KAFKA)
        .set("transactional.id", format!("sluice-{}", p.name))
        .create()
        .expect("producer");
    producer
        .init_transactions(Duration::from_secs(30))
        .expect("init_transactions");
    producer.begin_transaction().expect("begin");
    let bytes = serde_json::to_vec(record).unwrap();
    producer
        .send(
            BaseRecord::to(&p.offsets_topic)
                .key(p.name.as_bytes())
                .payload(&bytes),
        )
        .map_err(|(e, _)| e)
        .expect("send");
    producer
        .commit_transaction(Duration::from_secs(30))
        .expect("commit");
}

async fn a_replayed_xa_group_must_carry_its_xid(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "xa_moved", "");
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, v VARCHAR(20))")])
        .await;
    let db = &p.db;
    let mut other = root(flavor.port).await;
    exec(
        &mut c,
        &[
            "XA START 'a'",
            &format!("INSERT INTO {db}.t VALUES (1, 'a1')"),
            "XA END 'a'",
            "XA PREPARE 'a'",
        ],
    )
    .await;
    exec(
        &mut other,
        &[
            "XA START 'z'",
            &format!("INSERT INTO {db}.t VALUES (26, 'z26')"),
            "XA END 'z'",
            "XA PREPARE 'z'",
        ],
    )
    .await;
    let mut marker = root(flavor.port).await;
    exec(
        &mut marker,
        &[&format!("INSERT INTO {db}.t VALUES (100, 'marker')")],
    )
    .await;
    let topics = vec![p.topic("t")];
    consume(
        &topics,
        "read_committed",
        1,
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    // Both prepared groups are in the committed offset, once the marker's commit is.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut rec: Value = loop {
        let (_, out) = p.command(&["offsets", "show"]);
        if let Ok(v) = serde_json::from_str::<Value>(&out) {
            if v["xa_prepared"].as_object().is_some_and(|m| m.len() == 2) {
                break v;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "[{name}] the offset never recorded both prepared groups: {out}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    terminate(&mut child);
    // Give 'a' the start of 'z', as a failover to a server with another binlog layout would.
    let map = rec["xa_prepared"].as_object().unwrap().clone();
    let key_of = |needle: &str| {
        map.keys()
            .find(|k| k.contains(needle))
            .unwrap_or_else(|| panic!("[{name}] no xid like {needle} in {map:?}"))
            .clone()
    };
    // xids are written as x'<hex gtrid>',x'<hex bqual>',<format id>: 'a' is 61, 'z' is 7a.
    let (a, z) = (key_of("x'61'"), key_of("x'7a'"));
    rec["xa_prepared"][&a] = map[&z].clone();
    commit_offset_record(&p, &rec);

    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    exec(&mut c, &["XA COMMIT 'a'"]).await;
    let status = wait_exit(&mut child, Duration::from_secs(60));
    let log = p.log();
    assert_eq!(
        status.code(),
        Some(1),
        "[{name}] definite error; log:\n{log}"
    );
    assert!(
        log.contains("found, ending at") && log.contains("instead"),
        "[{name}] the error names the mismatch; log:\n{log}"
    );
    // Nothing of 'z' (nor of 'a') was written.
    let recs = consume(
        &topics,
        "read_committed",
        usize::MAX,
        Duration::from_secs(2),
        Duration::from_secs(10),
    );
    let ids: Vec<i64> = recs
        .iter()
        .filter_map(|r| r.key.as_ref()?["id"].as_i64())
        .collect();
    assert_eq!(ids, vec![100], "[{name}] only the marker; log:\n{log}");
    exec(&mut other, &["XA ROLLBACK 'z'"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mariadb_a_replayed_xa_group_must_carry_its_xid() {
    if MARIADB.enabled() {
        a_replayed_xa_group_must_carry_its_xid(MARIADB).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_a_replayed_xa_group_must_carry_its_xid() {
    if MYSQL.enabled() {
        a_replayed_xa_group_must_carry_its_xid(MYSQL).await;
    }
}
