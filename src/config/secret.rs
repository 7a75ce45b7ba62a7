//! Secret handling for the configuration.
//!
//! - [`Secret`]: a wrapper whose `Debug`, `Display` and `Serialize` print `***`; the
//!   value is reached only through [`Secret::expose`] / [`Secret::into_inner`].
//! - [`SourceUrl`]: the parsed `mysql://` URL of `source.url`. Its `Display`, `Debug`
//!   and `Serialize` replace the password with `***`; its parse errors never quote it.
//! - [`is_secret_key`]: which librdkafka property values are secrets.
//! - [`redact_text`]: scrubs credentials out of free text we do not control, such as
//!   the TOML parser's error messages, which quote the offending source line.

use std::fmt;
use std::str::FromStr;

use percent_encoding::percent_decode_str;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use url::{Host, Url};

/// What is printed in place of a secret.
pub const REDACTED: &str = "***";

/// Substrings (matched case-insensitively) that make a librdkafka property value, a
/// URL query parameter or a `key = value` line secret.
pub const SECRET_KEY_MARKERS: &[&str] = &[
    "password",
    "passphrase",
    "secret",
    "private.key",
    "sasl.oauthbearer.config",
    "ssl.key",
    "ssl.keystore",
];

/// The properties librdkafka itself marks sensitive (`_RK_SENSITIVE` in its
/// `rdkafka_conf.c`), but `sasl.username`, which names the principal and is shown. A test
/// reads the vendored `rdkafka_conf.c` again, so a librdkafka upgrade that marks another one
/// fails until it is listed here.
pub const LIBRDKAFKA_SENSITIVE: &[&str] = &[
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.config",
    "sasl.password",
    "ssl.ca.pem",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl.keystore.password",
    "ssl_key",
];

/// Further substrings that make a `key = value` line (or a quoted source line) secret in
/// [`redact_text`]: the names of sluice's own secret settings not covered by
/// [`SECRET_KEY_MARKERS`] (`api.token`, a route's `column_hash` `salt`).
const LINE_SECRET_MARKERS: &[&str] = &["token", "salt"];

fn line_markers() -> impl Iterator<Item = &'static &'static str> {
    SECRET_KEY_MARKERS.iter().chain(LINE_SECRET_MARKERS)
}

/// Whether the value of a property or parameter named `key` is a secret: a property of
/// [`LIBRDKAFKA_SENSITIVE`], or a key that contains (case-insensitively) one of
/// [`SECRET_KEY_MARKERS`] (`password`, `passphrase`, `secret`, `private.key`, ...).
pub fn is_secret_key(key: &str) -> bool {
    let lower = key.trim().to_ascii_lowercase();
    LIBRDKAFKA_SENSITIVE.contains(&lower.as_str())
        || SECRET_KEY_MARKERS.iter().any(|m| lower.contains(m))
}

/// A value that must never be printed or logged.
///
/// `Debug`, `Display` and `Serialize` all produce `***`; `Deserialize` reads the inner
/// value transparently. Use [`Secret::expose`] at the single place that needs the value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps `value`.
    pub fn new(value: T) -> Self {
        Secret(value)
    }

    /// The secret value. Do not log it.
    pub fn expose(&self) -> &T {
        &self.0
    }

    /// Unwraps the secret value. Do not log it.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Secret(value)
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> Serialize for Secret<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Secret<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Secret)
    }
}

/// Why a `source.url` was refused. The text describes what was found and never contains
/// the password (nor the rest of the URL).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{found}")]
pub struct UrlError {
    /// What was wrong, phrased as "what was found", e.g. "a URL with no host".
    pub found: String,
}

impl UrlError {
    fn new(found: impl Into<String>) -> Self {
        UrlError {
            found: found.into(),
        }
    }
}

/// The expected shape of `source.url`, for error messages.
pub const SOURCE_URL_SHAPE: &str =
    "`mysql://` followed by user:password@host[:port][/database][?param=value&...] (MariaDB \
     too), with reserved characters such as @ : / ? # % in the user or password \
     percent-encoded (e.g. @ as %40)";

/// The parsed MySQL/MariaDB URL of `source.url`: `mysql://user:password@host[:port][/db][?params]`.
///
/// `Display`, `Debug` and `Serialize` show the URL with the password (and the value of any
/// query parameter whose name marks it as secret) replaced by `***`. User, password and
/// database are percent-decoded by the accessors.
#[derive(Clone, PartialEq, Eq)]
pub struct SourceUrl {
    url: Url,
    host: String,
    user: Option<String>,
    password: Option<Secret<String>>,
    database: Option<String>,
    params: Vec<(String, String)>,
}

