//! Client TLS setups of the source connections, built once and shared by every connection
//! made with the same settings and files.
//!
//! Building one costs tens of milliseconds of CPU: the TLS library loads the system's trust
//! store into each new context (also when `source.ssl_ca` replaces it), and every connection
//! built its own — the preflight's, the attempt's query and replication connections and the
//! retention watcher's, each start, each reconnect. A setup is looked up by what it is built
//! from (the TLS options with the bytes of the PEM files, for the client library's options
//! also the URL), so a changed file gives a new setup at the next connection.

use std::sync::Mutex;

/// At most this many setups of one kind are kept (one per source and TLS setting a process
/// connects with); the oldest goes first.
const KEPT: usize = 32;

/// Values by key, compared by equality (a few entries).
pub(crate) struct Kept<K, V>(Mutex<Vec<(K, V)>>);

impl<K: PartialEq, V: Clone> Kept<K, V> {
    /// Nothing kept yet.
    pub(crate) const fn new() -> Self {
        Kept(Mutex::new(Vec::new()))
    }

    /// The value kept for `key`.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    /// Keeps `value` for `key` (a value kept for it already stays) and returns the kept one.
    pub(crate) fn keep(&self, key: K, value: V) -> V {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, v)) = kept.iter().find(|(k, _)| *k == key) {
            return v.clone();
        }
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push((key, value.clone()));
        value
    }

    /// The value kept for `key`, else `make`'s, kept.
    pub(crate) fn get_or<E>(&self, key: K, make: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        match self.get(&key) {
            Some(v) => Ok(v),
            None => Ok(self.keep(key, make()?)),
        }
    }

    /// How many values are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// The key of a secret's bytes (a client key is not kept twice in memory).
pub(crate) fn digest(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = openssl::sha::Sha256::new();
    for p in parts {
        h.update(&(p.len() as u64).to_be_bytes());
        h.update(p);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_made_once_per_key_and_the_oldest_goes_past_the_bound() {
        let kept: Kept<u32, String> = Kept::new();
        let mut made = 0;
        for _ in 0..3 {
            let v = kept
                .get_or(7, || {
                    made += 1;
                    Ok::<_, ()>("seven".to_string())
                })
                .unwrap();
            assert_eq!(v, "seven");
        }
        assert_eq!(made, 1);
        assert_eq!(
            kept.keep(7, "other".into()),
            "seven",
            "the first kept stays"
        );
        for k in 100..100 + KEPT as u32 {
            kept.keep(k, k.to_string());
        }
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept.get(&7), None, "the oldest went first");
        assert_eq!(kept.get(&100).as_deref(), Some("100"));
    }

    #[test]
    fn the_digest_tells_apart_where_the_parts_split() {
        assert_ne!(digest(&[b"ab", b"c"]), digest(&[b"a", b"bc"]));
        assert_eq!(digest(&[b"ab", b"c"]), digest(&[b"ab", b"c"]));
    }
}
