//! What a record's `source.snapshot` says, as Debezium writes it (its `SnapshotRecord`):
//! streamed changes `"false"`; rows of the initial snapshot `"first"` (first row of the
//! snapshot), `"first_in_data_collection"` (first row of each later table),
//! `"last_in_data_collection"` (last row of each table but the last), `"last"` (last row of
//! the snapshot) and `"true"` for all others; rows of an ad-hoc snapshot `"incremental"`.
//!
//! A rows message carries [`ReadMarks`] (three marks, whatever its number of rows), so the
//! marks cost nothing per row.

/// The `source.snapshot` value of one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMark {
    /// A streamed change.
    False,
    /// A snapshot row that is neither first nor last of its table.
    True,
    /// The first row of the snapshot.
    First,
    /// The first row of a table, not the first of the snapshot.
    FirstInDataCollection,
    /// The last row of a table, not the last of the snapshot.
    LastInDataCollection,
    /// The last row of the snapshot.
    Last,
    /// A row of an ad-hoc (Debezium: incremental) snapshot.
    Incremental,
}

impl SnapshotMark {
    /// The string written into `source.snapshot`.
    pub fn text(self) -> &'static str {
        match self {
            SnapshotMark::False => "false",
            SnapshotMark::True => "true",
            SnapshotMark::First => "first",
            SnapshotMark::FirstInDataCollection => "first_in_data_collection",
            SnapshotMark::LastInDataCollection => "last_in_data_collection",
            SnapshotMark::Last => "last",
            SnapshotMark::Incremental => "incremental",
        }
    }

    /// The mark of an initial-snapshot row from where it sits: first / last row of its table,
    /// first / last row of the whole snapshot. When several hold, Debezium's order decides:
    /// last of the snapshot, then first of the snapshot, then last of the table, then first
    /// of the table (so a one-row table between others is `last_in_data_collection`).
    pub fn of_read(place: ReadPlace) -> Self {
        let ReadPlace {
            first_in_table,
            last_in_table,
            first_table,
            last_table,
        } = place;
        if last_in_table && last_table {
            SnapshotMark::Last
        } else if first_in_table && first_table {
            SnapshotMark::First
        } else if last_in_table {
            SnapshotMark::LastInDataCollection
        } else if first_in_table {
            SnapshotMark::FirstInDataCollection
        } else {
            SnapshotMark::True
        }
    }
}

/// Where an initial-snapshot row sits ([`SnapshotMark::of_read`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadPlace {
    /// The first row emitted for its table.
    pub first_in_table: bool,
    /// The last row emitted for its table.
    pub last_in_table: bool,
    /// Its table's first row is the snapshot's first row.
    pub first_table: bool,
    /// Its table's last row is the snapshot's last row.
    pub last_table: bool,
}

/// The marks of the rows of one rows message: its first row, its last row, and every row in
/// between (a one-row message: `last`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadMarks {
    /// The message's first row (when it has more than one).
    pub first: SnapshotMark,
    /// Rows between the first and the last.
    pub middle: SnapshotMark,
    /// The message's last row.
    pub last: SnapshotMark,
}

impl ReadMarks {
    /// Every row the same mark.
    pub const fn all(mark: SnapshotMark) -> Self {
        ReadMarks {
            first: mark,
            middle: mark,
            last: mark,
        }
    }

    /// Streamed changes: `"false"`.
    pub const STREAM: ReadMarks = ReadMarks::all(SnapshotMark::False);

    /// The marks of the part `start..start + n` of a chunk of `total` rows emitted in one go.
    /// `chunk`: where the chunk sits — `first_in_table` when its first row is its table's
    /// first, `last_in_table` when its last row is its table's last; `incremental` for an
    /// ad-hoc snapshot (every row `"incremental"`).
    pub fn of_chunk_part(
        chunk: ReadPlace,
        incremental: bool,
        start: usize,
        n: usize,
        total: usize,
    ) -> Self {
        if incremental {
            return ReadMarks::all(SnapshotMark::Incremental);
        }
        let row = |k: usize| {
            SnapshotMark::of_read(ReadPlace {
                first_in_table: chunk.first_in_table && k == 0,
                last_in_table: chunk.last_in_table && k + 1 == total,
                ..chunk
            })
        };
        ReadMarks {
            first: row(start),
            middle: SnapshotMark::True,
            last: row((start + n).saturating_sub(1)),
        }
    }

