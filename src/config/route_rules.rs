//! A route's Debezium-parity options on what its records hold: `key_change_headers`,
//! `bigint_unsigned`, `skipped_operations`, `column_exclude`, `column_mask`, `column_hash`
//! (as written in the file: [`BigintUnsigned`], [`ColumnMaskConfig`], [`ColumnHashConfig`]),
//! and their compiled form [`RouteRules`], which every [`RouteTarget`](super::RouteTarget)
//! carries.
//!
//! Column patterns are regexes on the fully-qualified `db.table.column`, matched against the
//! whole name (as Debezium's `column.exclude.list` / `column.mask.*`), case-sensitive unless
//! prefixed with `(?i)`.

use std::fmt;
use std::sync::Arc;

use regex::RegexSet;
use serde::{Deserialize, Serialize};

use super::secret::Secret;
use super::Problem;

/// How `BIGINT UNSIGNED` columns are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BigintUnsigned {
    /// `"exact"` (default): the exact number (JSON number; Avro `bytes` `decimal(20,0)`;
    /// Connect `Decimal`), as Debezium's `bigint.unsigned.handling.mode=precise` but with
    /// JSON numbers.
    #[default]
    Exact,
    /// `"long"`: a signed 64-bit long (JSON number, Avro `long`, Connect `int64`); values
    /// above 2^63−1 wrap to negative numbers, as Debezium's default
    /// `bigint.unsigned.handling.mode=long` writes them.
    Long,
}

impl BigintUnsigned {
    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            BigintUnsigned::Exact => "exact",
            BigintUnsigned::Long => "long",
        }
    }
}

/// `column_mask = [{ columns = [...], chars = N }]`: the string columns matching `columns`
/// are written as `N` asterisks (Debezium's `column.mask.with.N.chars`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnMaskConfig {
    /// Regexes on `db.table.column` (whole-name match), at least one.
    pub columns: Vec<String>,
    /// Number of `*` written in place of the value, 1..=1024.
    pub chars: usize,
}

/// `column_hash = [{ columns = [...], algorithm = "SHA-256", salt = "..." }]`: the string
/// columns matching `columns` are written as the lowercase hex digest of salt + value text,
/// cut to the column's length (Debezium's `column.mask.hash.v2.<algorithm>.with.salt.<salt>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnHashConfig {
    /// Regexes on `db.table.column` (whole-name match), at least one.
    pub columns: Vec<String>,
    /// Java's digest name: `MD5`, `SHA-1`, `SHA-224`, `SHA-256`, `SHA-384`, `SHA-512`,
    /// `SHA3-224`, `SHA3-256`, `SHA3-384` or `SHA3-512` (case-insensitive).
    pub algorithm: String,
    /// The salt, hashed before the value (or `salt_file`). A secret: shown as `***`.
    #[serde(default)]
    pub salt: Secret<String>,
    /// A file holding the salt (surrounding whitespace trimmed), instead of `salt`.
    #[serde(default)]
    pub salt_file: String,
}

impl ColumnHashConfig {
    /// Reads `salt_file` into the salt; a problem names the setting (`path`, e.g.
    /// `route[0].column_hash[1]`) when both are set or the file cannot be read or is empty.
    pub(super) fn read_salt_file(&mut self, path: &str) -> Result<(), Problem> {
        let file = self.salt_file.trim();
        if file.is_empty() {
            return Ok(());
        }
        if !self.salt.expose().is_empty() {
            return Err(super::secret::both_set(
                &format!("{path}.salt"),
                &format!("{path}.salt_file"),
            ));
        }
        self.salt = Secret::new(super::secret::read_secret_file(
            &format!("{path}.salt_file"),
            file,
        )?);
        Ok(())
    }
}

/// The digest algorithms `column_hash` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlgorithm {
    /// MD5.
    Md5,
    /// SHA-1.
    Sha1,
    /// SHA-224.
    Sha224,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
    /// SHA3-224.
    Sha3_224,
    /// SHA3-256.
    Sha3_256,
    /// SHA3-384.
    Sha3_384,
    /// SHA3-512.
    Sha3_512,
}

