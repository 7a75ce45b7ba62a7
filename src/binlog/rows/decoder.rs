//! Decoding every row of a rows event with a [`RowDecoder`]'s plan
//! ([`RowDecoder::decode`]) into [`RowImage`]s: columns-present and null bitmaps, the values,
//! and JSON columns logged as partial updates rebuilt from the before image's document
//! (with `binlog::json_diff`).
//!
//! Invariants: each decoded image has exactly one [`Value`] per table column, in table
//! order; columns absent from the event's columns-present bitmap are [`Value::Missing`]; a
//! partial JSON update is applied to the before image's document or the row fails with
//! [`RowsError::PartialJson`], never guessed at; malformed data yields a [`RowsError`]
//! naming `db.table`, the column and the byte offset within the rows data.

use super::cell::{decode_cell, Cell};
use super::error::RowsError;
use super::header::RowsEventHeader;
use super::plan::RowDecoder;
use super::read::{length_prefix, take};
use crate::model::row::RowImage;
use crate::value::Value;

/// Columns-present bitmap expanded for one event.
struct Present {
    bits: Vec<bool>,
    count: usize,
}

impl Present {
    fn new(bitmap: &[u8], n: usize) -> Self {
        let bits: Vec<bool> = (0..n)
            .map(|i| bitmap.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0))
            .collect();
        let count = bits.iter().filter(|&&b| b).count();
        Present { bits, count }
    }
}

impl RowDecoder {
    /// Decodes every row of `hdr`, appending one [`RowImage`] per row to `out`.
    ///
    /// On error `out` may already contain the rows decoded before the bad one.
    pub fn decode(
        &self,
        hdr: &RowsEventHeader<'_>,
        out: &mut Vec<RowImage>,
    ) -> Result<(), RowsError> {
        if hdr.table_id != self.table_id {
            return Err(RowsError::TableIdMismatch {
                db: self.schema.db.clone(),
                table: self.schema.table.clone(),
                expected: self.table_id,
                actual: hdr.table_id,
            });
        }
        let n = self.plan.len();
        if hdr.column_count != n {
            return Err(RowsError::ColumnCount {
                db: self.schema.db.clone(),
                table: self.schema.table.clone(),
                expected: n,
                actual: hdr.column_count,
            });
        }
        let before = hdr.columns_before.map(|b| Present::new(b, n));
        let after = hdr.columns_after.map(|b| Present::new(b, n));
        let data = hdr.rows_data();
        let mut pos = 0usize;
        // Where the before image's JSON documents are (PARTIAL_UPDATE_ROWS only).
        let mut before_docs: Vec<BeforeDoc> = Vec::new();
        while pos < data.len() {
            let row_start = pos;
            before_docs.clear();
            let before_img = match &before {
                Some(p) => {
                    let mode = if hdr.partial_update {
                        ImageMode::RecordJson(&mut before_docs)
                    } else {
                        ImageMode::Plain
                    };
                    Some(self.decode_image(data, &mut pos, p, mode)?)
                }
                None => None,
            };
            let after_img = match &after {
                Some(p) => {
                    let mode = if hdr.partial_update {
                        ImageMode::PartialAfter(&before_docs)
                    } else {
                        ImageMode::Plain
                    };
                    Some(self.decode_image(data, &mut pos, p, mode)?)
                }
                None => None,
            };
            if pos == row_start {
                // Only possible with empty columns-present bitmaps: such a row holds no
                // bytes, so the remaining data cannot be row images.
                return Err(self.truncated(
                    pos,
                    "row images with no columns cannot consume the rows data".to_owned(),
                ));
            }
            out.push(RowImage {
                before: before_img,
                after: after_img,
            });
        }
        Ok(())
    }

    fn truncated(&self, offset: usize, detail: String) -> RowsError {
        RowsError::Truncated {
            db: self.schema.db.clone(),
            table: self.schema.table.clone(),
            offset,
            detail,
        }
    }

    fn column_name(&self, i: usize) -> String {
        self.schema
            .columns
            .get(i)
            .map(|c| c.name.clone())
            .unwrap_or_else(|| format!("@{}", i + 1))
    }

    fn partial_json(&self, i: usize, detail: String) -> RowsError {
        RowsError::PartialJson {
            db: self.schema.db.clone(),
            table: self.schema.table.clone(),
            column: self.column_name(i),
            detail,
        }
    }