impl SourceUrl {
    /// Port used when the URL names none.
    pub const DEFAULT_PORT: u16 = 3306;

    /// Parses and checks a `mysql://` URL: the scheme must be `mysql`, there must be a
    /// host, at most one path segment (the database) and no `#fragment`. The error never
    /// contains the password.
    pub fn parse(text: &str) -> Result<SourceUrl, UrlError> {
        let url = Url::parse(text.trim())
            .map_err(|e| UrlError::new(format!("a value that is not a valid URL ({e})")))?;
        if url.scheme() != "mysql" {
            return Err(UrlError::new(
                "a URL that does not start with `mysql://` (use mysql:// for MariaDB as well)",
            ));
        }
        let host = match url.host() {
            Some(Host::Domain(d)) if !d.is_empty() => d.to_string(),
            Some(Host::Ipv4(a)) => a.to_string(),
            Some(Host::Ipv6(a)) => a.to_string(),
            _ => return Err(UrlError::new("a URL with no host")),
        };
        if url.fragment().is_some() {
            return Err(UrlError::new(
                "a URL with a `#fragment`, which has no meaning here",
            ));
        }
        let user = decode(url.username(), "user name")?.filter(|u| !u.is_empty());
        let password = match url.password() {
            Some(p) => decode(p, "password")?.map(Secret::new),
            None => None,
        };
        let path = url.path().trim_start_matches('/');
        if path.contains('/') {
            return Err(UrlError::new(
                "a URL path with more than one segment (the path may only name one database)",
            ));
        }
        let database = decode(path, "database name")?.filter(|d| !d.is_empty());
        let params = url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Ok(SourceUrl {
            url,
            host,
            user,
            password,
            database,
            params,
        })
    }

    /// Host name or IP address (IPv6 without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// TCP port; 3306 when the URL names none.
    pub fn port(&self) -> u16 {
        self.url.port().unwrap_or(Self::DEFAULT_PORT)
    }

    /// User name, percent-decoded; `None` when the URL has none.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// Password, percent-decoded; `None` when the URL has none.
    pub fn password(&self) -> Option<&Secret<String>> {
        self.password.as_ref()
    }

    /// Database named by the URL path, percent-decoded; `None` when the path is empty.
    pub fn database(&self) -> Option<&str> {
        self.database.as_deref()
    }

    /// Query parameters in order, percent-decoded (e.g. `("ssl-mode", "REQUIRED")`).
    pub fn params(&self) -> &[(String, String)] {
        &self.params
    }

    /// Value of the first query parameter called `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The same URL with `password` (e.g. read from `source.password_file`).
    pub fn with_password(&self, password: &str) -> SourceUrl {
        let mut next = self.clone();
        // Cannot fail: the URL has a host (checked in `parse`); the crate percent-encodes.
        let _ = next.url.set_password(Some(password));
        next.password = Some(Secret::new(password.to_string()));
        next
    }

    /// The complete URL including the password, e.g. for the MySQL driver. Secret: do
    /// not log it.
    pub fn expose_url(&self) -> &str {
        self.url.as_str()
    }

    /// The URL with the password and secret query parameter values replaced by `***`.
    pub fn redacted(&self) -> String {
        let mut url = self.url.clone();
        if url.password().is_some() {
            // Cannot fail: the URL has a host (checked in `parse`).
            let _ = url.set_password(Some(REDACTED));
        }
        if self.params.iter().any(|(k, _)| is_secret_key(k)) {
            let pairs: Vec<(String, String)> = self
                .params
                .iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) {
                        REDACTED.to_string()
                    } else {
                        v.clone()
                    };
                    (k.clone(), v)
                })
                .collect();
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
        url.to_string()
    }
}

fn decode(raw: &str, what: &str) -> Result<Option<String>, UrlError> {
    percent_decode_str(raw)
        .decode_utf8()
        .map(|s| Some(s.into_owned()))
        .map_err(|_| UrlError::new(format!("a {what} that is not UTF-8 once percent-decoded")))
}

impl FromStr for SourceUrl {
    type Err = UrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SourceUrl::parse(s)
    }
}

