//! Table selection and topic routing, compiled from a [`Config`]: [`Router`] decides
//! which tables are captured (`source.include` / `source.exclude` / system schemas) and
//! which Kafka topic, format and key a table's changes go to (`[[route]]`, first match
//! wins), expanding topic templates (`$1`..`$9`, `${N}`, `${db}`, `${table}`).
//!
//! All patterns match the whole `db.table` string: they are compiled as `^(?:<re>)$`,
//! so `shop\..*` matches `shop.orders` but not `workshop.t`. Matching is
//! case-sensitive; prefix a pattern with `(?i)` for case-insensitive matching.

use std::sync::Arc;

use regex::{Regex, RegexSet};

use super::route_rules::RouteRules;
use super::{Config, ConfigError, Format, OnSchemaChange, Problem};
use crate::encode::avro::AvroOptions;
use crate::metrics::Metrics;

/// Schemas that are never captured unless `source.include_system_schemas = true`.
pub const SYSTEM_SCHEMAS: &[&str] = &["mysql", "information_schema", "performance_schema", "sys"];

/// Whether `db` is one of [`SYSTEM_SCHEMAS`] (ASCII case-insensitive).
pub fn is_system_schema(db: &str) -> bool {
    SYSTEM_SCHEMAS.iter().any(|s| s.eq_ignore_ascii_case(db))
}

/// Whether `name` is a legal Kafka topic name: 1–249 characters from `[a-zA-Z0-9._-]`,
/// and neither `.` nor `..`.
pub fn is_valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name.bytes().all(is_topic_byte)
}

fn is_topic_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-'
}

/// Where one table's changes go: the result of [`Router::route`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteTarget {
    /// Kafka topic, template already expanded and checked to be a legal topic name.
    pub topic: String,
    /// Encoding of the message values.
    pub format: Format,
    /// Columns forming the message key; empty means the table's primary key.
    pub key_columns: Vec<String>,
    /// Whether a delete is followed by a tombstone (null-value message with the same key).
    pub tombstones: bool,
    /// What a DDL changing the table's shape does.
    pub on_schema_change: OnSchemaChange,
    /// Avro encoding options (used when `format` is Avro).
    pub avro: AvroOptions,
    /// JSON with Kafka Connect schemas (`{"schema":…,"payload":…}`; `format` is JSON).
    pub json_schemas: bool,
    /// Key-change headers, `BIGINT UNSIGNED`, skipped operations and column rules.
    pub rules: RouteRules,
}

/// One piece of a parsed topic template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Group(usize),
    Db,
    Table,
}

#[derive(Debug, Clone)]
struct CompiledRoute {
    /// Index in the effective route list, for error messages (`route[<index>]`).
    index: usize,
    regex: Regex,
    template: Vec<Part>,
    format: Format,
    key_columns: Vec<String>,
    tombstones: bool,
    on_schema_change: OnSchemaChange,
    avro_enums: bool,
    json_schemas: bool,
    rules: RouteRules,
}

/// Compiled table filter and route table. Build it once with [`Router::new`]; both
/// lookups are cheap (one regex-set test, then regexes tried in order until one
/// matches), but callers that see the same table often should still cache the result
/// per `(db, table)`.
#[derive(Debug, Clone)]
pub struct Router {
    include: Option<RegexSet>,
    exclude: Option<RegexSet>,
    include_system_schemas: bool,
    offsets_topic: String,
    routes: Vec<CompiledRoute>,
    /// The metrics of the pipeline the router routes for, where the builders of table
    /// contexts register a table's series ([`Router::with_metrics`]); `None` for a router
    /// that only answers lookups (checks, tools, tests).
    metrics: Option<Arc<Metrics>>,
}

impl Router {
    /// Compiles `source.include`, `source.exclude` and the effective routes
    /// ([`Config::effective_routes`]). Errors list every bad pattern or template.
    pub fn new(config: &Config) -> Result<Router, ConfigError> {
        let mut problems = Vec::new();
        let router = Router::build(config, &mut problems);
        match router {
            Some(r) if problems.is_empty() => Ok(r),
            _ => Err(ConfigError::Invalid(problems)),
        }
    }

