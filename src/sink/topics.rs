//! Topic management: the offsets topic must be compacted with one partition; data topics are
//! created when missing and used as they are when they exist.
//!
//! All calls here block (admin requests are awaited on the calling thread); they run on the
//! sink's own thread or in a preflight, never on the async executor.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};

use crate::error::{Error, Result};
use crate::sink::classify::definite_hint;
use crate::sink::identity::PRINCIPAL;
use crate::sink::login_watch;
use crate::sink::patient;

/// How long an admin or metadata request waits when `[kafka.properties]` does not set
/// `socket.timeout.ms`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an admin or metadata request (topic checks and creation, the preflight's "Kafka
/// reachable") waits: librdkafka's `socket.timeout.ms` when `[kafka.properties]` sets it (the
/// timeout librdkafka itself gives admin requests), else [`DEFAULT_REQUEST_TIMEOUT`].
pub fn request_timeout(base: &ClientConfig) -> Duration {
    base.get("socket.timeout.ms")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(DEFAULT_REQUEST_TIMEOUT, Duration::from_millis)
}

/// How long a failed metadata request's probe for a refused login (SASL, TLS) may take.
const LOGIN_PROBE: Duration = Duration::from_secs(5);

/// Settings for topics sluice creates.
#[derive(Debug, Clone)]
pub struct TopicSettings {
    /// Partitions of created data topics.
    pub partitions: i32,
    /// Replication factor of created topics; -1 for the broker default.
    pub replication_factor: i32,
    /// Topic configs applied to created data topics.
    pub config: BTreeMap<String, String>,
}

/// Creates and checks topics; remembers the data topics known to exist.
pub struct Topics {
    /// Shared by the topics made with [`Topics::sharing`].
    admin: std::sync::Arc<AdminClient<DefaultClientContext>>,
    /// The client config, for [`login_watch::probe`].
    base: ClientConfig,
    /// Whether a failed metadata request was probed for a refused login already.
    probed: std::cell::Cell<bool>,
    settings: TopicSettings,
    known: HashSet<String>,
    timeout: Duration,
}

impl Topics {
    /// An admin client on the given client config.
    pub fn new(base: &ClientConfig, settings: TopicSettings) -> Result<Self> {
        let admin = super::client_roles::for_producer(base)
            .create()
            .map_err(|e| Error::definite(format!("cannot create a Kafka admin client: {e}")))?;
        Ok(Topics {
            admin: std::sync::Arc::new(admin),
            base: base.clone(),
            probed: std::cell::Cell::new(false),
            settings,
            known: HashSet::new(),
            timeout: request_timeout(base),
        })
    }

    /// Another `Topics` on the same admin client (its connections up already), for another
    /// thread; it knows no topics yet.
    pub fn sharing(&self) -> Topics {
        Topics {
            admin: self.admin.clone(),
            base: self.base.clone(),
            probed: std::cell::Cell::new(false),
            settings: self.settings.clone(),
            known: HashSet::new(),
            timeout: self.timeout,
        }
    }

    /// Partition count of `topic`, or `None` when it does not exist.
    pub fn partition_count(&self, topic: &str) -> Result<Option<usize>> {
        let md = self.metadata(topic)?;
        partitions_in(&md, topic)
    }

    /// The cluster's metadata of `topic`, tried again past a node down; a refused login is
    /// found by a probe and named.
    fn metadata(&self, topic: &str) -> Result<rdkafka::metadata::Metadata> {
        let client = self.admin.inner();
        // A refused login shows here only as a transport failure or a timeout: after the
        // first failed try a probe looks for one (once per client: a probe that saw none
        // leaves the rest to the retries), and the tries stop at it.
        let refused = std::cell::RefCell::new(None);
        patient::retrying(
            self.timeout,
            |t| {
                if refused.borrow().is_some() {
                    return Err(KafkaError::Global(RDKafkaErrorCode::Authentication));
                }
                client.fetch_metadata(Some(topic), t)
            },
            || {
                if !self.probed.replace(true) {
                    *refused.borrow_mut() = login_watch::probe(&self.base, LOGIN_PROBE);
                }
            },
        )
        .map_err(|e| {
            refused.take().unwrap_or_else(|| {
                Error::transient(format!("Kafka metadata request for `{topic}` failed: {e}"))
            })
        })
    }

    /// Asks the broker to validate (not perform) the creation of a data topic with the
    /// configured partitions, replication factor and configs: proves rights and settings.
    pub fn validate_data_topic(&self, topic: &str) -> Result<()> {
        self.create_data_topic(topic, true)
    }

