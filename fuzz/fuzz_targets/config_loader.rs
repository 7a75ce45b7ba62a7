//! The config loader: TOML text with `SLUICE_*` environment overrides, parsed, deserialized and
//! validated as `sluice run` loads its file.
//!
//! Input: the TOML text up to the first 0 byte, then `KEY=VALUE` lines (the key gets the
//! `SLUICE_` prefix when it lacks it). With bit 0 of the last byte set, the source URL is set
//! by the environment to one with a known password.
//!
//! Properties: no panic; allocation bounded; that password never appears in an error (Display
//! or Debug), in a loaded configuration's Debug form or in its serialized (redacted) forms; a
//! configuration that loads also builds its router.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::fuzz_entry::{config, router};

const SECRET: &str = "Zq9fuzzSecretPw";

fuzz_target!(|data: &[u8]| {
    let (text, env) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let plant = data.last().is_some_and(|b| b & 1 != 0);
    let mut vars: Vec<(String, String)> = String::from_utf8_lossy(env)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let k = if k.starts_with("SLUICE_") {
                k.to_owned()
            } else {
                format!("SLUICE_{k}")
            };
            (k, v.to_owned())
        })
        .filter(|(k, _)| !plant || k != "SLUICE_SOURCE_URL")
        .take(16)
        .collect();
    if plant {
        vars.push((
            "SLUICE_SOURCE_URL".into(),
            format!("mysql://sluice:{SECRET}@127.0.0.1:3306"),
        ));
    }
    // A secret the input itself spells out may be echoed where the input put it.
    let check = plant && !data.windows(6).any(|w| w == &SECRET.as_bytes()[..6]);
    match config(text, vars) {
        Ok(cfg) => {
            if check {
                let forms = [
                    format!("{cfg:?}"),
                    serde_json::to_string(&cfg).expect("a config serializes"),
                    cfg.redacted_json().to_string(),
                ];
                for f in &forms {
                    assert!(!f.contains(SECRET), "the password shows in {f}");
                }
            }
            if let Err(e) = router(&cfg) {
                panic!("a valid configuration does not route: {e}");
            }
        }
        Err(e) => {
            if check {
                let (shown, debug) = (e.to_string(), format!("{e:?}"));
                assert!(
                    !shown.contains(SECRET),
                    "the password shows in the error: {shown}"
                );
                assert!(
                    !debug.contains(SECRET),
                    "the password shows in the error: {debug}"
                );
            }
        }
    }
});
