//! The login failures librdkafka reports only to a client's error callback ([`LoginWatch`]):
//! a SASL authentication the broker refused (wrong password, a user without credentials for
//! the mechanism) or a TLS handshake that failed (a broker certificate the CA did not sign, a
//! client certificate the broker does not trust). The request that was waiting on the
//! connection then fails only as a timeout or a transport failure, which reads like a broker
//! that is down; [`LoginWatch::failure`] turns it into the definite error it is.
//!
//! librdkafka delivers those errors (and its log lines) as events on a client's main queue,
//! which only a polled client serves: an admin client's is never polled. [`probe`] therefore
//! connects with a producer of the same settings that it polls, and watches both its errors
//! and its `FAIL` log lines (librdkafka reports some refused handshakes only there).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, DeliveryResult, Producer, ProducerContext};

use crate::error::Error;
use crate::sink::identity::PRINCIPAL;

/// A client context that remembers the last login failure.
#[derive(Clone, Default)]
pub struct LoginWatch {
    last: Arc<Mutex<Option<(RDKafkaErrorCode, String)>>>,
}

impl ClientContext for LoginWatch {
    fn error(&self, error: KafkaError, reason: &str) {
        tracing::warn!(%error, reason, "kafka client error");
        let code = error.rdkafka_error_code();
        if let Some(
            code @ (RDKafkaErrorCode::Authentication
            | RDKafkaErrorCode::SaslAuthenticationFailed
            | RDKafkaErrorCode::SSL),
        ) = code
        {
            self.keep(code, reason);
        }
    }

    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        let severe = matches!(
            level,
            RDKafkaLogLevel::Emerg
                | RDKafkaLogLevel::Alert
                | RDKafkaLogLevel::Critical
                | RDKafkaLogLevel::Error
        );
        if severe && fac == "FAIL" {
            if let Some(code) = login_failure_in_log(message) {
                self.keep(code, message);
            }
        }
        tracing::debug!(fac, message, "librdkafka");
    }
}

impl ProducerContext for LoginWatch {
    type DeliveryOpaque = ();

    fn delivery(&self, _: &DeliveryResult<'_>, _: ()) {}
}

/// The login failure a librdkafka `FAIL` log line reports, if it reports one.
fn login_failure_in_log(message: &str) -> Option<RDKafkaErrorCode> {
    if message.contains("SASL authentication error") || message.contains("SASL SCRAM") {
        Some(RDKafkaErrorCode::Authentication)
    } else if message.contains("SSL handshake failed") || message.contains("certificate verify") {
        Some(RDKafkaErrorCode::SSL)
    } else {
        None
    }
}

/// Connects to the brokers with `base` for at most `timeout` and returns the definite error
/// of a refused login or TLS handshake, if one is seen. `None` for PLAINTEXT (there is no
/// login to refuse), for a client that cannot be created (its own error is reported
/// elsewhere) and when the brokers simply do not answer.
pub fn probe(base: &ClientConfig, timeout: Duration) -> Option<Error> {
    let protocol = base
        .get("security.protocol")
        .unwrap_or("plaintext")
        .to_ascii_uppercase();
    if protocol == "PLAINTEXT" {
        return None;
    }
    let watch = LoginWatch::default();
    let producer: BaseProducer<LoginWatch> = super::client_roles::for_producer(base)
        .create_with_context(watch.clone())
        .ok()?;
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let _ = producer
            .client()
            .fetch_metadata(None, Duration::from_millis(500));
        producer.poll(Duration::from_millis(100));
        if let Some(e) = watch.failure() {
            return Some(e);
        }
    }
    None
}

impl LoginWatch {
    fn keep(&self, code: RDKafkaErrorCode, reason: &str) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some((code, reason.to_string()));
        }
    }

    /// The definite error of the last login failure seen, if any.
    pub fn failure(&self) -> Option<Error> {
        let (code, reason) = self.last.lock().ok()?.clone()?;
        Some(login_error(code, &reason))
    }
}

/// The operator's error for a login failure (`reason` is librdkafka's text, which names the
/// broker and the mechanism but never the password).
pub fn login_error(code: RDKafkaErrorCode, reason: &str) -> Error {
    let reason = crate::config::redact_text(reason);
    Error::definite(match code {
        RDKafkaErrorCode::SSL => format!(
            "the TLS handshake with the Kafka broker failed as {PRINCIPAL}: {reason}; check \
             kafka.security.ca_file (the CA that signed the brokers' certificates), \
             verify_hostname (the certificate must name the host in kafka.bootstrap_servers), \
             and for mutual TLS cert_file and key_file (a certificate the broker's \
             ssl.truststore trusts)"
        ),
        _ => format!(
            "the Kafka broker refused sluice's login as {PRINCIPAL}: {reason}; check \
             kafka.security.username and kafka.security.password (or password_file), and that \
             the broker has \
             credentials of that user for the mechanism (SCRAM: `kafka-configs.sh --alter \
             --add-config 'SCRAM-SHA-512=[password=…]' --entity-type users --entity-name \
             <user>`) and enables the mechanism on the listener (`sasl.enabled.mechanisms`)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn a_login_failure_is_kept_and_definite() {
        let w = LoginWatch::default();
        assert!(w.failure().is_none());
        w.error(
            KafkaError::Global(RDKafkaErrorCode::BrokerTransportFailure),
            "connection refused",
        );
        assert!(
            w.failure().is_none(),
            "a transport failure is not a login failure"
        );
        w.error(
            KafkaError::Global(RDKafkaErrorCode::Authentication),
            "sasl_ssl://b:9095/bootstrap: SASL authentication error: Authentication failed \
             during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
        );
        let e = w.failure().expect("kept");
        assert_eq!(e.kind(), ErrorKind::Definite);
        let msg = e.to_string();
        assert!(msg.contains("invalid credentials"), "{msg}");
        assert!(msg.contains(PRINCIPAL) && msg.contains("kafka.security.password"));
        w.error(
            KafkaError::Global(RDKafkaErrorCode::SSL),
            "ssl://b:9096/bootstrap: SSL handshake failed: certificate verify failed",
        );
        assert!(w
            .failure()
            .unwrap()
            .to_string()
            .contains("kafka.security.ca_file"));
    }

    #[test]
    fn failures_are_recognised_in_librdkafka_log_lines() {
        let w = LoginWatch::default();
        w.log(
            RDKafkaLogLevel::Error,
            "FAIL",
            "b:9095/bootstrap: Connect to ipv4#127.0.0.1:9095 failed: Connection refused",
        );
        assert!(w.failure().is_none());
        w.log(
            RDKafkaLogLevel::Error,
            "FAIL",
            "sasl_ssl://127.0.0.1:9095/bootstrap: SASL authentication error: Authentication \
             failed during authentication due to invalid credentials with SASL mechanism \
             SCRAM-SHA-512 (after 309ms in state AUTH_REQ)",
        );
        assert!(w
            .failure()
            .unwrap()
            .to_string()
            .contains("invalid credentials"));
        let w = LoginWatch::default();
        w.log(
            RDKafkaLogLevel::Error,
            "FAIL",
            "ssl://127.0.0.1:9096/bootstrap: SSL handshake failed: error:0A000086:SSL \
             routines::certificate verify failed: broker certificate could not be verified",
        );
        assert!(w.failure().unwrap().to_string().contains("TLS handshake"));
    }

    #[test]
    fn plaintext_has_no_login_to_probe() {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", "127.0.0.1:1");
        assert!(probe(&c, Duration::from_secs(5)).is_none());
    }
}