    /// Compiles, pushing every problem found; `None` if any.
    pub(crate) fn build(config: &Config, problems: &mut Vec<Problem>) -> Option<Router> {
        let include = compile_set("source.include", &config.source.include, problems);
        let exclude = compile_set("source.exclude", &config.source.exclude, problems);
        let mut routes = Vec::new();
        for (index, route) in config.effective_routes().into_iter().enumerate() {
            let regex = compile_whole(&format!("route[{index}].match"), &route.pattern);
            let regex = match regex {
                Ok(r) => r,
                Err(p) => {
                    problems.push(p);
                    continue;
                }
            };
            let template =
                match parse_template(index, &route.topic, regex.captures_len().saturating_sub(1)) {
                    Ok(t) => t,
                    Err(p) => {
                        problems.push(p);
                        continue;
                    }
                };
            let rules_input = super::route_rules::RulesInput {
                key_change_headers: route.key_change_headers,
                bigint_unsigned: route.bigint_unsigned,
                skipped_operations: &route.skipped_operations,
                column_exclude: &route.column_exclude,
                column_mask: &route.column_mask,
                column_hash: &route.column_hash,
            };
            let Some(rules) = super::route_rules::compile(index, &rules_input, problems) else {
                continue;
            };
            routes.push(CompiledRoute {
                index,
                regex,
                template,
                format: route.format,
                key_columns: route.key_columns,
                tombstones: route.tombstones,
                on_schema_change: route.on_schema_change,
                avro_enums: route.avro_enums,
                json_schemas: route.json_schemas,
                rules,
            });
        }
        if !problems.is_empty() {
            return None;
        }
        Some(Router {
            include: include?,
            exclude: exclude?,
            include_system_schemas: config.source.include_system_schemas,
            offsets_topic: config.offsets_topic(),
            routes,
            metrics: None,
        })
    }

    /// The router of a running pipeline, which carries its metrics to whatever builds its
    /// table contexts (the stream's table maps, the snapshot's reads).
    pub fn with_metrics(self, metrics: Arc<Metrics>) -> Router {
        Router {
            metrics: Some(metrics),
            ..self
        }
    }

    /// The pipeline's metrics, when the router has them ([`Router::with_metrics`]).
    pub fn metrics(&self) -> Option<&Arc<Metrics>> {
        self.metrics.as_ref()
    }

    /// Whether changes to `db`.`table` are captured: system schemas
    /// ([`SYSTEM_SCHEMAS`]) never are unless `source.include_system_schemas`; otherwise
    /// the table must match some `source.include` pattern (an empty list matches every
    /// table) and no `source.exclude` pattern.
    pub fn table_included(&self, db: &str, table: &str) -> bool {
        if !self.include_system_schemas && is_system_schema(db) {
            return false;
        }
        let name = qualified(db, table);
        if let Some(include) = &self.include {
            if !include.is_match(&name) {
                return false;
            }
        }
        match &self.exclude {
            Some(exclude) => !exclude.is_match(&name),
            None => true,
        }
    }

    /// The first route whose `match` matches the whole `db.table`, with its topic
    /// template expanded.
    ///
    /// Returns `Ok(None)` when no route matches: such a table's changes are **not
    /// emitted** (they are skipped, although the binlog position still advances past
    /// them). This does not consult [`Router::table_included`]; see [`Router::resolve`].
    ///
    /// Errors when the expanded topic is not a legal Kafka topic name (or is
    /// `kafka.offsets_topic`); the error names the route, the table and the topic.
    pub fn route(&self, db: &str, table: &str) -> Result<Option<RouteTarget>, ConfigError> {
        let name = qualified(db, table);
        for route in &self.routes {
            let Some(caps) = route.regex.captures(&name) else {
                continue;
            };
            let mut topic = String::new();
            for part in &route.template {
                match part {
                    Part::Literal(s) => topic.push_str(s),
                    Part::Group(i) => topic.push_str(caps.get(*i).map_or("", |m| m.as_str())),
                    Part::Db => topic.push_str(db),
                    Part::Table => topic.push_str(table),
                }
            }
            check_expanded_topic(route.index, &name, &topic, &self.offsets_topic)?;
            return Ok(Some(RouteTarget {
                topic,
                format: route.format,
                key_columns: route.key_columns.clone(),
                tombstones: route.tombstones,
                on_schema_change: route.on_schema_change,
                avro: AvroOptions {
                    enum_as_avro_enum: route.avro_enums,
                },
                json_schemas: route.json_schemas,
                rules: route.rules.clone(),
            }));
        }
        Ok(None)
    }

