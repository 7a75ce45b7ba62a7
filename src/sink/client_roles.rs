//! Which librdkafka properties a producer takes and which a consumer takes.
//!
//! `[kafka.properties]` is one map for every Kafka client sluice makes: its producer, its
//! admin clients, the readers of its offsets and history, the cluster's group consumer.
//! librdkafka warns once per client about each property of the other role ("Configuration
//! property `compression.type` is a producer property and will be ignored by this consumer
//! instance"): with `compression.type` set, every reader a start makes logged it. Each client
//! is now created from the properties of its own role ([`for_producer`], [`for_consumer`]);
//! the properties both roles take (`*` in librdkafka's table: security, timeouts, debug, ...)
//! go to every client as before.

use rdkafka::config::ClientConfig;

/// librdkafka's producer-only properties (`P` in its CONFIGURATION.md), global and topic
/// level, aliases included. A unit test compares the list with the linked librdkafka's own
/// table.
pub const PRODUCER_ONLY: &[&str] = &[
    "transactional.id",
    "transaction.timeout.ms",
    "enable.idempotence",
    "enable.gapless.guarantee",
    "queue.buffering.max.messages",
    "queue.buffering.max.kbytes",
    "queue.buffering.max.ms",
    "linger.ms",
    "message.send.max.retries",
    "retries",
    "queue.buffering.backpressure.threshold",
    "compression.codec",
    "compression.type",
    "batch.num.messages",
    "batch.size",
    "delivery.report.only.error",
    "dr_cb",
    "dr_msg_cb",
    "sticky.partitioning.linger.ms",
    "request.required.acks",
    "acks",
    "request.timeout.ms",
    "message.timeout.ms",
    "delivery.timeout.ms",
    "queuing.strategy",
    "produce.offset.report",
    "partitioner",
    "partitioner_cb",
    "msg_order_cmp",
    "compression.level",
];

/// librdkafka's consumer-only properties (`C` in its CONFIGURATION.md), global and topic
/// level, aliases included. A unit test compares the list with the linked librdkafka's own
/// table.
pub const CONSUMER_ONLY: &[&str] = &[
    "group.id",
    "group.instance.id",
    "partition.assignment.strategy",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "group.protocol.type",
    "group.protocol",
    "group.remote.assignor",
    "coordinator.query.interval.ms",
    "max.poll.interval.ms",
    "enable.auto.commit",
    "auto.commit.interval.ms",
    "enable.auto.offset.store",
    "queued.min.messages",
    "queued.max.messages.kbytes",
    "fetch.wait.max.ms",
    "fetch.queue.backoff.ms",
    "fetch.message.max.bytes",
    "max.partition.fetch.bytes",
    "fetch.max.bytes",
    "fetch.min.bytes",
    "fetch.error.backoff.ms",
    "offset.store.method",
    "isolation.level",
    "consume_cb",
    "rebalance_cb",
    "offset_commit_cb",
    "enable.partition.eof",
    "check.crcs",
    "auto.commit.enable",
    "auto.offset.reset",
    "offset.store.path",
    "offset.store.sync.interval.ms",
    "consume.callback.max.messages",
];

/// `base` without the consumer-only properties: for a producer or an admin client (librdkafka
/// makes an admin client a producer handle).
pub fn for_producer(base: &ClientConfig) -> ClientConfig {
    without(base, CONSUMER_ONLY)
}

/// `base` without the producer-only properties: for a consumer.
pub fn for_consumer(base: &ClientConfig) -> ClientConfig {
    without(base, PRODUCER_ONLY)
}

