//! Producing through librdkafka topic handles, one per topic the producer writes.
//!
//! **Why.** A record produced by topic *name* (what rust-rdkafka's `BaseProducer::send` does)
//! makes librdkafka find the topic in the list of every topic the client knows, comparing the
//! names one after another under the client's lock. With one table that costs nothing; with
//! 1,000 tables whose topic names share a long prefix it was a third of the pipeline's CPU
//! (`memcmp` 29% and `rd_kafka_topic_find_fl` 5% of a profile of the exactly-once drain of
//! 1,000 tables; docs/benchmarks.md). A topic handle goes straight to its topic.
//!
//! **How.** [`TopicHandles`] keeps one handle per topic name (`rd_kafka_topic_new`: the
//! client's own topic object, with the topic settings of the client's configuration, exactly
//! what a produce by name would use), created on the first record to that topic and destroyed
//! with the producer. [`produce`] hands librdkafka one record with `rd_kafka_produceva`: the
//! handle, partition, key, value (copied) and headers (copied), as `BaseProducer::send` does
//! with the name. Memory: one handle per topic the producer wrote, as librdkafka itself keeps
//! one topic object per topic.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Mutex;

use rdkafka::bindings as rdsys;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::types::RDKafkaRespErr;

/// A librdkafka topic handle. librdkafka's topic objects are reference counted and safe to
/// use from any thread.
struct Handle(*mut rdsys::rd_kafka_topic_t);

// SAFETY: librdkafka topic handles may be used from any thread (its API is thread-safe); the
// pointer is only destroyed by `TopicHandles::destroy_all`, which takes the map exclusively.
unsafe impl Send for Handle {}

/// The topic handles of one producer, by topic name.
#[derive(Default)]
pub(crate) struct TopicHandles {
    by_name: Mutex<HashMap<String, Handle>>,
}

impl TopicHandles {
    /// The handle of `topic` on the client `rk`, created on first use.
    ///
    /// # Safety
    /// `rk` is the live client every call on this value is made with, and it outlives the
    /// returned pointer's use; [`TopicHandles::destroy_all`] has not run.
    unsafe fn get(
        &self,
        rk: *mut rdsys::rd_kafka_t,
        topic: &str,
    ) -> Result<*mut rdsys::rd_kafka_topic_t, KafkaError> {
        let mut map = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = map.get(topic) {
            return Ok(h.0);
        }
        let name = CString::new(topic).map_err(KafkaError::from)?;
        // SAFETY: `rk` is live (the caller's contract); a null configuration takes the
        // client's default topic settings, as a produce by name does.
        let rkt = unsafe { rdsys::rd_kafka_topic_new(rk, name.as_ptr(), std::ptr::null_mut()) };
        if rkt.is_null() {
            // SAFETY: reads librdkafka's thread-local last error.
            let code = unsafe { rdsys::rd_kafka_last_error() };
            return Err(KafkaError::MessageProduction(RDKafkaErrorCode::from(code)));
        }
        map.insert(topic.to_string(), Handle(rkt));
        Ok(rkt)
    }

    /// Destroys every handle (the producer is being dropped; librdkafka keeps what the
    /// in-flight records need).
    pub(crate) fn destroy_all(&self) {
        let mut map = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        for (_, h) in map.drain() {
            // SAFETY: each handle was returned by `rd_kafka_topic_new` and is destroyed once
            // (drained from the map).
            unsafe { rdsys::rd_kafka_topic_destroy(h.0) };
        }
    }
}

/// One record to produce.
pub(crate) struct Record<'a> {
    pub topic: &'a str,
    /// `None`: the partitioner decides.
    pub partition: Option<i32>,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// Header names and values, in order; at most [`MAX_HEADERS`].
    pub headers: &'a [(&'a str, &'a [u8])],
}

/// librdkafka's `RD_KAFKA_PARTITION_UA`: the partitioner decides.
const PARTITION_UNASSIGNED: i32 = -1;

/// The most headers one record may carry here (sluice writes at most six).
pub(crate) const MAX_HEADERS: usize = 8;

