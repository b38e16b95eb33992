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
//!
//! The lists are arrays, not links from position to position: a walk down linked positions
//! waits for each link's load before it can read the next candidate, and a dictionary's
//! repeated strings make some lists long. Each list is split further into classes of
//! positions with the same first eight bytes; the list holds the newest position of each
//! class, and the others ("members", newest first) are only walked when the datum matches
//! all eight bytes of the class: otherwise each matches exactly as far as the newest, which
//! a walk meets first and prefers. Members carry how many bytes each shares with the one
//! before, which tells most of their match lengths without reading them (see [`Member`]).

use super::compress::{common_prefix, hash4, DICT_HASH_SIZE};
use super::DICT_WINDOW;

/// A dictionary prepared for pglz: build once, share between threads (it is only read).
#[derive(Clone)]
pub struct PglzDictionary {
    /// The last (up to) [`DICT_WINDOW`] bytes of the dictionary.
    bytes: Box<[u8]>,
    /// Bucket `b`'s list is `classes[list_start[b]..list_start[b + 1]]` (in
    /// `DICT_HASH_SIZE + 1` entries).
    pub(super) list_start: Box<[u16; DICT_HASH_SIZE + 1]>,
    /// Each list's classes, newest first (lists one after the other).
    pub(super) classes: Box<[Class]>,
    /// Each class's first eight bytes (at its newest position) as a little-endian word, by
    /// the class's index in `classes` (the end marker's too); zero-padded for positions with
    /// fewer than eight bytes left. A walk compares a list's keys one after the other
    /// without a branch (see `History::by_keys`).
    pub(super) keys: Box<[u64]>,
    /// Each class's members: `members[class.members..next class.members]`, newest first
    /// (one entry past the last class marks the end).
    pub(super) members: Box<[Member]>,
}

/// A class of a history list: the positions with the same first eight bytes.
#[derive(Clone, Copy)]
pub(super) struct Class {
    /// The newest position of the class (positions with fewer than eight bytes left are
    /// classes of their own).
    pub(super) pos: u16,
    /// Where the class's members start in `PglzDictionary::members`.
    pub(super) members: u16,
}

/// An older position of a class.
#[derive(Clone, Copy)]
pub(super) struct Member {
    pub(super) pos: u16,
    /// How many bytes it shares with the position before it in the class (at least eight),
    /// or [`SHARED_UNKNOWN`]: so that a walk can tell most members' match lengths without
    /// reading their bytes.
    pub(super) shared: u8,
    /// Index (in `PglzDictionary::members`) of the class's next member that shares fewer
    /// bytes with the one before it than this one does (an unknown count counts as none),
    /// or the end of the class. A walk that knows the datum matches the member before this
    /// one on fewer bytes than this one shares can skip to there (see [`Member::rank`]).
    pub(super) skip: u16,
}

impl Member {
    /// [`Member::shared`] as the skips order members: an unknown count as 0, so that no
    /// skip passes a member whose match length must be measured.
    pub(super) fn rank(self) -> u8 {
        if self.shared == SHARED_UNKNOWN {
            0
        } else {
            self.shared
        }
    }
}

/// [`Member::shared`] when the count is 255 or more, or when the bytes of the position
/// before run to the end of the dictionary first (the rest depends on the datum).
pub(super) const SHARED_UNKNOWN: u8 = u8::MAX;