    /// The mark of row `i` of a message of `n` rows.
    pub fn at(&self, i: usize, n: usize) -> SnapshotMark {
        if i + 1 == n {
            self.last
        } else if i == 0 {
            self.first
        } else {
            self.middle
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(
        first_in_table: bool,
        last_in_table: bool,
        first_table: bool,
        last_table: bool,
    ) -> ReadPlace {
        ReadPlace {
            first_in_table,
            last_in_table,
            first_table,
            last_table,
        }
    }

    #[test]
    fn marks_follow_debezium_precedence() {
        use SnapshotMark::*;
        // (first in table, last in table, first table, last table) -> mark
        let cases = [
            (place(false, false, false, false), True),
            (place(false, false, true, true), True),
            (place(true, false, true, false), First),
            (place(true, false, false, false), FirstInDataCollection),
            (place(false, true, false, false), LastInDataCollection),
            (place(false, true, true, false), LastInDataCollection),
            (place(false, true, false, true), Last),
            // A one-row table: first and last of its table.
            (place(true, true, false, false), LastInDataCollection),
            (place(true, true, true, false), First),
            (place(true, true, false, true), Last),
            // A one-row snapshot: last wins over first.
            (place(true, true, true, true), Last),
            (place(true, false, false, true), FirstInDataCollection),
        ];
        for (p, want) in cases {
            assert_eq!(SnapshotMark::of_read(p), want, "{p:?}");
        }
    }

    #[test]
    fn texts_are_debeziums() {
        use SnapshotMark::*;
        let texts: Vec<_> = [
            False,
            True,
            First,
            FirstInDataCollection,
            LastInDataCollection,
            Last,
            Incremental,
        ]
        .iter()
        .map(|m| m.text())
        .collect();
        assert_eq!(
            texts,
            [
                "false",
                "true",
                "first",
                "first_in_data_collection",
                "last_in_data_collection",
                "last",
                "incremental"
            ]
        );
    }

    #[test]
    fn message_marks_by_row_index() {
        let m = ReadMarks {
            first: SnapshotMark::First,
            middle: SnapshotMark::True,
            last: SnapshotMark::LastInDataCollection,
        };
        let got: Vec<_> = (0..4).map(|i| m.at(i, 4)).collect();
        assert_eq!(
            got,
            [
                SnapshotMark::First,
                SnapshotMark::True,
                SnapshotMark::True,
                SnapshotMark::LastInDataCollection
            ]
        );
        assert_eq!(m.at(0, 1), SnapshotMark::LastInDataCollection);
        assert_eq!(m.at(0, 2), SnapshotMark::First);
        assert_eq!(ReadMarks::STREAM.at(7, 9), SnapshotMark::False);
    }

    /// Every row's mark of a chunk of `total` rows cut into messages of `per` rows.
    fn chunk_rows(
        chunk: ReadPlace,
        incremental: bool,
        total: usize,
        per: usize,
    ) -> Vec<SnapshotMark> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < total {
            let n = per.min(total - start);
            let m = ReadMarks::of_chunk_part(chunk, incremental, start, n, total);
            out.extend((0..n).map(|i| m.at(i, n)));
            start += n;
        }
        out
    }

    #[test]
    fn chunk_marks_whatever_the_message_size() {
        use SnapshotMark::*;
        // A table read in one chunk, the snapshot's only table: first ... last.
        let whole = place(true, true, true, true);
        for per in [1, 2, 3, 5, 1024] {
            assert_eq!(
                chunk_rows(whole, false, 5, per),
                [First, True, True, True, Last],
                "per {per}"
            );
            // A middle chunk of a middle table: all true.
            assert_eq!(
                chunk_rows(place(false, false, false, false), false, 4, per),
                [True; 4]
            );
            // The first chunk of a later table that goes on in more chunks.
            assert_eq!(
                chunk_rows(place(true, false, false, false), false, 3, per),
                [FirstInDataCollection, True, True]
            );
            // The last chunk of a table that is not the last.
            assert_eq!(
                chunk_rows(place(false, true, true, false), false, 3, per),
                [True, True, LastInDataCollection]
            );
            assert_eq!(chunk_rows(whole, true, 3, per), [Incremental; 3]);
        }
        // A one-row table between others; a one-row snapshot.
        assert_eq!(
            chunk_rows(place(true, true, false, false), false, 1, 1024),
            [LastInDataCollection]
        );
        assert_eq!(chunk_rows(whole, false, 1, 1024), [Last]);
        // Two rows: first and last of the snapshot.
        assert_eq!(chunk_rows(whole, false, 2, 1), [First, Last]);
    }
}
