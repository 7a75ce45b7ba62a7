//! The process file: several pipelines in one `sluice run`.
//!
//! A file with a top-level `pipelines` key is a *process file*: it holds what belongs to the
//! process — `[api]` (one listener for every pipeline), `[cluster]`, `[logging]` — and lists
//! the pipeline files it runs
//! (paths or file-name globs, relative to the process file's folder). Each pipeline file is a
//! single-pipeline file without `[api]`. Any other file is a single pipeline file, loaded as
//! it always was ([`Config::load`]).
//!
//! ```toml
//! pipelines = ["pipelines/*.toml"]
//!
//! [api]
//! listen = "127.0.0.1:8089"
//! ```
//!
//! Invariants checked before any pipeline starts ([`check_pipelines`]): at least one
//! pipeline; names unique (the name is the pipeline's `transactional.id` and offsets key:
//! two pipelines of one name would fence each other); on one source server, the `server_id`s
//! and the XA replay ids derived from them (`server_id ^ 0x40000000`) all distinct (the server
//! drops a replica connection when another registers with the same id); one
//! `source.query_timeout_ms` for all (the setting is process-wide).
//!
//! Environment overrides: only `SLUICE_API_*` (the process's `[api]`). A `SLUICE_SOURCE_*`,
//! `SLUICE_KAFKA_*`, ... variable would apply to every pipeline at once, so it is refused
//! naming the pipeline file setting (or `*_file` secret) to use instead.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::load::read_file;
use super::{api, env, redact_text, ApiConfig, Config, ConfigError, Problem};

/// The settings of a process file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessConfig {
    /// The pipeline files this process runs, required, at least one entry: paths or globs
    /// (`*` and `?` in the file name only), relative to the process file's folder; matched
    /// files are run in name order, each once.
    pub pipelines: Vec<String>,
    /// The HTTP API of the process (`[api]`), serving every pipeline
    /// (`/pipelines/{name}/...`). Default: all defaults.
    #[serde(default)]
    pub api: ApiConfig,
    /// Cluster mode (`[cluster]`): instances with the same `group` share the pipelines
    /// through a Kafka consumer group. Default: none (this process runs every pipeline).
    #[serde(default)]
    pub cluster: Option<super::cluster::ClusterConfig>,
    /// The process's log level and line format (`[logging]`); `SLUICE_LOG`,
    /// `--log-format` / `SLUICE_LOG_FORMAT` take precedence. Default: info, text.
    #[serde(default)]
    pub logging: super::logging::LoggingConfig,
}

/// A loaded process file and its pipelines.
#[derive(Debug, Clone)]
pub struct Process {
    /// The process file.
    pub file: PathBuf,
    /// Its settings.
    pub settings: ProcessConfig,
    /// Each pipeline file and its configuration, in file name order.
    pub pipelines: Vec<(PathBuf, Config)>,
}

/// What a configuration file turned out to be.
#[derive(Debug, Clone)]
pub enum Loaded {
    /// A single pipeline file.
    Single(Box<Config>),
    /// A process file and the pipelines it lists.
    Process(Box<Process>),
}

/// Loads the file at `path` as a process file when it has a top-level `pipelines` key, as a
/// single pipeline file otherwise; applies the process's `SLUICE_*` environment.
pub fn load_any(path: &Path) -> Result<Loaded, ConfigError> {
    let text = read_file(path)?;
    if !is_process_file(&text) {
        return Config::load_text(path, &text).map(|c| Loaded::Single(Box::new(c)));
    }
    let env = env::process_env()?;
    load_process(path, &text, env).map(|p| Loaded::Process(Box::new(p)))
}

/// Whether `text` is a process file (TOML with a top-level `pipelines` key). Text that is not
/// TOML counts as a pipeline file, whose loading reports the syntax error.
pub fn is_process_file(text: &str) -> bool {
    text.parse::<toml::Table>()
        .map(|t| t.contains_key("pipelines"))
        .unwrap_or(false)
}

