//! Tests of the process file (`process.rs`): detection, globs, the cross-pipeline rules and
//! the environment rule, on files in a temporary folder.

use std::path::{Path, PathBuf};

use super::process::{glob_match, is_process_file, load_process, Process};
use super::ConfigError;

fn pipeline(name: &str, port: u16, server_id: u32) -> String {
    format!(
        "name = \"{name}\"\n[source]\nurl = \"mysql://sluice:sluice@127.0.0.1:{port}\"\n\
         server_id = {server_id}\n[kafka]\nbootstrap_servers = \"127.0.0.1:9092\"\n"
    )
}

/// Writes `files` (relative path, text) under a new folder; returns it and the process
/// file's path (`process.toml`, whose text is `process`).
fn folder(process: &str, files: &[(&str, String)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let file = dir.path().join("process.toml");
    std::fs::write(&file, process).expect("write process file");
    (dir, file)
}

fn load(file: &Path, env: &[(&str, &str)]) -> Result<Process, ConfigError> {
    let text = std::fs::read_to_string(file).expect("read");
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    load_process(file, &text, env)
}

fn names(p: &Process) -> Vec<&str> {
    p.pipelines.iter().map(|(_, c)| c.name.as_str()).collect()
}

#[test]
fn globs_match_file_names() {
    assert!(glob_match("*.toml", "a.toml"));
    assert!(!glob_match("*.toml", ".toml.toml"));
    assert!(glob_match("p?.toml", "p1.toml"));
    assert!(!glob_match("p?.toml", "p12.toml"));
    assert!(glob_match("*", "anything"));
    assert!(glob_match("a*b*c", "aXXbYYc"));
    assert!(!glob_match("a*b*c", "aXXbYY"));
    assert!(glob_match("exact.toml", "exact.toml"));
    assert!(!glob_match("exact.toml", "exact.tom"));
    assert!(!glob_match("*.toml", ".hidden.toml"));
    assert!(glob_match(".*.toml", ".hidden.toml"));
    // A long name against many stars stays quick (one backtrack point).
    let long = "a".repeat(10_000);
    assert!(!glob_match("*a*a*a*a*a*b", &long));
}

#[test]
fn a_file_with_pipelines_is_a_process_file() {
    assert!(is_process_file("pipelines = [\"p/*.toml\"]\n"));
    assert!(!is_process_file(&pipeline("a", 3306, 1)));
    // Not TOML: loaded as a pipeline file, whose loader reports the syntax error.
    assert!(!is_process_file("pipelines = ["));
}

#[test]
fn a_process_runs_the_files_its_globs_match_in_name_order() {
    let (_dir, file) = folder(
        "pipelines = [\"pipelines/*.toml\", \"extra.toml\"]\n[api]\nlisten = \"127.0.0.1:0\"\n",
        &[
            ("pipelines/b.toml", pipeline("b", 3306, 2)),
            ("pipelines/a.toml", pipeline("a", 3306, 1)),
            ("pipelines/notes.txt", "not a pipeline".into()),
            ("extra.toml", pipeline("c", 3307, 1)),
        ],
    );
    let p = load(&file, &[]).expect("loads");
    assert_eq!(names(&p), ["c", "a", "b"]);
    assert_eq!(p.settings.api.listen, "127.0.0.1:0");
}

#[test]
fn the_same_file_named_twice_runs_once() {
    let (_dir, file) = folder(
        "pipelines = [\"p/*.toml\", \"p/a.toml\"]\n",
        &[("p/a.toml", pipeline("a", 3306, 1))],
    );
    assert_eq!(names(&load(&file, &[]).expect("loads")), ["a"]);
    // A glob beside the process file does not take the process file for a pipeline.
    let (_dir, file) = folder(
        "pipelines = [\"*.toml\"]\n",
        &[("a.toml", pipeline("a", 3306, 1))],
    );
    assert_eq!(names(&load(&file, &[]).expect("loads")), ["a"]);
}

fn problems(err: ConfigError) -> String {
    let text = err.to_string();
    assert!(!err.problems().is_empty(), "{text}");
    text
}

#[test]
fn two_pipelines_of_one_name_are_refused() {
    let (_dir, file) = folder(
        "pipelines = [\"p/*.toml\"]\n",
        &[
            ("p/1.toml", pipeline("shop", 3306, 1)),
            ("p/2.toml", pipeline("shop", 3307, 2)),
        ],
    );
    let text = problems(load(&file, &[]).expect_err("refused"));
    assert!(text.contains("\"shop\" in both"), "{text}");
    assert!(text.contains("1.toml") && text.contains("2.toml"), "{text}");
}

#[test]
fn server_ids_must_differ_on_one_server_only() {
    // Same id on two servers: fine.
    let (_dir, file) = folder(
        "pipelines = [\"p/*.toml\"]\n",
        &[
            ("p/a.toml", pipeline("a", 3306, 7)),
            ("p/b.toml", pipeline("b", 3307, 7)),
        ],
    );
    load(&file, &[]).expect("different servers");
    // Same id on one server (host case does not matter): refused.
    let (_dir, file) = folder(
        "pipelines = [\"p/*.toml\"]\n",
        &[
            ("p/a.toml", pipeline("a", 3306, 7)),
            (
                "p/b.toml",
                pipeline("b", 3306, 7).replace("127.0.0.1", "LOCALHOST"),
            ),
            (
                "p/c.toml",
                pipeline("c", 3306, 7).replace("127.0.0.1", "localhost"),
            ),
        ],
    );
    let text = problems(load(&file, &[]).expect_err("refused"));
    assert!(text.contains("source.server_id"), "{text}");
    assert!(text.contains("b.toml") && text.contains("c.toml"), "{text}");
    // One pipeline's id is the other's XA replay id (id ^ 0x40000000): refused too.
    let (_dir, file) = folder(
        "pipelines = [\"p/*.toml\"]\n",
        &[
            ("p/a.toml", pipeline("a", 3306, 5)),
            ("p/b.toml", pipeline("b", 3306, 5 ^ 0x4000_0000)),
        ],
    );
    let text = problems(load(&file, &[]).expect_err("refused"));
    assert!(text.contains("XA replay id"), "{text}");
}

#[test]
fn an_api_section_belongs_in_the_process_file() {
    let (_dir, file) = folder(
        "pipelines = [\"a.toml\"]\n",
        &[(
            "a.toml",
            pipeline("a", 3306, 1) + "[api]\nlisten = \"127.0.0.1:1\"\n",
        )],
    );
    let err = load(&file, &[]).expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("a.toml") && text.contains("move the [api] section to the process file"),
        "{text}"
    );
}

