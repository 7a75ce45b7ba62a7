//! The preflight `sluice check` prints and `sluice run` starts with: the source's checks
//! (`crate::mysql::preflight`), then Kafka (reachable, topics creatable, the offsets and
//! schema-history topics' shape, the committed offset) and the schema registry.

use std::time::Duration;

use rdkafka::config::ClientConfig;

use super::{client_config, sink_settings, start_spec};
use crate::config::{Config, OnPurged};
use crate::error::{Error, Result};
use crate::mysql::preflight::{self, CheckItem};
use crate::mysql::server;
use crate::position::StartSpec;
use crate::sink::identity::KafkaIdentity;
use crate::sink::reader::Until;
use crate::sink::{self, SinkSettings};
use crate::startup::Timeline;

/// Runs preflight checks against the source and Kafka; returns all items.
pub async fn preflight(cfg: &Config) -> Result<Vec<CheckItem>> {
    preflight_timed(cfg, &Timeline::new()).await
}

/// [`preflight()`], its steps timed on `timeline`.
pub(super) async fn preflight_timed(cfg: &Config, timeline: &Timeline) -> Result<Vec<CheckItem>> {
    crate::mysql::query::set_timeout(cfg.source.query_timeout());
    // Kafka (reachable, topics, the committed offset), the source and the registry are
    // checked at the same time: each waits on its own network round trips.
    let kcfg = client_config(cfg);
    let offsets_topic = cfg.offsets_topic();
    let name = cfg.name.clone();
    let settings = sink_settings(cfg);
    let t = timeline.clone();
    let kafka_task = tokio::task::spawn_blocking({
        let span = tracing::Span::current();
        move || span.in_scope(|| kafka_checks(&kcfg, &settings, &offsets_topic, &name, &t))
    });
    let source = async {
        let connect = server::ConnectOptions::from_config(&cfg.source);
        let t0 = std::time::Instant::now();
        let mut conn = crate::mysql::session::connect(&connect).await?;
        let info = server::server_info(&mut conn).await?;
        timeline.record("preflight: source connected", t0);
        let t0 = std::time::Instant::now();
        let mut items = preflight::check_source(&mut conn, &info, cfg.source.server_id).await;
        items.insert(
            1,
            preflight::check_tls(&mut conn, cfg.source.ssl_mode).await,
        );
        timeline.record("preflight: source checks", t0);
        Ok::<_, Error>((conn, info, items))
    };
    let registry = async {
        if !cfg.needs_registry() {
            return None;
        }
        Some(
            timeline
                .step_async("preflight: schema registry", registry_check(cfg))
                .await,
        )
    };
    let (source, registry) = tokio::join!(source, registry);
    let (mut conn, info, mut items) = source?;
    let kafka_items = kafka_task
        .await
        .map_err(|e| Error::definite(format!("preflight task failed: {e}")))?;
    let committed = kafka_items.1;
    let identity = KafkaIdentity::of_pipeline(&client_config(cfg), &cfg.name);
    items.push(kafka_security_item(&identity));
    items.extend(kafka_items.0.into_iter().map(|mut item| {
        item.problem = item.problem.map(|p| identity.name_in_text(&p));
        item
    }));
    items.extend(registry);
    let t0 = std::time::Instant::now();
    let start = start_spec(cfg);
    items.insert(
        items.len().min(5),
        preflight::check_row_metadata(&info, committed.is_some(), start.as_ref().ok()),
    );
    match (&committed, start) {
        (Some(pos), _) => {
            let mut item =
                preflight::check_position(&mut conn, &info, pos, "committed offset").await;
            if item.problem.is_some()
                && !item.transient
                && cfg.snapshot.on_purged == OnPurged::Resnapshot
            {
                item = CheckItem::ok(
                    &item.name,
                    format!(
                        "{}; snapshot.on_purged = \"resnapshot\": the pipeline takes a new \
                         snapshot and streams from the current position",
                        item.detail
                    ),
                );
            }
            items.push(item)
        }
        (None, Ok(StartSpec::FilePos(fp))) => {
            let pos = crate::position::SourcePosition::FilePos(fp);
            items.push(preflight::check_position(&mut conn, &info, &pos, "configured start").await)
        }
        (None, Ok(spec)) => items.push(CheckItem::ok(
            "resume position",
            format!("no committed offset yet; will start at `{spec}`"),
        )),
        (None, Err(e)) => items.push(CheckItem::failed(
            "resume position",
            format!("source.start = {:?}", cfg.source.start),
            &e,
        )),
    }
    let _ =
        crate::mysql::query::Timed::timed(conn.disconnect(), "closing the preflight connection")
            .await;
    timeline.record("preflight: resume position", t0);
    Ok(items)
}

