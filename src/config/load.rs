//! Loading a [`Config`]: reading the file, applying the `SLUICE_*` environment overrides
//! (`env`) to the parsed TOML tree, deserializing it (the default route filled in) and
//! validating; [`load_from_str`] and `FromStr` do the same from text.
//!
//! Invariant: every failure is a [`ConfigError`] with no secret in it (the TOML parser's
//! messages are redacted), and what `load`, `from_str_with_env` and `from_str` return has
//! passed [`Config::validate`].

use std::path::Path;
use std::str::FromStr;

use super::{env, redact_text, Config, ConfigError};

/// Parses, applies `env` and validates: the same as [`Config::from_str_with_env`].
pub fn load_from_str(
    text: &str,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Config, ConfigError> {
    Config::from_str_with_env(text, env)
}

impl Config {
    /// Reads the file at `path`, applies the process's `SLUICE_*` environment variables
    /// and validates. Errors about the file's content are wrapped in
    /// [`ConfigError::InFile`].
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = read_file(path)?;
        Config::load_text(path, &text)
    }

    /// [`Config::load`] of `text`, already read from `path`.
    pub(super) fn load_text(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let env = env::process_env()?;
        Config::from_str_with_env(text, env).map_err(|e| match e {
            e @ ConfigError::Env { .. } => e,
            other => ConfigError::InFile {
                path: path.to_path_buf(),
                inner: Box::new(other),
            },
        })
    }

    /// Parses TOML `text`, applies the `SLUICE_*` variables of `env` (other variables are
    /// ignored) and validates.
    pub fn from_str_with_env(
        text: &str,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let config = Config::parse_with_env(text, env)?;
        config.validate()?;
        Ok(config)
    }

    /// Like [`Config::from_str_with_env`] but without [`Config::validate`]: only syntax,
    /// unknown keys and types are checked. Fills in the default route.
    pub fn parse_with_env(
        text: &str,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut tree: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ConfigError::Toml {
                    message: redact_text(e.to_string().trim_end()),
                })?;
        let applied = env::apply(&mut tree, env)?;
        let mut config: Config = match tree.try_into() {
            Ok(c) => c,
            Err(err) => return Err(deserialize_error(text, &err, &applied)),
        };
        if config.routes.is_empty() {
            config.routes.push(Config::default_route(&config.name));
        }
        // Secrets kept in files.
        let problems: Vec<_> = [
            config.source.read_password_file(),
            config.schema_registry.read_password_file(),
            config.api.read_token_file(),
        ]
        .into_iter()
        .filter_map(|r| r.err())
        .chain(
            config
                .kafka
                .security
                .as_mut()
                .map(|s| s.read_secret_files())
                .unwrap_or_default(),
        )
        .chain(config.routes.iter_mut().enumerate().flat_map(|(i, route)| {
            route
                .column_hash
                .iter_mut()
                .enumerate()
                .filter_map(move |(j, hash)| {
                    hash.read_salt_file(&format!("route[{i}].column_hash[{j}]"))
                        .err()
                })
        }))
        .collect();
        if !problems.is_empty() {
            return Err(ConfigError::Invalid(problems));
        }
        Ok(config)
    }
}

impl FromStr for Config {
    type Err = ConfigError;

    /// Parses and validates `text` without environment overrides.
    fn from_str(text: &str) -> Result<Config, ConfigError> {
        Config::from_str_with_env(text, std::iter::empty())
    }
}

/// Turns a deserialization error of the merged tree into a [`ConfigError::Toml`]. The
/// merged tree has no positions, so when the file alone fails the same way its error
/// (with line, column and source line) is used instead, except for missing keys. Always
/// redacted.
fn deserialize_error(text: &str, err: &toml::de::Error, applied: &[String]) -> ConfigError {
    let missing = err.message().starts_with("missing field");
    // A missing key has no useful position (the parser points at the enclosing table's
    // first line); the tree error names the section instead.
    let mut message = match toml::from_str::<Config>(text) {
        Err(file_err) if !missing && file_err.message() == err.message() => file_err.to_string(),
        _ => err.to_string(),
    };
    let trimmed = message.trim_end().len();
    message.truncate(trimmed);
    if missing {
        message.push_str(
            "\nfix: add the setting to the file (see examples/full.toml) or set it with its \
             SLUICE_<SECTION>_<FIELD> environment variable",
        );
    }
    if !applied.is_empty() {
        message.push_str(&format!(
            "\n(environment overrides applied: {})",
            applied.join(", ")
        ));
    }
    ConfigError::Toml {
        message: format!("invalid configuration: {}", redact_text(&message)),
    }
}

/// The text of the configuration file at `path`; a missing file is
/// [`ConfigError::NotFound`].
pub(super) fn read_file(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ConfigError::NotFound {
                path: path.to_path_buf(),
            }
        } else {
            ConfigError::Read {
                path: path.to_path_buf(),
                source: e,
            }
        }
    })
}
