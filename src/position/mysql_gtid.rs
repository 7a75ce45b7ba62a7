//! MySQL GTIDs: [`Uuid16`] server UUIDs, single [`Gtid`]s and [`GtidSet`]s.
//!
//! A [`GtidSet`] maps each source — a server UUID plus an optional MySQL 8.3+
//! tag — to a list of transaction-number ranges. Invariants: every range list
//! is non-empty, sorted, non-overlapping and coalesced (adjacent ranges are
//! merged), stored half-open `[start, end)` with `1 <= start < end <= MAX_GNO + 1`;
//! tags are lowercase and match `[a-z_][a-z0-9_]{0,31}`. Because the
//! representation is canonical, derived equality is set equality.
//!
//! The text form is exactly what MySQL prints for `gtid_executed` (without the
//! newlines): `uuid:1-5:7,uuid2:1-3:tag:4`, sources sorted by UUID, untagged
//! ranges first, then tags in alphabetical order.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::text::{parse_decimal, PositionError};

pub use super::text::MAX_GNO;

/// A 16-byte server UUID (`server_uuid`), printed lowercase and hyphenated.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Uuid16(pub [u8; 16]);

impl Uuid16 {
    /// The raw bytes, in the order used on the wire (COM_BINLOG_DUMP_GTID, GTID events).
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Display for Uuid16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Uuid16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid16({self})")
    }
}

impl FromStr for Uuid16 {
    type Err = PositionError;

    /// Accepts `8-4-4-4-12` hyphenated or 32 plain hex digits, any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || {
            PositionError::syntax(
                "server UUID",
                s,
                "32 hex digits, optionally hyphenated 8-4-4-4-12",
            )
        };
        let hyphenated = s.len() == 36;
        if !hyphenated && s.len() != 32 {
            return Err(err());
        }
        let mut out = [0u8; 16];
        let mut nibble = 0;
        for (i, c) in s.bytes().enumerate() {
            if hyphenated && matches!(i, 8 | 13 | 18 | 23) {
                if c != b'-' {
                    return Err(err());
                }
                continue;
            }
            let v = char::from(c).to_digit(16).ok_or_else(err)? as u8;
            let byte = out.get_mut(nibble / 2).ok_or_else(err)?;
            *byte |= if nibble % 2 == 0 { v << 4 } else { v };
            nibble += 1;
        }
        Ok(Self(out))
    }
}

/// Validates a GTID tag and lowercases it (borrowing when already lowercase).
fn normalize_tag(tag: &str) -> Result<Cow<'_, str>, PositionError> {
    let valid_char = |(i, c): (usize, &u8)| {
        c == &b'_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
    };
    if tag.is_empty() || tag.len() > 32 || !tag.as_bytes().iter().enumerate().all(valid_char) {
        return Err(PositionError::syntax(
            "GTID tag",
            tag,
            "a letter or `_` followed by up to 31 letters, digits or `_`",
        ));
    }
    Ok(if tag.bytes().any(|c| c.is_ascii_uppercase()) {
        Cow::Owned(tag.to_ascii_lowercase())
    } else {
        Cow::Borrowed(tag)
    })
}

fn check_gno(gno: u64) -> Result<u64, PositionError> {
    if (1..=MAX_GNO).contains(&gno) {
        Ok(gno)
    } else {
        Err(PositionError::GnoOutOfRange { gno })
    }
}

/// One MySQL GTID: `uuid:gno` or, tagged (MySQL 8.3+), `uuid:tag:gno`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gtid {
    /// Originating server UUID.
    pub uuid: Uuid16,
    /// Optional lowercase tag.
    pub tag: Option<String>,
    /// Transaction number, `1..=MAX_GNO`.
    pub gno: u64,
}

impl Gtid {
    /// Builds a GTID, validating and lowercasing the tag and checking the gno range.
    pub fn new(uuid: Uuid16, tag: Option<&str>, gno: u64) -> Result<Self, PositionError> {
        let tag = tag
            .map(|t| normalize_tag(t).map(Cow::into_owned))
            .transpose()?;
        Ok(Self {
            uuid,
            tag,
            gno: check_gno(gno)?,
        })
    }
}

impl fmt::Display for Gtid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tag {
            Some(tag) => write!(f, "{}:{tag}:{}", self.uuid, self.gno),
            None => write!(f, "{}:{}", self.uuid, self.gno),
        }
    }
}

