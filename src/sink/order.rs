//! The position of each row change within its source transaction: Debezium's
//! `transaction.total_order` (1, 2, … over the whole transaction) and
//! `transaction.data_collection_order` (1, 2, … per table).
//!
//! Invariant: the per-table count is keyed by the table's `db.table` name, never by the identity
//! of its in-memory description, so a table whose description is replaced inside a transaction
//! (a new TABLE_MAP id, a reused allocation) keeps counting from where it was, and two tables
//! never share a count. Both counts start again at every source transaction.

use std::collections::HashMap;

/// The counts of the open source transaction.
#[derive(Debug, Default)]
pub(crate) struct TxnOrder {
    /// Rows written in the open source transaction.
    total: u64,
    /// Rows written per `db.table` in the open source transaction.
    per_table: HashMap<String, u64>,
}

impl TxnOrder {
    /// Starts the counts of a new source transaction.
    pub(crate) fn begin(&mut self) {
        self.total = 0;
        self.per_table.clear();
    }

    /// The `(total_order, data_collection_order)` the next event of table `label` gets,
    /// without counting it (a row change may become one event or two, which only its
    /// encoding tells: see [`TxnOrder::advance`]).
    pub(crate) fn upcoming(&self, label: &str) -> (u64, u64) {
        let in_table = self.per_table.get(label).copied().unwrap_or(0);
        (self.total + 1, in_table + 1)
    }

    /// Counts `events` written events of table `label`.
    pub(crate) fn advance(&mut self, label: &str, events: u64) {
        self.total += events;
        match self.per_table.get_mut(label) {
            Some(n) => *n += events,
            None => {
                self.per_table.insert(label.to_string(), events);
            }
        }
    }

    /// The orders of the next event of table `label`, counted (a change of one event).
    #[cfg(test)]
    fn next(&mut self, label: &str) -> (u64, u64) {
        let at = self.upcoming(label);
        self.advance(label, 1);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_numbered_over_the_transaction_and_per_table() {
        let mut order = TxnOrder::default();
        order.begin();
        let seen: Vec<_> = ["db.a", "db.b", "db.a", "db.a", "db.b", "other.a"]
            .iter()
            .map(|t| order.next(t))
            .collect();
        assert_eq!(seen, [(1, 1), (2, 1), (3, 2), (4, 3), (5, 2), (6, 1)]);
    }

    #[test]
    fn a_table_keeps_its_count_when_its_description_is_replaced() {
        // The label is built anew for each rows event (as a new TABLE_MAP builds a new table
        // description): equal names count together, whatever the allocation.
        let mut order = TxnOrder::default();
        order.begin();
        let first = String::from("db.orders");
        assert_eq!(order.next(&first), (1, 1));
        drop(first);
        let again = format!("{}.{}", "db", "orders");
        assert_eq!(order.next(&again), (2, 2));
        assert_eq!(order.next("db.customers"), (3, 1));
    }

    #[test]
    fn a_two_event_change_takes_two_numbers() {
        // A key change is a delete and a create: the row after it is numbered after both.
        let mut order = TxnOrder::default();
        order.begin();
        assert_eq!(order.next("db.a"), (1, 1));
        assert_eq!(order.upcoming("db.a"), (2, 2));
        order.advance("db.a", 2);
        assert_eq!(order.upcoming("db.b"), (4, 1));
        assert_eq!(order.next("db.a"), (4, 4));
        assert_eq!(order.next("db.b"), (5, 1));
    }

    #[test]
    fn every_transaction_starts_at_one() {
        let mut order = TxnOrder::default();
        order.begin();
        order.next("db.a");
        order.next("db.a");
        order.begin();
        assert_eq!(order.next("db.a"), (1, 1));
        assert_eq!(order.next("db.b"), (2, 1));
    }
}