impl PglzDictionary {
    /// Prepares `dict`; only its last [`DICT_WINDOW`] bytes are kept, the rest is out of
    /// pglz's reach. Positions in the last three bytes are not indexed (their four-byte hash
    /// would need the datum's first bytes), so a match cannot start there.
    pub fn new(dict: &[u8]) -> PglzDictionary {
        let bytes: Box<[u8]> = dict[dict.len().saturating_sub(DICT_WINDOW)..].into();
        // Each bucket's positions, newest first, as links (1 + position, 0 = none), and
        // which buckets have any: the lists are then built from the occupied buckets
        // alone, so that the work grows with the dictionary rather than with the 65,536
        // buckets (visiting them all took most of the 0.07 ms a 100-byte dictionary cost).
        let mut start = vec![0u16; DICT_HASH_SIZE];
        let mut prev = vec![0u16; bytes.len()];
        let mut occupied = vec![0u64; DICT_HASH_SIZE / 64];
        for pos in 0..bytes.len().saturating_sub(3) {
            let bucket = hash4(&bytes[pos..pos + 4]) & (DICT_HASH_SIZE - 1);
            prev[pos] = start[bucket];
            // Positions are below DICT_WINDOW (4095), so 1 + position fits u16.
            start[bucket] = pos as u16 + 1;
            occupied[bucket / 64] |= 1 << (bucket % 64);
        }
        let occupied_buckets = occupied.iter().enumerate().flat_map(|(word_index, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                let bit = (rest != 0).then(|| rest.trailing_zeros() as usize)?;
                rest &= rest - 1;
                Some(word_index * 64 + bit)
            })
        });
        // Then as arrays, split into classes. There are fewer classes and members than
        // positions: every index fits u16. `list_start` is filled up to each occupied
        // bucket, and past the last one at the end.
        let mut list_start = vec![0u16; DICT_HASH_SIZE + 1];
        let mut buckets_done = 0;
        let mut classes: Vec<Class> = Vec::new();
        let mut members: Vec<Member> = Vec::new();
        // The bucket's classes being built: each one's positions, newest first, in the
        // first `in_use` vectors. The vectors (and `lower` below) are reused from bucket to
        // bucket: allocating one per class made preparing a 4 KB dictionary take 0.4 ms.
        let mut split: Vec<Vec<usize>> = Vec::new();
        let mut lower: Vec<usize> = Vec::new();
        for bucket in occupied_buckets {
            list_start[buckets_done..=bucket].fill(classes.len() as u16);
            buckets_done = bucket + 1;
            let mut in_use = 0;
            let mut entry = start[bucket];
            while entry != 0 {
                let pos = usize::from(entry) - 1;
                entry = prev[pos];
                let eight = first_eight(&bytes, pos);
                let class = split[..in_use]
                    .iter_mut()
                    .find(|class| eight.is_some() && first_eight(&bytes, class[0]) == eight);
                match class {
                    Some(class) => class.push(pos),
                    None => {
                        if in_use == split.len() {
                            split.push(Vec::new());
                        }
                        split[in_use].clear();
                        split[in_use].push(pos);
                        in_use += 1;
                    }
                }
            }
            for class in &split[..in_use] {
                classes.push(Class {
                    pos: class[0] as u16,
                    members: members.len() as u16,
                });
                for pair in class.windows(2) {
                    // The older position reaches further: only the newer can run out.
                    let (newer, older) = (&bytes[pair[0]..], &bytes[pair[1]..]);
                    let within = newer.len().min(usize::from(SHARED_UNKNOWN));
                    let same = common_prefix(older, &newer[..within]);
                    let shared = match u8::try_from(same) {
                        Ok(same) if usize::from(same) < newer.len() => same,
                        _ => SHARED_UNKNOWN,
                    };
                    members.push(Member {
                        pos: pair[1] as u16,
                        shared,
                        skip: 0,
                    });
                }
                // Each member's skip: the next with a lower rank (a stack of the later
                // members with ranks rising from the top).
                let first = usize::from(classes[classes.len() - 1].members);
                let end = members.len();
                lower.clear();
                for i in (first..end).rev() {
                    while lower
                        .last()
                        .is_some_and(|&j| members[j].rank() >= members[i].rank())
                    {
                        lower.pop();
                    }
                    members[i].skip = lower.last().copied().unwrap_or(end) as u16;
                    lower.push(i);
                }
            }
        }
        list_start[buckets_done..].fill(classes.len() as u16);
        classes.push(Class {
            pos: 0,
            members: members.len() as u16,
        });
        let mut padded = Vec::with_capacity(bytes.len() + 8);
        padded.extend_from_slice(&bytes);
        padded.extend_from_slice(&[0; 8]);
        let keys = classes
            .iter()
            .map(|class| {
                let pos = usize::from(class.pos);
                u64::from_le_bytes(padded[pos..pos + 8].try_into().unwrap())
            })
            .collect();
        PglzDictionary {
            bytes,
            keys,
            list_start: list_start
                .into_boxed_slice()
                .try_into()
                .expect("one start per bucket and the end"),
            classes: classes.into_boxed_slice(),
            members: members.into_boxed_slice(),
        }
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

