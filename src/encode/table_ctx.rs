//! A table as the encoders and the sink see it ([`TableCtx`]): its schema, its route and what
//! is derived from them once per table version (key columns, escaped JSON field names, the
//! Avro plan, the Kafka Connect schemas of `json_schemas` routes); and [`route_key_idx`], the
//! key columns a route gives a table.

use std::sync::Arc;

use crate::config::route::RouteTarget;
use crate::config::Format;
use crate::encode::avro::AvroTable;
use crate::encode::connect_schema::ConnectSchemas;
use crate::encode::projection::Projection;
use crate::error::Result;
use crate::schema::TableSchema;

/// A table as the sink sees it: its schema and where its changes go.
#[derive(Debug)]
pub struct TableCtx {
    /// `db.table`, the `table` label of the metrics.
    pub label: String,
    /// Columns, types and primary key.
    pub schema: Arc<TableSchema>,
    /// Topic, format, key columns and tombstone setting.
    pub route: RouteTarget,
    /// Indexes of the key columns (the primary key or the route's `key_columns`); empty for
    /// tables without either, whose records get a null key.
    pub key_idx: Vec<usize>,
    /// The columns the route writes (after `bigint_unsigned`, `column_exclude`,
    /// `column_mask`, `column_hash`): what the encoders and the Connect schemas see.
    pub out: Projection,
    /// Each written column's name as an escaped JSON object key with its colon (`"name":`),
    /// computed once per table version so the encoder does not escape names per row.
    pub json_names: Vec<String>,
    /// Avro schemas and writing plan, derived once per table version when the route's format
    /// is Avro.
    pub avro: Option<Arc<AvroTable>>,
    /// The `{"schema":…,"payload":` prefixes of the records, derived once per table version
    /// when the route asks for `json_schemas`.
    pub connect: Option<Box<ConnectPrefixes>>,
}

/// The Kafka Connect schemas of a `json_schemas` table, for either connector name the
/// `source` block's struct can carry (`io.debezium.connector.<connector>.Source`).
#[derive(Debug)]
pub struct ConnectPrefixes {
    mysql: ConnectSchemas,
    mariadb: ConnectSchemas,
}

impl ConnectPrefixes {
    fn new(schema: &TableSchema, key_idx: &[usize], topic: &str) -> ConnectPrefixes {
        ConnectPrefixes {
            mysql: ConnectSchemas::new(schema, key_idx, topic, "mysql"),
            mariadb: ConnectSchemas::new(schema, key_idx, topic, "mariadb"),
        }
    }

    /// The key's prefix (`None` for tables without key columns: their keys stay null).
    pub fn key(&self) -> Option<&str> {
        self.mysql.key_prefix.as_deref()
    }

    /// The envelope's prefix for records of `connector` (`mysql` or `mariadb`).
    pub fn value(&self, connector: &str) -> &str {
        if connector == "mariadb" {
            &self.mariadb.value_prefix
        } else {
            &self.mysql.value_prefix
        }
    }
}

impl TableCtx {
    /// Builds the context: precomputes the JSON field names and, for Avro routes, derives the
    /// Avro schemas. Errors are definite (a table shape the Avro schema cannot express). The
    /// table's series are its builder's to register (the router carries the pipeline's
    /// metrics: `crate::config::route::Router::metrics`).
    pub fn new(schema: Arc<TableSchema>, route: RouteTarget, key_idx: Vec<usize>) -> Result<Self> {
        let out = Projection::new(&schema, &key_idx, &route.rules)?;
        let json_names = out
            .schema
            .columns
            .iter()
            .map(|c| {
                let mut out = Vec::with_capacity(c.name.len() + 3);
                crate::encode::json_value::write_json_string(&mut out, &c.name);
                out.push(b':');
                String::from_utf8_lossy(&out).into_owned()
            })
            .collect();
        let avro = match route.format {
            Format::Avro => Some(Arc::new(AvroTable::new(
                &out.schema,
                &out.key_idx,
                &route.topic,
                route.avro,
            )?)),
            Format::Json => None,
        };
        let connect = (route.json_schemas && route.format == Format::Json).then(|| {
            Box::new(ConnectPrefixes::new(
                &out.schema,
                &out.key_idx,
                &route.topic,
            ))
        });
        let label = format!("{}.{}", schema.db, schema.table);
        Ok(TableCtx {
            label,
            schema,
            route,
            key_idx,
            out,
            json_names,
            avro,
            connect,
        })
    }
}

/// The key columns of a table's records: the route's `key_columns` when given, else the
/// primary key. A named column the table lacks is a definite error.
pub fn route_key_idx(
    schema: &crate::schema::TableSchema,
    target: &crate::config::route::RouteTarget,
) -> crate::error::Result<Vec<usize>> {
    if target.key_columns.is_empty() {
        return Ok(schema.primary_key.clone());
    }
    target
        .key_columns
        .iter()
        .map(|name| {
            schema
                .columns
                .iter()
                .position(|c| &c.name == name)
                .ok_or_else(|| {
                    crate::error::Error::definite(format!(
                        "route for {}.{} names key column `{name}` which the table does not \
                         have (columns: {}); fix `key_columns`",
                        schema.db,
                        schema.table,
                        schema.column_list()
                    ))
                })
        })
        .collect()
}