impl FromStr for Gtid {
    type Err = PositionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.trim().split(':').collect();
        let (uuid, tag, gno) = match parts.as_slice() {
            [uuid, gno] => (uuid, None, gno),
            [uuid, tag, gno] => (uuid, Some(*tag), gno),
            _ => {
                return Err(PositionError::syntax(
                    "GTID",
                    s,
                    "`<uuid>:<gno>` or `<uuid>:<tag>:<gno>`",
                ))
            }
        };
        let gno = parse_decimal(gno)
            .ok_or_else(|| PositionError::syntax("GTID number", *gno, "a decimal number >= 1"))?;
        Self::new(uuid.parse()?, tag, gno)
    }
}

/// Half-open `[start, end)` transaction-number ranges of one source.
type Ranges = Vec<(u64, u64)>;

/// A MySQL GTID set such as `gtid_executed`; see the module docs for invariants.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct GtidSet {
    /// uuid → tag (`""` = untagged, sorting first) → ranges.
    sources: BTreeMap<Uuid16, BTreeMap<String, Ranges>>,
}

impl GtidSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// True if the set holds no GTID.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Adds one GTID; returns whether it was new. Appending the next gno of a
    /// source (the replication hot path) is O(log #uuids) with no allocation.
    pub fn add(
        &mut self,
        uuid: Uuid16,
        tag: Option<&str>,
        gno: u64,
    ) -> Result<bool, PositionError> {
        check_gno(gno)?;
        let tag = tag.map_or(Ok(Cow::Borrowed("")), normalize_tag)?;
        let tags = self.sources.entry(uuid).or_default();
        let ranges = match tags.get_mut(tag.as_ref()) {
            Some(ranges) => ranges,
            None => tags.entry(tag.into_owned()).or_default(),
        };
        Ok(insert_gno(ranges, gno))
    }

    /// Adds one [`Gtid`]; returns whether it was new.
    pub fn add_gtid(&mut self, gtid: &Gtid) -> Result<bool, PositionError> {
        self.add(gtid.uuid, gtid.tag.as_deref(), gtid.gno)
    }

    /// True if the set holds `uuid[:tag]:gno` (the tag is compared case-insensitively).
    pub fn contains(&self, uuid: &Uuid16, tag: Option<&str>, gno: u64) -> bool {
        let Ok(tag) = tag.map_or(Ok(Cow::Borrowed("")), normalize_tag) else {
            return false;
        };
        let Some(ranges) = self.sources.get(uuid).and_then(|t| t.get(tag.as_ref())) else {
            return false;
        };
        let i = ranges.partition_point(|&(_, end)| end <= gno);
        ranges.get(i).is_some_and(|&(start, _)| start <= gno)
    }

    /// True if the set holds `gtid`.
    pub fn contains_gtid(&self, gtid: &Gtid) -> bool {
        self.contains(&gtid.uuid, gtid.tag.as_deref(), gtid.gno)
    }

    /// True if every GTID of `self` is also in `other`.
    pub fn is_subset(&self, other: &GtidSet) -> bool {
        self.sources.iter().all(|(uuid, tags)| {
            let other_tags = other.sources.get(uuid);
            tags.iter().all(|(tag, ranges)| {
                let sup = other_tags
                    .and_then(|t| t.get(tag))
                    .map_or(&[][..], Vec::as_slice);
                ranges.iter().all(|&(start, end)| {
                    let i = sup.partition_point(|&(_, e)| e <= start);
                    sup.get(i).is_some_and(|&(s, e)| s <= start && end <= e)
                })
            })
        })
    }

    /// Adds every GTID of `other` to `self`.
    pub fn union_with(&mut self, other: &GtidSet) {
        for (uuid, tags) in &other.sources {
            let mine = self.sources.entry(*uuid).or_default();
            for (tag, ranges) in tags {
                let merged = mine.entry(tag.clone()).or_default();
                merged.extend_from_slice(ranges);
                coalesce(merged);
            }
        }
    }

    /// The union of `self` and `other`.
    pub fn union(&self, other: &GtidSet) -> GtidSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// Each source `(uuid, tag, ranges)` in text order, with ranges **half-open**
    /// `[start, end)` — the encoding of the COM_BINLOG_DUMP_GTID SID block.
    pub fn intervals(&self) -> impl Iterator<Item = (&Uuid16, Option<&str>, &[(u64, u64)])> {
        self.sources.iter().flat_map(|(uuid, tags)| {
            tags.iter().map(move |(tag, ranges)| {
                (
                    uuid,
                    (!tag.is_empty()).then_some(tag.as_str()),
                    ranges.as_slice(),
                )
            })
        })
    }

    /// The highest gno of each source `(uuid, tag, gno)`, e.g. for metrics.
    pub fn last_gnos(&self) -> impl Iterator<Item = (&Uuid16, Option<&str>, u64)> {
        self.intervals()
            .filter_map(|(uuid, tag, ranges)| ranges.last().map(|&(_, end)| (uuid, tag, end - 1)))
    }
}