/// Java's names of [`HashAlgorithm`]s, in the enum's order.
const HASH_NAMES: &[(&str, HashAlgorithm)] = &[
    ("MD5", HashAlgorithm::Md5),
    ("SHA-1", HashAlgorithm::Sha1),
    ("SHA-224", HashAlgorithm::Sha224),
    ("SHA-256", HashAlgorithm::Sha256),
    ("SHA-384", HashAlgorithm::Sha384),
    ("SHA-512", HashAlgorithm::Sha512),
    ("SHA3-224", HashAlgorithm::Sha3_224),
    ("SHA3-256", HashAlgorithm::Sha3_256),
    ("SHA3-384", HashAlgorithm::Sha3_384),
    ("SHA3-512", HashAlgorithm::Sha3_512),
];

impl HashAlgorithm {
    /// The algorithm named `name` (Java's names, case-insensitive).
    pub fn from_name(name: &str) -> Option<HashAlgorithm> {
        HASH_NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
            .map(|&(_, a)| a)
    }

    /// The OpenSSL digest.
    pub fn digest(self) -> openssl::hash::MessageDigest {
        use openssl::hash::MessageDigest as M;
        match self {
            HashAlgorithm::Md5 => M::md5(),
            HashAlgorithm::Sha1 => M::sha1(),
            HashAlgorithm::Sha224 => M::sha224(),
            HashAlgorithm::Sha256 => M::sha256(),
            HashAlgorithm::Sha384 => M::sha384(),
            HashAlgorithm::Sha512 => M::sha512(),
            HashAlgorithm::Sha3_224 => M::sha3_224(),
            HashAlgorithm::Sha3_256 => M::sha3_256(),
            HashAlgorithm::Sha3_384 => M::sha3_384(),
            HashAlgorithm::Sha3_512 => M::sha3_512(),
        }
    }
}

/// Which row operations a route drops (`skipped_operations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SkippedOperations {
    /// `c`: inserts.
    pub create: bool,
    /// `u`: updates (including those that change the key).
    pub update: bool,
    /// `d`: deletes (and their tombstones).
    pub delete: bool,
}

impl SkippedOperations {
    /// Whether the rows of an event of `kind` are dropped. Snapshot reads never are.
    pub fn skips(self, kind: crate::model::RowsKind) -> bool {
        use crate::model::RowsKind;
        match kind {
            RowsKind::Insert => self.create,
            RowsKind::Update => self.update,
            RowsKind::Delete => self.delete,
            RowsKind::Read => false,
        }
    }
}

/// How a column's values are rewritten (`column_mask` / `column_hash`).
#[derive(Clone, PartialEq, Eq)]
pub enum ColumnRewrite {
    /// Written as this many `*`.
    Mask(usize),
    /// Written as the hex digest of salt + value text.
    Hash {
        /// The digest.
        algorithm: HashAlgorithm,
        /// The salt. Secret.
        salt: Secret<String>,
    },
}

impl fmt::Debug for ColumnRewrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnRewrite::Mask(n) => write!(f, "Mask({n})"),
            ColumnRewrite::Hash { algorithm, .. } => write!(f, "Hash({algorithm:?}, salt ***)"),
        }
    }
}

/// The compiled column rules of a route: which `db.table.column`s are left out and which
/// are rewritten.
#[derive(Debug, Clone, Default)]
pub struct ColumnRules {
    exclude: Option<RegexSet>,
    /// Rewrites in the order of the file: masks first, then hashes; the first match wins.
    rewrites: Vec<(RegexSet, ColumnRewrite)>,
    /// The patterns, for equality.
    sources: Vec<String>,
}

impl PartialEq for ColumnRules {
    fn eq(&self, other: &Self) -> bool {
        self.sources == other.sources
            && self.rewrites.len() == other.rewrites.len()
            && self
                .rewrites
                .iter()
                .zip(&other.rewrites)
                .all(|((_, a), (_, b))| a == b)
    }
}

impl Eq for ColumnRules {}