#[test]
fn pipeline_settings_from_the_environment_are_refused_in_a_process() {
    let (_dir, file) = folder(
        "pipelines = [\"a.toml\"]\n",
        &[("a.toml", pipeline("a", 3306, 1))],
    );
    let err = load(&file, &[("SLUICE_SOURCE_URL", "mysql://x@h:1")]).expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("SLUICE_SOURCE_URL") && text.contains("pipeline files"),
        "{text}"
    );
    // The process's own [api] takes its variables; the scripts' knobs are ignored.
    let p = load(
        &file,
        &[
            ("SLUICE_API_LISTEN", "127.0.0.1:18089"),
            ("SLUICE_LOG", "debug"),
            ("PATH", "/bin"),
        ],
    )
    .expect("loads");
    assert_eq!(p.settings.api.listen, "127.0.0.1:18089");
}

#[test]
fn globs_that_match_nothing_and_wildcard_folders_are_named() {
    let (_dir, file) = folder(
        "pipelines = [\"none/*.toml\", \"*/a.toml\", \"missing.toml\"]\n",
        &[
            ("none/readme.md", "x".into()),
            ("p/a.toml", pipeline("a", 3306, 1)),
        ],
    );
    let text = problems(load(&file, &[]).expect_err("refused"));
    assert!(
        text.contains("pipelines[0]") && text.contains("matches no file"),
        "{text}"
    );
    assert!(
        text.contains("pipelines[1]") && text.contains("folder name"),
        "{text}"
    );
    assert!(
        text.contains("pipelines[2]") && text.contains("not a readable file"),
        "{text}"
    );
}

#[test]
fn an_empty_list_and_unknown_process_keys_are_refused() {
    let (_dir, file) = folder("pipelines = []\n", &[]);
    let text = problems(load(&file, &[]).expect_err("refused"));
    assert!(text.contains("at least one pipeline"), "{text}");
    let (_dir, file) = folder(
        "pipelines = [\"a.toml\"]\n[source]\nurl = \"mysql://h\"\n",
        &[("a.toml", pipeline("a", 3306, 1))],
    );
    let text = load(&file, &[]).expect_err("refused").to_string();
    assert!(
        text.contains("source") && text.contains("pipeline files"),
        "{text}"
    );
}

