//! `[kafka.security]`: how sluice authenticates to Kafka and protects its connections
//! ([`KafkaSecurity`]): the security protocol, the SASL mechanism and credentials, the CA that
//! signs the brokers' certificates and a client certificate for mutual TLS. The section maps
//! onto librdkafka's `security.protocol`, `sasl.*` and `ssl.*` properties
//! ([`KafkaSecurity::librdkafka_properties`]); without it those properties may still be set
//! in `[kafka.properties]`, as before. With it, `[kafka.properties]` may not set a property
//! the section owns ([`KafkaSecurity::owned_properties`]): two places for one value would
//! leave it unclear which one wins.
//!
//! Invariant: neither `Debug` nor the serialized form shows `password` or `key_password`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, Serializer};

use super::error::push_unless_pem_file;
use super::secret::{both_set, read_secret_file, Secret, REDACTED};
use super::Problem;

/// `kafka.security.protocol`: librdkafka's `security.protocol`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KafkaProtocol {
    /// No TLS, no authentication: the broker sees `User:ANONYMOUS`.
    #[default]
    Plaintext,
    /// TLS; with `cert_file` the client certificate authenticates (mutual TLS).
    Ssl,
    /// SASL authentication without TLS: credentials and records cross the network readable
    /// (PLAIN sends the password itself).
    SaslPlaintext,
    /// SASL authentication over TLS.
    SaslSsl,
}

impl KafkaProtocol {
    /// The librdkafka value.
    pub fn librdkafka(self) -> &'static str {
        match self {
            KafkaProtocol::Plaintext => "PLAINTEXT",
            KafkaProtocol::Ssl => "SSL",
            KafkaProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            KafkaProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The TOML value.
    pub fn setting(self) -> &'static str {
        match self {
            KafkaProtocol::Plaintext => "plaintext",
            KafkaProtocol::Ssl => "ssl",
            KafkaProtocol::SaslPlaintext => "sasl_plaintext",
            KafkaProtocol::SaslSsl => "sasl_ssl",
        }
    }

    /// Whether connections use TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, KafkaProtocol::Ssl | KafkaProtocol::SaslSsl)
    }

    /// Whether the client authenticates with SASL.
    pub fn uses_sasl(self) -> bool {
        matches!(self, KafkaProtocol::SaslPlaintext | KafkaProtocol::SaslSsl)
    }
}

/// `kafka.security.mechanism`: librdkafka's `sasl.mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaslMechanism {
    /// User name and password, sent as they are (over TLS only, in practice).
    #[serde(rename = "PLAIN")]
    Plain,
    /// Salted challenge-response, SHA-256.
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    /// Salted challenge-response, SHA-512.
    #[serde(rename = "SCRAM-SHA-512")]
    ScramSha512,
    /// Kerberos: its settings (`sasl.kerberos.*`) go in `[kafka.properties]`.
    #[serde(rename = "GSSAPI")]
    Gssapi,
    /// OAuth 2 bearer tokens: their settings (`sasl.oauthbearer.*`) go in
    /// `[kafka.properties]`.
    #[serde(rename = "OAUTHBEARER")]
    OAuthBearer,
}

impl SaslMechanism {
    /// The librdkafka (and TOML) value.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::Gssapi => "GSSAPI",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// Whether it authenticates with `username` and `password`.
    pub fn uses_password(self) -> bool {
        matches!(
            self,
            SaslMechanism::Plain | SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512
        )
    }
}

