//! Who sluice is to the Kafka brokers ([`KafkaIdentity`]): the security protocol, the SASL
//! mechanism and the principal the brokers' authorizer checks ACLs against, worked out from
//! the effective librdkafka properties (so `[kafka.security]` and properties passed through
//! give the same answer). Kafka's authorization errors do not name the principal; sluice's
//! do: the ACL hints of [`super::classify`] and [`super::topics`] hold the mark
//! [`PRINCIPAL`], which [`KafkaIdentity::name_in`] replaces with the principal.
//!
//! The principal is what the broker derives under its defaults: `User:<sasl.username>` for
//! PLAIN and SCRAM, `User:<subject>` of the client certificate for SSL (the subject in RFC
//! 2253 form, as the broker's default `ssl.principal.mapping.rules` give it),
//! `User:ANONYMOUS` for PLAINTEXT and for SSL without a client certificate. A broker with
//! its own mapping rules or principal builder may name it otherwise; the caveat says so.

use rdkafka::config::ClientConfig;

use crate::error::Error;

/// The mark in an error message that stands for sluice's principal.
pub const PRINCIPAL: &str = "<principal>";

/// The mark in an ACL hint that stands for the pipeline's name (in `sluice-<name>`, the
/// transactional id, and the group names).
pub const PIPELINE: &str = "<name>";

/// Who sluice is to the brokers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaIdentity {
    /// librdkafka's `security.protocol`, upper case (`PLAINTEXT` when unset).
    pub protocol: String,
    /// `sasl.mechanism` with a SASL protocol.
    pub mechanism: Option<String>,
    /// The principal, e.g. `User:writer` or `User:CN=sluice,O=Example`.
    pub principal: String,
    /// How sure that is, when the broker's own settings decide it.
    pub caveat: Option<String>,
    /// The pipeline's name, for [`PIPELINE`] (`None`: the mark stays).
    pub pipeline: Option<String>,
}

impl KafkaIdentity {
    /// The identity the client config `client` gives.
    pub fn of(client: &ClientConfig) -> Self {
        let get = |k: &str| client.get(k).map(str::trim).filter(|v| !v.is_empty());
        let protocol = get("security.protocol")
            .unwrap_or("plaintext")
            .to_ascii_uppercase();
        let sasl = protocol.starts_with("SASL_");
        let mechanism = sasl.then(|| {
            get("sasl.mechanism")
                .or_else(|| get("sasl.mechanisms"))
                .unwrap_or("GSSAPI")
                .to_ascii_uppercase()
        });
        let (principal, caveat) = match mechanism.as_deref() {
            Some("PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512") => {
                (format!("User:{}", get("sasl.username").unwrap_or("")), None)
            }
            Some("GSSAPI") => (
                format!(
                    "User:{}",
                    get("sasl.kerberos.principal")
                        .map(kerberos_short_name)
                        .unwrap_or("kafkaclient")
                ),
                Some("the broker's sasl.kerberos.principal.to.local.rules decide the name".into()),
            ),
            Some(_) => (
                "User:<the token's subject>".to_string(),
                Some("an OAUTHBEARER principal is the token's `sub` claim".into()),
            ),
            None if protocol == "SSL" => match client_certificate_subject(client) {
                Some(Ok(subject)) => (
                    format!("User:{subject}"),
                    Some("under the broker's default ssl.principal.mapping.rules".into()),
                ),
                Some(Err(e)) => (
                    "User:<the client certificate's subject>".to_string(),
                    Some(format!("the certificate could not be read: {e}")),
                ),
                None => ("User:ANONYMOUS".to_string(), None),
            },
            None => ("User:ANONYMOUS".to_string(), None),
        };
        KafkaIdentity {
            protocol,
            mechanism,
            principal,
            caveat,
            pipeline: None,
        }
    }