    /// Creates (or, `validate_only`, validates creating) a data topic with the configured
    /// partitions, replication factor and topic configs.
    fn create_data_topic(&self, topic: &str, validate_only: bool) -> Result<()> {
        self.create_data_topics(&[topic], validate_only)
    }

    /// [`Self::create_data_topic`] for several topics, in one request.
    fn create_data_topics(&self, topics: &[&str], validate_only: bool) -> Result<()> {
        let cfg: Vec<(&str, &str)> = self
            .settings
            .config
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.create_all(topics, self.settings.partitions, &cfg, validate_only)
    }

    fn create(&self, topic: &str, partitions: i32, config: &[(&str, &str)]) -> Result<()> {
        self.create_inner(topic, partitions, config, false)
    }

    fn create_inner(
        &self,
        topic: &str,
        partitions: i32,
        config: &[(&str, &str)],
        validate_only: bool,
    ) -> Result<()> {
        self.create_all(&[topic], partitions, config, validate_only)
    }

    /// Creates (or validates creating) `topics` in one admin request, each with `partitions`
    /// and `config`; one that exists already counts as created.
    fn create_all(
        &self,
        topics: &[&str],
        partitions: i32,
        config: &[(&str, &str)],
        validate_only: bool,
    ) -> Result<()> {
        let Some(&first) = topics.first() else {
            return Ok(());
        };
        let replication = self.settings.replication_factor;
        let new: Vec<NewTopic> = topics
            .iter()
            .map(|topic| {
                let nt = NewTopic::new(topic, partitions, TopicReplication::Fixed(replication));
                config.iter().fold(nt, |nt, (k, v)| nt.set(k, v))
            })
            .collect();
        // Tried again like a read (see `patient`): a try whose answer was lost finds the
        // topics there, and TopicAlreadyExists counts as done.
        let create = |t| {
            let opts = AdminOptions::new()
                .request_timeout(Some(t))
                .operation_timeout(Some(self.timeout))
                .validate_only(validate_only);
            futures_executor::block_on(self.admin.create_topics(&new, &opts))
        };
        let refresh = || patient::refresh_metadata(self.admin.inner(), first);
        let what = match topics.len() {
            1 => format!("topic `{first}`"),
            n => format!("{n} topics (`{first}` …)"),
        };
        let res = patient::retrying(self.timeout, create, refresh)
            .map_err(|e| Error::transient(format!("creating {what}: {e}")))?;
        for r in res {
            match r {
                Ok(_) => {}
                Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => {
                    let msg = format!("creating topic `{name}` failed: {code}");
                    return Err(match code {
                        RDKafkaErrorCode::TopicAuthorizationFailed
                        | RDKafkaErrorCode::ClusterAuthorizationFailed => Error::definite(format!(
                            "{msg}; sluice's principal {PRINCIPAL} may not create it: grant the \
                             ACL CREATE on Topic `{name}` (or on the Cluster), e.g. \
                             `kafka-acls.sh --add --allow-principal {PRINCIPAL} --operation \
                             Create --topic {name}`, or create the topic beforehand"
                        )),
                        RDKafkaErrorCode::PolicyViolation => Error::definite(format!(
                            "{msg}; the broker's topic creation policy \
                             (`create.topic.policy.class.name`) refused it: create the topic \
                             beforehand as the policy allows, or change `[kafka] partitions`, \
                             `replication_factor` and `topic_config` to fit the policy"
                        )),
                        RDKafkaErrorCode::InvalidReplicationFactor => {
                            let (brokers, broker_default) = self.broker_facts();
                            let wanted = match self.settings.replication_factor {
                                n if n > 0 => Wanted::Set(n),
                                _ => Wanted::BrokerDefault(broker_default),
                            };
                            replication_refused(&msg, wanted, brokers)
                        }
                        RDKafkaErrorCode::InvalidPartitions
                        | RDKafkaErrorCode::InvalidConfig
                        | RDKafkaErrorCode::InvalidTopic => Error::definite(format!(
                            "{msg}; check `[kafka] partitions`, `replication_factor` and `topic_config`"
                        )),
                        _ => Error::transient(msg),
                    });
                }
            }
        }
        if !validate_only {
            for topic in topics {
                tracing::info!(topic, partitions, "created topic");
            }
        }
        Ok(())
    }

