//! A small bounded LRU cache of decoding matrices, keyed by loss pattern.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::Error;
use crate::kernel::Coeffs;

/// Which shards were used as sources (bits 0..256) and which are rebuilt
/// (bits 256..512).
pub(crate) type Key = [u64; 8];

/// Most entries kept.
const MAX_ENTRIES: usize = 256;
/// Most table bytes kept (a 200+56 coder's matrices are ~360 KiB each).
const MAX_BYTES: usize = 32 << 20;

struct Entry {
    value: Arc<Coeffs>,
    last_used: u64,
}

#[derive(Default)]
struct Lru {
    map: HashMap<Key, Entry>,
    tick: u64,
    bytes: usize,
}

/// Decoding matrices with their kernel tables, shared by all callers of one
/// coder. Lookups of known patterns neither allocate nor compute.
#[derive(Default)]
pub(crate) struct DecodeCache {
    lru: Mutex<Lru>,
}

impl DecodeCache {
    /// The cached value for `key`, or the result of `build` (computed outside
    /// the lock, then cached, evicting the least recently used entries).
    pub(crate) fn get_or_build(
        &self,
        key: &Key,
        build: impl FnOnce() -> Result<Coeffs, Error>,
    ) -> Result<Arc<Coeffs>, Error> {
        {
            let mut guard = self.lru.lock().unwrap_or_else(PoisonError::into_inner);
            let lru = &mut *guard;
            lru.tick += 1;
            if let Some(e) = lru.map.get_mut(key) {
                e.last_used = lru.tick;
                return Ok(Arc::clone(&e.value));
            }
        }
        let value = Arc::new(build()?);
        let size = value.heap_bytes();
        let mut guard = self.lru.lock().unwrap_or_else(PoisonError::into_inner);
        let lru = &mut *guard;
        lru.tick += 1;
        if let Some(e) = lru.map.get_mut(key) {
            // Another thread built it meanwhile; keep one copy.
            e.last_used = lru.tick;
            return Ok(Arc::clone(&e.value));
        }
        while !lru.map.is_empty() && (lru.map.len() >= MAX_ENTRIES || lru.bytes + size > MAX_BYTES)
        {
            let oldest = lru
                .map
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k);
            if let Some(e) = oldest.and_then(|k| lru.map.remove(&k)) {
                lru.bytes -= e.value.heap_bytes();
            }
        }
        lru.bytes += size;
        lru.map.insert(
            *key,
            Entry {
                value: Arc::clone(&value),
                last_used: lru.tick,
            },
        );
        Ok(value)
    }

    /// Entries currently cached.
    pub(crate) fn len(&self) -> usize {
        self.lru
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kernel;

    fn coeffs(n: usize) -> Coeffs {
        Kernel::from_name("scalar")
            .unwrap()
            .expand(1, n, vec![1; n])
    }

    #[test]
    fn hits_do_not_rebuild_and_size_is_bounded() {
        let cache = DecodeCache::default();
        let key = |i: u64| [i, 0, 0, 0, 0, 0, 0, 0];
        let a = cache.get_or_build(&key(1), || Ok(coeffs(3))).unwrap();
        let b = cache
            .get_or_build(&key(1), || panic!("must not rebuild a cached entry"))
            .unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        for i in 0..(MAX_ENTRIES as u64 + 50) {
            cache.get_or_build(&key(100 + i), || Ok(coeffs(3))).unwrap();
            // Keep key 1 hot so it survives eviction.
            cache
                .get_or_build(&key(1), || panic!("hot entry evicted"))
                .unwrap();
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        // The oldest cold entry is gone.
        let mut rebuilt = false;
        cache
            .get_or_build(&key(100), || {
                rebuilt = true;
                Ok(coeffs(3))
            })
            .unwrap();
        assert!(rebuilt);
    }

    #[test]
    fn errors_are_not_cached() {
        let cache = DecodeCache::default();
        let k = [7; 8];
        assert_eq!(
            cache.get_or_build(&k, || Err(Error::SingularMatrix)).err(),
            Some(Error::SingularMatrix)
        );
        assert_eq!(cache.len(), 0);
    }
}
