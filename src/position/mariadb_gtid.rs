//! MariaDB GTIDs: single [`MariadbGtid`]s (`domain-server-seq`) and [`GtidList`]s
//! such as `gtid_binlog_pos` / `gtid_slave_pos`.
//!
//! Invariants: a [`GtidList`] holds at most one GTID per replication domain (the
//! last one applied in that domain) and prints its entries sorted by domain id.
//! Lists are partially ordered: `a <= b` iff every domain of `a` is in `b` with a
//! sequence number no greater than `b`'s.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::text::{parse_decimal, PositionError};

/// One MariaDB GTID, printed `domain_id-server_id-seq_no` (e.g. `0-1-42`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MariadbGtid {
    /// Replication domain.
    pub domain_id: u32,
    /// Server that originated the transaction.
    pub server_id: u32,
    /// Sequence number within the domain.
    pub seq_no: u64,
}

impl fmt::Display for MariadbGtid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.domain_id, self.server_id, self.seq_no)
    }
}

impl FromStr for MariadbGtid {
    type Err = PositionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || {
            PositionError::syntax(
                "MariaDB GTID",
                s,
                "`<domain_id>-<server_id>-<seq_no>` with three decimal numbers, such as `0-1-42`",
            )
        };
        let mut parts = s.trim().split('-');
        let mut next = || parts.next().ok_or_else(err);
        let (domain, server, seq) = (next()?, next()?, next()?);
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(Self {
            domain_id: parse_decimal(domain).ok_or_else(err)?,
            server_id: parse_decimal(server).ok_or_else(err)?,
            seq_no: parse_decimal(seq).ok_or_else(err)?,
        })
    }
}

/// A MariaDB GTID position: the last GTID of each replication domain.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct GtidList {
    /// domain_id → the last GTID of that domain.
    domains: BTreeMap<u32, MariadbGtid>,
}

impl GtidList {
    /// The empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// True if no domain has a GTID.
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
    }

    /// Number of domains.
    pub fn len(&self) -> usize {
        self.domains.len()
    }

    /// Sets the entry of `gtid`'s domain; returns the entry it replaced.
    pub fn update(&mut self, gtid: MariadbGtid) -> Option<MariadbGtid> {
        self.domains.insert(gtid.domain_id, gtid)
    }

    /// The GTID recorded for `domain_id`, if any.
    pub fn get(&self, domain_id: u32) -> Option<MariadbGtid> {
        self.domains.get(&domain_id).copied()
    }

    /// The GTIDs in domain order.
    pub fn iter(&self) -> impl Iterator<Item = MariadbGtid> + '_ {
        self.domains.values().copied()
    }

    /// True if `gtid` is at or before this list's position in its domain
    /// (`gtid.seq_no <= entry.seq_no`; the server id is not compared).
    pub fn contains(&self, gtid: &MariadbGtid) -> bool {
        self.domains
            .get(&gtid.domain_id)
            .is_some_and(|entry| gtid.seq_no <= entry.seq_no)
    }

    /// True if every entry of `self` is contained in `other`.
    pub fn is_subset(&self, other: &GtidList) -> bool {
        self.iter().all(|gtid| other.contains(&gtid))
    }
}

/// The partial order of [`GtidList::is_subset`]; `None` when domains disagree
/// both ways, or when the lists only differ in server ids.
impl PartialOrd for GtidList {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match (self.is_subset(other), other.is_subset(self)) {
            (true, true) if self == other => Some(Ordering::Equal),
            (true, false) => Some(Ordering::Less),
            (false, true) => Some(Ordering::Greater),
            _ => None,
        }
    }
}

impl fmt::Display for GtidList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, gtid) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{gtid}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for GtidList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GtidList({:?})", self.to_string())
    }
}

impl FromStr for GtidList {
    type Err = PositionError;

    /// Parses `d-s-n` entries separated by commas (whitespace allowed); `""` is empty.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut list = GtidList::new();
        if s.trim().is_empty() {
            return Ok(list);
        }
        for entry in s.split(',') {
            let gtid: MariadbGtid = entry.parse()?;
            if list.update(gtid).is_some() {
                return Err(PositionError::DuplicateDomain {
                    found: s.to_owned(),
                    domain: gtid.domain_id,
                });
            }
        }
        Ok(list)
    }
}

