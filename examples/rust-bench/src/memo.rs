//! A resolution cache shared by rayon's worker threads: sharded so that
//! threads resolving different specifiers rarely wait on the same lock.

use crate::engine::ResolveError;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

type Outcome = Result<String, ResolveError>;

pub struct Memo {
    shards: Vec<Mutex<HashMap<String, Outcome>>>,
}

impl Memo {
    pub fn new(shards: usize) -> Memo {
        Memo { shards: (0..shards.max(1)).map(|_| Mutex::new(HashMap::new())).collect() }
    }

    /// The cache key of a request: the importing directory and the specifier.
    pub fn key(from_dir: &str, specifier: &str) -> String {
        let mut k = String::with_capacity(from_dir.len() + specifier.len() + 1);
        k.push_str(from_dir);
        k.push('\0');
        k.push_str(specifier);
        k
    }

    #[inline(never)]
    fn shard_of(&self, key: &str) -> &Mutex<HashMap<String, Outcome>> {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        &self.shards[(h.finish() % self.shards.len() as u64) as usize]
    }

    /// The stored outcome for `key`, if any.
    #[inline(never)]
    pub fn cached(&self, key: &str) -> Option<Outcome> {
        self.shard_of(key).lock().unwrap().get(key).cloned()
    }

    #[inline(never)]
    pub fn cache_store(&self, key: String, outcome: Outcome) {
        self.shard_of(&key).lock().unwrap().insert(key, outcome);
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