#[test]
fn a_bad_pipeline_file_is_named_with_its_problem() {
    let (_dir, file) = folder(
        "pipelines = [\"a.toml\"]\n",
        &[("a.toml", pipeline("a", 3306, 0))],
    );
    let text = load(&file, &[]).expect_err("refused").to_string();
    assert!(
        text.contains("a.toml") && text.contains("server_id"),
        "{text}"
    );
}

#[test]
fn one_query_timeout_for_the_process() {
    let (_dir, file) = folder(
        "pipelines = [\"p/*.toml\"]\n",
        &[
            ("p/a.toml", pipeline("a", 3306, 1)),
            (
                "p/b.toml",
                pipeline("b", 3306, 2)
                    .replace("server_id = 2", "server_id = 2\nquery_timeout_ms = 5000"),
            ),
        ],
    );
    let text = problems(load(&file, &[]).expect_err("refused"));
    assert!(text.contains("source.query_timeout_ms"), "{text}");
}

#[test]
fn the_example_process_file_loads() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/process.toml");
    let p = load(&file, &[]).expect("examples/process.toml loads");
    assert_eq!(names(&p), ["crm", "shop"]);
}

#[test]
fn the_example_cluster_section_loads_and_bad_settings_are_named() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/process.toml");
    let text = std::fs::read_to_string(&file).expect("example");
    // The commented [cluster] section, uncommented.
    let uncommented: String = text
        .lines()
        .map(|l| {
            let t = l.trim_start_matches("# ");
            if t.starts_with("[cluster]") || t.contains("_ms =") || t.starts_with("group =") {
                t.to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let (_dir, proc_file) = folder(
        &uncommented.replace("pipelines/*.toml", "p/*.toml"),
        &[("p/a.toml", pipeline("a", 3306, 1))],
    );
    let p = load(&proc_file, &[]).expect("the example's [cluster] loads");
    let c = p.settings.cluster.expect("cluster");
    assert_eq!(c.group, "sluice-prod");
    assert_eq!(c.session_timeout_ms, 10000);
    let (_dir, proc_file) = folder(
        "pipelines = [\"a.toml\"]\n[cluster]\ngroup = \"bad group\"\nsession_timeout_ms = 1000\n\
         heartbeat_interval_ms = 900\nrevoke_timeout_ms = 400000\n",
        &[("a.toml", pipeline("a", 3306, 1))],
    );
    let text = problems(load(&proc_file, &[]).expect_err("refused"));
    for setting in [
        "cluster.group",
        "cluster.session_timeout_ms",
        "cluster.heartbeat_interval_ms",
        "cluster.revoke_timeout_ms",
    ] {
        assert!(text.contains(setting), "{setting}: {text}");
    }
    // Cluster mode needs one Kafka cluster for all pipelines.
    let (_dir, proc_file) = folder(
        "pipelines = [\"p/*.toml\"]\n[cluster]\ngroup = \"g\"\n",
        &[
            ("p/a.toml", pipeline("a", 3306, 1)),
            (
                "p/b.toml",
                pipeline("b", 3306, 2).replace("127.0.0.1:9092", "127.0.0.1:9192"),
            ),
        ],
    );
    let text = problems(load(&proc_file, &[]).expect_err("refused"));
    assert!(text.contains("kafka.bootstrap_servers"), "{text}");
}

#[test]
fn logging_of_the_process_file() {
    // The example's commented [logging], uncommented, loads.
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/process.toml"),
    )
    .unwrap();
    let uncommented = example
        .replace("# [logging]", "[logging]")
        .replace("# level = ", "level = ")
        .replace("# format = ", "format = ");
    let (_dir, proc_file) = folder(
        &uncommented.replace("pipelines/*.toml", "p/*.toml"),
        &[("p/a.toml", pipeline("a", 3306, 1))],
    );
    let p = load(&proc_file, &[]).expect("the example's [logging] loads");
    assert_eq!(p.settings.logging.level.as_deref(), Some("info"));
    assert_eq!(
        p.settings.logging.format,
        Some(crate::config::logging::LogFormat::Text)
    );
    // A level that does not parse and an unknown key are refused, naming the setting.
    let (_dir, proc_file) = folder(
        "pipelines = [\"a.toml\"]\n[logging]\nlevel = \"sluice=loud\"\n",
        &[("a.toml", pipeline("a", 3306, 1))],
    );
    let text = problems(load(&proc_file, &[]).expect_err("refused"));
    assert!(text.contains("logging.level"), "{text}");
    let (_dir, proc_file) = folder(
        "pipelines = [\"a.toml\"]\n[logging]\nformat = \"xml\"\n",
        &[("a.toml", pipeline("a", 3306, 1))],
    );
    assert!(load(&proc_file, &[]).is_err());
}
