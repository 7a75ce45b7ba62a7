//! MySQL binary JSON: a JSON column's value rendered to JSON text by the full-image renderer and,
//! independently, decoded into the tree that partial updates edit and rendered from there.
//!
//! Input: the binary document (type byte first), as a JSON column's value holds it.
//!
//! Properties: no panic; allocation bounded; both paths accept the same documents and render
//! them to the same text; that text is valid JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::fuzz_entry::jsonb;

fuzz_target!(|data: &[u8]| {
    let (direct, tree) = jsonb(data);
    match (&direct, &tree) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "the two renderers differ");
            if let Err(e) = serde_json::from_str::<serde_json::Value>(a) {
                assert!(
                    e.to_string().contains("recursion limit"),
                    "invalid JSON {a:?}: {e}"
                );
            }
        }
        (Err(_), Err(_)) => {}
        _ => panic!("one renderer accepts what the other refuses: {direct:?} / {tree:?}"),
    }
});