/// Inserts `gno` into canonical `ranges`, keeping them canonical; returns whether it was new.
fn insert_gno(ranges: &mut Ranges, gno: u64) -> bool {
    match ranges.last_mut() {
        Some(last) if last.1 == gno => {
            last.1 += 1;
            return true;
        }
        Some(last) if last.1 > gno => {}
        _ => {
            ranges.push((gno, gno + 1));
            return true;
        }
    }
    // First range ending at or after gno; it exists since the last one does.
    let i = ranges.partition_point(|&(_, end)| end < gno);
    let next_start = ranges.get(i + 1).map(|r| r.0);
    let Some(range) = ranges.get_mut(i) else {
        return false;
    };
    if range.0 <= gno && gno < range.1 {
        false
    } else if range.1 == gno {
        range.1 = gno + 1;
        if next_start == Some(gno + 1) {
            let next = ranges.remove(i + 1);
            if let Some(range) = ranges.get_mut(i) {
                range.1 = next.1;
            }
        }
        true
    } else if range.0 == gno + 1 {
        range.0 = gno;
        true
    } else {
        ranges.insert(i, (gno, gno + 1));
        true
    }
}

/// Sorts and merges overlapping or adjacent half-open ranges.
fn coalesce(ranges: &mut Ranges) {
    ranges.sort_unstable();
    let mut out: Ranges = Vec::with_capacity(ranges.len());
    for (start, end) in ranges.drain(..) {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    *ranges = out;
}

/// Parses `n` or `a-b` (closed) into a half-open range.
fn parse_range(text: &str) -> Result<(u64, u64), PositionError> {
    let err = || {
        PositionError::syntax(
            "GTID interval",
            text,
            "`<n>` or `<start>-<end>` with 1 <= start <= end <= 9223372036854775806",
        )
    };
    let (start, end) = text.split_once('-').unwrap_or((text, text));
    let start: u64 = parse_decimal(start.trim()).ok_or_else(err)?;
    let end: u64 = parse_decimal(end.trim()).ok_or_else(err)?;
    if start == 0 || end < start || end > MAX_GNO {
        return Err(err());
    }
    Ok((start, end + 1))
}

impl FromStr for GtidSet {
    type Err = PositionError;

    /// Parses MySQL's GTID set syntax: comma-separated `uuid(:tag|:n|:a-b)*`
    /// entries, whitespace allowed around separators, any order and overlap.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut set = GtidSet::new();
        for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let mut parts = entry.split(':').map(str::trim);
            let uuid: Uuid16 = parts.next().unwrap_or_default().parse()?;
            let tags = set.sources.entry(uuid).or_default();
            let mut tag = String::new();
            for part in parts {
                if part.starts_with(|c: char| c.is_ascii_digit()) {
                    tags.entry(tag.clone())
                        .or_default()
                        .push(parse_range(part)?);
                } else {
                    tag = normalize_tag(part)?.into_owned();
                }
            }
        }
        for tags in set.sources.values_mut() {
            tags.values_mut().for_each(coalesce);
            tags.retain(|_, ranges| !ranges.is_empty());
        }
        set.sources.retain(|_, tags| !tags.is_empty());
        Ok(set)
    }
}

impl fmt::Display for GtidSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (uuid, tags)) in self.sources.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{uuid}")?;
            for (tag, ranges) in tags {
                if !tag.is_empty() {
                    write!(f, ":{tag}")?;
                }
                for &(start, end) in ranges {
                    match end - 1 {
                        last if last == start => write!(f, ":{start}")?,
                        last => write!(f, ":{start}-{last}")?,
                    }
                }
            }
        }
        Ok(())
    }
}

impl fmt::Debug for GtidSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GtidSet({:?})", self.to_string())
    }
}

