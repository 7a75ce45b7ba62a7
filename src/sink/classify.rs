//! Classification of Kafka errors into the actions they need.
//!
//! librdkafka reports three properties on transactional errors: *fatal* (the producer is
//! unusable: fenced, or an unrecoverable idempotence failure), *abortable* (abort the open
//! transaction, then carry on) and *retriable* (call the same function again). sluice maps them:
//! fenced → [`ErrorKind::Fenced`](crate::error::ErrorKind::Fenced) (stop at once, never abort or retry); other fatal → definite;
//! abortable and retriable → transient (abort, rewind to the committed offset, retry with
//! backoff). Errors that recur by their nature (a record too large for the topic, missing
//! authorization) are definite and name the setting to change.

use rdkafka::error::{KafkaError, RDKafkaErrorCode};

use crate::error::Error;

/// Whether an error code means another producer with our transactional id took over.
pub fn is_fence_code(code: RDKafkaErrorCode) -> bool {
    matches!(
        code,
        RDKafkaErrorCode::ProducerFenced
            | RDKafkaErrorCode::InvalidProducerEpoch
            | RDKafkaErrorCode::Fenced
    )
}

/// What to tell the operator about a code that will recur on every retry, if it is one.
pub fn definite_hint(code: RDKafkaErrorCode) -> Option<&'static str> {
    Some(match code {
        RDKafkaErrorCode::MessageSizeTooLarge => {
            "a record is larger than the topic accepts: raise the topic's `max.message.bytes` \
             (and the broker's `message.max.bytes`) or `[kafka.properties] message.max.bytes`"
        }
        RDKafkaErrorCode::TopicAuthorizationFailed => {
            "not authorized on the topic: grant the ACLs WRITE and DESCRIBE on the data, \
             offsets and schema-history topics, and READ on the offsets and schema-history \
             topics, to sluice's principal <principal> (`kafka-acls.sh --add --allow-principal \
             <principal> --operation Write --operation Describe --operation Read --topic \
             <topic>`)"
        }
        RDKafkaErrorCode::GroupAuthorizationFailed => {
            "not authorized on the consumer group: reading the committed offset needs READ on \
             the groups `sluice-offsets-reader-<name>` and `sluice-claim-watch-<name>` for \
             sluice's principal <principal> (`kafka-acls.sh --add --allow-principal <principal> \
             --operation Read --group sluice- --resource-pattern-type prefixed`)"
        }
        RDKafkaErrorCode::PolicyViolation => {
            "the broker's policy refused the request (e.g. `create.topic.policy.class.name` or \
             `alter.config.policy.class.name`): create or configure the topic as the policy allows"
        }
        RDKafkaErrorCode::TransactionalIdAuthorizationFailed => {
            "not authorized to use the transactional id: grant WRITE and DESCRIBE on \
             TransactionalId `sluice-<name>` to sluice's principal <principal> \
             (`kafka-acls.sh --add --allow-principal <principal> --operation Write --operation \
             Describe --transactional-id sluice-<name>`)"
        }
        RDKafkaErrorCode::ClusterAuthorizationFailed => {
            "not authorized on the cluster: grant IDEMPOTENT_WRITE to sluice's principal \
             <principal>"
        }
        RDKafkaErrorCode::UnknownTopicOrPartition => {
            "the topic does not exist and was not created: check `[kafka] partitions` and topic creation rights"
        }
        RDKafkaErrorCode::InvalidTransactionTimeout => {
            "`kafka.transaction_timeout_ms` is above the broker's `transaction.max.timeout.ms`: lower it or raise the broker setting"
        }
        RDKafkaErrorCode::InvalidRecord | RDKafkaErrorCode::InvalidMessage => {
            "the broker refused a record as invalid"
        }
        _ => return None,
    })
}

/// The librdkafka error code of `err`, also of an admin request's error (for which
/// `KafkaError::rdkafka_error_code` gives none).
pub fn code_of(err: &KafkaError) -> Option<RDKafkaErrorCode> {
    match err {
        KafkaError::AdminOp(code) => Some(*code),
        other => other.rdkafka_error_code(),
    }
}

/// Whether a consumer's error is one it recovers from by itself: a broker it cannot reach, a
/// timed-out request, a partition leader or coordinator on the move (a leader whose high
/// watermark is not caught up yet), a broker handle librdkafka replaced by the one the
/// cluster's metadata named (`DestroyBroker`, seen on the bootstrap handles right after
/// a client starts). librdkafka keeps trying
/// the other brokers and the new leader; a read that stopped at such an error would fail
/// whenever one node of a cluster is down, although the others serve everything. A read
/// keeps going past it until its own deadline.
pub fn consumer_recovers(err: &KafkaError) -> bool {
    let Some(code) = code_of(err) else {
        return false;
    };
    matches!(
        code,
        RDKafkaErrorCode::BrokerTransportFailure
            | RDKafkaErrorCode::AllBrokersDown
            | RDKafkaErrorCode::Resolve
            | RDKafkaErrorCode::OperationTimedOut
            | RDKafkaErrorCode::RequestTimedOut
            | RDKafkaErrorCode::NetworkException
            | RDKafkaErrorCode::BrokerNotAvailable
            | RDKafkaErrorCode::LeaderNotAvailable
            | RDKafkaErrorCode::NotLeaderForPartition
            | RDKafkaErrorCode::ReplicaNotAvailable
            | RDKafkaErrorCode::NotCoordinator
            | RDKafkaErrorCode::CoordinatorNotAvailable
            | RDKafkaErrorCode::CoordinatorLoadInProgress
            | RDKafkaErrorCode::FencedLeaderEpoch
            | RDKafkaErrorCode::UnknownLeaderEpoch
            | RDKafkaErrorCode::OffsetNotAvailable
            | RDKafkaErrorCode::DestroyBroker
    )
}

