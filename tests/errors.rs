//! Bad input: each case is a clear error that names the setting, and nothing is written.

mod support;

use std::time::Duration;

use support::*;

fn write_config(p: &Pipeline, edit: impl Fn(String) -> String) {
    let text = std::fs::read_to_string(&p.config).expect("config");
    std::fs::write(&p.config, edit(text)).expect("write config");
}

/// `sluice <args>` exits 1 by itself, soon (a definite problem is not retried), and its
/// output names each of `needles`.
fn assert_fails(p: &Pipeline, args: &[&str], needles: &[&str]) -> String {
    let (code, out) = p.command_within(args, Duration::from_secs(60));
    assert_eq!(
        code, 1,
        "[{}] expected exit code 1 for {args:?}; output:\n{out}",
        p.flavor.name
    );
    for n in needles {
        assert!(
            out.contains(n),
            "[{}] output of {args:?} should mention {n:?}:\n{out}",
            p.flavor.name
        );
    }
    out
}

#[test]
fn unknown_config_key_names_the_key() {
    let p = Pipeline::new(MARIADB, "unknown", "");
    write_config(&p, |t| t.replace("[commit]", "[commit]\nmax_msec = 3"));
    assert_fails(&p, &["check"], &["max_msec"]);
    assert_fails(&p, &["run"], &["max_msec"]);
}

#[test]
fn bad_regex_names_the_setting() {
    let p = Pipeline::new(MARIADB, "regex", "");
    write_config(&p, |t| {
        t.replace("include = [", "include = [\"(unclosed\", ")
    });
    assert_fails(&p, &["run"], &["source.include[0]", "(unclosed"]);
}

async fn wrong_password_is_a_clear_error_without_the_secret(flavor: Flavor) {
    let p = Pipeline::new(flavor, "pw", "");
    write_config(&p, |t| t.replace("sluice:sluice@", "sluice:hunter2wrong@"));
    let out = assert_fails(&p, &["run"], &["source.url", "sluice"]);
    assert!(
        !out.contains("hunter2wrong"),
        "[{}] password leaked:\n{out}",
        flavor.name
    );
    assert_nothing_written(&p);
}

async fn missing_grant_is_reported_with_the_grant_statement(flavor: Flavor) {
    let user = unique("nogrant");
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'"),
            &format!("GRANT SELECT ON *.* TO '{user}'@'%'"),
        ],
    )
    .await;
    let p = Pipeline::new(flavor, "grant", "");
    write_config(&p, |t| t.replace("sluice:sluice@", &format!("{user}:pw@")));
    assert_fails(&p, &["check"], &["REPLICATION SLAVE", "GRANT"]);
    assert_fails(&p, &["run"], &["REPLICATION SLAVE"]);
    assert_nothing_written(&p);
    exec(&mut c, &[&format!("DROP USER '{user}'@'%'")]).await;
}

async fn purged_start_position_says_what_to_do(flavor: Flavor) {
    let p = Pipeline::new(flavor, "purged", "");
    write_config(&p, |t| {
        t.replace("start = \"latest\"", "start = \"file:mysql-bin.000000:4\"")
    });
    assert_fails(&p, &["run"], &["mysql-bin.000000", "offsets set"]);
    assert_nothing_written(&p);
}

#[test]
fn unreachable_kafka_names_bootstrap_servers() {
    let p = Pipeline::new(MARIADB, "nokafka", "");
    write_config(&p, |t| {
        t.replace(
            "bootstrap_servers = \"127.0.0.1:9092\"",
            "bootstrap_servers = \"127.0.0.1:1\"",
        )
        .replace(
            "[kafka]",
            "[kafka]\nproperties = { \"socket.connection.setup.timeout.ms\" = \"2000\" }",
        )
    });
    let started = std::time::Instant::now();
    assert_fails(&p, &["check"], &["bootstrap"]);
    assert!(started.elapsed() < Duration::from_secs(120));
}

#[test]
fn offsets_topic_not_compacted_is_refused() {
    let p = Pipeline::new(MARIADB, "notcompact", "");
    create_topic(&p.offsets_topic, 1, &[("cleanup.policy", "delete")]);
    assert_fails(
        &p,
        &["run"],
        &["cleanup.policy", "compact", &p.offsets_topic],
    );
}

async fn a_partial_row_image_stops_clearly_and_emits_nothing_of_it(flavor: Flavor) {
    let p = Pipeline::new(flavor, "pjsonmin", "");
    let db = p.db.clone();
    let table = format!("{db}.docs");
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {table} (id INT PRIMARY KEY, j JSON)"),
            &format!("INSERT INTO {table} VALUES (1, '{{\"a\": 1}}')"),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {table} VALUES (2, '{{\"a\": 2}}')"),
            // Session-only: MINIMAL images lack columns (and the document the diff applies to).
            "SET SESSION binlog_row_image = 'MINIMAL'",
            if flavor.mysql {
                "SET SESSION binlog_row_value_options = 'PARTIAL_JSON'"
            } else {
                "SET SESSION binlog_row_image = 'MINIMAL'"
            },
            &format!("UPDATE {table} SET j = JSON_SET(j, '$.a', 5) WHERE id = 1"),
        ],
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let recs = consume(
                &[p.topic("docs")],
                "read_committed",
                3,
                Duration::from_secs(2),
                Duration::from_secs(10),
            );
            panic!("sluice kept running; records {recs:?}; log:\n{}", p.log());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(1), "definite error; log:\n{}", p.log());
    let log = p.log();
    assert!(
        log.contains("binlog_row_image") && log.contains(&format!("{db}.docs")),
        "the error names the setting and the table; log:\n{log}"
    );
    // The insert before it arrived; the update never did (nothing partial or empty).
    let recs = consume(
        &[p.topic("docs")],
        "read_committed",
        1,
        Duration::from_secs(2),
        Duration::from_secs(30),
    );
    let ops: Vec<String> = recs
        .iter()
        .map(|r| {
            r.value.as_ref().expect("value")["op"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(ops, vec!["c"], "only the insert is visible");
}

per_flavor!(
    a_partial_row_image_stops_clearly_and_emits_nothing_of_it,
    missing_grant_is_reported_with_the_grant_statement,
    wrong_password_is_a_clear_error_without_the_secret,
    purged_start_position_says_what_to_do,
);

/// A replication factor the cluster cannot meet (3 on the test bed's one broker) is definite:
/// `run` stops by itself, naming the setting and the broker count. (The same refusal while a
/// broker restarts, with enough brokers listed, is retried: `src/sink/topics.rs`.)
#[test]
fn a_replication_factor_above_the_brokers_names_the_setting() {
    let p = Pipeline::new(MARIADB, "rf3", "");
    write_config(&p, |t| {
        t.replace("[kafka]", "[kafka]\nreplication_factor = 3")
    });
    assert_fails(
        &p,
        &["run"],
        &["replication_factor` is 3", "lists 1 broker(s)"],
    );
}
