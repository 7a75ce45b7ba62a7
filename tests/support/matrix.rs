//! The type matrix shared by the tests that go through every column type family: one table per
//! family, each column with two literal values (row A and row B), on both servers (MariaDB gets
//! its own UUID/INET6/INET4 table).

use super::{exec, Flavor};

/// How a column's value is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fam {
    /// Any integer: canonical decimal text.
    Int,
    /// FLOAT: compared as f32.
    Float,
    /// DOUBLE: compared as f64.
    Double,
    /// DECIMAL: exact text with scale.
    Decimal,
    /// BIT(1): boolean.
    Bit1,
    /// BIT(n > 1): the unsigned value.
    Bits,
    /// Character data.
    Str,
    /// Binary data: hex.
    Bin,
    /// ENUM member.
    Enum,
    /// SET members.
    Set,
    /// JSON document.
    Json,
    /// DATE: days since 1970-01-01 (zero date: null).
    Date,
    /// TIME: microseconds.
    Time,
    /// DATETIME(fsp): microseconds since the epoch (zero: null).
    DateTime(u8),
    /// TIMESTAMP(fsp): microseconds since the epoch, UTC.
    Timestamp(u8),
    /// YEAR.
    Year,
    /// GEOMETRY: (srid, WKB hex).
    Geom,
    /// POINT: (srid, WKB hex, x, y), Debezium's `io.debezium.data.geometry.Point`.
    Point,
    /// MariaDB INET6 / INET4: the text the server prints, compared with the server's own
    /// `CAST(c AS CHAR)` (the binlog logs BINARY(16) / BINARY(4); the type comes from the
    /// tracked definition).
    Inet,
    /// VECTOR(n): an array of n floats (`io.debezium.data.FloatVector`), compared as the
    /// little-endian `f32` bytes the server stores (hex).
    FloatVec,
    /// MariaDB UUID: its text (`io.debezium.data.Uuid`), compared with the server's text.
    Uuid,
}

/// One column of a matrix table: name, SQL type, family, and the literals of row A and B.
pub struct Col {
    pub name: &'static str,
    pub ty: &'static str,
    pub fam: Fam,
    pub a: &'static str,
    pub b: &'static str,
}

const fn col(
    name: &'static str,
    ty: &'static str,
    fam: Fam,
    a: &'static str,
    b: &'static str,
) -> Col {
    Col {
        name,
        ty,
        fam,
        a,
        b,
    }
}