/// `[kafka.security]`: how sluice authenticates to Kafka and protects its connections.
///
/// `Debug` and the serialized form show `password` and `key_password` as `***`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSecurity {
    /// `"plaintext"`, `"ssl"`, `"sasl_plaintext"` or `"sasl_ssl"` (librdkafka's
    /// `security.protocol`). Default: `"plaintext"`.
    #[serde(default)]
    pub protocol: KafkaProtocol,
    /// SASL mechanism, required with a `sasl_*` protocol: `"SCRAM-SHA-512"`,
    /// `"SCRAM-SHA-256"`, `"PLAIN"`, `"GSSAPI"` or `"OAUTHBEARER"` (librdkafka's
    /// `sasl.mechanism`; the last two take their settings from `[kafka.properties]`).
    /// Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<SaslMechanism>,
    /// SASL user name (PLAIN and SCRAM); the broker's principal is `User:<username>`.
    /// Default: empty.
    #[serde(default)]
    pub username: String,
    /// SASL password (PLAIN and SCRAM); secret, never printed. Default: empty.
    #[serde(default, serialize_with = "serialize_secret")]
    pub password: Secret<String>,
    /// A file holding the SASL password (its content, surrounding whitespace removed), read
    /// at start; instead of `password`. Default: empty (none).
    #[serde(default)]
    pub password_file: String,
    /// PEM file of the CA certificate(s) the brokers' certificates must be signed by
    /// (`ssl.ca.location`); TLS protocols only. Default: empty (the system's roots).
    #[serde(default)]
    pub ca_file: PathBuf,
    /// PEM file of the client certificate (chain) for mutual TLS (`ssl.certificate.location`);
    /// needs `key_file`. With protocol `"ssl"` the broker's principal is `User:<the
    /// certificate's subject>` (under the broker's default `ssl.principal.mapping.rules`).
    /// Default: empty (none).
    #[serde(default)]
    pub cert_file: PathBuf,
    /// PEM file of the private key of `cert_file` (`ssl.key.location`). Default: empty.
    #[serde(default)]
    pub key_file: PathBuf,
    /// Password of an encrypted `key_file` (`ssl.key.password`); secret. Default: empty.
    #[serde(default, serialize_with = "serialize_secret")]
    pub key_password: Secret<String>,
    /// A file holding `key_password`, read at start; instead of it. Default: empty (none).
    #[serde(default)]
    pub key_password_file: String,
    /// Whether the broker's certificate must name the host sluice connects to
    /// (`ssl.endpoint.identification.algorithm = "https"`; `false` sets `"none"`: any
    /// certificate the CA signed is accepted, a man in the middle with one is not noticed).
    /// TLS protocols only. Default: true.
    #[serde(default = "default_verify_hostname")]
    pub verify_hostname: bool,
}

fn default_verify_hostname() -> bool {
    true
}

impl Default for KafkaSecurity {
    fn default() -> Self {
        KafkaSecurity {
            protocol: KafkaProtocol::default(),
            mechanism: None,
            username: String::new(),
            password: Secret::default(),
            password_file: String::new(),
            ca_file: PathBuf::new(),
            cert_file: PathBuf::new(),
            key_file: PathBuf::new(),
            key_password: Secret::default(),
            key_password_file: String::new(),
            verify_hostname: default_verify_hostname(),
        }
    }
}

/// An empty secret is written as `""` (there is nothing to hide), any other as `***`.
fn serialize_secret<S: Serializer>(p: &Secret<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if p.expose().is_empty() { "" } else { REDACTED })
}

impl fmt::Debug for KafkaSecurity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured without `..` so that a new field cannot be forgotten here.
        let KafkaSecurity {
            protocol,
            mechanism,
            username,
            password,
            password_file,
            ca_file,
            cert_file,
            key_file,
            key_password,
            key_password_file,
            verify_hostname,
        } = self;
        f.debug_struct("KafkaSecurity")
            .field("protocol", protocol)
            .field("mechanism", mechanism)
            .field("username", username)
            .field("password", password)
            .field("password_file", password_file)
            .field("ca_file", ca_file)
            .field("cert_file", cert_file)
            .field("key_file", key_file)
            .field("key_password", key_password)
            .field("key_password_file", key_password_file)
            .field("verify_hostname", verify_hostname)
            .finish()
    }
}

/// The librdkafka properties the section sets (as [`KafkaSecurity::owned_properties`]
/// reports them), and aliases librdkafka reads as the same value.
const ALWAYS_OWNED: &[(&str, &str)] = &[
    ("security.protocol", "kafka.security.protocol"),
    ("sasl.mechanism", "kafka.security.mechanism"),
    ("sasl.mechanisms", "kafka.security.mechanism"),
    ("sasl.username", "kafka.security.username"),
    ("sasl.password", "kafka.security.password"),
    (
        "ssl.endpoint.identification.algorithm",
        "kafka.security.verify_hostname",
    ),
];

