//! The sink's start: its own topics, the producer created and fenced-in (exactly-once), the
//! claim written, the committed state read and the records Kafka left without a marker
//! settled, each step timed on the attempt's start-up timeline ([`crate::startup`]).

use super::start_readers::{self, StartReaders};
use super::*;

impl Sink {
    /// Creates the producer, fences older instances, reads the committed offset.
    pub(super) fn open(
        s: SinkSettings,
        stats: Arc<SinkStats>,
        metrics: Arc<metrics::Metrics>,
        rt: &tokio::runtime::Handle,
    ) -> Result<(Sink, Committed)> {
        let t = s.startup.clone();
        let eo = s.delivery == Delivery::ExactlyOnce;
        let mut claim_from = 0;
        let claimed_before = *stats.claimed_from.lock().unwrap_or_else(|e| e.into_inner());
        if let (true, Some(from)) = (eo, claimed_before) {
            if let Some(owner) =
                claim::taken_over_since(&s.client, &s.offsets_topic, &s.name, from)?
            {
                return Err(Error::fenced(format!(
                    "the pipeline was taken over while this instance was recovering: {owner}"
                )));
            }
        }
        // The offsets and history topics are made sure of and the start's readers connected
        // while the producer fences: none needs another (the producer creates no topic:
        // `allow.auto.create.topics` is off; connecting reads nothing).
        let span = tracing::Span::current();
        let (topics, mut producer, readers) = std::thread::scope(|scope| {
            let topics = scope.spawn(|| {
                span.in_scope(|| {
                    t.step("sink: offsets and history topics", || {
                        let mut topics = Topics::new(&s.client, s.topics.clone())?;
                        topics.ensure_offsets_topic(&s.offsets_topic)?;
                        topics.ensure_history_topic(&s.schema_history_topic)?;
                        Ok::<_, Error>(topics)
                    })
                })
            });
            let readers = scope.spawn(|| {
                span.in_scope(|| {
                    t.step("sink: readers connected", || StartReaders::connect(&s, eo))
                })
            });
            let producer = Self::fenced_producer(&s, eo);
            fn panicked<T>(what: &str) -> Result<T> {
                Err(Error::definite(format!("{what} panicked")))
            }
            let topics = topics
                .join()
                .unwrap_or_else(|_| panicked("making sure of the offsets and history topics"));
            let readers = readers
                .join()
                .unwrap_or_else(|_| panicked("connecting the start's readers"));
            // Fencing's verdict first: a fenced instance stops whatever else failed.
            let producer = producer?;
            Ok::<_, Error>((topics?, producer, readers?))
        })?;
        // The producer and the readers connected while the topics may have been created.
        t.step("sink: own topics learned", || {
            start_readers::learn_topic(producer.inner.client(), &s.offsets_topic);
            readers.learn_topics(&s);
        });
        let StartReaders {
            offsets: mut offsets_pair,
            history: history_pair,
            seal: seal_pair,
        } = readers;
        let mut looked = None;
        if eo {
            let wait = txn::abort_wait(s.transaction_timeout_ms);
            offsets_pair = t.step("sink: offsets topic settled", || {
                unmarked::settle_offsets_topic_on(
                    &producer,
                    offsets_pair,
                    &s.offsets_topic,
                    &s.name,
                    wait,
                )
            })?;
            claim_from = t.step("sink: claim written", || claim::write(&mut producer, &s))?;
            *stats.claimed_from.lock().unwrap_or_else(|e| e.into_inner()) = Some(claim_from);
        }
        // The committed state is read while the data partitions are looked at (both after
        // fencing; each waits on its own round trips).
        let mut committed = std::thread::scope(|scope| {
            let looking =
                eo.then(|| scope.spawn(|| span.in_scope(|| settle::look_at_start(&s, seal_pair))));
            let committed = t.step("sink: committed state read", || {
                state::read(&s, &topics, &producer, (&offsets_pair, &history_pair))
            });
            if let Some(looking) = looking {
                let l = looking.join().unwrap_or_else(|_| {
                    Err(Error::definite("looking at the data partitions panicked"))
                });
                looked = Some(l);
            }
            committed
        })?;
        let sealer = match looked {
            Some(looked) => {
                let looked = looked?;
                Some(t.step("sink: data partitions settled", || {
                    settle::at_start(&mut producer, &s, looked, &mut committed)
                })?)
            }
            None => None,
        };
        let committed_txn = committed.offset.as_ref().map_or(0, |o| o.txn);
        let registry = match &s.registry {
            Some(cfg) => Some(BlockingRegistry::new(
                Arc::new(Registry::new(cfg)?),
                rt.clone(),
            )),
            None => None,
        };
        let sink = Sink {
            encoder: JsonEncoder::new(&s.name),
            avro: AvroEncoder::new(&s.name),
            registry,
            avro_ids: schema_ids::SchemaIdCache::default(),
            last_shape: HashMap::new(),
            producer,
            topics,
            stats,
            metrics,
            records: Vec::with_capacity(16),
            kafka_open: false,
            kafka_started: Instant::now(),
            interval: super::interval::CommitInterval::new(Instant::now()),
            kafka_records: 0,
            source_open: false,
            meta: TxnMeta::default(),
            order: order::TxnOrder::default(),
            pending: None,
            last_commit: Instant::now(),
            counts: counts::TxnCounts::default(),
            read_reported: Instant::now(),
            claim_from,
            retire: false,
            attempt: 0,
            sealer,
            committed_txn,
            txn_metadata: s
                .transaction_metadata
                .clone()
                .map(|(topic, format, json_schemas)| {
                    txn_metadata::TxnMetadata::new(topic, format).with_json_schemas(json_schemas)
                }),
            heartbeat: s
                .heartbeat
                .clone()
                .map(|(topic, interval, format, json_schemas)| {
                    heartbeat::Heartbeat::new(topic, interval, format, &s.name)
                        .with_json_schemas(json_schemas)
                }),
            last_committed: None,
            s,
        };
        Ok((sink, committed))
    }

    /// The sink's producer, and in exactly-once mode fenced in: `init_transactions` fences
    /// older instances and aborts what they left open.
    fn fenced_producer(s: &SinkSettings, eo: bool) -> Result<SinkProducer> {
        let mut producer = SinkProducer::create(
            &s.client,
            eo.then_some(s.transactional_id.as_str()),
            s.transaction_timeout_ms,
            s.max_buffer_kbytes,
        )?;
        producer.stop = s.shutdown.clone();
        producer.context = s
            .context_headers
            .then(|| context_headers::ContextHeaders::new(&s.name));
        if eo {
            s.startup
                .step("sink: fencing (init_transactions)", || {
                    producer.connect(&s.offsets_topic);
                    producer.inner.init_transactions(Duration::from_secs(60))
                })
                .map_err(|e| classify::classify("init_transactions (fencing)", &e))?;
            tracing::info!(transactional_id = %s.transactional_id, "producer initialized; older instances fenced");
        }
        Ok(producer)
    }
}