    /// The identity of the pipeline `name` (whose name then fills [`PIPELINE`] too).
    pub fn of_pipeline(client: &ClientConfig, name: &str) -> Self {
        KafkaIdentity {
            pipeline: Some(name.to_string()),
            ..KafkaIdentity::of(client)
        }
    }

    /// One line for `sluice check` and the start log.
    pub fn describe(&self) -> String {
        let mut s = format!("security.protocol {}", self.protocol);
        if let Some(m) = &self.mechanism {
            s.push_str(&format!(", sasl.mechanism {m}"));
        }
        s.push_str(&format!(", principal {}", self.principal));
        if let Some(c) = &self.caveat {
            s.push_str(&format!(" ({c})"));
        }
        s
    }

    /// What to warn about: credentials or records that cross the network readable.
    pub fn warning(&self) -> Option<String> {
        match (self.protocol.as_str(), self.mechanism.as_deref()) {
            ("SASL_PLAINTEXT", Some("PLAIN")) => Some(
                "SASL_PLAINTEXT with PLAIN sends the password readable to anyone on the path: \
                 use protocol sasl_ssl"
                    .into(),
            ),
            ("SASL_PLAINTEXT", _) => Some(
                "SASL_PLAINTEXT: the records cross the network unencrypted: use protocol sasl_ssl"
                    .into(),
            ),
            _ => None,
        }
    }

    /// `e` with the principal in place of [`PRINCIPAL`] (kind and cause kept).
    pub fn name_in(&self, e: Error) -> Error {
        if !e.message().contains(PRINCIPAL) {
            return e;
        }
        e.map_message(|m| self.name_in_text(m))
    }

    /// `text` with the principal in place of [`PRINCIPAL`], and the pipeline's name in place
    /// of [`PIPELINE`] in the ACL hints that hold the principal.
    pub fn name_in_text(&self, text: &str) -> String {
        if !text.contains(PRINCIPAL) {
            return text.to_string();
        }
        let text = text.replace(PRINCIPAL, &self.principal);
        match &self.pipeline {
            Some(name) => text.replace(&format!("-{PIPELINE}"), &format!("-{name}")),
            None => text,
        }
    }
}

/// The short name of a Kerberos principal (`sluice/host@REALM` → `sluice`), as the broker's
/// default `sasl.kerberos.principal.to.local.rules` map it.
fn kerberos_short_name(principal: &str) -> &str {
    principal.split(['/', '@']).next().unwrap_or(principal)
}

/// The subject of the client certificate `client` presents, in RFC 2253 form: from
/// `ssl.certificate.pem` or `ssl.certificate.location`; `None` when there is none.
fn client_certificate_subject(client: &ClientConfig) -> Option<Result<String, String>> {
    let pem = match (
        client.get("ssl.certificate.pem"),
        client.get("ssl.certificate.location"),
    ) {
        (Some(pem), _) => Ok(pem.as_bytes().to_vec()),
        (None, Some(path)) => std::fs::read(path).map_err(|e| format!("{path}: {}", e.kind())),
        (None, None) => return None,
    };
    Some(pem.and_then(|pem| {
        openssl::x509::X509::from_pem(&pem)
            .map(|cert| rfc2253(cert.subject_name()))
            .map_err(|_| "not a PEM certificate".to_string())
    }))
}

/// A distinguished name in RFC 2253 form: the most specific part first, `,` between parts,
/// special characters escaped (what Java's `X500Principal.getName()` writes, and so the
/// broker's default SSL principal).
pub fn rfc2253(name: &openssl::x509::X509NameRef) -> String {
    let parts: Vec<String> = name
        .entries()
        .map(|e| {
            let key = e.object().nid().short_name().unwrap_or("?").to_string();
            let value = String::from_utf8_lossy(e.data().as_slice()).into_owned();
            format!("{key}={}", escape_rfc2253(&value))
        })
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join(",")
}

/// Escapes an attribute value as RFC 2253 section 2.4 asks.
fn escape_rfc2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
