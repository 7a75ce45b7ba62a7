//! The login failures librdkafka reports only to a client's error callback ([`LoginWatch`]):
//! a SASL authentication the broker refused (wrong password, a user without credentials for
//! the mechanism) or a TLS handshake that failed (a broker certificate the CA did not sign, a
//! client certificate the broker does not trust). The request that was waiting on the
//! connection then fails only as a timeout or a transport failure, which reads like a broker
//! that is down; [`LoginWatch::failure`] turns it into the definite error it is.

use std::sync::{Arc, Mutex};

use rdkafka::client::ClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};

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
            if let Ok(mut last) = self.last.lock() {
                *last = Some((code, reason.to_string()));
            }
        }
    }
}

impl LoginWatch {
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
}