/// Hands one record to librdkafka (its key, value and headers are copied). A full queue is
/// `KafkaError::MessageProduction(QueueFull)`, as with `BaseProducer::send`.
///
/// # Safety
/// `rk` is the live producer client `handles` belongs to.
pub(crate) unsafe fn produce(
    rk: *mut rdsys::rd_kafka_t,
    handles: &TopicHandles,
    rec: Record<'_>,
) -> Result<(), KafkaError> {
    // SAFETY: the caller's contract.
    let rkt = unsafe { handles.get(rk, rec.topic)? };
    let headers = rec.headers;
    if headers.len() > MAX_HEADERS {
        return Err(KafkaError::MessageProduction(
            RDKafkaErrorCode::InvalidArgument,
        ));
    }
    // The header names, NUL-terminated one after the other (librdkafka copies them).
    let mut names = Vec::with_capacity(headers.iter().map(|(n, _)| n.len() + 1).sum());
    let mut starts = [0usize; MAX_HEADERS];
    for (i, (name, _)) in headers.iter().enumerate() {
        if name.as_bytes().contains(&0) {
            return Err(KafkaError::MessageProduction(
                RDKafkaErrorCode::InvalidArgument,
            ));
        }
        starts[i] = names.len();
        names.extend_from_slice(name.as_bytes());
        names.push(0);
    }
    let mem = |bytes: Option<&[u8]>| rdsys::rd_kafka_vu_s__bindgen_ty_1__bindgen_ty_1 {
        ptr: bytes.map_or(std::ptr::null_mut(), |b| b.as_ptr() as *mut _),
        size: bytes.map_or(0, <[u8]>::len),
    };
    let vu = |vtype, u| rdsys::rd_kafka_vu_t { vtype, u };
    use rdsys::rd_kafka_vtype_t as V;
    use rdsys::rd_kafka_vu_s__bindgen_ty_1 as U;
    let mut vus = Vec::with_capacity(5 + headers.len());
    vus.push(vu(V::RD_KAFKA_VTYPE_RKT, U { rkt }));
    vus.push(vu(
        V::RD_KAFKA_VTYPE_PARTITION,
        U {
            i32_: rec.partition.unwrap_or(PARTITION_UNASSIGNED),
        },
    ));
    vus.push(vu(
        V::RD_KAFKA_VTYPE_MSGFLAGS,
        U {
            i: rdsys::RD_KAFKA_MSG_F_COPY,
        },
    ));
    if rec.value.is_some() {
        vus.push(vu(
            V::RD_KAFKA_VTYPE_VALUE,
            U {
                mem: mem(rec.value),
            },
        ));
    }
    if rec.key.is_some() {
        vus.push(vu(V::RD_KAFKA_VTYPE_KEY, U { mem: mem(rec.key) }));
    }
    for (i, (_, value)) in headers.iter().enumerate() {
        vus.push(vu(
            V::RD_KAFKA_VTYPE_HEADER,
            U {
                header: rdsys::rd_kafka_vu_s__bindgen_ty_1__bindgen_ty_2 {
                    name: names[starts[i]..].as_ptr().cast(),
                    val: value.as_ptr().cast(),
                    size: value.len() as isize,
                },
            },
        ));
    }
    // SAFETY: `rk` is live (the caller's contract), `rkt` one of its topic handles; every
    // pointer in `vus` points into `rec`, `names` or `headers`, which outlive the call, and
    // librdkafka copies what it keeps (`RD_KAFKA_MSG_F_COPY`, header names and values).
    let error = unsafe { rdsys::rd_kafka_produceva(rk, vus.as_ptr(), vus.len()) };
    if error.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null error returned by librdkafka, read then destroyed once.
    let code: RDKafkaRespErr = unsafe { rdsys::rd_kafka_error_code(error) };
    unsafe { rdsys::rd_kafka_error_destroy(error) };
    Err(KafkaError::MessageProduction(RDKafkaErrorCode::from(code)))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use rdkafka::config::ClientConfig;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::{Headers, Message};
    use rdkafka::mocking::MockCluster;
    use rdkafka::{Offset, TopicPartitionList};

    use crate::sink::producer::SinkProducer;

    /// The longest wait for records that were acknowledged.
    const WAIT: Duration = Duration::from_secs(30);

    /// What a consumer reads back: topic, partition, key, value, headers.
    type Read = (
        String,
        i32,
        Option<Vec<u8>>,
        Option<Vec<u8>>,
        Vec<(String, Vec<u8>)>,
    );

    fn read_back(
        bootstrap: &str,
        topics: &[(&str, i32)],
        want: usize,
        wait: Duration,
    ) -> Vec<Read> {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", "native-produce-test")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        for (t, parts) in topics {
            for p in 0..*parts {
                tpl.add_partition_offset(t, p, Offset::Beginning).unwrap();
            }
        }
        consumer.assign(&tpl).unwrap();
        let mut out = Vec::new();
        let started = Instant::now();
        while out.len() < want && started.elapsed() < wait {
            let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) else {
                continue;
            };
            let headers = m
                .headers()
                .map(|h| {
                    h.iter()
                        .map(|h| (h.key.to_string(), h.value.unwrap_or_default().to_vec()))
                        .collect()
                })
                .unwrap_or_default();
            out.push((
                m.topic().to_string(),
                m.partition(),
                m.key().map(<[u8]>::to_vec),
                m.payload().map(<[u8]>::to_vec),
                headers,
            ));
        }
        out.sort();
        out
    }

    #[test]
    fn records_arrive_as_produced_by_name_would_have_them() {
        let cluster = MockCluster::new(1).unwrap();
        let bootstrap = cluster.bootstrap_servers();
        cluster.create_topic("shop.orders", 3, 1).unwrap();
        cluster.create_topic("shop.items", 1, 1).unwrap();
        let mut client = ClientConfig::new();
        client.set("bootstrap.servers", &bootstrap);
        let mut producer = SinkProducer::create(&client, None, 30_000, 1024).unwrap();
        producer.tag = Some(b"shop:7".to_vec());
        let tag = crate::sink::txn_tag::TXN_HEADER;
        // Every shape: a chosen partition, the partitioner's choice, a tombstone, no key, an
        // extra header; the same topic again (its handle reused).
        producer
            .send_to("shop.orders", Some(2), Some(b"k1"), Some(b"v1"), None)
            .unwrap();
        producer
            .send_with_header("shop.orders", Some(b"k2"), None, Some(("op", b"d")))
            .unwrap();
        producer.send("shop.items", None, Some(b"v3")).unwrap();
        producer
            .send_to(
                "shop.items",
                Some(0),
                Some(b"k4"),
                Some(b""),
                Some(("h", b"")),
            )
            .unwrap();
        producer.wait_delivered().unwrap();
        let got = read_back(
            &bootstrap,
            &[("shop.orders", 3), ("shop.items", 1)],
            4,
            WAIT,
        );
        let h = |pairs: &[(&str, &[u8])]| -> Vec<(String, Vec<u8>)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_vec()))
                .collect()
        };
        let k2_partition = got
            .iter()
            .find(|r| r.2.as_deref() == Some(b"k2".as_slice()))
            .map(|r| r.1)
            .expect("k2 arrived");
        let mut want: Vec<Read> = vec![
            (
                "shop.orders".into(),
                2,
                Some(b"k1".to_vec()),
                Some(b"v1".to_vec()),
                // `send_to` writes the header it is given and no tag.
                Vec::new(),
            ),
            (
                "shop.orders".into(),
                k2_partition,
                Some(b"k2".to_vec()),
                None,
                h(&[(tag, b"shop:7"), ("op", b"d")]),
            ),
            (
                "shop.items".into(),
                0,
                None,
                Some(b"v3".to_vec()),
                h(&[(tag, b"shop:7")]),
            ),
            (
                "shop.items".into(),
                0,
                Some(b"k4".to_vec()),
                Some(Vec::new()),
                h(&[("h", b"")]),
            ),
        ];
        want.sort();
        assert_eq!(got, want);
        // The partitioner is murmur2 of the key, as by name: the same key, the same partition.
        producer
            .send_with_header("shop.orders", Some(b"k2"), Some(b"again"), None)
            .unwrap();
        producer.wait_delivered().unwrap();
        let again = read_back(&bootstrap, &[("shop.orders", 3)], 3, WAIT);
        let partitions: Vec<i32> = again
            .iter()
            .filter(|r| r.2.as_deref() == Some(b"k2".as_slice()))
            .map(|r| r.1)
            .collect();
        assert_eq!(partitions, vec![k2_partition, k2_partition]);
    }

    #[test]
    fn a_bad_record_is_an_error_and_nothing_is_written() {
        let cluster = MockCluster::new(1).unwrap();
        let bootstrap = cluster.bootstrap_servers();
        cluster.create_topic("t", 1, 1).unwrap();
        let mut client = ClientConfig::new();
        client.set("bootstrap.servers", &bootstrap);
        let producer = SinkProducer::create(&client, None, 30_000, 1024).unwrap();
        // Wait until the producer knows the topic: a partition it does not have is refused
        // only once the metadata says so.
        producer.send("t", Some(b"first"), Some(b"x")).unwrap();
        producer.wait_delivered().unwrap();
        let nul = producer.send_with_header("t", Some(b"k"), Some(b"v"), Some(("a\0b", b"")));
        assert!(nul.is_err(), "{nul:?}");
        let nul_topic = producer.send("t\0x", Some(b"k"), Some(b"v"));
        assert!(nul_topic.is_err(), "{nul_topic:?}");
        let partition = producer.send_to("t", Some(5), Some(b"k"), Some(b"v"), None);
        let e = partition.expect_err("partition 5 of a one-partition topic");
        assert!(e.to_string().contains("produce to `t`"), "{e}");
        producer.wait_delivered().unwrap();
        // Anything more than the first record would be there within a few seconds.
        let got = read_back(&bootstrap, &[("t", 1)], 2, Duration::from_secs(3));
        assert_eq!(got.len(), 1, "{got:?}");
    }
}
