//! Names and descriptions of a table's shape: the key of its schema-history record and the
//! columns two shapes differ in (for messages). Pure.

/// The columns added, removed or changed between two shapes of a table, for messages.
pub fn describe_shape_change(
    old: &crate::schema::TableSchema,
    new: &crate::schema::TableSchema,
) -> String {
    let mut parts = Vec::new();
    for c in &new.columns {
        match old.columns.iter().find(|o| o.name == c.name) {
            None => parts.push(format!(
                "column `{}` added ({:?}{})",
                c.name,
                c.kind,
                if c.nullable {
                    ", nullable"
                } else {
                    ", NOT NULL"
                }
            )),
            Some(o) if o.kind != c.kind || o.nullable != c.nullable => parts.push(format!(
                "column `{}` changed from {:?}{} to {:?}{}",
                c.name,
                o.kind,
                if o.nullable { " NULL" } else { " NOT NULL" },
                c.kind,
                if c.nullable { " NULL" } else { " NOT NULL" }
            )),
            Some(_) => {}
        }
    }
    for o in &old.columns {
        if !new.columns.iter().any(|c| c.name == o.name) {
            parts.push(format!("column `{}` removed", o.name));
        }
    }
    parts.join(", ")
}

/// Key of a table's record in the schema-history topic: `<pipeline>/<db>.<table>`.
pub fn history_key(pipeline: &str, db: &str, table: &str) -> String {
    format!("{pipeline}/{db}.{table}")
}