/// Set inclusion: `a < b` iff `a` is a proper subset of `b`; `None` if neither contains the other.
impl PartialOrd for GtidSet {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match (self.is_subset(other), other.is_subset(self)) {
            (true, true) => Some(Ordering::Equal),
            (true, false) => Some(Ordering::Less),
            (false, true) => Some(Ordering::Greater),
            (false, false) => None,
        }
    }
}

super::text::serde_via_str!(GtidSet);

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
    const B: &str = "4e11fa47-71ca-11e1-9e33-c80aa9429562";

    fn uuid(s: &str) -> Uuid16 {
        s.parse().unwrap()
    }

    fn set(s: &str) -> GtidSet {
        s.parse().unwrap()
    }

    /// Arbitrary GTID sets: up to 4 uuids, optional tags, random gnos.
    pub(crate) fn arb_gtid_set() -> impl Strategy<Value = GtidSet> {
        let entry = (
            0..4usize,
            proptest::option::of("[a-zA-Z_][a-z0-9_]{0,6}"),
            proptest::collection::vec(1u64..200, 0..20),
        );
        (
            any::<[[u8; 16]; 4]>(),
            proptest::collection::vec(entry, 0..6),
        )
            .prop_map(|(uuids, entries)| {
                let mut set = GtidSet::new();
                for (u, tag, gnos) in entries {
                    for gno in gnos {
                        set.add(Uuid16(uuids[u]), tag.as_deref(), gno).unwrap();
                    }
                }
                set
            })
    }

    #[test]
    fn uuid_forms() {
        assert_eq!(uuid(A).to_string(), A);
        assert_eq!(uuid(&A.to_uppercase()), uuid(A));
        assert_eq!(uuid(&A.replace('-', "")), uuid(A));
        for bad in [
            "",
            "3e11fa47",
            "3e11fa47-71ca-11e1-9e33-c80aa942956g",
            "3e11fa4771ca-11e1-9e33-c80aa9429562-",
        ] {
            assert!(bad
                .parse::<Uuid16>()
                .unwrap_err()
                .to_string()
                .contains("expected 32 hex digits"));
        }
    }

    #[test]
    fn mysql_gtid_executed_examples() {
        let text = format!("{A}:1-5:7-9,\n{B}:1-3");
        let s = set(&text);
        assert_eq!(s.to_string(), format!("{A}:1-5:7-9,{B}:1-3"));
        assert!(
            s.contains(&uuid(A), None, 5)
                && !s.contains(&uuid(A), None, 6)
                && s.contains(&uuid(A), None, 9)
        );
        assert_eq!(set(&format!("{B}:1-3,\n{}:7-9:1-5", A.to_uppercase())), s);
        assert_eq!(set(&format!("{A}:7-7")).to_string(), format!("{A}:7"));
        assert!(set("").is_empty() && set(" \n").is_empty());
        assert_eq!(GtidSet::new().to_string(), "");
    }

    #[test]
    fn normalizes_overlapping_intervals() {
        let s = set(&format!("{A}:5-10:1-3:4:8-12:20 , {A}:21-22:30"));
        assert_eq!(s.to_string(), format!("{A}:1-12:20-22:30"));
        let ranges: Vec<_> = s.intervals().collect();
        assert_eq!(
            ranges,
            vec![(&uuid(A), None, &[(1, 13), (20, 23), (30, 31)][..])]
        );
    }

    #[test]
    fn tagged_gtids() {
        let s = set(&format!("{B}:Zeta:4,{A}:tag2:4:1-5:TAG1:1-3,{A}:1-2"));
        assert_eq!(
            s.to_string(),
            format!("{A}:1-2:tag1:1-3:tag2:1-5,{B}:zeta:4")
        );
        assert!(s.contains(&uuid(A), Some("TAG1"), 3) && !s.contains(&uuid(A), Some("tag1"), 4));
        assert!(!s.contains(&uuid(B), None, 4));
        let last: Vec<_> = s.last_gnos().collect();
        let (a, b) = (uuid(A), uuid(B));
        assert_eq!(
            last,
            vec![
                (&a, None, 2),
                (&a, Some("tag1"), 3),
                (&a, Some("tag2"), 5),
                (&b, Some("zeta"), 4)
            ]
        );
        let g: Gtid = format!("{A}:Tag1:3").parse().unwrap();
        assert_eq!(g.tag.as_deref(), Some("tag1"));
        assert_eq!(g.to_string(), format!("{A}:tag1:3"));
        assert!(s.contains_gtid(&g));
    }

    #[test]
    fn rejects_bad_sets() {
        for (bad, needle) in [
            (format!("{A}:0"), "GTID interval"),
            (format!("{A}:5-3"), "GTID interval"),
            (format!("{A}:1-x"), "GTID interval"),
            (format!("{A}:9223372036854775807"), "GTID interval"),
            (format!("{A}:"), "GTID tag"),
            (format!("{A}:bad-tag:1"), "GTID tag"),
            (format!("{A}:{}:1", "t".repeat(33)), "GTID tag"),
            ("0-1-42".to_owned(), "server UUID"),
        ] {
            let err = bad.parse::<GtidSet>().unwrap_err().to_string();
            assert!(
                err.contains(needle) && err.contains("expected"),
                "{bad}: {err}"
            );
        }
        for bad in [
            A.to_owned(),
            format!("{A}:0"),
            format!("{A}:a:b:1"),
            format!("{A}:1-2"),
        ] {
            assert!(bad.parse::<Gtid>().is_err(), "{bad}");
        }
        assert_eq!(
            GtidSet::new().add(uuid(A), None, 0),
            Err(PositionError::GnoOutOfRange { gno: 0 })
        );
        assert!(GtidSet::new().add(uuid(A), Some("1x"), 1).is_err());
    }

    #[test]
    fn add_merges_neighbours() {
        let mut s = set(&format!("{A}:1-3:5-7:10"));
        assert_eq!(s.add(uuid(A), None, 4), Ok(true));
        assert_eq!(s.add(uuid(A), None, 9), Ok(true));
        assert_eq!(s.add(uuid(A), None, 6), Ok(false));
        assert_eq!(s.to_string(), format!("{A}:1-7:9-10"));
        assert_eq!(s.add(uuid(A), None, 8), Ok(true));
        assert_eq!(s.add(uuid(A), None, 11), Ok(true));
        assert_eq!(s.to_string(), format!("{A}:1-11"));
    }

    #[test]
    fn subset_and_partial_order() {
        let (small, big) = (set(&format!("{A}:2-3")), set(&format!("{A}:1-5,{B}:1")));
        assert!(small.is_subset(&big) && !big.is_subset(&small));
        assert_eq!(small.partial_cmp(&big), Some(Ordering::Less));
        assert_eq!(
            set(&format!("{A}:1:3")).partial_cmp(&set(&format!("{A}:1-2"))),
            None
        );
        assert!(!set(&format!("{A}:t:1")).is_subset(&set(&format!("{A}:1"))));
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(s in arb_gtid_set()) {
            prop_assert_eq!(s.to_string().parse::<GtidSet>().unwrap(), s.clone());
            let json = serde_json::to_string(&s).unwrap();
            prop_assert_eq!(serde_json::from_str::<GtidSet>(&json).unwrap(), s);
        }

        #[test]
        fn add_matches_model(gnos in proptest::collection::vec(1u64..60, 0..60), probe in 1u64..70) {
            let (mut s, mut model) = (GtidSet::new(), BTreeSet::new());
            let u = uuid(A);
            for gno in gnos {
                prop_assert_eq!(s.add(u, None, gno).unwrap(), model.insert(gno));
                prop_assert!(s.contains(&u, None, gno));
            }
            prop_assert_eq!(s.contains(&u, None, probe), model.contains(&probe));
            prop_assert_eq!(s.to_string().parse::<GtidSet>().unwrap(), s);
        }

        #[test]
        fn add_then_contains(mut s in arb_gtid_set(), u: [u8; 16], tag in proptest::option::of("[a-z_]{1,4}"), gno in 1..=MAX_GNO) {
            let before = s.clone();
            s.add(Uuid16(u), tag.as_deref(), gno).unwrap();
            prop_assert!(s.contains(&Uuid16(u), tag.as_deref(), gno));
            prop_assert!(before.is_subset(&s));
        }

        #[test]
        fn union_is_commutative_superset(a in arb_gtid_set(), b in arb_gtid_set()) {
            let u = a.union(&b);
            prop_assert_eq!(&u, &b.union(&a));
            prop_assert!(a.is_subset(&u) && b.is_subset(&u));
            prop_assert_eq!(a.is_subset(&b), u == b);
        }
    }
}