/// Maps a Kafka error raised while doing `what` to a pipeline error.
pub fn classify(what: &str, err: &KafkaError) -> Error {
    let msg = format!("Kafka {what} failed: {err}");
    if let KafkaError::Transaction(rde) = err {
        let code = rde.code();
        if is_fence_code(code) {
            return Error::fenced(fenced_message(&msg));
        }
        if let Some(hint) = definite_hint(code) {
            return Error::definite(format!("{msg}; {hint}"));
        }
        if rde.is_fatal() {
            return Error::definite(format!(
                "{msg}; the producer hit a fatal error and cannot continue"
            ));
        }
        // Abortable or retriable: the pipeline aborts and rewinds.
        return Error::transient(msg);
    }
    match err.rdkafka_error_code() {
        Some(code) if is_fence_code(code) => Error::fenced(fenced_message(&msg)),
        Some(code) => match definite_hint(code) {
            Some(hint) => Error::definite(format!("{msg}; {hint}")),
            None => Error::transient(msg),
        },
        None => Error::transient(msg),
    }
}

/// The operator-facing message for a fenced producer.
pub fn fenced_message(detail: &str) -> String {
    format!(
        "this instance was fenced: another sluice with the same `name` (same transactional id) \
         started and took over the pipeline; this one stops without writing anything more \
         ({detail})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn fence_codes_are_fenced() {
        for code in [
            RDKafkaErrorCode::ProducerFenced,
            RDKafkaErrorCode::InvalidProducerEpoch,
        ] {
            let e = classify("produce", &KafkaError::MessageProduction(code));
            assert_eq!(e.kind(), ErrorKind::Fenced, "{code:?}");
            assert!(e.to_string().contains("same `name`"));
        }
    }

    #[test]
    fn recurring_errors_are_definite_and_name_the_setting() {
        let e = classify(
            "produce",
            &KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge),
        );
        assert_eq!(e.kind(), ErrorKind::Definite);
        assert!(e.to_string().contains("max.message.bytes"));
    }

    #[test]
    fn authorization_and_policy_errors_are_definite_and_name_the_acl() {
        for (code, needle) in [
            (
                RDKafkaErrorCode::TopicAuthorizationFailed,
                "--operation Write",
            ),
            (
                RDKafkaErrorCode::GroupAuthorizationFailed,
                "sluice-offsets-reader-",
            ),
            (
                RDKafkaErrorCode::TransactionalIdAuthorizationFailed,
                "TransactionalId",
            ),
            (
                RDKafkaErrorCode::ClusterAuthorizationFailed,
                "IDEMPOTENT_WRITE",
            ),
            (
                RDKafkaErrorCode::PolicyViolation,
                "create.topic.policy.class.name",
            ),
        ] {
            let e = classify("read", &KafkaError::MessageConsumption(code));
            assert_eq!(e.kind(), ErrorKind::Definite, "{code:?}");
            assert!(e.to_string().contains(needle), "{code:?}: {e}");
            if code != RDKafkaErrorCode::PolicyViolation {
                // The app names the principal there (Kafka's errors do not).
                assert!(
                    e.to_string().contains(crate::sink::identity::PRINCIPAL),
                    "{code:?}: {e}"
                );
            }
        }
    }

    #[test]
    fn a_consumer_reads_on_past_an_unreachable_broker_but_not_past_a_refusal() {
        for code in [
            RDKafkaErrorCode::BrokerTransportFailure,
            RDKafkaErrorCode::AllBrokersDown,
            RDKafkaErrorCode::NotLeaderForPartition,
            RDKafkaErrorCode::RequestTimedOut,
            RDKafkaErrorCode::OffsetNotAvailable,
            RDKafkaErrorCode::DestroyBroker,
        ] {
            assert!(
                consumer_recovers(&KafkaError::MessageConsumption(code)),
                "{code:?}"
            );
            assert!(consumer_recovers(&KafkaError::Global(code)), "{code:?}");
            assert!(consumer_recovers(&KafkaError::AdminOp(code)), "{code:?}");
        }
        for code in [
            RDKafkaErrorCode::TopicAuthorizationFailed,
            RDKafkaErrorCode::GroupAuthorizationFailed,
            RDKafkaErrorCode::UnknownTopicOrPartition,
            RDKafkaErrorCode::OffsetOutOfRange,
        ] {
            assert!(
                !consumer_recovers(&KafkaError::MessageConsumption(code)),
                "{code:?}"
            );
        }
        assert!(!consumer_recovers(&KafkaError::Canceled));
    }

    #[test]
    fn other_errors_are_transient() {
        let e = classify(
            "produce",
            &KafkaError::MessageProduction(RDKafkaErrorCode::NotLeaderForPartition),
        );
        assert_eq!(e.kind(), ErrorKind::Transient);
    }
}