impl ColumnRules {
    /// Whether there are no rules (every column is written as is).
    pub fn is_empty(&self) -> bool {
        self.exclude.is_none() && self.rewrites.is_empty()
    }

    /// Whether column `name` of `db.table` is left out.
    pub fn excludes(&self, db: &str, table: &str, name: &str) -> bool {
        self.exclude
            .as_ref()
            .is_some_and(|set| set.is_match(&column_id(db, table, name)))
    }

    /// How column `name` of `db.table` is rewritten, if it is.
    pub fn rewrite(&self, db: &str, table: &str, name: &str) -> Option<&ColumnRewrite> {
        if self.rewrites.is_empty() {
            return None;
        }
        let id = column_id(db, table, name);
        self.rewrites
            .iter()
            .find(|(set, _)| set.is_match(&id))
            .map(|(_, r)| r)
    }
}

fn column_id(db: &str, table: &str, name: &str) -> String {
    format!("{db}.{table}.{name}")
}

/// A route's compiled options on what its records hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRules {
    /// Whether key changes carry the `__debezium.newkey` / `__debezium.oldkey` headers.
    pub key_change_headers: bool,
    /// How `BIGINT UNSIGNED` is written.
    pub bigint_unsigned: BigintUnsigned,
    /// Which operations produce no records.
    pub skipped: SkippedOperations,
    /// Columns left out or rewritten.
    pub columns: Arc<ColumnRules>,
}

impl Default for RouteRules {
    fn default() -> Self {
        RouteRules {
            key_change_headers: true,
            bigint_unsigned: BigintUnsigned::Exact,
            skipped: SkippedOperations::default(),
            columns: Arc::default(),
        }
    }
}

/// What [`compile`] reads from a route.
pub(crate) struct RulesInput<'a> {
    pub key_change_headers: bool,
    pub bigint_unsigned: BigintUnsigned,
    pub skipped_operations: &'a [String],
    pub column_exclude: &'a [String],
    pub column_mask: &'a [ColumnMaskConfig],
    pub column_hash: &'a [ColumnHashConfig],
}

/// Compiles the options of `route[index]`, pushing every problem found.
pub(crate) fn compile(
    index: usize,
    input: &RulesInput<'_>,
    problems: &mut Vec<Problem>,
) -> Option<RouteRules> {
    let before = problems.len();
    let skipped = compile_skipped(index, input.skipped_operations, problems);
    let mut sources = Vec::new();
    let exclude = compile_columns(
        &format!("route[{index}].column_exclude"),
        input.column_exclude,
        true,
        &mut sources,
        problems,
    );
    let mut rewrites = Vec::new();
    for (j, mask) in input.column_mask.iter().enumerate() {
        let path = format!("route[{index}].column_mask[{j}]");
        if mask.chars == 0 || mask.chars > 1024 {
            problems.push(Problem::new(
                format!("{path}.chars"),
                format!("{}", mask.chars),
                "the number of `*` written in place of a value, 1..=1024",
                format!("set {path}.chars to e.g. 8"),
            ));
        }
        let set = compile_columns(
            &format!("{path}.columns"),
            &mask.columns,
            false,
            &mut sources,
            problems,
        );
        if let Some(Some(set)) = set {
            rewrites.push((set, ColumnRewrite::Mask(mask.chars)));
        }
    }
    for (j, hash) in input.column_hash.iter().enumerate() {
        let path = format!("route[{index}].column_hash[{j}]");
        let algorithm = HashAlgorithm::from_name(&hash.algorithm);
        if algorithm.is_none() {
            let names: Vec<&str> = HASH_NAMES.iter().map(|(n, _)| *n).collect();
            problems.push(Problem::new(
                format!("{path}.algorithm"),
                format!("`{}`", hash.algorithm),
                format!("one of {}", names.join(", ")),
                format!("set {path}.algorithm to e.g. \"SHA-256\""),
            ));
        }
        if hash.salt.expose().is_empty() {
            problems.push(Problem::new(
                format!("{path}.salt"),
                "no salt",
                "a non-empty secret salt (Debezium's `...with.salt.<salt>`)",
                format!("set {path}.salt or {path}.salt_file (a file holding it)"),
            ));
        }
        let set = compile_columns(
            &format!("{path}.columns"),
            &hash.columns,
            false,
            &mut sources,
            problems,
        );
        if let (Some(Some(set)), Some(algorithm)) = (set, algorithm) {
            rewrites.push((
                set,
                ColumnRewrite::Hash {
                    algorithm,
                    salt: hash.salt.clone(),
                },
            ));
        }
    }
    if problems.len() > before {
        return None;
    }
    Some(RouteRules {
        key_change_headers: input.key_change_headers,
        bigint_unsigned: input.bigint_unsigned,
        skipped,
        columns: Arc::new(ColumnRules {
            exclude: exclude.flatten(),
            rewrites,
            sources,
        }),
    })
}