super::text::serde_via_str!(GtidList);

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    fn list(s: &str) -> GtidList {
        s.parse().unwrap()
    }

    /// Arbitrary GTID lists over a handful of domains.
    pub(crate) fn arb_gtid_list() -> impl Strategy<Value = GtidList> {
        proptest::collection::vec((0u32..6, any::<u32>(), any::<u64>()), 0..6).prop_map(|entries| {
            let mut list = GtidList::new();
            for (domain_id, server_id, seq_no) in entries {
                list.update(MariadbGtid {
                    domain_id,
                    server_id,
                    seq_no,
                });
            }
            list
        })
    }

    #[test]
    fn parse_and_display() {
        let g: MariadbGtid = "0-1-42".parse().unwrap();
        assert_eq!(
            g,
            MariadbGtid {
                domain_id: 0,
                server_id: 1,
                seq_no: 42
            }
        );
        assert_eq!(g.to_string(), "0-1-42");
        let l = list("1-2-7,\n 0-1-42");
        assert_eq!(l.to_string(), "0-1-42,1-2-7");
        assert_eq!(
            l.get(1),
            Some(MariadbGtid {
                domain_id: 1,
                server_id: 2,
                seq_no: 7
            })
        );
        assert!(list("").is_empty() && list("  ").is_empty());
        assert_eq!(GtidList::new().to_string(), "");
    }

    #[test]
    fn rejects_bad_lists() {
        let err = "0-1-42,0-2-43".parse::<GtidList>().unwrap_err().to_string();
        assert!(err.contains("more than one entry for domain 0"), "{err}");
        for bad in [
            "0-1",
            "0-1-2-3",
            "a-1-2",
            "0-1-2,",
            "-1-1-2",
            "0-1-+2",
            "4294967296-1-1",
        ] {
            let err = bad.parse::<GtidList>().unwrap_err().to_string();
            assert!(
                err.contains("expected `<domain_id>-<server_id>-<seq_no>`"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn update_contains_and_order() {
        let mut l = list("0-1-42");
        assert!(l.contains(&"0-9-42".parse().unwrap()) && !l.contains(&"0-1-43".parse().unwrap()));
        assert!(!l.contains(&"1-1-1".parse().unwrap()));
        let prev = l.update("0-2-50".parse().unwrap());
        assert_eq!(prev, Some("0-1-42".parse().unwrap()));
        assert_eq!(l.to_string(), "0-2-50");
        assert_eq!(
            list("0-1-42").partial_cmp(&list("0-1-50,1-1-1")),
            Some(Ordering::Less)
        );
        assert_eq!(list("0-1-50").partial_cmp(&list("0-1-42,1-1-1")), None);
        assert_eq!(list("0-1-5").partial_cmp(&list("0-2-5")), None);
        assert_eq!(
            list("0-1-5").partial_cmp(&list("0-1-5")),
            Some(Ordering::Equal)
        );
    }

    proptest! {
        #[test]
        fn round_trips(l in arb_gtid_list()) {
            prop_assert_eq!(l.to_string().parse::<GtidList>().unwrap(), l.clone());
            let json = serde_json::to_string(&l).unwrap();
            prop_assert_eq!(serde_json::from_str::<GtidList>(&json).unwrap(), l);
        }

        #[test]
        fn update_then_contains(mut l in arb_gtid_list(), d: u32, s: u32, n: u64) {
            let g = MariadbGtid { domain_id: d, server_id: s, seq_no: n };
            l.update(g);
            prop_assert!(l.contains(&g));
            prop_assert_eq!(g.to_string().parse::<MariadbGtid>().unwrap(), g);
        }

        #[test]
        fn order_matches_subset(a in arb_gtid_list(), b in arb_gtid_list()) {
            match a.partial_cmp(&b) {
                Some(Ordering::Less) => prop_assert!(a.is_subset(&b) && !b.is_subset(&a)),
                Some(Ordering::Equal) => prop_assert_eq!(&a, &b),
                Some(Ordering::Greater) => prop_assert!(b.is_subset(&a) && !a.is_subset(&b)),
                None => prop_assert!(a != b),
            }
        }
    }
}