fn without(base: &ClientConfig, names: &[&str]) -> ClientConfig {
    let mut c = base.clone();
    for name in names {
        c.remove(name);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::client::ClientContext;
    use rdkafka::config::RDKafkaLogLevel;
    use rdkafka::consumer::BaseConsumer;
    use rdkafka::producer::{BaseProducer, ProducerContext};
    use std::collections::BTreeSet;
    use std::io::{Read, Seek};
    use std::sync::{Arc, Mutex};

    /// Keeps every line librdkafka logs.
    #[derive(Clone, Default)]
    struct Logged(Arc<Mutex<Vec<String>>>);

    impl ClientContext for Logged {
        fn log(&self, _level: RDKafkaLogLevel, fac: &str, line: &str) {
            self.0.lock().unwrap().push(format!("{fac}: {line}"));
        }
    }

    impl rdkafka::consumer::ConsumerContext for Logged {}

    impl ProducerContext for Logged {
        type DeliveryOpaque = ();
        fn delivery(&self, _: &rdkafka::message::DeliveryResult<'_>, _: ()) {}
    }

    impl Logged {
        /// The lines saying a property is ignored. rust-rdkafka queues librdkafka's log
        /// lines (`log.queue`) until the client is polled: `poll` serves them first.
        fn ignored(&self, poll: impl Fn()) -> Vec<String> {
            poll();
            self.0
                .lock()
                .unwrap()
                .iter()
                .filter(|l| l.contains("will be ignored"))
                .cloned()
                .collect()
        }
    }

    /// A base config as `[kafka.properties]` could make it: properties of both roles and of
    /// one only. No broker is needed (librdkafka checks the config when the client is made).
    fn mixed() -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", "127.0.0.1:9")
            .set("socket.timeout.ms", "5000")
            .set("compression.type", "lz4")
            .set("linger.ms", "20")
            .set("batch.size", "200000")
            .set("fetch.min.bytes", "1")
            .set("queued.min.messages", "1000")
            .set("group.id", "g");
        c.set_log_level(RDKafkaLogLevel::Debug);
        c
    }

    #[test]
    fn each_client_gets_its_roles_properties_and_librdkafka_warns_of_none() {
        let short = std::time::Duration::from_millis(50);
        // The base as it is: librdkafka warns of the other role's properties (the symptom).
        let raw = Logged::default();
        let c: BaseConsumer<Logged> = mixed().create_with_context(raw.clone()).unwrap();
        let warned = raw.ignored(|| {
            let _ = c.poll(short);
        });
        assert!(
            // (under its canonical name: `compression.type` is an alias of `compression.codec`)
            warned
                .iter()
                .any(|l| l.contains("compression.codec is a producer property")),
            "{warned:?}"
        );
        let raw = Logged::default();
        let p: BaseProducer<Logged> = mixed().create_with_context(raw.clone()).unwrap();
        let warned = raw.ignored(|| {
            p.poll(short);
        });
        assert!(
            warned
                .iter()
                .any(|l| l.contains("fetch.min.bytes is a consumer property")),
            "{warned:?}"
        );
        // Each role's own: no warning, the shared and own properties kept.
        let ours = Logged::default();
        let consumer = for_consumer(&mixed());
        let c: BaseConsumer<Logged> = consumer.create_with_context(ours.clone()).unwrap();
        assert_eq!(
            ours.ignored(|| {
                let _ = c.poll(short);
            }),
            Vec::<String>::new()
        );
        assert_eq!(consumer.get("socket.timeout.ms"), Some("5000"));
        assert_eq!(consumer.get("fetch.min.bytes"), Some("1"));
        assert_eq!(consumer.get("compression.type"), None);
        let ours = Logged::default();
        let producer = for_producer(&mixed());
        let p: BaseProducer<Logged> = producer.create_with_context(ours.clone()).unwrap();
        assert_eq!(
            ours.ignored(|| {
                p.poll(short);
            }),
            Vec::<String>::new()
        );
        assert_eq!(producer.get("compression.type"), Some("lz4"));
        assert_eq!(producer.get("group.id"), None);
        assert_eq!(producer.get("socket.timeout.ms"), Some("5000"));
    }

    /// The linked librdkafka's property table (`rd_kafka_conf_properties_show`), as
    /// (name, scope) with scope `P`, `C` or `*`.
    fn librdkafka_table() -> Vec<(String, String)> {
        // SAFETY: `tmpfile` gives a FILE* we own; librdkafka writes the table into it and
        // `fclose` releases it after we read the bytes back through the same descriptor.
        let text = unsafe {
            let fp = libc::tmpfile();
            assert!(!fp.is_null());
            rdkafka::bindings::rd_kafka_conf_properties_show(fp.cast());
            libc::fflush(fp);
            let fd = libc::dup(libc::fileno(fp));
            libc::fclose(fp);
            let mut f = <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd);
            f.rewind().unwrap();
            let mut s = String::new();
            f.read_to_string(&mut s).unwrap();
            s
        };
        text.lines()
            .filter_map(|l| {
                let mut cols = l.split('|').map(str::trim);
                let name = cols.next()?;
                let scope = cols.next()?;
                (matches!(scope, "P" | "C" | "*") && !name.is_empty())
                    .then(|| (name.to_string(), scope.to_string()))
            })
            .collect()
    }

    #[test]
    fn the_lists_are_librdkafkas_own() {
        let table = librdkafka_table();
        assert!(table.len() > 100, "{} properties read", table.len());
        let of = |scope: &str| -> BTreeSet<String> {
            table
                .iter()
                .filter(|(_, s)| s == scope)
                .map(|(n, _)| n.clone())
                .collect()
        };
        let listed = |l: &[&str]| -> BTreeSet<String> { l.iter().map(|s| s.to_string()).collect() };
        assert_eq!(listed(PRODUCER_ONLY), of("P"));
        assert_eq!(listed(CONSUMER_ONLY), of("C"));
    }
}
