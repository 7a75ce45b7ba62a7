//! What loading a configuration reports when it fails: [`Problem`] (one setting that parsed
//! but is not acceptable: where, what was found, what is expected and how to fix it) and
//! [`ConfigError`] (why a configuration could not be loaded), whose `Invalid` message lists
//! every problem at once.
//!
//! Invariant: no message made here contains a secret value; the texts are matched byte for
//! byte by tests and by operators' tooling, so they change only on purpose.

use std::fmt;
use std::path::PathBuf;

/// One thing wrong with a setting: where, what was found, what is expected and how to
/// fix it. Never contains a secret value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Setting path, e.g. `source.server_id`, `route[1].match`, `source.include[0]`.
    pub path: String,
    /// What was found.
    pub found: String,
    /// What is expected.
    pub expected: String,
    /// How to fix it.
    pub fix: String,
}

impl Problem {
    /// Builds a problem report.
    pub fn new(
        path: impl Into<String>,
        found: impl Into<String>,
        expected: impl Into<String>,
        fix: impl Into<String>,
    ) -> Problem {
        Problem {
            path: path.into(),
            found: found.into(),
            expected: expected.into(),
            fix: fix.into(),
        }
    }
}

/// Reports `path` when its `value` is 0, where at least 1 is `expected`.
pub(crate) fn push_if_zero<N: PartialEq + Default>(
    problems: &mut Vec<Problem>,
    value: N,
    path: &str,
    expected: &str,
    fix: impl Into<String>,
) {
    if value == N::default() {
        problems.push(Problem::new(path, "0", expected, fix));
    }
}

/// Reports `path` when `file` is not a readable file; says whether it is one.
pub(crate) fn push_unless_pem_file(
    problems: &mut Vec<Problem>,
    path: &str,
    file: &std::path::Path,
) -> bool {
    if file.is_file() {
        return true;
    }
    problems.push(Problem::new(
        path,
        format!("`{}`, which is not a readable file", file.display()),
        "the path of an existing PEM file",
        format!("correct {path} (relative paths start at the working directory)"),
    ));
    false
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: found {}; expected {}; fix: {}",
            self.path, self.found, self.expected, self.fix
        )
    }
}

fn format_problems(problems: &[Problem]) -> String {
    match problems {
        [one] => format!("invalid configuration: {one}"),
        many => {
            let mut out = format!("invalid configuration ({} problems):", many.len());
            for p in many {
                out.push_str("\n  - ");
                out.push_str(&p.to_string());
            }
            out
        }
    }
}

/// Why a configuration could not be loaded. No variant's text contains a secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The configuration file does not exist.
    #[error(
        "configuration file `{}` not found; fix: check the path (start from \
         examples/quickstart.toml or examples/full.toml)",
        path.display()
    )]
    NotFound {
        /// The path that was tried.
        path: PathBuf,
    },
    /// The configuration file exists but could not be read.
    #[error("cannot read configuration file `{}`: {source}", path.display())]
    Read {
        /// The path that was tried.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// TOML syntax error, unknown key, missing required key or wrong type. The message
    /// is the TOML parser's (with line and column where known, and the key), redacted.
    #[error("{message}")]
    Toml {
        /// The (redacted) message.
        message: String,
    },
    /// A `SLUICE_*` environment variable is unknown or has an unusable value.
    #[error("environment variable {var}: {message}")]
    Env {
        /// The variable's name.
        var: String,
        /// What is wrong and how to fix it (never the value of a secret).
        message: String,
    },
    /// Settings that parsed but are not acceptable (see [`Problem`]).
    #[error("{}", format_problems(.0))]
    Invalid(Vec<Problem>),
    /// An error in the named configuration file.
    #[error("in configuration file `{}`: {inner}", path.display())]
    InFile {
        /// The configuration file.
        path: PathBuf,
        /// The error.
        inner: Box<ConfigError>,
    },
}

impl ConfigError {
    /// The validation problems this error reports (looking inside
    /// [`ConfigError::InFile`]); empty for other kinds of error.
    pub fn problems(&self) -> &[Problem] {
        match self {
            ConfigError::Invalid(p) => p,
            ConfigError::InFile { inner, .. } => inner.problems(),
            _ => &[],
        }
    }
}
