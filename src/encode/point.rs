//! POINT columns as Debezium writes them: `io.debezium.data.geometry.Point`
//! `{x, y, wkb, srid}` (x and y required doubles, wkb and srid optional).
//!
//! A spatial value is stored as a 4-byte little-endian SRID followed by WKB. A 2D point's WKB
//! is 21 bytes: byte order (0 big-endian, else little-endian), type 1, x, y (as Debezium's
//! `Point.parseWKBPoint` reads it). Any other value in a POINT column (which MySQL and
//! MariaDB do not store) is not a point: the encoders write null for it (see
//! [`parse_point`]).

/// A parsed POINT value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointValue<'a> {
    /// X coordinate.
    pub x: f64,
    /// Y coordinate.
    pub y: f64,
    /// The WKB (without the SRID).
    pub wkb: &'a [u8],
    /// The SRID; `None` for 0, as Debezium writes it.
    pub srid: Option<i32>,
}

/// Parses a stored spatial value (SRID + WKB) as a 2D point; `None` if it is not one.
pub fn parse_point(stored: &[u8]) -> Option<PointValue<'_>> {
    let (srid, wkb) = stored.split_first_chunk::<4>()?;
    let body: &[u8; 21] = wkb.try_into().ok()?;
    let little = body[0] != 0;
    let int = |b: [u8; 4]| {
        if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let double = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&body[at..at + 8]);
        if little {
            f64::from_le_bytes(b)
        } else {
            f64::from_be_bytes(b)
        }
    };
    if int([body[1], body[2], body[3], body[4]]) != 1 {
        return None;
    }
    let srid = i32::from_le_bytes(*srid);
    Some(PointValue {
        x: double(5),
        y: double(13),
        wkb,
        srid: (srid != 0).then_some(srid),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(srid: i32, little: bool, kind: u32, x: f64, y: f64) -> Vec<u8> {
        let mut v = srid.to_le_bytes().to_vec();
        if little {
            v.push(1);
            v.extend(kind.to_le_bytes());
            v.extend(x.to_le_bytes());
            v.extend(y.to_le_bytes());
        } else {
            v.push(0);
            v.extend(kind.to_be_bytes());
            v.extend(x.to_be_bytes());
            v.extend(y.to_be_bytes());
        }
        v
    }

    #[test]
    fn points_of_either_byte_order_are_read() {
        let v = stored(4326, true, 1, 1.5, -2.25);
        let p = parse_point(&v).unwrap();
        assert_eq!((p.x, p.y, p.srid, p.wkb), (1.5, -2.25, Some(4326), &v[4..]));
        let v = stored(0, false, 1, 3.0, 4.0);
        let p = parse_point(&v).unwrap();
        assert_eq!((p.x, p.y, p.srid), (3.0, 4.0, None));
    }

    #[test]
    fn anything_else_is_not_a_point_and_never_panics() {
        assert_eq!(parse_point(&stored(0, true, 2, 1.0, 1.0)), None);
        assert_eq!(parse_point(&[]), None);
        assert_eq!(parse_point(&[0, 0, 0, 0, 1]), None);
        let mut long = stored(0, true, 1, 1.0, 1.0);
        long.push(0);
        assert_eq!(parse_point(&long), None);
    }

    /// Debezium's `io.debezium.data.geometry.Point`: x, y, wkb, srid, in that order.
    #[test]
    fn json_is_debeziums_point_struct() {
        use crate::schema::{Column, ColumnKind};
        let col = |kind| Column {
            name: "p".into(),
            kind,
            nullable: true,
        };
        let v = stored(4326, true, 1, 1.5, -2.25);
        let mut out = Vec::new();
        crate::encode::json_value::write_json_value(
            &mut out,
            &col(ColumnKind::Point),
            &crate::value::Value::Geometry(v.clone()),
        );
        use base64::Engine as _;
        let wkb = base64::engine::general_purpose::STANDARD.encode(&v[4..]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(r#"{{"x":1.5,"y":-2.25,"wkb":"{wkb}","srid":4326}}"#)
        );
        // Not a point: null, never a panic.
        let mut out = Vec::new();
        crate::encode::json_value::write_json_value(
            &mut out,
            &col(ColumnKind::Point),
            &crate::value::Value::Geometry(vec![0, 0, 0, 0, 1]),
        );
        assert_eq!(out, b"null");
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_without_panicking(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            let _ = parse_point(&bytes);
        }
    }
}