fn compile_skipped(index: usize, ops: &[String], problems: &mut Vec<Problem>) -> SkippedOperations {
    let mut skipped = SkippedOperations::default();
    let path = format!("route[{index}].skipped_operations");
    for op in ops {
        match op.trim() {
            "c" => skipped.create = true,
            "u" => skipped.update = true,
            "d" => skipped.delete = true,
            // sluice writes no truncate events, so skipping them changes nothing.
            "t" | "none" => {}
            other => problems.push(Problem::new(
                &path,
                format!("`{other}`"),
                "operation codes `c` (insert), `u` (update), `d` (delete), `t` (truncate) or \
                 `none`, as Debezium's skipped.operations; snapshot reads (`r`) cannot be \
                 skipped",
                format!("remove `{other}` from {path}"),
            )),
        }
    }
    if ops.len() > 1 && ops.iter().any(|o| o.trim() == "none") {
        problems.push(Problem::new(
            &path,
            format!("{ops:?}"),
            "`none` alone, or a list of `c`, `u`, `d`, `t`",
            format!("remove `none` from {path} or leave only `none`"),
        ));
    }
    skipped
}

/// Compiles column patterns (each `^(?:p)$`); `Some(None)` for an empty list when
/// `may_be_empty`.
fn compile_columns(
    path: &str,
    patterns: &[String],
    may_be_empty: bool,
    sources: &mut Vec<String>,
    problems: &mut Vec<Problem>,
) -> Option<Option<RegexSet>> {
    if patterns.is_empty() {
        if !may_be_empty {
            problems.push(Problem::new(
                path,
                "an empty list",
                "at least one regex on `db.table.column`",
                format!("list the columns in {path}, e.g. [\"shop\\\\.users\\\\.email\"]"),
            ));
            return None;
        }
        return Some(None);
    }
    let mut ok = true;
    for (i, p) in patterns.iter().enumerate() {
        if let Err(e) = regex::Regex::new(p) {
            problems.push(Problem::new(
                format!("{path}[{i}]"),
                format!("the pattern `{p}`, which is not a valid regular expression: {e}"),
                "a regular expression matched against the whole `db.table.column`",
                format!(
                    "correct {path}[{i}]; in TOML basic strings backslashes must be doubled \
                     (\"shop\\\\.users\\\\.email\") or use a literal string"
                ),
            ));
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    sources.push(path.to_string());
    sources.extend(patterns.iter().cloned());
    whole_name_set(path, patterns, problems)
}

/// The patterns (each already checked on its own) as one set, each matching whole names;
/// `None` with a problem if the set as a whole cannot be compiled (its size limit).
pub(super) fn whole_name_set(
    path: &str,
    patterns: &[String],
    problems: &mut Vec<Problem>,
) -> Option<Option<RegexSet>> {
    match RegexSet::new(patterns.iter().map(|p| format!("^(?:{p})$"))) {
        Ok(set) => Some(Some(set)),
        Err(e) => {
            problems.push(Problem::new(
                path,
                format!("patterns that cannot be compiled together: {e}"),
                "a list of regular expressions within the regex size limit",
                format!("simplify or shorten the patterns in {path}"),
            ));
            None
        }
    }
}