/// Loads a process file from `text` (found at `path`, whose folder the pipeline paths are
/// relative to), with the `SLUICE_*` variables of `env`.
pub fn load_process(
    path: &Path,
    text: &str,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Process, ConfigError> {
    let in_file = |e: ConfigError| match e {
        e @ (ConfigError::Env { .. } | ConfigError::InFile { .. }) => e,
        other => ConfigError::InFile {
            path: path.to_path_buf(),
            inner: Box::new(other),
        },
    };
    let settings = parse_process(text, env).map_err(in_file)?;
    let folder = path.parent().unwrap_or(Path::new("."));
    let itself = std::fs::canonicalize(path).ok();
    // A glob such as "*.toml" beside the process file matches the process file too.
    let files: Vec<PathBuf> = expand(folder, &settings.pipelines)
        .map_err(in_file)?
        .into_iter()
        .filter(|f| itself.is_none() || std::fs::canonicalize(f).ok() != itself)
        .collect();
    let mut pipelines = Vec::with_capacity(files.len());
    for file in files {
        let text = read_file(&file)?;
        let cfg = parse_pipeline(&text).map_err(|e| ConfigError::InFile {
            path: file.clone(),
            inner: Box::new(e),
        })?;
        pipelines.push((file, cfg));
    }
    let mut problems = check_pipelines(&pipelines);
    if settings.cluster.is_some() {
        problems.extend(check_cluster(&pipelines));
    }
    if !problems.is_empty() {
        return Err(in_file(ConfigError::Invalid(problems)));
    }
    Ok(Process {
        file: path.to_path_buf(),
        settings,
        pipelines,
    })
}

/// The process file's own settings: `SLUICE_API_*` applied, any other configuration
/// variable refused, `[api]` checked.
fn parse_process(
    text: &str,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<ProcessConfig, ConfigError> {
    let mut tree: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::Toml {
            message: redact_text(e.to_string().trim_end()),
        })?;
    let mut api_vars = Vec::new();
    for (var, value) in env {
        if !var.starts_with(env::ENV_PREFIX) || env::is_read_elsewhere(&var) {
            continue;
        }
        if !var.starts_with("SLUICE_API_") {
            return Err(ConfigError::Env {
                var,
                message: "sets a pipeline's setting, but the configuration is a process file \
                          running several pipelines, where it would apply to every one: set \
                          it in the pipeline files instead (secrets from files: \
                          source.password_file, schema_registry.password_file, \
                          kafka.security's *_file settings); only SLUICE_API_* apply to a \
                          process file"
                    .to_string(),
            });
        }
        api_vars.push((var, value));
    }
    // The environment table knows `[api]` as a section of a pipeline file: applied to a tree
    // holding only the process's `[api]`, then moved back.
    let mut api_tree = toml::Table::new();
    if let Some(a) = tree.remove("api") {
        api_tree.insert("api".into(), a);
    }
    env::apply(&mut api_tree, api_vars)?;
    if let Some(a) = api_tree.remove("api") {
        tree.insert("api".into(), a);
    }
    let mut settings: ProcessConfig =
        tree.try_into()
            .map_err(|e: toml::de::Error| ConfigError::Toml {
                message: format!(
                    "invalid process file: {}; a process file holds `pipelines = [...]`, `[api]`, \
                 `[cluster]` and `[logging]`, the pipelines' own settings go in the pipeline files",
                    redact_text(e.to_string().trim_end())
                ),
            })?;
    let mut problems = Vec::new();
    if let Err(p) = settings.api.read_token_file() {
        problems.push(p);
    }
    api::validate(&settings.api, &mut problems);
    if let Some(c) = &settings.cluster {
        super::cluster::validate(c, &mut problems);
    }
    super::logging::validate(&settings.logging, &mut problems);
    if settings.pipelines.is_empty() {
        problems.push(Problem::new(
            "pipelines",
            "an empty list",
            "at least one pipeline file or glob, e.g. [\"pipelines/*.toml\"]",
            "list the pipeline files this process runs",
        ));
    }
    if problems.is_empty() {
        Ok(settings)
    } else {
        Err(ConfigError::Invalid(problems))
    }
}

/// One pipeline file of a process: a pipeline file without `[api]`, no environment
/// overrides.
fn parse_pipeline(text: &str) -> Result<Config, ConfigError> {
    if let Ok(tree) = text.parse::<toml::Table>() {
        if tree.contains_key("api") {
            return Err(ConfigError::Invalid(vec![Problem::new(
                "api",
                "an [api] section in a pipeline file run by a process file",
                "[api] in the process file only (one listener serves every pipeline)",
                "move the [api] section to the process file",
            )]));
        }
        if tree.contains_key("pipelines") {
            return Err(ConfigError::Invalid(vec![Problem::new(
                "pipelines",
                "a process file listed as a pipeline file",
                "pipeline files only",
                "remove it from the process file's `pipelines`",
            )]));
        }
    }
    Config::from_str_with_env(text, std::iter::empty())
}

/// The files `patterns` name, relative to `folder`, in name order, each once.
fn expand(folder: &Path, patterns: &[String]) -> Result<Vec<PathBuf>, ConfigError> {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for (i, pattern) in patterns.iter().enumerate() {
        let setting = format!("pipelines[{i}]");
        let full = folder.join(pattern);
        let (dir, name) = match (full.parent(), full.file_name().and_then(|n| n.to_str())) {
            (Some(d), Some(n)) => (d.to_path_buf(), n.to_string()),
            _ => {
                problems.push(Problem::new(
                    setting,
                    format!("{pattern:?}, which names no file"),
                    "a file path or a glob such as \"pipelines/*.toml\"",
                    "correct the entry",
                ));
                continue;
            }
        };
        if has_wildcard(&dir.to_string_lossy()) {
            problems.push(Problem::new(
                setting,
                format!("{pattern:?}, with a wildcard in a folder name"),
                "wildcards (`*`, `?`) in the file name only",
                "name the folder, e.g. \"pipelines/*.toml\"",
            ));
            continue;
        }
        if !has_wildcard(&name) {
            if full.is_file() {
                files.push(full);
            } else {
                problems.push(Problem::new(
                    setting,
                    format!("`{}`, which is not a readable file", full.display()),
                    "an existing pipeline file (relative paths start at the process file's folder)",
                    "correct the path or create the file",
                ));
            }
            continue;
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| ConfigError::Read {
            path: dir.clone(),
            source: e,
        })?;
        let mut matched: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .filter(|e| e.file_name().to_str().is_some_and(|n| glob_match(&name, n)))
            .map(|e| e.path())
            .collect();
        if matched.is_empty() {
            problems.push(Problem::new(
                setting,
                format!("{pattern:?}, which matches no file in `{}`", dir.display()),
                "a glob matching at least one pipeline file",
                "correct the glob, or remove the entry",
            ));
        }
        matched.sort();
        files.append(&mut matched);
    }
    if !problems.is_empty() {
        return Err(ConfigError::Invalid(problems));
    }
    files.sort();
    files.dedup();
    Ok(files)
}

fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?'])
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters (none too) and
/// `?` one character. Names starting with `.` match only a pattern starting with `.`.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Iterative matching with one backtrack point (the last `*`): linear in practice.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The cross-pipeline rules of a process (module doc).
pub fn check_pipelines(pipelines: &[(PathBuf, Config)]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let shown = |p: &Path| p.display().to_string();
    for (i, (file, cfg)) in pipelines.iter().enumerate() {
        for (other_file, other) in &pipelines[..i] {
            if other.name == cfg.name {
                problems.push(Problem::new(
                    "name",
                    format!(
                        "{:?} in both `{}` and `{}`",
                        cfg.name,
                        shown(other_file),
                        shown(file)
                    ),
                    "a different name for every pipeline of the process",
                    "rename one (a pipeline of a new name starts afresh)",
                ));
                continue;
            }
            if !same_server(cfg, other) {
                continue;
            }
            let ids = |c: &Config| {
                [
                    c.source.server_id,
                    super::replay_server_id(c.source.server_id),
                ]
            };
            let clash = ids(cfg).iter().find(|id| ids(other).contains(id)).copied();
            if let Some(id) = clash {
                problems.push(Problem::new(
                    "source.server_id",
                    format!(
                        "{} in `{}` and {} in `{}`, which read the same server {}:{} and both \
                         use id {id} (a server_id, or the XA replay id server_id ^ 0x40000000 \
                         derived from it)",
                        cfg.source.server_id,
                        shown(file),
                        other.source.server_id,
                        shown(other_file),
                        cfg.source.url.host(),
                        cfg.source.url.port(),
                    ),
                    "server ids that differ, and differ from each other's XA replay ids, \
                     across the pipelines of one source server",
                    "give each pipeline on that server its own source.server_id (e.g. 5401, \
                     5402, ...)",
                ));
            }
        }
    }
    if let Some((first_file, first)) = pipelines.first() {
        for (file, cfg) in &pipelines[1..] {
            if cfg.source.query_timeout_ms != first.source.query_timeout_ms {
                problems.push(Problem::new(
                    "source.query_timeout_ms",
                    format!(
                        "{} in `{}` but {} in `{}`",
                        cfg.source.query_timeout_ms,
                        shown(file),
                        first.source.query_timeout_ms,
                        shown(first_file)
                    ),
                    "one value for every pipeline of a process (it applies process-wide)",
                    "set the same source.query_timeout_ms in every pipeline file",
                ));
            }
        }
    }
    problems
}

/// Cluster mode: the group and the pipelines' assignment topics live on one Kafka cluster,
/// reached with the first pipeline's connection settings, so every pipeline must name the
/// same `kafka.bootstrap_servers`.
fn check_cluster(pipelines: &[(PathBuf, Config)]) -> Vec<Problem> {
    let Some((first_file, first)) = pipelines.first() else {
        return Vec::new();
    };
    pipelines[1..]
        .iter()
        .filter(|(_, c)| c.kafka.bootstrap_servers != first.kafka.bootstrap_servers)
        .map(|(file, c)| {
            Problem::new(
                "kafka.bootstrap_servers",
                format!(
                    "{:?} in `{}` but {:?} in `{}`",
                    c.kafka.bootstrap_servers,
                    file.display(),
                    first.kafka.bootstrap_servers,
                    first_file.display()
                ),
                "one Kafka cluster for every pipeline of a process in cluster mode (the group \
                 and the assignment topics live there)",
                "run pipelines of other Kafka clusters in another process file",
            )
        })
        .collect()
}

/// Whether two pipelines read the same server (host compared without case).
fn same_server(a: &Config, b: &Config) -> bool {
    a.source.url.port() == b.source.url.port()
        && a.source
            .url
            .host()
            .eq_ignore_ascii_case(b.source.url.host())
}