    /// How many brokers the cluster's metadata lists, and the `default.replication.factor` of
    /// one of them (each None when its request failed).
    fn broker_facts(&self) -> (Option<usize>, Option<i32>) {
        let Ok(md) = self.admin.inner().fetch_metadata(None, self.timeout) else {
            return (None, None);
        };
        let brokers = md.brokers().len();
        let Some(id) = md.brokers().first().map(|b| b.id()) else {
            return (Some(0), None);
        };
        let spec = ResourceSpecifier::Broker(id);
        let opts = AdminOptions::new().request_timeout(Some(self.timeout));
        let default = futures_executor::block_on(self.admin.describe_configs([&spec], &opts))
            .ok()
            .and_then(|res| res.into_iter().next())
            .and_then(|r| r.ok())
            .and_then(|r| {
                r.entries
                    .iter()
                    .find(|e| e.name == "default.replication.factor")
                    .and_then(|e| e.value.as_deref()?.parse().ok())
            });
        (Some(brokers), default)
    }

    /// Makes sure the data topic exists (creating it when missing). `true`: created now, its
    /// partitions have their leaders (or the wait for them ended, see [`Self::await_leaders`]).
    pub fn ensure_data_topic(&mut self, topic: &str) -> Result<bool> {
        if self.known.contains(topic) {
            return Ok(false);
        }
        let created = self.partition_count(topic)?.is_none();
        if created {
            self.create_data_topic(topic, false)?;
            self.await_leaders(topic);
        }
        self.known.insert(topic.to_string());
        Ok(created)
    }

    /// Whether `topic` is known to exist (checked or created before).
    pub fn is_known(&self, topic: &str) -> bool {
        self.known.contains(topic)
    }

    /// [`Self::ensure_data_topic`] for several topics at once: the missing ones are created
    /// in one request and their leaders awaited together (instead of a creation and a wait
    /// per topic: a thousand new tables took 48 s). Returns the topics created now.
    pub fn ensure_data_topics(&mut self, topics: &[&str]) -> Result<Vec<String>> {
        let mut unknown: Vec<&str> = topics
            .iter()
            .copied()
            .filter(|t| !self.known.contains(*t))
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        if let [only] = unknown[..] {
            return Ok(if self.ensure_data_topic(only)? {
                vec![only.to_string()]
            } else {
                Vec::new()
            });
        }
        if unknown.is_empty() {
            return Ok(Vec::new());
        }
        // One metadata request per topic (not one of every topic: that answer grows with the
        // cluster, thousands of topics, and librdkafka keeps it).
        let mut missing = Vec::new();
        for topic in &unknown {
            if self.partition_count(topic)?.is_none() {
                missing.push(*topic);
            }
        }
        if !missing.is_empty() {
            self.create_data_topics(&missing, false)?;
            self.await_leaders_of(&missing);
        }
        tracing::info!(
            checked = unknown.len(),
            created = missing.len(),
            "data topics checked together"
        );
        self.known.extend(unknown.iter().map(|t| t.to_string()));
        Ok(missing.into_iter().map(str::to_string).collect())
    }

    /// Waits (at most one second, in 10 ms steps) until every partition of the just created
    /// `topic` has a leader. A producer that asks for a new topic's metadata before its leaders
    /// are elected holds the first records until its next metadata refresh; the first
    /// transaction of a new pipeline took 200 ms more than the ones after it. Gives up silently:
    /// the producer still finds the leaders by itself.
    fn await_leaders(&self, topic: &str) {
        self.await_leaders_of(&[topic]);
    }