    /// Reads the diff list of partial JSON column `i` at `pos` and rebuilds the new
    /// document from the before image's document.
    fn rebuild_partial(
        &self,
        i: usize,
        data: &[u8],
        pos: &mut usize,
        before_docs: &[BeforeDoc],
    ) -> Result<Value, RowsError> {
        let start = *pos;
        let diffs = length_prefix(data, pos, 4)
            .and_then(|len| take(data, pos, len))
            .map_err(|p| RowsError::Value {
                db: self.schema.db.clone(),
                table: self.schema.table.clone(),
                column: self.column_name(i),
                offset: start,
                detail: format!("partial JSON diff list: {}", p.describe()),
            })?;
        let doc = match before_docs.iter().find(|d| d.column == i) {
            Some(BeforeDoc { doc: Some(r), .. }) => data.get(r.clone()).unwrap_or(&[]),
            Some(BeforeDoc { doc: None, .. }) => {
                return Err(self.partial_json(
                    i,
                    "the before image holds NULL, so there is no document to apply the diff to"
                        .to_owned(),
                ))
            }
            None => {
                return Err(self.partial_json(
                    i,
                    "the before image does not include this column (binlog_row_image is \
                     not FULL)"
                        .to_owned(),
                ))
            }
        };
        match super::json_diff::rebuild(doc, diffs) {
            Ok(text) => Ok(Value::Json(text)),
            Err(super::json_diff::RebuildError::DoesNotApply(detail)) => {
                Err(self.partial_json(i, detail))
            }
            Err(super::json_diff::RebuildError::Malformed(detail)) => Err(RowsError::Value {
                db: self.schema.db.clone(),
                table: self.schema.table.clone(),
                column: self.column_name(i),
                offset: start,
                detail: format!("partial JSON update: {detail}"),
            }),
        }
    }

    fn decode_image(
        &self,
        data: &[u8],
        pos: &mut usize,
        present: &Present,
        mut mode: ImageMode<'_>,
    ) -> Result<Vec<Value>, RowsError> {
        let mut partial_bits: Option<&[u8]> = None;
        if let ImageMode::PartialAfter(_) = mode {
            let start = *pos;
            let mut r = crate::binlog::reader::Reader::new(data.get(start..).unwrap_or(&[]));
            let options = r
                .lenenc()
                .map_err(|e| self.truncated(start, format!("value options: {e}")))?;
            if options & 1 != 0 {
                partial_bits = Some(
                    r.take(self.json_columns.div_ceil(8))
                        .map_err(|e| self.truncated(start, format!("partial-JSON bitmap: {e}")))?,
                );
            }
            *pos = start + r.pos();
        }
        let null_len = present.count.div_ceil(8);
        let nulls = data
            .get(*pos..)
            .and_then(|s| s.get(..null_len))
            .ok_or_else(|| self.truncated(*pos, format!("null bitmap needs {null_len} bytes")))?;
        *pos += null_len;

        let mut values = Vec::with_capacity(self.plan.len());
        let mut image_idx = 0usize;
        let mut json_idx = 0usize;
        for (i, (cell, &is_present)) in self.plan.iter().zip(&present.bits).enumerate() {
            let mut partial = false;
            if let Cell::Json { .. } = cell {
                partial = partial_bits
                    .and_then(|b| b.get(json_idx / 8))
                    .is_some_and(|b| b & (1 << (json_idx % 8)) != 0);
                json_idx += 1;
            }
            if !is_present {
                values.push(Value::Missing);
                continue;
            }
            let is_null = nulls
                .get(image_idx / 8)
                .is_some_and(|b| b & (1 << (image_idx % 8)) != 0);
            image_idx += 1;
            if is_null {
                if let (ImageMode::RecordJson(docs), Cell::Json { .. }) = (&mut mode, cell) {
                    docs.push(BeforeDoc {
                        column: i,
                        doc: None,
                    });
                }
                values.push(Value::Null);
                continue;
            }
            if partial {
                if let ImageMode::PartialAfter(docs) = mode {
                    values.push(self.rebuild_partial(i, data, pos, docs)?);
                    continue;
                }
            }
            let start = *pos;
            match decode_cell(*cell, data, pos) {
                Ok(v) => {
                    if let (ImageMode::RecordJson(docs), Cell::Json { prefix }) = (&mut mode, cell)
                    {
                        docs.push(BeforeDoc {
                            column: i,
                            doc: Some(start + usize::from(*prefix)..*pos),
                        });
                    }
                    values.push(v)
                }
                Err(p) => {
                    return Err(RowsError::Value {
                        db: self.schema.db.clone(),
                        table: self.schema.table.clone(),
                        column: self.column_name(i),
                        offset: start,
                        detail: p.describe(),
                    })
                }
            }
        }
        Ok(values)
    }
}

/// Where one JSON column's document sits in a before image.
#[derive(Debug, Clone)]
struct BeforeDoc {
    column: usize,
    /// Byte range of the binary document within the rows data; `None` for NULL.
    doc: Option<std::ops::Range<usize>>,
}

/// How [`RowDecoder::decode_image`] treats an image.
enum ImageMode<'m> {
    /// An ordinary image.
    Plain,
    /// Before image of a `PARTIAL_UPDATE_ROWS_EVENT`: remembers its JSON documents.
    RecordJson(&'m mut Vec<BeforeDoc>),
    /// After image of a `PARTIAL_UPDATE_ROWS_EVENT`: starts with value options; partial
    /// JSON columns are rebuilt from the recorded before-image documents.
    PartialAfter(&'m [BeforeDoc]),
}