/// Who sluice is to the brokers: protocol, mechanism and principal (a warning when the
/// connection leaves credentials or records readable on the network).
fn kafka_security_item(identity: &KafkaIdentity) -> CheckItem {
    let detail = identity.describe();
    if let Some(warning) = identity.warning() {
        tracing::warn!(kafka = %detail, "{warning}");
        return CheckItem::ok("Kafka security", format!("{detail}; WARNING: {warning}"));
    }
    CheckItem::ok("Kafka security", detail)
}

/// The schema registry of Avro routes: reachable, credentials accepted, its global rule.
async fn registry_check(cfg: &Config) -> CheckItem {
    let url = cfg.schema_registry.url.clone();
    let outcome = match crate::registry::Registry::new(&cfg.schema_registry) {
        Ok(r) => r.check().await.map_err(Error::from),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(info) => CheckItem::ok(
            "schema registry",
            format!(
                "{url}: {} subjects, compatibility {}",
                info.subjects,
                info.compatibility.as_deref().unwrap_or("not reported")
            ),
        ),
        Err(e) => CheckItem::failed("schema registry", url, &e),
    }
}

fn kafka_checks(
    kcfg: &ClientConfig,
    settings: &SinkSettings,
    offsets_topic: &str,
    name: &str,
    timeline: &Timeline,
) -> (Vec<CheckItem>, Option<crate::position::SourcePosition>) {
    let (mut items, committed) = kafka_check_items(kcfg, settings, offsets_topic, name, timeline);
    all_transient_if_one_is(&mut items);
    (items, committed)
}

/// A Kafka check that failed for a reason that may pass (a transport failure, a timeout)
/// says the cluster is not answering reliably: the other Kafka problems of the same look may
/// be its consequences (a restarting broker refuses a topic as `InvalidReplicationFactor`
/// while it counts no live broker), so they are all retried and checked again. Seen in the
/// chaos run: a sluice started during a broker restart stopped with exit 1.
fn all_transient_if_one_is(items: &mut [CheckItem]) {
    if items.iter().any(|i| i.problem.is_some() && i.transient) {
        for i in items.iter_mut().filter(|i| i.problem.is_some()) {
            i.transient = true;
        }
    }
}

fn kafka_check_items(
    kcfg: &ClientConfig,
    settings: &SinkSettings,
    offsets_topic: &str,
    name: &str,
    timeline: &Timeline,
) -> (Vec<CheckItem>, Option<crate::position::SourcePosition>) {
    let mut items = Vec::new();
    let t0 = std::time::Instant::now();
    let topics = match sink::topics::Topics::new(kcfg, settings.topics.clone()) {
        Ok(t) => t,
        Err(e) => {
            items.push(CheckItem::failed(
                "Kafka reachable",
                settings_bootstrap(kcfg),
                &e,
            ));
            return (items, None);
        }
    };
    match topics.partition_count(offsets_topic) {
        Err(e) => {
            let mut item = CheckItem::failed("Kafka reachable", settings_bootstrap(kcfg), &e);
            item.problem = Some(format!(
                "{e}; check `kafka.bootstrap_servers` and that the brokers are up"
            ));
            items.push(item);
            (items, None)
        }
        Ok(count) => {
            timeline.record("preflight: Kafka reachable", t0);
            items.push(CheckItem::ok("Kafka reachable", settings_bootstrap(kcfg)));
            let detail = format!(
                "validated (not performed) creating a data topic with partitions={}, \
                 replication_factor={}",
                settings.topics.partitions, settings.topics.replication_factor
            );
            // Validating a topic creation takes the controller a while: it runs beside the
            // looks at sluice's own topics and the committed offset, on the admin client whose
            // connections the look at the cluster brought up.
            let probe = format!("{name}.sluice-check");
            let prober = topics.sharing();
            let span = tracing::Span::current();
            let (validated, (rest_items, committed)) = std::thread::scope(|scope| {
                let validating = scope.spawn(move || {
                    span.in_scope(|| {
                        timeline.step("preflight: topic creation validated", || {
                            prober.validate_data_topic(&probe)
                        })
                    })
                });
                let rest =
                    own_and_committed(kcfg, settings, offsets_topic, name, timeline, topics, count);
                (validating.join(), rest)
            });
            items.push(match validated {
                Ok(Ok(())) => CheckItem::ok("topics creatable", detail),
                Ok(Err(e)) => CheckItem::failed("topics creatable", detail, &e),
                Err(_) => CheckItem::failed(
                    "topics creatable",
                    detail,
                    &Error::definite("the check panicked"),
                ),
            });
            items.extend(rest_items);
            (items, committed)
        }
    }
}

