//! The hash of the pending-request table's keys.
//!
//! The table maps the ids this client gave its requests (a counter) to the
//! callers waiting for them; it is written twice per call (inserted when
//! the request is sent, removed when its response comes). The standard
//! hasher (SipHash, made to resist keys chosen by an attacker) cost about
//! 140 instructions per use (two uses a call: 2.5 % of a 128-byte stdio
//! call). An attacker cannot choose these keys: only this client inserts
//! them, and a server can only make it look up an id, whose cost depends
//! on the keys already in the table (consecutive integers, spread evenly
//! by the hash below).

use std::hash::{BuildHasherDefault, Hasher};

/// `HashMap` state for request ids.
pub(super) type BuildIdHasher = BuildHasherDefault<IdHasher>;

/// A multiplicative (Fibonacci) hash: the id times an odd constant near
/// 2^64 / φ. Its low bits (the bucket) differ for consecutive ids; its top
/// bits (the table's control byte) depend on every bit of the id.
#[derive(Default)]
pub(super) struct IdHasher(u64);

/// ⌊2^64 / φ⌋, made odd: multiplying by it is a bijection on `u64`.
const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by `i64` keys; any other key still hashes every byte.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(FIBONACCI);
        }
    }

    fn write_i64(&mut self, id: i64) {
        self.0 = (self.0 ^ id as u64).wrapping_mul(FIBONACCI);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    #[test]
    fn consecutive_ids_fill_distinct_buckets_and_control_bytes_vary() {
        let b = BuildIdHasher::default();
        let hashes: Vec<u64> = (1..=4096i64).map(|id| b.hash_one(id)).collect();
        // The bucket of a 4096-slot table (the low 12 bits): no two alike.
        let buckets: HashSet<u64> = hashes.iter().map(|h| h & 4095).collect();
        assert_eq!(buckets.len(), 4096);
        // hashbrown's control byte is the top 7 bits: all 128 values occur.
        let tops: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert_eq!(tops.len(), 128);
    }

    #[test]
    fn a_table_keyed_by_ids_works_for_any_id() {
        let mut m: std::collections::HashMap<i64, i64, BuildIdHasher> = Default::default();
        for id in [i64::MIN, -1, 0, 1, 2, i64::MAX] {
            m.insert(id, id);
        }
        for id in [i64::MIN, -1, 0, 1, 2, i64::MAX] {
            assert_eq!(m.remove(&id), Some(id));
        }
        assert!(m.is_empty());
    }
}
