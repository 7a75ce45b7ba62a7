//! `sluice bench-source` against the test bed's servers: the source stages of a pipeline read
//! the rows written after its start position and the null sink counts exactly those rows and
//! source transactions; asked for more rows than there are, it gives up at its deadline and
//! says how many it read.

mod support;

use std::time::Duration;

use support::*;

/// The JSON line the command printed (its logs go to stderr, in the same text).
fn result_line(out: &str) -> serde_json::Value {
    let line = out
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line in the output:\n{out}"));
    serde_json::from_str(line).expect("JSON")
}

async fn counts_the_rows_after_the_start(flavor: Flavor) {
    let p = Pipeline::new(flavor, "bsrc", "");
    let mut c = root(flavor.port).await;
    let t = format!("{}.t", p.db);
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {}", p.db),
            &format!("CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(64))"),
        ],
    )
    .await;
    let gtid = flavor.gtid_executed(&mut c).await;
    p.edit_config("start = \"latest\"", &format!("start = \"gtid:{gtid}\""));
    // 5 source transactions of 100 rows.
    for k in 0..5 {
        let sql = flavor.insert_seq(&t, k * 100 + 1, k * 100 + 100, "some text");
        exec(&mut c, &[&format!("USE {}", p.db), &sql]).await;
    }

    let args = ["bench-source", "--rows", "500", "--max-seconds", "60"];
    let (code, out) = p.command_within(&args, Duration::from_secs(90));
    assert_eq!(code, 0, "{out}");
    let r = result_line(&out);
    assert_eq!(r["rows"], 500, "{r}");
    assert_eq!(r["transactions"], 5, "{r}");
    // Each row's record holds at least its key and its text.
    assert!(r["bytes"].as_u64().unwrap() > 500 * 20, "{r}");
    let secs = r["secs"].as_f64().unwrap();
    assert!(r["first_row_s"].as_f64().unwrap() <= secs, "{r}");
    assert!(r["rows_per_s"].as_f64().unwrap() > 0.0, "{r}");

    // More rows than the binlog holds: the deadline ends it, naming what was read.
    let args = ["bench-source", "--rows", "501", "--max-seconds", "3"];
    let (code, out) = p.command_within(&args, Duration::from_secs(60));
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("500 of the 501 rows"), "{out}");
    exec(&mut c, &[&format!("DROP DATABASE {}", p.db)]).await;
}

per_flavor!(counts_the_rows_after_the_start);