impl KafkaSecurity {
    /// The librdkafka properties this section stands for.
    pub fn librdkafka_properties(&self) -> Vec<(&'static str, String)> {
        let mut props = vec![("security.protocol", self.protocol.librdkafka().to_string())];
        if let Some(m) = self.mechanism {
            props.push(("sasl.mechanism", m.name().to_string()));
            if m.uses_password() {
                props.push(("sasl.username", self.username.clone()));
                props.push(("sasl.password", self.password.expose().clone()));
            }
        }
        if self.protocol.uses_tls() {
            let algorithm = if self.verify_hostname {
                "https"
            } else {
                "none"
            };
            props.push(("ssl.endpoint.identification.algorithm", algorithm.into()));
            for (key, file) in [
                ("ssl.ca.location", &self.ca_file),
                ("ssl.certificate.location", &self.cert_file),
                ("ssl.key.location", &self.key_file),
            ] {
                if !file.as_os_str().is_empty() {
                    props.push((key, file.display().to_string()));
                }
            }
            if !self.key_password.expose().is_empty() {
                props.push(("ssl.key.password", self.key_password.expose().clone()));
            }
        }
        props
    }

    /// The librdkafka properties `[kafka.properties]` may not set beside this section, each
    /// with the setting that owns it: the protocol, mechanism, credentials and host check
    /// always, the CA, certificate and key (in either of librdkafka's forms) when the section
    /// sets them.
    pub fn owned_properties(&self) -> Vec<(&'static str, &'static str)> {
        let mut owned = ALWAYS_OWNED.to_vec();
        let files: [(&Path, &[&'static str], &'static str); 3] = [
            (
                &self.ca_file,
                &["ssl.ca.location", "ssl.ca.pem"],
                "kafka.security.ca_file",
            ),
            (
                &self.cert_file,
                &[
                    "ssl.certificate.location",
                    "ssl.certificate.pem",
                    "ssl.keystore.location",
                ],
                "kafka.security.cert_file",
            ),
            (
                &self.key_file,
                &["ssl.key.location", "ssl.key.pem", "ssl.key.password"],
                "kafka.security.key_file",
            ),
        ];
        for (file, keys, setting) in files {
            if !file.as_os_str().is_empty() {
                owned.extend(keys.iter().map(|k| (*k, setting)));
            }
        }
        owned
    }

    /// Reads `password_file` and `key_password_file`; a problem names the setting when a
    /// secret is set both ways, or its file cannot be read or is empty.
    pub(super) fn read_secret_files(&mut self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for (value, file, setting, file_setting) in [
            (
                &mut self.password,
                &self.password_file,
                "kafka.security.password",
                "kafka.security.password_file",
            ),
            (
                &mut self.key_password,
                &self.key_password_file,
                "kafka.security.key_password",
                "kafka.security.key_password_file",
            ),
        ] {
            let path = file.trim();
            if path.is_empty() {
                continue;
            }
            if !value.expose().is_empty() {
                problems.push(both_set(setting, file_setting));
                continue;
            }
            match read_secret_file(file_setting, path) {
                Ok(secret) => *value = Secret::new(secret),
                Err(p) => problems.push(p),
            }
        }
        problems
    }

    /// Checks the section on its own and against `properties` (`[kafka.properties]`).
    pub(super) fn validate(
        &self,
        properties: &std::collections::BTreeMap<String, String>,
        problems: &mut Vec<Problem>,
    ) {
        let protocol = self.protocol.setting();
        match (self.protocol.uses_sasl(), self.mechanism) {
            (true, None) => problems.push(Problem::new(
                "kafka.security.mechanism",
                format!("none, with protocol = \"{protocol}\""),
                "the SASL mechanism of the brokers' listener",
                "set kafka.security.mechanism, e.g. \"SCRAM-SHA-512\", \"SCRAM-SHA-256\" or \"PLAIN\"",
            )),
            (false, Some(m)) => problems.push(Problem::new(
                "kafka.security.mechanism",
                format!("\"{}\" with protocol = \"{protocol}\"", m.name()),
                "a mechanism only with protocol \"sasl_ssl\" or \"sasl_plaintext\"",
                "set kafka.security.protocol = \"sasl_ssl\", or remove the mechanism",
            )),
            _ => {}
        }
        if self.mechanism == Some(SaslMechanism::Gssapi) {
            problems.push(Problem::new(
                "kafka.security.mechanism",
                "\"GSSAPI\"",
                "a mechanism this build of sluice supports: SCRAM-SHA-512, SCRAM-SHA-256, PLAIN \
                 or OAUTHBEARER (its librdkafka is built without Cyrus SASL, which Kerberos needs)",
                "use SCRAM or mutual TLS for this cluster, or a sluice built with rdkafka's \
                 `gssapi` feature (see the README's Kafka security section)",
            ));
        }
        self.validate_credentials(problems);
        self.validate_tls(problems);
        for (key, setting) in self.owned_properties() {
            if properties.contains_key(key) {
                problems.push(Problem::new(
                    format!("kafka.properties.{key:?}"),
                    format!("`{key}` beside [kafka.security]"),
                    format!("one place for the value: {setting} sets `{key}`"),
                    format!("remove `{key}` from [kafka.properties] and use {setting}"),
                ));
            }
        }
    }

    fn validate_credentials(&self, problems: &mut Vec<Problem>) {
        let Some(m) = self.mechanism else {
            for (set, setting) in [
                (!self.username.is_empty(), "kafka.security.username"),
                (
                    !self.password.expose().is_empty(),
                    "kafka.security.password",
                ),
            ] {
                if set {
                    problems.push(Problem::new(
                        setting,
                        "a SASL credential without kafka.security.mechanism",
                        "credentials only with a SASL protocol and mechanism",
                        format!(
                            "set kafka.security.protocol = \"sasl_ssl\" and a mechanism, or remove {setting}"
                        ),
                    ));
                }
            }
            return;
        };
        let name = m.name();
        if m.uses_password() {
            if self.username.trim().is_empty() {
                problems.push(Problem::new(
                    "kafka.security.username",
                    "an empty user name",
                    format!("the SASL user sluice logs in as with {name}"),
                    "set kafka.security.username (or SLUICE_KAFKA_SECURITY_USERNAME)",
                ));
            }
            if self.password.expose().is_empty() {
                problems.push(Problem::new(
                    "kafka.security.password",
                    "an empty password",
                    format!("the SASL user's password ({name})"),
                    "set kafka.security.password_file to a file holding it (or \
                     kafka.security.password, or SLUICE_KAFKA_SECURITY_PASSWORD)",
                ));
            }
        } else {
            for (set, setting) in [
                (!self.username.is_empty(), "kafka.security.username"),
                (
                    !self.password.expose().is_empty(),
                    "kafka.security.password",
                ),
            ] {
                if set {
                    problems.push(Problem::new(
                        setting,
                        format!("a user name or password with mechanism \"{name}\""),
                        "credentials only with PLAIN or SCRAM",
                        format!(
                            "remove {setting}; {name} takes its settings from [kafka.properties] \
                             (`sasl.kerberos.*` / `sasl.oauthbearer.*`)"
                        ),
                    ));
                }
            }
        }
    }

    fn validate_tls(&self, problems: &mut Vec<Problem>) {
        let files = [
            ("kafka.security.ca_file", &self.ca_file),
            ("kafka.security.cert_file", &self.cert_file),
            ("kafka.security.key_file", &self.key_file),
        ];
        if !self.protocol.uses_tls() {
            let tls_settings = files
                .iter()
                .filter(|(_, f)| !f.as_os_str().is_empty())
                .map(|(s, _)| *s)
                .chain((!self.verify_hostname).then_some("kafka.security.verify_hostname"))
                .chain(
                    (!self.key_password.expose().is_empty())
                        .then_some("kafka.security.key_password"),
                );
            for setting in tls_settings {
                problems.push(Problem::new(
                    setting,
                    format!(
                        "a TLS setting with protocol = \"{}\"",
                        self.protocol.setting()
                    ),
                    "TLS settings only with protocol \"ssl\" or \"sasl_ssl\"",
                    format!("set kafka.security.protocol to \"ssl\" or \"sasl_ssl\", or remove {setting}"),
                ));
            }
            return;
        }
        for (setting, file) in files {
            if !file.as_os_str().is_empty() {
                push_unless_pem_file(problems, setting, file);
            }
        }
        let (cert, key) = (
            !self.cert_file.as_os_str().is_empty(),
            !self.key_file.as_os_str().is_empty(),
        );
        if cert != key {
            let (set, missing) = if cert {
                ("kafka.security.cert_file", "kafka.security.key_file")
            } else {
                ("kafka.security.key_file", "kafka.security.cert_file")
            };
            problems.push(Problem::new(
                missing,
                format!("none, with {set}"),
                "a client certificate and its private key together",
                format!("set {missing} too, or remove {set}"),
            ));
        }
        if !key && !self.key_password.expose().is_empty() {
            problems.push(Problem::new(
                "kafka.security.key_password",
                "a key password without kafka.security.key_file",
                "a key password only for an encrypted key_file",
                "set kafka.security.key_file, or remove kafka.security.key_password",
            ));
        }
    }
}

#[cfg(test)]
#[path = "kafka_security_tests.rs"]
mod tests;