impl fmt::Display for SourceUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for SourceUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SourceUrl({})", self.redacted())
    }
}

impl Serialize for SourceUrl {
    /// Serializes the redacted form: serialized configuration never carries the password.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.redacted())
    }
}

impl<'de> Deserialize<'de> for SourceUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        SourceUrl::parse(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid MySQL source URL: found {}; expected {SOURCE_URL_SHAPE}; fix: correct \
                 `source.url` (or SLUICE_SOURCE_URL)",
                e.found
            ))
        })
    }
}

/// Removes credentials from free text (e.g. a TOML parser error, which quotes the
/// offending source line), line by line:
///
/// - a quoted source line (`12 | content`, the TOML parser's format) whose content
///   contains `@` or a secret marker (see [`SECRET_KEY_MARKERS`], and `token`) is not shown
///   at all;
/// - in a URL (a token containing `://`, up to whitespace or a quote), everything
///   between the first `:` after `://` and the token's last `@` becomes `***`
///   (`mysql://u:pw@h` → `mysql://u:***@h`, even when the password is malformed);
/// - in a `key = value` line whose key contains a secret marker, everything after the
///   `=` becomes `***`.
///
/// It over-redacts rather than under-redacts.
pub fn redact_text(text: &str) -> String {
    text.split_inclusive('\n').map(redact_line).collect()
}

/// Text shown instead of a quoted source line that may hold a secret.
const HIDDEN_LINE: &str = "(line not shown: it may contain a secret)";

fn redact_line(line: &str) -> String {
    let (body, newline) = match line.strip_suffix('\n') {
        Some(b) => (b, "\n"),
        None => (line, ""),
    };
    let lower = body.to_ascii_lowercase();
    let has_marker = line_markers().any(|m| lower.contains(m));
    if let Some((gutter, content)) = body.split_once(" | ") {
        let g = gutter.trim_start();
        if !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()) {
            if content.contains('@') || has_marker {
                return format!("{gutter} | {HIDDEN_LINE}{newline}");
            }
            return line.to_string();
        }
    }
    let mut out = redact_urls(body);
    let lower = out.to_ascii_lowercase();
    let marker_pos = line_markers().filter_map(|m| lower.find(m)).min();
    if let Some(pos) = marker_pos {
        // Only `key = value` shapes: between the marker and `=` nothing but key characters,
        // quotes and spaces.
        let eq = out[pos..]
            .find(|c: char| {
                !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '"' | '\'' | ' '))
            })
            .filter(|&i| out[pos + i..].starts_with('='));
        if let Some(eq_rel) = eq {
            out.replace_range(pos + eq_rel + 1.., &format!(" {REDACTED}"));
        }
    }
    out.push_str(newline);
    out
}

fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("://") {
        let auth_start = pos + 3;
        out.push_str(&rest[..auth_start]);
        let after = &rest[auth_start..];
        let token_len = after
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`'))
            .unwrap_or(after.len());
        let token = &after[..token_len];
        match (token.find(':'), token.rfind('@')) {
            (Some(colon), Some(at)) if colon < at => {
                out.push_str(&token[..=colon]);
                out.push_str(REDACTED);
                out.push_str(&token[at..]);
            }
            _ => out.push_str(token),
        }
        rest = &after[token_len..];
    }
    out.push_str(rest);
    out
}

/// The secret held in the file at `path` (its content, surrounding whitespace removed) for
/// the setting `setting` (e.g. `api.token_file`); the problem names the setting when the file
/// cannot be read or is empty. The content never appears in the problem.
pub(super) fn read_secret_file(setting: &str, path: &str) -> Result<String, super::Problem> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        super::Problem::new(
            setting,
            format!("`{path}`, which cannot be read: {}", e.kind()),
            "the path of a readable file holding the secret",
            format!("correct {setting} (relative paths start at the working directory)"),
        )
    })?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(super::Problem::new(
            setting,
            format!("`{path}`, which is empty"),
            "a file holding the secret",
            format!("write the secret into the file {setting} names"),
        ));
    }
    Ok(secret.to_string())
}

/// The problem of a secret set both in the configuration and through a file.
pub(super) fn both_set(setting: &str, file_setting: &str) -> super::Problem {
    super::Problem::new(
        file_setting,
        format!("both {setting} and {file_setting}"),
        "one of them",
        format!("remove {setting} (or its environment variable), or {file_setting}"),
    )
}
