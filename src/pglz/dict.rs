//! A pglz dictionary, prepared once: its reachable bytes and their history lists.
//!
//! With a dictionary, pglz compresses a datum as if the dictionary's last [`DICT_WINDOW`]
//! bytes came just before it: matches may start in the dictionary and run on into the datum.
//! Hashing those bytes per datum would cost more than compressing a small datum, so the
//! dictionary's history lists are built here once and only read afterwards; each datum keeps
//! its own lists for its own bytes and continues into these when its own run out.
//!
//! Dictionary mode hashes four bytes with its own hash (`compress::hash4`), not PostgreSQL's:
//! its output need not match PostgreSQL's (PostgreSQL has no dictionary mode), and
//! PostgreSQL's hash puts many unrelated four-byte strings on one list, each of which costs
//! a step of the walk.

use super::compress::{hash4, DICT_HASH_SIZE};
use super::DICT_WINDOW;

/// A dictionary prepared for pglz: build once, share between threads (it is only read).
#[derive(Clone)]
pub struct PglzDictionary {
    /// The last (up to) [`DICT_WINDOW`] bytes of the dictionary.
    bytes: Box<[u8]>,
    /// For each hash bucket (of [`DICT_HASH_SIZE`]), 1 + the newest dictionary position whose
    /// four bytes hash there; 0 = none.
    pub(super) start: Box<[u16; DICT_HASH_SIZE]>,
    /// For each dictionary position, 1 + the previous position in the same bucket; 0 = none.
    pub(super) prev: Box<[u16]>,
}

impl PglzDictionary {
    /// Prepares `dict`; only its last [`DICT_WINDOW`] bytes are kept, the rest is out of
    /// pglz's reach. Positions in the last three bytes are not indexed (their four-byte hash
    /// would need the datum's first bytes), so a match cannot start there.
    pub fn new(dict: &[u8]) -> PglzDictionary {
        let bytes: Box<[u8]> = dict[dict.len().saturating_sub(DICT_WINDOW)..].into();
        let mut start = Box::new([0u16; DICT_HASH_SIZE]);
        let mut prev = vec![0u16; bytes.len()].into_boxed_slice();
        for pos in 0..bytes.len().saturating_sub(3) {
            let bucket = hash4(&bytes[pos..pos + 4]) & (DICT_HASH_SIZE - 1);
            prev[pos] = start[bucket];
            // Positions are below DICT_WINDOW (4095), so 1 + position fits u16.
            start[bucket] = pos as u16 + 1;
        }
        PglzDictionary { bytes, start, prev }
    }

    /// The dictionary bytes a match can reach (the last up to [`DICT_WINDOW`] bytes).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Length of [`Self::as_bytes`].
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the dictionary is empty (compressing with it is plain pglz, bar the hash size).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl std::fmt::Debug for PglzDictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PglzDictionary")
            .field("len", &self.bytes.len())
            .finish_non_exhaustive()
    }
}