/// One table per type family.
pub fn matrix(flavor: Flavor) -> Vec<(&'static str, Vec<Col>)> {
    use Fam::*;
    let mut tables = vec![
        (
            "ints",
            vec![
                col("ti", "TINYINT", Int, "-128", "127"),
                col("tiu", "TINYINT UNSIGNED", Int, "0", "255"),
                col("si", "SMALLINT", Int, "-32768", "32767"),
                col("siu", "SMALLINT UNSIGNED", Int, "0", "65535"),
                col("mi", "MEDIUMINT", Int, "-8388608", "8388607"),
                col("miu", "MEDIUMINT UNSIGNED", Int, "0", "16777215"),
                col("i", "INT", Int, "-2147483648", "2147483647"),
                col("iu", "INT UNSIGNED", Int, "0", "4294967295"),
                col(
                    "bi",
                    "BIGINT",
                    Int,
                    "-9223372036854775808",
                    "9223372036854775807",
                ),
                col(
                    "biu",
                    "BIGINT UNSIGNED",
                    Int,
                    "9223372036854775808",
                    "18446744073709551615",
                ),
            ],
        ),
        (
            "nums",
            vec![
                col("d1", "DECIMAL(1,0)", Decimal, "-9", "7"),
                col("d10", "DECIMAL(10,2)", Decimal, "-12345678.90", "0.05"),
                col(
                    "d65",
                    "DECIMAL(65,0)",
                    Decimal,
                    "-99999999999999999999999999999999999999999999999999999999999999999",
                    "12345678901234567890123456789012345678901234567890123456789012345",
                ),
                col(
                    "d65s30",
                    "DECIMAL(65,30)",
                    Decimal,
                    "-12345678901234567890123456789012345.123456789012345678901234567890",
                    "0.000000000000000000000000000001",
                ),
                col("f", "FLOAT", Float, "-3.40282e38", "1.17549e-38"),
                col(
                    "dd",
                    "DOUBLE",
                    Double,
                    "-1.7976931348623157e308",
                    "2.2250738585072014e-308",
                ),
            ],
        ),
        (
            "bits",
            vec![
                col("b1", "BIT(1)", Bit1, "b'1'", "b'0'"),
                col("b9", "BIT(9)", Bits, "b'100000001'", "b'0'"),
                col(
                    "b64",
                    "BIT(64)",
                    Bits,
                    "b'1111111111111111111111111111111111111111111111111111111111111111'",
                    "b'1000000000000000000000000000000000000000000000000000000000000001'",
                ),
            ],
        ),
        (
            "strs",
            vec![
                col("c", "CHAR(10) CHARACTER SET utf8mb4", Str, "'abc'", "''"),
                col(
                    "vc",
                    "VARCHAR(100) CHARACTER SET utf8mb4",
                    Str,
                    "'Ann ü😀 \"q\" \\\\ \\n'",
                    "'𝄞 music'",
                ),
                col(
                    "l1",
                    "VARCHAR(20) CHARACTER SET latin1",
                    Str,
                    "'café €'",
                    "'Ångström'",
                ),
                col("tt", "TINYTEXT", Str, "'tiny'", "''"),
                col("tx", "TEXT", Str, "REPEAT('text ', 100)", "'x'"),
                col("mt", "MEDIUMTEXT", Str, "REPEAT('m😀', 1000)", "''"),
                col("lt", "LONGTEXT", Str, "'long'", "REPEAT('L', 70000)"),
                col("e", "ENUM('a','b c','ü')", Enum, "'b c'", "'ü'"),
                col("s", "SET('x','y','z')", Set, "'x,z'", "''"),
            ],
        ),
        (
            "bins",
            vec![
                col("bn", "BINARY(4)", Bin, "X'00FF'", "X'01020304'"),
                col("vb", "VARBINARY(10)", Bin, "X'00'", "X''"),
                col("tb", "TINYBLOB", Bin, "X'DEADBEEF'", "X''"),
                col("bl", "BLOB", Bin, "X'000102'", "REPEAT(X'AB', 300)"),
                col("mb", "MEDIUMBLOB", Bin, "REPEAT(X'00', 70000)", "X'FF'"),
                col("lb", "LONGBLOB", Bin, "X'7F'", "X'80'"),
            ],
        ),
        (
            "docs",
            vec![col(
                "j",
                "JSON",
                Json,
                "'{\"k\": [1, 2.5, \"ü\", null, true], \"n\": {\"x\": -1}}'",
                "'[]'",
            )],
        ),
        (
            "temporal",
            vec![
                col("dt", "DATE", Date, "'1000-01-01'", "'9999-12-31'"),
                col("dz", "DATE", Date, "'0000-00-00'", "'1970-01-01'"),
                col("t0", "TIME", Time, "'-838:59:59'", "'838:59:59'"),
                col(
                    "t6",
                    "TIME(6)",
                    Time,
                    "'-00:00:00.000001'",
                    "'12:34:56.789012'",
                ),
                col(
                    "dt0",
                    "DATETIME",
                    DateTime(0),
                    "'1000-01-01 00:00:00'",
                    "'9999-12-31 23:59:59'",
                ),
                col(
                    "dt3",
                    "DATETIME(3)",
                    DateTime(3),
                    "'2024-03-01 10:20:30.123'",
                    "'1969-12-31 23:59:59.999'",
                ),
                col(
                    "dt6",
                    "DATETIME(6)",
                    DateTime(6),
                    "'2024-03-01 10:20:30.123456'",
                    "'0000-00-00 00:00:00'",
                ),
                col(
                    "ts0",
                    "TIMESTAMP NULL",
                    Timestamp(0),
                    "'1970-01-01 00:00:01'",
                    "'2038-01-19 03:14:07'",
                ),
                col(
                    "ts3",
                    "TIMESTAMP(3) NULL",
                    Timestamp(3),
                    "'2024-03-01 10:20:30.456'",
                    "'2000-02-29 00:00:00.001'",
                ),
                col(
                    "ts6",
                    "TIMESTAMP(6) NULL",
                    Timestamp(6),
                    "'2024-03-01 10:20:30.000001'",
                    "'2024-03-01 10:20:30.999999'",
                ),
                col("y", "YEAR", Year, "1901", "2155"),
            ],
        ),
        (
            "geo",
            vec![
                col(
                    "g",
                    "GEOMETRY",
                    Geom,
                    "ST_GeomFromText('LINESTRING(0 0, 1 1, 2.5 -3)')",
                    "ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))')",
                ),
                col(
                    "p",
                    "POINT",
                    Point,
                    "ST_GeomFromText('POINT(1.5 -2.25)')",
                    "ST_GeomFromText('POINT(0 0)')",
                ),
                col(
                    "ps",
                    "POINT",
                    Point,
                    "ST_GeomFromText('POINT(10.125 -7)', 3857)",
                    "ST_GeomFromText('POINT(-0.5 1e10)', 3857)",
                ),
            ],
        ),
    ];
    if !flavor.mysql {
        tables.push((
            "maria",
            vec![
                col(
                    "u",
                    "UUID",
                    Uuid,
                    "'123e4567-e89b-12d3-a456-426614174000'",
                    "'00000000-0000-0000-0000-000000000001'",
                ),
                col(
                    "ip",
                    "INET6",
                    Inet,
                    "'2001:db8::ff00:42:8329'",
                    "'::ffff:192.0.2.1'",
                ),
                col("ip4", "INET4", Inet, "'192.0.2.1'", "'10.0.0.0'"),
            ],
        ));
    }
    if flavor.mariadb11 {
        // What MariaDB 11.x changed: TIMESTAMP up to 2106-02-07 06:28:15.999999 UTC (11.5+,
        // 64-bit), collation ids above 255 in the TABLE_MAP (UCA-14 `*_uca1400_*`: 2304 for
        // utf8mb4, 2816 for utf16; NO PAD latin1 1032), VECTOR(n) (11.7+; the binlog logs it
        // as VARBINARY(4n): its packed little-endian floats, written as Debezium's
        // FloatVector).
        tables.push((
            "maria11",
            vec![
                col(
                    "tsf",
                    "TIMESTAMP(6) NULL",
                    Timestamp(6),
                    "'2038-01-19 03:14:08.000001'",
                    "'2106-02-07 06:28:15.999999'",
                ),
                col(
                    "tsf0",
                    "TIMESTAMP NULL",
                    Timestamp(0),
                    "'2100-01-01 00:00:00'",
                    "'2106-02-07 06:28:15'",
                ),
                col(
                    "uca",
                    "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_as_cs",
                    Str,
                    "'Ünïcödé 😀'",
                    "''",
                ),
                col(
                    "l1np",
                    "VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_swedish_nopad_ci",
                    Str,
                    "'café €'",
                    "'Ångström'",
                ),
                col(
                    "u16",
                    "VARCHAR(10) CHARACTER SET utf16 COLLATE utf16_uca1400_ai_ci",
                    Str,
                    "'h😀 ü'",
                    "'x'",
                ),
                col(
                    "vec",
                    "VECTOR(3)",
                    FloatVec,
                    "Vec_FromText('[1,2.5,-3]')",
                    "Vec_FromText('[0,-0.125,1e30]')",
                ),
            ],
        ));
    }
    tables
}

/// Creates the matrix tables in `db`.
pub async fn create_tables(c: &mut mysql_async::Conn, db: &str, tables: &[(&str, Vec<Col>)]) {
    for (t, cols) in tables {
        let defs: Vec<String> = cols
            .iter()
            .map(|c| format!("{} {}", c.name, c.ty))
            .collect();
        exec(
            c,
            &[&format!(
                "CREATE TABLE {db}.{t} (id INT PRIMARY KEY, {}) CHARACTER SET utf8mb4",
                defs.join(", ")
            )],
        )
        .await;
    }
}
