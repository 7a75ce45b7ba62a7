//! Bad input: each case is a clear error that names the setting, and nothing is written.

mod support;

use std::time::Duration;

use support::*;

fn write_config(p: &Pipeline, edit: impl Fn(String) -> String) {
    let text = std::fs::read_to_string(&p.config).expect("config");
    std::fs::write(&p.config, edit(text)).expect("write config");
}

fn assert_fails(p: &Pipeline, args: &[&str], needles: &[&str]) -> String {
    let (code, out) = p.command(args);
    assert_ne!(
        code, 0,
        "[{}] expected failure for {args:?}; output:\n{out}",
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
    create_topic(&p.offsets_topic, &[("cleanup.policy", "delete")]);
    assert_fails(
        &p,
        &["run"],
        &["cleanup.policy", "compact", &p.offsets_topic],
    );
}

fn create_topic(name: &str, cfg: &[(&str, &str)]) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::client::DefaultClientContext;
    use rdkafka::config::ClientConfig;
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", KAFKA)
        .create()
        .expect("admin");
    let mut nt = NewTopic::new(name, 1, TopicReplication::Fixed(1));
    for (k, v) in cfg {
        nt = nt.set(k, v);
    }
    let res = futures_executor::block_on(admin.create_topics([&nt], &AdminOptions::new()))
        .expect("create");
    for r in res {
        r.expect("topic created");
    }
}

per_flavor!(
    missing_grant_is_reported_with_the_grant_statement,
    wrong_password_is_a_clear_error_without_the_secret,
    purged_start_position_says_what_to_do,
);
