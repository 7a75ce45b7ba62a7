//! Builders for hand-made TABLE_MAP events (test-only).
//!
//! [`TableMapBuilder`] writes event bodies the way the servers do (FULL optional metadata in
//! MySQL's or MariaDB's layout, MINIMAL, or none), so that parsing one back gives the columns it
//! was built from.

use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::events::{FormatDescriptionEvent, TableMapEvent};
use mysql_common::binlog::BinlogCtx;
use mysql_common::io::ParseBuf;

/// Appends a length-encoded integer.
pub fn put_lenenc(out: &mut Vec<u8>, x: u64) {
    if x < 251 {
        out.push(x as u8);
    } else if x < 1 << 16 {
        out.push(0xfc);
        out.extend_from_slice(&(x as u16).to_le_bytes());
    } else if x < 1 << 24 {
        out.push(0xfd);
        out.extend_from_slice(&(x as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xfe);
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// One column for [`TableMapBuilder`].
#[derive(Clone, Debug)]
pub struct ColSpec {
    pub name: String,
    pub type_code: u8,
    pub meta: Vec<u8>,
    pub nullable: bool,
    pub unsigned: bool,
    pub charset: Option<u16>,
    pub members: Option<Vec<String>>,
}

impl ColSpec {
    pub fn new(name: &str, type_code: u8, meta: &[u8]) -> Self {
        ColSpec {
            name: name.to_owned(),
            type_code,
            meta: meta.to_vec(),
            nullable: true,
            unsigned: false,
            charset: None,
            members: None,
        }
    }
    pub fn unsigned(mut self) -> Self {
        self.unsigned = true;
        self
    }
    pub fn not_null(mut self) -> Self {
        self.nullable = false;
        self
    }
    pub fn charset(mut self, cs: u16) -> Self {
        self.charset = Some(cs);
        self
    }
    pub fn members(mut self, m: &[&str]) -> Self {
        self.members = Some(m.iter().map(|s| s.to_string()).collect());
        self
    }
}

/// Builds TABLE_MAP bodies with FULL optional metadata, the way MySQL 8 does.
#[derive(Clone, Debug)]
pub struct TableMapBuilder {
    pub table_id: u64,
    pub db: String,
    pub table: String,
    pub cols: Vec<ColSpec>,
    pub pk: Vec<usize>,
    pub with_names: bool,
    /// Use the DEFAULT_CHARSET form (true) or COLUMN_CHARSET (false).
    pub default_charset_form: bool,
    /// MariaDB's layout: GEOMETRY is a character column (MySQL's: VECTOR is).
    pub mariadb: bool,
    /// Log no optional metadata at all (MySQL < 8.0.1, MariaDB < 10.5).
    pub no_optional: bool,
    /// GEOMETRY_TYPE, one subtype per spatial column (1 = POINT); not logged when empty.
    pub geometry_types: Vec<u64>,
}

impl TableMapBuilder {
    pub fn new(db: &str, table: &str, cols: Vec<ColSpec>) -> Self {
        TableMapBuilder {
            table_id: 42,
            db: db.into(),
            table: table.into(),
            cols,
            pk: vec![],
            with_names: true,
            default_charset_form: true,
            mariadb: false,
            no_optional: false,
            geometry_types: Vec::new(),
        }
    }

    fn is_enum_set(c: &ColSpec) -> bool {
        c.type_code == 254 && matches!(c.meta.first(), Some(247 | 248))
    }

    fn is_char(&self, c: &ColSpec) -> bool {
        (matches!(c.type_code, 15 | 249..=252 | 254) && !Self::is_enum_set(c))
            || (self.mariadb && c.type_code == 255)
            || (!self.mariadb && c.type_code == 242)
    }

    fn tlv(out: &mut Vec<u8>, t: u8, v: &[u8]) {
        out.push(t);
        put_lenenc(out, v.len() as u64);
        out.extend_from_slice(v);
    }

    fn charset_field(out: &mut Vec<u8>, default_form: bool, t_def: u8, t_col: u8, cs: &[u16]) {
        if cs.is_empty() {
            return;
        }
        let mut v = Vec::new();
        if default_form {
            let def = cs[0];
            put_lenenc(&mut v, u64::from(def));
            for (i, &c) in cs.iter().enumerate() {
                if c != def {
                    put_lenenc(&mut v, i as u64);
                    put_lenenc(&mut v, u64::from(c));
                }
            }
            Self::tlv(out, t_def, &v);
        } else {
            for &c in cs {
                put_lenenc(&mut v, u64::from(c));
            }
            Self::tlv(out, t_col, &v);
        }
    }

    /// The serialized event body (post-header + payload).
    pub fn body(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&self.table_id.to_le_bytes()[..6]);
        b.extend_from_slice(&[1, 0]);
        b.push(self.db.len() as u8);
        b.extend_from_slice(self.db.as_bytes());
        b.push(0);
        b.push(self.table.len() as u8);
        b.extend_from_slice(self.table.as_bytes());
        b.push(0);
        put_lenenc(&mut b, self.cols.len() as u64);
        for c in &self.cols {
            b.push(c.type_code);
        }
        let meta: Vec<u8> = self.cols.iter().flat_map(|c| c.meta.clone()).collect();
        put_lenenc(&mut b, meta.len() as u64);
        b.extend_from_slice(&meta);
        let mut nulls = vec![0u8; self.cols.len().div_ceil(8)];
        for (i, c) in self.cols.iter().enumerate() {
            if c.nullable {
                nulls[i / 8] |= 1 << (i % 8);
            }
        }
        b.extend_from_slice(&nulls);
        if self.no_optional {
            return b;
        }
        // optional metadata
        let numeric: Vec<bool> = self
            .cols
            .iter()
            .filter(|c| {
                crate::schema::map_metadata::is_numeric_type(c.type_code) || c.type_code == 13
            })
            .map(|c| c.unsigned)
            .collect();
        if !numeric.is_empty() {
            let mut v = vec![0u8; numeric.len().div_ceil(8)];
            for (k, &u) in numeric.iter().enumerate() {
                if u {
                    v[k / 8] |= 0x80 >> (k % 8);
                }
            }
            Self::tlv(&mut b, 1, &v);
        }
        let cs: Vec<u16> = self
            .cols
            .iter()
            .filter(|c| self.is_char(c))
            .map(|c| c.charset.unwrap_or(255))
            .collect();
        Self::charset_field(&mut b, self.default_charset_form, 2, 3, &cs);
        if self.with_names {
            let mut v = Vec::new();
            for c in &self.cols {
                put_lenenc(&mut v, c.name.len() as u64);
                v.extend_from_slice(c.name.as_bytes());
            }
            Self::tlv(&mut b, 4, &v);
            if !self.geometry_types.is_empty() {
                let mut v = Vec::new();
                for &t in &self.geometry_types {
                    put_lenenc(&mut v, t);
                }
                Self::tlv(&mut b, 7, &v);
            }
            for (t, real) in [(5u8, 248u8), (6, 247)] {
                let mut v = Vec::new();
                for c in &self.cols {
                    if c.type_code == 254 && c.meta.first() == Some(&real) {
                        let m = c.members.clone().unwrap_or_default();
                        put_lenenc(&mut v, m.len() as u64);
                        for s in m {
                            put_lenenc(&mut v, s.len() as u64);
                            v.extend_from_slice(s.as_bytes());
                        }
                    }
                }
                if !v.is_empty() {
                    Self::tlv(&mut b, t, &v);
                }
            }
            if !self.pk.is_empty() {
                let mut v = Vec::new();
                for &i in &self.pk {
                    put_lenenc(&mut v, i as u64);
                }
                Self::tlv(&mut b, 8, &v);
            }
            let es: Vec<u16> = self
                .cols
                .iter()
                .filter(|c| Self::is_enum_set(c))
                .map(|c| c.charset.unwrap_or(255))
                .collect();
            Self::charset_field(&mut b, self.default_charset_form, 10, 11, &es);
        }
        b
    }

    /// A parsed mysql_common `TableMapEvent` for [`TableMapBuilder::body`].
    pub fn event(&self) -> TableMapEvent<'static> {
        let body = self.body();
        let fde = FormatDescriptionEvent::new(BinlogVersion::Version4);
        let ctx = BinlogCtx::new(body.len() + 19, &fde, 19);
        let mut buf = ParseBuf(&body);
        let ev: TableMapEvent<'_> = buf.parse(ctx).expect("valid table map");
        ev.into_owned()
    }
}
