//! Which server family wrote the binlog: [`Flavor`]. A leaf; the table-map parser's
//! [`crate::schema::ServerFlavor`] (which may also be "not known") converts from it.

/// Which server family the source is; the binlog protocols differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Oracle MySQL (5.7, 8.x, 9.x).
    MySql,
    /// MariaDB.
    MariaDb,
}

impl Flavor {
    /// The envelope's `source.connector` value.
    pub fn connector(self) -> &'static str {
        match self {
            Flavor::MySql => "mysql",
            Flavor::MariaDb => "mariadb",
        }
    }
}