    /// The names the routes' templates can expand to, as one set of whole-name patterns
    /// (each `$N`, `${db}` and `${table}` standing for any text): the topics this pipeline
    /// may have written to.
    pub fn topic_patterns(&self) -> RegexSet {
        let patterns = self.routes.iter().map(|route| {
            let mut pattern = String::from("^");
            for part in &route.template {
                match part {
                    Part::Literal(s) => pattern.push_str(&regex::escape(s)),
                    Part::Group(_) => pattern.push_str(".*"),
                    Part::Db | Part::Table => pattern.push_str(".+"),
                }
            }
            pattern.push('$');
            pattern
        });
        // Escaped literals and `.*` / `.+` always compile.
        RegexSet::new(patterns).unwrap_or_else(|_| RegexSet::empty())
    }

    /// [`Router::route`] for tables that [`Router::table_included`] accepts; `Ok(None)`
    /// for the others.
    pub fn resolve(&self, db: &str, table: &str) -> Result<Option<RouteTarget>, ConfigError> {
        if self.table_included(db, table) {
            self.route(db, table)
        } else {
            Ok(None)
        }
    }
}

fn qualified(db: &str, table: &str) -> String {
    let mut name = String::with_capacity(db.len() + table.len() + 1);
    name.push_str(db);
    name.push('.');
    name.push_str(table);
    name
}

fn check_expanded_topic(
    index: usize,
    table: &str,
    topic: &str,
    offsets_topic: &str,
) -> Result<(), ConfigError> {
    let path = format!("route[{index}].topic");
    if !is_valid_topic_name(topic) {
        return Err(ConfigError::Invalid(vec![Problem::new(
            path.clone(),
            format!("topic `{topic}` for table `{table}`, which is not a legal Kafka topic name"),
            "1 to 249 characters from [a-zA-Z0-9._-], not `.` or `..`",
            format!(
                "change {path} (or an earlier route's match) so this table maps to a legal \
                 name, or exclude the table with source.exclude"
            ),
        )]));
    }
    if topic == offsets_topic {
        return Err(ConfigError::Invalid(vec![Problem::new(
            path.clone(),
            format!("topic `{topic}` for table `{table}`, which is kafka.offsets_topic"),
            "a data topic different from the offsets topic",
            format!("change {path} or kafka.offsets_topic"),
        )]));
    }
    Ok(())
}

/// Compiles `pattern` so that it must match the whole subject: `^(?:<pattern>)$`. The
/// pattern is first compiled alone, so that it cannot close the wrapper group (`a)|(b`).
pub(crate) fn compile_whole(path: &str, pattern: &str) -> Result<Regex, Problem> {
    let bad = |e: regex::Error| {
        Problem::new(
            path,
            format!("the pattern `{pattern}`, which is not a valid regular expression: {e}"),
            "a regular expression (Rust regex syntax) matched against the whole `db.table`",
            format!(
                "correct {path}; in TOML basic strings backslashes must be doubled \
                 (\"shop\\\\..*\") or use a literal string ('shop\\..*')"
            ),
        )
    };
    Regex::new(pattern).map_err(bad)?;
    Regex::new(&format!("^(?:{pattern})$")).map_err(bad)
}

