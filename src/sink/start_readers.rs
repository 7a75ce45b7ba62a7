//! The consumers the sink's start reads its own topics with, made and connected while the
//! producer fences. Connecting a consumer (over TLS a handshake with the bootstrap address,
//! then with the broker behind it) took most of each read of the start; connected ahead, the
//! looks and reads after fencing are their round trips only. Connecting reads nothing, so
//! doing it before fencing changes nothing of what is read after it.

use std::time::{Duration, Instant};

use rdkafka::client::{Client, ClientContext};
use rdkafka::consumer::Consumer;

use super::reader::{self, Reader};
use super::{patient, SinkSettings};
use crate::error::{Error, Result};

/// A `read_uncommitted` and a `read_committed` consumer ([`reader::consumer_pair`]).
pub type Pair = (Reader, Reader);

/// The start's consumer pairs, connected.
pub struct StartReaders {
    /// The offsets topic's: the look at what Kafka left open there, then the offset read.
    pub offsets: Pair,
    /// The schema history topic's: the history read.
    pub history: Pair,
    /// The marker checker's (the offsets topic; exactly-once only).
    pub seal: Option<Pair>,
}

impl StartReaders {
    /// Makes the pairs and brings up their connections, all at the same time. Blocking.
    pub fn connect(s: &SinkSettings, eo: bool) -> Result<Self> {
        let span = tracing::Span::current();
        std::thread::scope(|scope| {
            let history = scope.spawn(|| {
                span.in_scope(|| {
                    reader::consumer_pair(
                        &s.client,
                        &format!("sluice-history-reader-{}", s.name),
                        &s.schema_history_topic,
                    )
                })
            });
            let seal = eo.then(|| {
                scope.spawn(|| {
                    span.in_scope(|| {
                        reader::consumer_pair(&s.client, "sluice-seal", &s.offsets_topic)
                    })
                })
            });
            let offsets = reader::consumer_pair(
                &s.client,
                &format!("sluice-offsets-reader-{}", s.name),
                &s.offsets_topic,
            );
            let panicked = |_| Err(Error::definite("connecting the start's readers panicked"));
            let history = history.join().unwrap_or_else(panicked);
            let seal = seal.map(|h| h.join().unwrap_or_else(panicked));
            Ok(StartReaders {
                offsets: offsets?,
                history: history?,
                seal: seal.transpose()?,
            })
        })
    }

    /// Once the offsets and history topics are made sure of (created now, perhaps, after
    /// these consumers asked for their metadata): each consumer learns them.
    pub fn learn_topics(&self, s: &SinkSettings) {
        let own = [
            (&self.offsets, &s.offsets_topic),
            (&self.history, &s.schema_history_topic),
        ];
        for (pair, topic) in own
            .into_iter()
            .chain(self.seal.iter().map(|p| (p, &s.offsets_topic)))
        {
            learn_topic(pair.0.client(), topic);
            learn_topic(pair.1.client(), topic);
        }
    }
}

/// Brings `client`'s metadata of `topic` up to date. librdkafka answers from its cache: a
/// client that asked before the topic was created says "unknown partition" (and a reader
/// would take the topic for empty) until a metadata request finds it. Asks until the topic
/// has its partitions' leaders, at most a second; errors are left to the requests that follow.
pub(crate) fn learn_topic<C: ClientContext>(client: &Client<C>, topic: &str) {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let known = client
            .fetch_metadata(Some(topic), patient::FIRST_TRY)
            .is_ok_and(|md| {
                md.topics().iter().any(|t| {
                    t.name() == topic
                        && t.error().is_none()
                        && !t.partitions().is_empty()
                        && t.partitions().iter().all(|p| p.leader() >= 0)
                })
            });
        if known || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