    /// [`Self::await_leaders`] for several topics: one second in all, the topics asked about
    /// one at a time (created in one request, they are usually all led once the first is).
    fn await_leaders_of(&self, topics: &[&str]) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let mut waiting = topics.iter().peekable();
        while let Some(topic) = waiting.peek() {
            if std::time::Instant::now() >= until {
                return;
            }
            let led = self
                .admin
                .inner()
                .fetch_metadata(Some(topic), patient::FIRST_TRY)
                .ok()
                .is_some_and(|md| led_in(&md, topic));
            if led {
                waiting.next();
            } else {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }

    /// Makes sure the offsets topic exists, is compacted and has one partition.
    pub fn ensure_offsets_topic(&mut self, topic: &str) -> Result<()> {
        self.ensure_compacted_topic(topic, "kafka.offsets_topic", "offsets")
    }

    /// Makes sure the schema-history topic exists, is compacted and has one partition.
    pub fn ensure_history_topic(&mut self, topic: &str) -> Result<()> {
        self.ensure_compacted_topic(topic, "kafka.schema_history_topic", "schema history")
    }

    /// Makes sure a topic that must keep its records in one order (the schema-change topic)
    /// exists; created with one partition and the data topics' other settings.
    pub fn ensure_ordered_topic(&mut self, topic: &str) -> Result<()> {
        if self.known.contains(topic) {
            return Ok(());
        }
        if self.partition_count(topic)?.is_none() {
            let cfg: Vec<(&str, &str)> = self
                .settings
                .config
                .iter()
                .filter(|(k, _)| k.as_str() != "cleanup.policy")
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            self.create(topic, 1, &cfg)?;
        }
        self.known.insert(topic.to_string());
        Ok(())
    }

    /// A compacted single-partition topic of sluice's own (`setting` names it in errors).
    fn ensure_compacted_topic(&mut self, topic: &str, setting: &str, what: &str) -> Result<()> {
        if self.known.contains(topic) {
            return Ok(());
        }
        match self.partition_count(topic)? {
            None => {
                self.create(
                    topic,
                    1,
                    &[
                        ("cleanup.policy", "compact"),
                        ("min.compaction.lag.ms", "0"),
                    ],
                )?;
            }
            Some(1) => self.check_compacted(topic, setting, what)?,
            Some(n) => {
                return Err(Error::definite(format!(
                    "{what} topic `{topic}` has {n} partitions, expected 1: sluice keeps its \
                     {what} records in one partition so the last record of a key is the latest; \
                     set `{setting}` to a new name or recreate the topic with 1 partition"
                )))
            }
        }
        self.known.insert(topic.to_string());
        Ok(())
    }

    fn check_compacted(&self, topic: &str, setting: &str, what: &str) -> Result<()> {
        let spec = ResourceSpecifier::Topic(topic);
        let describe = |t| {
            let opts = AdminOptions::new().request_timeout(Some(t));
            futures_executor::block_on(self.admin.describe_configs([&spec], &opts))
        };
        // An admin request goes to the controller the cached metadata names (in KRaft, any
        // broker the cluster picks): after a failed try, fresh metadata names a live one.
        let refresh = || patient::refresh_metadata(self.admin.inner(), topic);
        let res = patient::retrying(self.timeout, describe, refresh)
            .map_err(|e| Error::transient(format!("describing topic `{topic}`: {e}")))?;
        let Some(Ok(resource)) = res.into_iter().next() else {
            return Err(Error::transient(format!(
                "describing topic `{topic}` returned no result"
            )));
        };
        let policy = resource
            .entries
            .iter()
            .find(|e| e.name == "cleanup.policy")
            .and_then(|e| e.value.clone())
            .unwrap_or_default();
        if !policy.split(',').any(|p| p.trim() == "compact") {
            return Err(Error::definite(format!(
                "{what} topic `{topic}` has cleanup.policy={policy:?}, expected \"compact\": with \
                 deletion its records would expire and the pipeline would lose its {what}; run \
                 `kafka-configs --alter --entity-type topics --entity-name {topic} --add-config \
                 cleanup.policy=compact` or set `{setting}` to a new topic"
            )));
        }
        Ok(())
    }
}

/// Partition count of `topic` in `md`, `None` when it does not exist (absent from the
/// answer, or unknown to the broker); another error of the topic is definite when a setting or
/// a right must change (with the hint), transient otherwise.
fn partitions_in(md: &rdkafka::metadata::Metadata, topic: &str) -> Result<Option<usize>> {
    let Some(t) = md.topics().iter().find(|t| t.name() == topic) else {
        return Ok(None);
    };
    match t.error() {
        None => Ok(Some(t.partitions().len())),
        Some(e) if RDKafkaErrorCode::from(e) == RDKafkaErrorCode::UnknownTopicOrPartition => {
            Ok(None)
        }
        Some(e) => {
            let code = RDKafkaErrorCode::from(e);
            let msg = format!("Kafka metadata for `{topic}`: {code}");
            Err(match definite_hint(code) {
                Some(hint) => Error::definite(format!("{msg}; {}", hint.replace("<topic>", topic))),
                None => Error::transient(msg),
            })
        }
    }
}

/// Every partition of `topic` in `md` has a leader.
fn led_in(md: &rdkafka::metadata::Metadata, topic: &str) -> bool {
    md.topics().iter().any(|t| {
        t.name() == topic
            && t.error().is_none()
            && !t.partitions().is_empty()
            && t.partitions().iter().all(|p| p.leader() >= 0)
    })
}

/// The replication factor a topic creation asked for.
#[derive(Debug, Clone, Copy)]
enum Wanted {
    /// `[kafka] replication_factor` set.
    Set(i32),
    /// `replication_factor = -1`: the broker's `default.replication.factor` (None: it could
    /// not be read).
    BrokerDefault(Option<i32>),
}

/// What a topic creation refused as `InvalidReplicationFactor` means. The controller counts
/// only the brokers it sees as live and unfenced: right after a broker (re)starts that can be
/// fewer than the metadata lists, even none, and the refusal passes once the broker has
/// registered (seen in the chaos run: a sluice started during a broker restart stopped with
/// exit 1, with an explicit factor and again with the broker's default). So the refusal is
/// transient when the cluster lists at least the factor's brokers (or either is unknown), and
/// definite — the setting cannot be met — when it lists fewer.
fn replication_refused(msg: &str, wanted: Wanted, brokers: Option<usize>) -> Error {
    let (factor, what) = match wanted {
        Wanted::Set(n) => (Some(n), format!("`[kafka] replication_factor` is {n}")),
        Wanted::BrokerDefault(d) => (
            d,
            match d {
                Some(d) => format!(
                    "`[kafka] replication_factor` is -1, so the broker's \
                     `default.replication.factor` ({d}) applies,"
                ),
                None => "`[kafka] replication_factor` is -1".to_string(),
            },
        ),
    };
    let factor = factor
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0);
    match (factor, brokers) {
        (Some(n), Some(have)) if have < n => Error::definite(format!(
            "{msg}: {what} but the cluster lists {have} broker(s); set `[kafka] \
             replication_factor` to at most {have}"
        )),
        (Some(n), Some(have)) => Error::transient(format!(
            "{msg}: the cluster lists {have} broker(s), enough for a replication factor of {n}, \
             so a broker that just started is not yet counted as live; tried again"
        )),
        _ => Error::transient(format!(
            "{msg}: {what}; the cluster's brokers or their default could not be read to judge \
             it (a broker may be starting); tried again"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn a_refused_replication_factor_is_transient_only_while_the_brokers_suffice() {
        let kind = |rf, brokers| {
            replication_refused("creating topic `t` failed", Wanted::Set(rf), brokers).kind()
        };
        assert_eq!(
            kind(1, Some(1)),
            ErrorKind::Transient,
            "a restarting broker"
        );
        assert_eq!(kind(3, Some(3)), ErrorKind::Transient);
        assert_eq!(kind(1, None), ErrorKind::Transient, "brokers unknown");
        assert_eq!(
            kind(3, Some(1)),
            ErrorKind::Definite,
            "the setting cannot be met"
        );
        let e =
            replication_refused("creating topic `t` failed", Wanted::Set(3), Some(1)).to_string();
        for part in ["replication_factor` is 3", "lists 1 broker(s)", "at most 1"] {
            assert!(e.contains(part), "{part}: {e}");
        }
    }

    #[test]
    fn with_the_brokers_default_factor_the_default_is_judged() {
        let refused = |default, brokers| {
            replication_refused(
                "creating topic `t` failed",
                Wanted::BrokerDefault(default),
                brokers,
            )
        };
        // The chaos run's case: one broker, default 1, the broker just restarted.
        assert_eq!(refused(Some(1), Some(1)).kind(), ErrorKind::Transient);
        assert_eq!(
            refused(None, Some(1)).kind(),
            ErrorKind::Transient,
            "the default could not be read"
        );
        assert_eq!(refused(Some(1), None).kind(), ErrorKind::Transient);
        let e = refused(Some(3), Some(1));
        assert_eq!(e.kind(), ErrorKind::Definite, "{e}");
        let text = e.to_string();
        for part in [
            "replication_factor` is -1",
            "`default.replication.factor` (3)",
            "lists 1 broker(s)",
            "at most 1",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }

    #[test]
    fn the_request_timeout_follows_socket_timeout_ms() {
        let mut c = ClientConfig::new();
        assert_eq!(request_timeout(&c), DEFAULT_REQUEST_TIMEOUT);
        c.set("socket.timeout.ms", "2500");
        assert_eq!(request_timeout(&c), Duration::from_millis(2500));
        // librdkafka refuses such values itself; the default stays here.
        c.set("socket.timeout.ms", "soon");
        assert_eq!(request_timeout(&c), DEFAULT_REQUEST_TIMEOUT);
    }
}
