//! Partial JSON updates (`PARTIAL_UPDATE_ROWS`): a diff list applied to the before image's
//! binary document and the result rendered.
//!
//! Input: a 2-byte length, the before document of that length, then the diff list.
//!
//! Properties: no panic; allocation bounded; the rebuilt text is valid JSON; an empty diff list
//! rebuilds the before document exactly as the full-image renderer renders it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::fuzz_entry::{json_partial_update, jsonb};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let len = usize::from(u16::from_le_bytes([data[0], data[1]]));
    let rest = &data[2..];
    let (before, diffs) = rest.split_at(len.min(rest.len()));
    let rebuilt = json_partial_update(before, diffs);
    if let Ok(text) = &rebuilt {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
            assert!(
                e.to_string().contains("recursion limit"),
                "invalid JSON {text:?}: {e}"
            );
        }
    }
    if diffs.is_empty() {
        let (direct, _) = jsonb(before);
        assert_eq!(
            rebuilt.ok(),
            direct.ok(),
            "no diffs must give the before document"
        );
    }
});