fn compile_set(
    path: &str,
    patterns: &[String],
    problems: &mut Vec<Problem>,
) -> Option<Option<RegexSet>> {
    if patterns.is_empty() {
        return Some(None);
    }
    let mut ok = true;
    for (i, p) in patterns.iter().enumerate() {
        if let Err(problem) = compile_whole(&format!("{path}[{i}]"), p) {
            problems.push(problem);
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    super::route_rules::whole_name_set(path, patterns, problems)
}

/// Parses a topic template. `groups` is the number of capture groups of the route's
/// regex. Literal text must consist of legal topic characters.
fn parse_template(index: usize, template: &str, groups: usize) -> Result<Vec<Part>, Problem> {
    let path = format!("route[{index}].topic");
    let expected = "a topic name template: characters [a-zA-Z0-9._-] plus `$1`..`$9` or `${N}` \
                    (capture groups of the match; `$0` is the whole `db.table`), `${db}` and \
                    `${table}`";
    let problem = |found: String, fix: String| Problem::new(&path, found, expected, fix);
    if template.is_empty() {
        return Err(problem(
            "an empty topic template".to_string(),
            format!("set {path}, e.g. \"shop.$1\""),
        ));
    }
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = template.char_indices().peekable();
    while let Some((pos, c)) = chars.next() {
        if c != '$' {
            if !(c.is_ascii() && is_topic_byte(c as u8)) {
                return Err(problem(
                    format!("`{template}`, whose character `{c}` (at byte {pos}) is not allowed in a Kafka topic name"),
                    format!("remove or replace `{c}` in {path}"),
                ));
            }
            literal.push(c);
            continue;
        }
        let part = match chars.next() {
            Some((_, d)) if d.is_ascii_digit() => Part::Group(usize::from(d as u8 - b'0')),
            Some((_, '{')) => {
                let mut name = String::new();
                let mut closed = false;
                for (_, c) in chars.by_ref() {
                    if c == '}' {
                        closed = true;
                        break;
                    }
                    name.push(c);
                }
                if !closed {
                    return Err(problem(
                        format!("`{template}`, with a `${{` that is never closed"),
                        format!("add the closing `}}` in {path}"),
                    ));
                }
                match name.as_str() {
                    "db" => Part::Db,
                    "table" => Part::Table,
                    n => match n.parse::<usize>() {
                        Ok(i) => Part::Group(i),
                        Err(_) => {
                            return Err(problem(
                                format!("`{template}`, with the unknown placeholder `${{{n}}}`"),
                                format!("use ${{db}}, ${{table}} or a group number in {path}"),
                            ))
                        }
                    },
                }
            }
            _ => {
                return Err(problem(
                    format!("`{template}`, with a `$` (at byte {pos}) not followed by a digit or `{{`"),
                    format!("write $1..$9, ${{N}}, ${{db}} or ${{table}} in {path}; `$` is not allowed in topic names"),
                ))
            }
        };
        if let Part::Group(i) = part {
            if i > groups {
                return Err(problem(
                    format!(
                        "`{template}`, which uses capture group {i} but route[{index}].match has \
                         only {groups} capture group(s)"
                    ),
                    format!("add a capture group `( )` to route[{index}].match or change {path}"),
                ));
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(std::mem::take(&mut literal)));
        }
        parts.push(part);
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    if let [Part::Literal(fixed)] = parts.as_slice() {
        if !is_valid_topic_name(fixed) {
            return Err(problem(
                format!("`{fixed}`, which is not a legal Kafka topic name"),
                format!("change {path}: at most 249 characters, not `.` or `..`"),
            ));
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_parsing() {
        assert_eq!(
            parse_template(0, "a.$1-${db}_${table}.${2}", 2).unwrap(),
            vec![
                Part::Literal("a.".into()),
                Part::Group(1),
                Part::Literal("-".into()),
                Part::Db,
                Part::Literal("_".into()),
                Part::Table,
                Part::Literal(".".into()),
                Part::Group(2),
            ]
        );
        // `$12` is group 1 then a literal 2.
        assert_eq!(
            parse_template(0, "$12", 1).unwrap(),
            vec![Part::Group(1), Part::Literal("2".into())]
        );
        for bad in ["", "a/b", "$", "$x", "${foo}", "${1", "$3", "..", "t\u{e9}"] {
            let err = parse_template(4, bad, 2).unwrap_err();
            assert_eq!(err.path, "route[4].topic", "{bad}: {err}");
        }
    }

    #[test]
    fn topic_names() {
        assert!(is_valid_topic_name("shop.orders_v1-x"));
        assert!(is_valid_topic_name(&"a".repeat(249)));
        assert!(!is_valid_topic_name(&"a".repeat(250)));
        for bad in ["", ".", "..", "a b", "a/b", "é", "a$"] {
            assert!(!is_valid_topic_name(bad), "{bad}");
        }
    }

    #[test]
    fn wrapper_cannot_be_escaped() {
        let err = compile_whole("source.include[0]", "a)|(b").unwrap_err();
        assert_eq!(err.path, "source.include[0]");
        let re = compile_whole("x", "a|b").unwrap();
        assert!(re.is_match("a") && re.is_match("b") && !re.is_match("ab"));
    }
}