/// The looks at sluice's own topics (their shape) and at the committed offset (advisory,
/// before fencing).
fn own_and_committed(
    kcfg: &ClientConfig,
    settings: &SinkSettings,
    offsets_topic: &str,
    name: &str,
    timeline: &Timeline,
    topics: sink::topics::Topics,
    count: Option<usize>,
) -> (Vec<CheckItem>, Option<crate::position::SourcePosition>) {
    let mut items = Vec::new();
    // Before fencing: an advisory look (up to the last stable offset), never resumed
    // from.
    let read = |topic: &str| {
        sink::offsets::read_committed_offset(
            kcfg,
            topic,
            name,
            Until::FirstEnd,
            Duration::from_secs(20),
        )
    };
    let mut t = topics;
    // The committed offset is read while the topics' shape is looked at: each waits on its
    // own client's round trips.
    let span = tracing::Span::current();
    let mut committed = std::thread::scope(|scope| {
        let reading = scope.spawn(|| {
            span.in_scope(|| {
                let t0 = std::time::Instant::now();
                let committed = match count {
                    Some(_) => read(offsets_topic),
                    None => Ok(None),
                };
                timeline.record("preflight: committed offset", t0);
                committed
            })
        });
        let t0 = std::time::Instant::now();
        own_topic_item(&mut items, &mut t, offsets_topic, count, "offsets topic");
        let history = &settings.schema_history_topic;
        let history_count = t.partition_count(history).ok().flatten();
        own_topic_item(
            &mut items,
            &mut t,
            history,
            history_count,
            "schema history topic",
        );
        timeline.record("preflight: own topics", t0);
        reading
            .join()
            .unwrap_or_else(|_| Err(Error::definite("reading the committed offset panicked")))
    });
    if let (Ok(None), Some(shared)) = (&committed, &settings.shared_offsets_topic) {
        if t.partition_count(shared).ok().flatten().is_some() {
            committed = read(shared).map(|r| {
                r.inspect(|r| {
                    items.push(CheckItem::ok(
                        "committed offset",
                        format!(
                            "{} in the shared `{shared}`; run moves it to \
                             `{offsets_topic}`",
                            r.position
                        ),
                    ))
                })
            });
        }
    }
    match committed {
        Ok(r) => (items, r.map(|r| r.position)),
        Err(e) => {
            items.push(CheckItem::failed("committed offset", String::new(), &e));
            (items, None)
        }
    }
}

/// The check item of one of sluice's compacted topics: its shape when it exists.
fn own_topic_item(
    items: &mut Vec<CheckItem>,
    topics: &mut sink::topics::Topics,
    topic: &str,
    count: Option<usize>,
    what: &str,
) {
    let item = match count {
        None => CheckItem::ok(
            what,
            format!("`{topic}` does not exist yet; run creates it compacted"),
        ),
        Some(_) => {
            let r = if what == "offsets topic" {
                topics.ensure_offsets_topic(topic)
            } else {
                topics.ensure_history_topic(topic)
            };
            match r {
                Ok(()) => CheckItem::ok(what, format!("`{topic}`")),
                Err(e) => CheckItem::failed(what, format!("`{topic}`"), &e),
            }
        }
    };
    items.push(item);
}

fn settings_bootstrap(c: &ClientConfig) -> String {
    format!(
        "bootstrap.servers={}",
        c.get("bootstrap.servers").unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn failed(name: &str, e: Error) -> CheckItem {
        CheckItem::failed(name, "", &e)
    }

    #[test]
    fn one_transient_kafka_problem_makes_them_all_transient() {
        let mut items = vec![
            CheckItem::ok("Kafka reachable", "bootstrap.servers=k:9092"),
            failed(
                "topics creatable",
                Error::definite("InvalidReplicationFactor (Broker: Invalid replication factor)"),
            ),
            failed(
                "schema history topic",
                Error::transient("Kafka metadata request failed: BrokerTransportFailure"),
            ),
        ];
        all_transient_if_one_is(&mut items);
        assert!(items.iter().all(|i| i.problem.is_none() || i.transient));
        assert!(!items[0].transient, "a check that passed stays as it was");
    }

    #[test]
    fn definite_kafka_problems_alone_stay_definite() {
        let mut items = vec![failed(
            "topics creatable",
            Error::definite("TopicAuthorizationFailed"),
        )];
        all_transient_if_one_is(&mut items);
        assert!(!items[0].transient);
    }
}