/// The eight bytes at `pos` as a word, if there are eight left: a class's key.
fn first_eight(bytes: &[u8], pos: usize) -> Option<u64> {
    let eight = bytes.get(pos..pos + 8)?;
    Some(u64::from_le_bytes(eight.try_into().expect("eight bytes")))
}

impl std::fmt::Debug for PglzDictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PglzDictionary")
            .field("len", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dictionary of near-copies (one key, many values), so that lists have classes with
    /// many members, some sharing more bytes than others.
    fn near_copies() -> Vec<u8> {
        let mut dict = Vec::new();
        for i in 0..300u32 {
            dict.extend_from_slice(format!("\"name\":\"value-{}{}\",", i % 7, i % 13).as_bytes());
        }
        dict
    }

    #[test]
    fn classes_hold_every_position_once_with_the_shared_counts_and_skips_they_claim() {
        // Pseudo-random bytes: lists of one or two positions, spread over the buckets.
        let mut state = 0x9e37_79b9_u32;
        let noise: Vec<u8> = (0..5000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state as u8
            })
            .collect();
        // A class of three: the member after the head shares 308 bytes with it (over 254:
        // unknown), the next 8, so that a known count follows an unknown one.
        let long_then_short = [
            &b"prefix__"[..],
            &[b'a'; 300],
            b"prefix__",
            &[b'a'; 300],
            b"prefix__",
            &[b'b'; 12],
        ]
        .concat();
        for dict in [
            &near_copies()[..],
            &noise,
            &noise[..100],
            &noise[..4],
            &noise[..3],
            &[],
            &long_then_short,
            // Positions with under 8 bytes left, whose 4 bytes are those of others.
            &[b'a'; 12],
        ] {
            check_lists(&PglzDictionary::new(dict));
        }
    }

    fn check_lists(prepared: &PglzDictionary) {
        let bytes = prepared.as_bytes();
        let lcp = |a: usize, b: usize| {
            bytes[a..]
                .iter()
                .zip(&bytes[b..])
                .take_while(|(x, y)| x == y)
                .count()
        };
        // The order skips follow, worked out here rather than by `Member::rank`.
        let rank = |member: Member| match member.shared {
            SHARED_UNKNOWN => 0,
            known => known,
        };
        let mut seen = vec![false; bytes.len()];
        for bucket in 0..DICT_HASH_SIZE {
            let list = usize::from(prepared.list_start[bucket])
                ..usize::from(prepared.list_start[bucket + 1]);
            let mut newer_class: Option<usize> = None;
            for c in list {
                let class = prepared.classes[c];
                let head = usize::from(class.pos);
                assert!(
                    newer_class.is_none_or(|newer| newer > head),
                    "classes newest first"
                );
                newer_class = Some(head);
                let hash = hash4(&bytes[head..head + 4]);
                assert_eq!(hash, bucket);
                let members =
                    usize::from(class.members)..usize::from(prepared.classes[c + 1].members);
                let mut before = head;
                for m in members.clone() {
                    let member = prepared.members[m];
                    let pos = usize::from(member.pos);
                    assert!(pos < before, "members newest first");
                    assert_eq!(bytes[pos..pos + 8], bytes[head..head + 8]);
                    let same = lcp(before, pos);
                    if member.shared == SHARED_UNKNOWN {
                        assert!(same >= 255 || before + same == bytes.len());
                    } else {
                        assert_eq!(usize::from(member.shared), same);
                        // Known only where the run ends before the dictionary does (else
                        // the datum may run on: the match is longer than the bytes shared).
                        assert!(before + same < bytes.len());
                    }
                    let skip = usize::from(member.skip);
                    assert!(skip > m && skip <= members.end);
                    for between in m + 1..skip {
                        assert!(rank(prepared.members[between]) >= rank(member));
                    }
                    if skip < members.end {
                        assert!(rank(prepared.members[skip]) < rank(member));
                    }
                    assert!(!seen[pos]);
                    seen[pos] = true;
                    before = pos;
                }
                assert!(!seen[head]);
                seen[head] = true;
            }
        }
        // Every position with four bytes left is in exactly one list.
        assert!(seen[..bytes.len().saturating_sub(3)].iter().all(|&s| s));
        assert_eq!(
            usize::from(prepared.list_start[DICT_HASH_SIZE]),
            prepared.classes.len() - 1,
            "the last list ends at the end marker"
        );
    }
}
