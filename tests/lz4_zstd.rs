//! Integration tests for `pgdict::lz4` and `pgdict::zstd`: round trips over the shared corpus
//! with dictionaries of several sizes, prefix decoding, PostgreSQL-identical plain lz4, the
//! magicless zstd frame layout, and corrupt or mismatched input (errors, never panics).
//!
//! The corpus is read from `$PGDICT_CORPUS/rows`, else `../shared/corpus/rows` next to the
//! workspace (`support/corpus.rs`). A missing corpus fails the tests.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::os::raw::{c_char, c_int};

use pgdict::lz4::{self, Lz4Compressor, Lz4Dictionary};
use pgdict::zstd::{self, ZstdCompressor, ZstdDecompressor, ZstdDictionary};

#[allow(dead_code)]
#[path = "support/corpus.rs"]
mod corpus;

/// The system allocator, noting the largest allocation each thread asks for
/// ([`largest_allocation_of`]): a decoder must not reserve what a hostile header claims.
struct NotingAllocator;

thread_local! {
    static LARGEST_ALLOCATION: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation(size: usize) {
    // `try_with`: nothing to note while the thread's locals are being torn down.
    let _ = LARGEST_ALLOCATION.try_with(|largest| largest.set(largest.get().max(size)));
}

// SAFETY: every call is passed to `System` unchanged; noting a size allocates nothing.
unsafe impl GlobalAlloc for NotingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: NotingAllocator = NotingAllocator;

/// `work`'s result and the largest allocation it asked Rust's allocator for on this thread
/// (zstd's own allocations, through malloc, are not seen).
fn largest_allocation_of<T>(work: impl FnOnce() -> T) -> (T, usize) {
    LARGEST_ALLOCATION.with(|largest| largest.set(0));
    let result = work();
    (result, LARGEST_ALLOCATION.with(Cell::get))
}

/// Rows per corpus file that are compressed (the rest feed dictionaries).
const ROWS: usize = 200;

/// Dictionary sizes every round trip runs with.
const DICT_SIZES: [usize; 6] = [0, 1, 100, 4095, 4096, 65536];

/// One corpus file: its name and every datum in it.
struct RowSet {
    name: String,
    rows: Vec<Vec<u8>>,
}

impl RowSet {
    /// The rows under test.
    fn tested(&self) -> &[Vec<u8>] {
        &self.rows[..ROWS.min(self.rows.len())]
    }

    /// A dictionary of exactly `size` bytes: the rows after the tested ones, concatenated and
    /// truncated (from the front, so the rows nearest the end are whole).
    fn dict(&self, size: usize) -> Vec<u8> {
        let mut dict = Vec::new();
        for row in self.rows[ROWS.min(self.rows.len())..].iter() {
            if dict.len() >= size {
                break;
            }
            dict.extend_from_slice(row);
        }
        assert!(
            dict.len() >= size,
            "{}: not enough rows for a {size}-byte dictionary",
            self.name
        );
        dict.split_off(dict.len() - size)
    }
}

/// Every row set of the corpus, read with `pgdict::rows` (`support/corpus.rs`).
fn corpus() -> Vec<RowSet> {
    corpus::row_sets()
        .into_iter()
        .map(|(name, rows)| RowSet { name, rows })
        .collect()
}

/// Prefix lengths to try for a datum of `len` bytes (some over `len`, which are capped).
fn prefix_lengths(len: usize) -> Vec<usize> {
    let mut ks = vec![
        0,
        1,
        2,
        7,
        15,
        64,
        len / 3,
        len / 2,
        len.saturating_sub(1),
        len,
        len + 1,
        len + 1000,
    ];
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// Calls liblz4's `LZ4_compress_default` directly, as PostgreSQL's `lz4_compress_datum` does.
fn liblz4_compress_default(input: &[u8]) -> Vec<u8> {
    // SAFETY: LZ4_compressBound only computes a number.
    let bound = unsafe { lz4_sys::LZ4_compressBound(input.len() as c_int) };
    assert!(bound > 0);
    let mut out = vec![0u8; bound as usize];
    // SAFETY: `input` is readable for its length; `out` is writable for `bound` bytes.
    let len = unsafe {
        lz4_sys::LZ4_compress_default(
            input.as_ptr().cast::<c_char>(),
            out.as_mut_ptr().cast::<c_char>(),
            input.len() as c_int,
            bound,
        )
    };
    assert!(len > 0, "LZ4_compress_default returned {len}");
    out.truncate(len as usize);
    out
}

/// Small deterministic pseudo-random bytes (xorshift), for incompressible inputs.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

/// Inputs at the edges of the formats, on top of the corpus rows.
fn edge_inputs() -> Vec<Vec<u8>> {
    vec![
        Vec::new(),
        b"a".to_vec(),
        b"abcdefghijkl".to_vec(),
        b"abcdefghijklm".to_vec(),
        vec![b'x'; 100],
        vec![0u8; 70_000],
        noise(5000, 1),
        noise(70_000, 2),
        b"0123456789".repeat(2000),
    ]
    .into_iter()
    .chain(around_clear_threshold())
    .collect()
}

/// Inputs just under, at and over 512 bytes, the size from which [`Lz4Compressor`] clears its
/// hash table before a plain block (`PLAIN_CLEAR_TABLE_MIN` in `lz4.rs`), alternating with
/// shorter ones, so that each path starts from the table the other left.
fn around_clear_threshold() -> Vec<Vec<u8>> {
    let text: Vec<u8> = (0..200)
        .flat_map(|i| {
            format!("{{\"id\": {i}, \"name\": \"row {}\"}}, ", i * 7919 % 1000).into_bytes()
        })
        .collect();
    [511, 40, 512, 300, 513, 100, 2000, 511, 4095, 64, 4096, 500]
        .iter()
        .enumerate()
        .map(|(i, &len)| text[i * 37..i * 37 + len].to_vec())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// lz4

#[test]
fn lz4_plain_is_liblz4_compress_default() {
    let mut reused = Lz4Compressor::new();
    let dict =
        Lz4Dictionary::new(&b"some dictionary text that is long enough to be loaded".repeat(50));
    let mut inputs = edge_inputs();
    for set in corpus() {
        inputs.extend(set.tested().iter().cloned());
    }
    for (i, input) in inputs.iter().enumerate() {
        let expected = liblz4_compress_default(input);
        assert_eq!(lz4::compress(input).unwrap(), expected, "input {i}");
        assert_eq!(
            reused.compress(input).unwrap(),
            expected,
            "input {i} (reused state)"
        );
        // A dictionary compression in between, as the datum encoder does: it has a working
        // stream of its own, which must leave the plain one's output alone.
        reused.compress_with_dict(input, &dict).unwrap();
        assert_eq!(
            lz4::decompress(&expected, input.len()).unwrap(),
            *input,
            "input {i}"
        );
    }
}

#[test]
fn lz4_round_trips_with_every_dictionary_size() {
    let mut compressor = Lz4Compressor::new();
    for set in corpus() {
        for size in DICT_SIZES {
            let dict_bytes = set.dict(size);
            let dict = Lz4Dictionary::new(&dict_bytes);
            assert_eq!(dict.len(), size.min(lz4::DICT_WINDOW));
            let mut out = b"header".to_vec();
            // One decode buffer for every row, longer and shorter ones in turn.
            let mut decoded = Vec::new();
            for (i, row) in set.tested().iter().enumerate() {
                let ctx = format!("{} dict {size} row {i}", set.name);
                let payload = compressor.compress_with_dict(row, &dict).unwrap();
                if size < 8 {
                    // liblz4 ignores such a dictionary: exactly PostgreSQL's payload.
                    assert_eq!(payload, liblz4_compress_default(row), "{ctx}");
                    assert_eq!(lz4::decompress(&payload, row.len()).unwrap(), *row, "{ctx}");
                }
                assert_eq!(dict.decompress(&payload, row.len()).unwrap(), *row, "{ctx}");
                dict.decompress_into(&payload, row.len(), &mut decoded)
                    .unwrap();
                assert_eq!(decoded, *row, "{ctx} (into a reused buffer)");
                assert_eq!(
                    lz4::decompress_with_dict(&payload, row.len(), &dict_bytes).unwrap(),
                    *row,
                    "{ctx} (full dictionary bytes)"
                );
                for k in prefix_lengths(row.len()) {
                    let prefix = dict.decompress_prefix(&payload, row.len(), k).unwrap();
                    assert_eq!(prefix, row[..k.min(row.len())], "{ctx} prefix {k}");
                }
                // The reusable-buffer form appends the same bytes.
                let before = out.len();
                let n = compressor
                    .compress_with_dict_into(row, &dict, &mut out)
                    .unwrap();
                assert_eq!(out[before..], payload[..], "{ctx}");
                assert_eq!(n, payload.len(), "{ctx}");
            }
        }
    }
}

#[test]
fn lz4_plain_prefix_decoding() {
    for input in edge_inputs() {
        let payload = lz4::compress(&input).unwrap();
        for k in prefix_lengths(input.len()) {
            let prefix = lz4::decompress_prefix(&payload, input.len(), k).unwrap();
            assert_eq!(
                prefix,
                input[..k.min(input.len())],
                "len {} prefix {k}",
                input.len()
            );
        }
    }
}

#[test]
fn lz4_dictionary_helps_and_edges_work() {
    let sets = corpus();
    let set = &sets[0];
    let dict = Lz4Dictionary::new(&set.dict(65536));
    let mut compressor = Lz4Compressor::new();
    let (mut plain, mut with_dict) = (0, 0);
    for row in set.tested() {
        plain += lz4::compress(row).unwrap().len();
        with_dict += compressor.compress_with_dict(row, &dict).unwrap().len();
    }
    assert!(with_dict < plain, "{}: {with_dict} >= {plain}", set.name);
    for input in edge_inputs() {
        let payload = compressor.compress_with_dict(&input, &dict).unwrap();
        assert_eq!(dict.decompress(&payload, input.len()).unwrap(), input);
    }
    // A fresh compressor and a reused one produce the same bytes.
    for row in set.tested().iter().take(50) {
        assert_eq!(
            Lz4Compressor::new().compress_with_dict(row, &dict).unwrap(),
            compressor.compress_with_dict(row, &dict).unwrap()
        );
    }
    // Dictionaries over the window keep their last 64 KiB.
    let long: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let d = Lz4Dictionary::new(&long);
    assert_eq!(d.as_bytes(), &long[long.len() - lz4::DICT_WINDOW..]);
    assert_eq!(d.clone().as_bytes(), d.as_bytes());
}

#[test]
fn lz4_exact_errors() {
    use lz4::Error;
    let abc = lz4::compress(b"abcabcabcabcabcabcabcabcabcabc").unwrap();
    type Outcome = Result<Vec<u8>, Error>;
    let cases: Vec<(&str, Outcome, Outcome)> = vec![
        // An empty payload is not a block.
        (
            "empty",
            lz4::decompress(&[], 0),
            Err(Error::Corrupt {
                code: -1,
                payload_len: 0,
            }),
        ),
        // The smallest block: a token with no literals and no match.
        ("empty block", lz4::decompress(&[0x00], 0), Ok(Vec::new())),
        // One literal 'a'.
        (
            "one literal",
            lz4::decompress(&[0x10, b'a'], 1),
            Ok(b"a".to_vec()),
        ),
        // The block holds 1 byte, the header says 2.
        (
            "short",
            lz4::decompress(&[0x10, b'a'], 2),
            Err(Error::LengthMismatch {
                expected: 2,
                produced: 1,
            }),
        ),
        // The block holds 1 byte, the header says 0: liblz4 refuses to write past the end.
        (
            "long",
            lz4::decompress(&[0x10, b'a'], 0),
            Err(Error::Corrupt {
                code: -1,
                payload_len: 2,
            }),
        ),
        // Raw length over the datum limit: refused before allocating.
        (
            "raw_len",
            lz4::decompress(&abc, 1 << 30),
            Err(Error::RawLenTooLarge {
                raw_len: 1 << 30,
                max: lz4::MAX_RAW_LEN,
            }),
        ),
        (
            "prefix raw_len",
            lz4::decompress_prefix(&abc, usize::MAX, 1),
            Err(Error::RawLenTooLarge {
                raw_len: usize::MAX,
                max: lz4::MAX_RAW_LEN,
            }),
        ),
        // A prefix longer than what the block holds.
        (
            "prefix short",
            lz4::decompress_prefix(&[0x10, b'a'], 5, 3),
            Err(Error::PrefixShort {
                wanted: 3,
                produced: 1,
                raw_len: 5,
            }),
        ),
        // A match (offset 1) with nothing before it and no dictionary.
        (
            "offset before history",
            lz4::decompress(&[0x00, 0x01, 0x00, 0x00], 4),
            Err(Error::Corrupt {
                code: -2,
                payload_len: 4,
            }),
        ),
    ];
    for (what, got, expected) in cases {
        assert_eq!(got, expected, "{what}");
    }
    let err = lz4::decompress(&[0x10, b'a'], 2).unwrap_err();
    assert_eq!(
        err.to_string(),
        "lz4: payload decodes to 1 bytes, expected 2"
    );
}

/// Every truncation and (a sample of) single bit flips of `payload`: decoding may fail, but
/// never panics, and success always means exactly the requested length.
fn mangle(payload: &[u8], mut decode: impl FnMut(&[u8]) -> Option<usize>, expected_len: usize) {
    for cut in 0..payload.len() {
        if let Some(len) = decode(&payload[..cut]) {
            assert_eq!(len, expected_len, "truncated to {cut}");
        }
    }
    let step = (payload.len() * 8 / 400).max(1);
    let mut bit = 0;
    while bit < payload.len() * 8 {
        let mut flipped = payload.to_vec();
        flipped[bit / 8] ^= 1 << (bit % 8);
        if let Some(len) = decode(&flipped) {
            assert_eq!(len, expected_len, "bit {bit} flipped");
        }
        bit += step;
    }
}

/// A raw length no payload of that size can expand to is refused before the output is
/// allocated (a 1-byte payload claiming 1 GiB - 1 zeroed 1 GiB first).
#[test]
fn lz4_claims_beyond_the_payload_are_refused_before_allocating() {
    let payload = lz4::compress(&[b'x'; 1000]).unwrap();
    let most = payload.len() * lz4::MAX_EXPANSION;
    let impossible = lz4::Error::RawLenImpossible {
        raw_len: most + 1,
        payload_len: payload.len(),
        max_possible: most,
    };
    assert_eq!(lz4::decompress(&payload, most + 1), Err(impossible.clone()));
    let mut out = Vec::new();
    assert_eq!(
        lz4::decompress_into(&payload, most + 1, &mut out),
        Err(impossible)
    );
    assert!(out.capacity() < most, "{} bytes allocated", out.capacity());
    assert_eq!(
        lz4::decompress(&[0], lz4::MAX_RAW_LEN),
        Err(lz4::Error::RawLenImpossible {
            raw_len: lz4::MAX_RAW_LEN,
            payload_len: 1,
            max_possible: lz4::MAX_EXPANSION,
        })
    );
    // The prefix decoders too: they allocated the prefix (here 1 GiB - 1) first.
    let two_bytes = [0x10, b'a'];
    let refused = lz4::Error::RawLenImpossible {
        raw_len: lz4::MAX_RAW_LEN,
        payload_len: 2,
        max_possible: 2 * lz4::MAX_EXPANSION,
    };
    let max = lz4::MAX_RAW_LEN;
    let dictionary = lz4::Lz4Dictionary::new(b"some dictionary bytes");
    assert_eq!(
        lz4::decompress_prefix(&two_bytes, max, max),
        Err(refused.clone())
    );
    assert_eq!(
        lz4::decompress_prefix_with_dict(&two_bytes, max, max, b"dictionary"),
        Err(refused.clone())
    );
    assert_eq!(
        dictionary.decompress_prefix(&two_bytes, max, max),
        Err(refused)
    );
    // Within the bound the claim is liblz4's to judge.
    assert!(matches!(
        lz4::decompress(&payload, most),
        Err(lz4::Error::LengthMismatch { produced: 1000, .. })
    ));
}

#[test]
fn lz4_corrupt_and_mismatched_input_never_panics() {
    let sets = corpus();
    let mut compressor = Lz4Compressor::new();
    for set in sets.iter().take(4) {
        let dict = Lz4Dictionary::new(&set.dict(4096));
        let other = Lz4Dictionary::new(&sets[sets.len() - 1].dict(4096));
        for row in set.tested().iter().take(12) {
            let n = row.len();
            for payload in [
                lz4::compress(row).unwrap(),
                compressor.compress_with_dict(row, &dict).unwrap(),
            ] {
                // Wrong dictionary, no dictionary, wrong length: Err, or exactly raw_len bytes.
                for d in [&other, &dict] {
                    if let Ok(v) = d.decompress(&payload, n) {
                        assert_eq!(v.len(), n);
                    }
                }
                if let Ok(v) = lz4::decompress(&payload, n) {
                    assert_eq!(v.len(), n);
                }
                assert!(dict.decompress(&payload, n + 1).is_err());
                assert!(dict.decompress(&payload, n - 1).is_err());
                mangle(&payload, |p| dict.decompress(p, n).ok().map(|v| v.len()), n);
                mangle(&payload, |p| lz4::decompress(p, n).ok().map(|v| v.len()), n);
                // Decoding into a reused buffer (holding other bytes, longer than the row)
                // gives the same result, or the same error, as a fresh one.
                let mut reused = vec![0xa5; 3 * n];
                mangle(
                    &payload,
                    |p| {
                        let into = dict
                            .decompress_into(p, n, &mut reused)
                            .map(|()| reused.clone());
                        assert_eq!(into, dict.decompress(p, n));
                        let plain_into =
                            lz4::decompress_into(p, n, &mut reused).map(|()| reused.clone());
                        assert_eq!(plain_into, lz4::decompress(p, n));
                        into.ok().map(|v| v.len())
                    },
                    n,
                );
                mangle(
                    &payload,
                    |p| dict.decompress_prefix(p, n, n / 2).ok().map(|v| v.len()),
                    n / 2,
                );
                mangle(
                    &payload,
                    |p| other.decompress_prefix(p, n, n).ok().map(|v| v.len()),
                    n,
                );
            }
        }
    }
}

#[test]
fn lz4_dictionary_is_shared_between_threads() {
    let sets = corpus();
    let set = &sets[1];
    let dict = Lz4Dictionary::new(&set.dict(65536));
    let expected: Vec<Vec<u8>> = {
        let mut c = Lz4Compressor::new();
        set.tested()
            .iter()
            .map(|r| c.compress_with_dict(r, &dict).unwrap())
            .collect()
    };
    std::thread::scope(|s| {
        for t in 0..4 {
            let (dict, expected) = (&dict, &expected);
            s.spawn(move || {
                let mut c = Lz4Compressor::new();
                for _ in 0..3 {
                    for (i, row) in set.tested().iter().enumerate().skip(t) {
                        assert_eq!(c.compress_with_dict(row, dict).unwrap(), expected[i]);
                        assert_eq!(dict.decompress(&expected[i], row.len()).unwrap(), *row);
                    }
                }
            });
        }
    });
}

// ---------------------------------------------------------------------------------------------
// zstd

/// zstd's frame magic number, little-endian, which the payload must not start with.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Checks the magicless frame header: no content size, not single-segment (so a window
/// descriptor follows), no checksum, no dictionary id.
fn assert_bare_frame(payload: &[u8], ctx: &str) {
    assert!(payload.len() >= 2 + 3, "{ctx}: frame too short");
    assert_ne!(payload[..4], ZSTD_MAGIC, "{ctx}: magic number present");
    let fhd = payload[0];
    assert_eq!(fhd >> 6, 0, "{ctx}: content size flag");
    assert_eq!(fhd & 0x20, 0, "{ctx}: single segment");
    assert_eq!(fhd & 0x04, 0, "{ctx}: checksum flag");
    assert_eq!(fhd & 0x03, 0, "{ctx}: dictionary id flag");
}

#[test]
fn zstd_round_trips_with_every_dictionary_size() {
    let mut compressor = ZstdCompressor::new().unwrap();
    let mut decompressor = ZstdDecompressor::new().unwrap();
    for set in corpus() {
        for size in DICT_SIZES {
            let dict_bytes = set.dict(size);
            let dict = ZstdDictionary::new(&dict_bytes).unwrap();
            assert_eq!(dict.len(), size);
            let mut out = b"header".to_vec();
            // One decode buffer for every row, longer and shorter ones in turn.
            let mut decoded = Vec::new();
            for (i, row) in set.tested().iter().enumerate() {
                let ctx = format!("{} dict {size} row {i}", set.name);
                let payload = compressor.compress_with_dict(row, &dict).unwrap();
                assert_bare_frame(&payload, &ctx);
                if size == 0 {
                    // The empty dictionary is no dictionary.
                    assert_eq!(payload, compressor.compress(row).unwrap(), "{ctx}");
                }
                let back = decompressor.decompress_with_dict(&payload, row.len(), &dict);
                assert_eq!(back.unwrap(), *row, "{ctx}");
                decompressor
                    .decompress_with_dict_into(&payload, row.len(), &dict, &mut decoded)
                    .unwrap();
                assert_eq!(decoded, *row, "{ctx} (into a reused buffer)");
                for k in prefix_lengths(row.len()) {
                    let prefix = decompressor
                        .decompress_prefix_with_dict(&payload, row.len(), k, &dict)
                        .unwrap();
                    assert_eq!(prefix, row[..k.min(row.len())], "{ctx} prefix {k}");
                }
                let before = out.len();
                let n = compressor
                    .compress_with_dict_into(row, &dict, &mut out)
                    .unwrap();
                assert_eq!(out[before..], payload[..], "{ctx}");
                assert_eq!(n, payload.len(), "{ctx}");
            }
        }
    }
}

#[test]
fn zstd_plain_round_trips_and_frame_is_standard_without_magic() {
    let mut compressor = ZstdCompressor::new().unwrap();
    let mut decompressor = ZstdDecompressor::new().unwrap();
    let mut inputs = edge_inputs();
    for set in corpus() {
        inputs.extend(set.tested().iter().take(40).cloned());
    }
    for (i, input) in inputs.iter().enumerate() {
        let payload = compressor.compress(input).unwrap();
        assert_bare_frame(&payload, &format!("input {i}"));
        assert_eq!(zstd::compress(input).unwrap(), payload, "input {i}");
        assert_eq!(
            decompressor.decompress(&payload, input.len()).unwrap(),
            *input,
            "input {i}"
        );
        assert_eq!(
            zstd::decompress(&payload, input.len()).unwrap(),
            *input,
            "input {i}"
        );
        for k in prefix_lengths(input.len()) {
            let prefix = zstd::decompress_prefix(&payload, input.len(), k).unwrap();
            assert_eq!(prefix, input[..k.min(input.len())], "input {i} prefix {k}");
        }
        // With the magic number put back, it is an ordinary zstd frame of unknown size.
        let framed = [&ZSTD_MAGIC[..], &payload].concat();
        assert!(
            matches!(::zstd::zstd_safe::get_frame_content_size(&framed), Ok(None)),
            "input {i}"
        );
        let decoded = ::zstd::bulk::Decompressor::new()
            .unwrap()
            .decompress(&framed, input.len())
            .unwrap();
        assert_eq!(decoded, *input, "input {i}");
    }
}

#[test]
fn zstd_levels_and_dictionary_benefit() {
    let sets = corpus();
    let set = &sets[0];
    let dict_bytes = set.dict(4096);
    let mut decompressor = ZstdDecompressor::new().unwrap();
    for level in [1, 3, 9, 19, -5] {
        let dict = ZstdDictionary::with_level(&dict_bytes, level).unwrap();
        assert_eq!(dict.level(), level);
        let mut compressor = ZstdCompressor::with_level(level).unwrap();
        let (mut plain, mut with_dict) = (0, 0);
        for row in set.tested().iter().take(50) {
            let p = compressor.compress(row).unwrap();
            let d = compressor.compress_with_dict(row, &dict).unwrap();
            assert_eq!(decompressor.decompress(&p, row.len()).unwrap(), *row);
            assert_eq!(
                decompressor
                    .decompress_with_dict(&d, row.len(), &dict)
                    .unwrap(),
                *row
            );
            plain += p.len();
            with_dict += d.len();
        }
        assert!(with_dict < plain, "level {level}: {with_dict} >= {plain}");
    }
    assert!(matches!(
        ZstdCompressor::with_level(1000),
        Err(zstd::Error::Level { level: 1000, .. })
    ));
    assert!(matches!(
        ZstdDictionary::with_level(b"x", 1000),
        Err(zstd::Error::Level { .. })
    ));
}

#[test]
fn zstd_trained_dictionary_works() {
    // A zstd-format dictionary (magic number, entropy tables), as zstd's trainer makes: its
    // header is parsed, and frames still carry no dictionary id.
    let sets = corpus();
    let set = &sets[2];
    let samples: Vec<&[u8]> = set.rows[ROWS..]
        .iter()
        .take(2000)
        .map(|r| r.as_slice())
        .collect();
    let mut buf = Vec::with_capacity(8192);
    let sizes: Vec<usize> = samples.iter().map(|s| s.len()).collect();
    let flat = samples.concat();
    let len = ::zstd::zstd_safe::train_from_buffer(&mut buf, &flat, &sizes).unwrap();
    assert_eq!(len, buf.len());
    let dict = ZstdDictionary::new(&buf).unwrap();
    let mut compressor = ZstdCompressor::new().unwrap();
    for row in set.tested() {
        let payload = compressor.compress_with_dict(row, &dict).unwrap();
        assert_bare_frame(&payload, "trained");
        assert_eq!(
            zstd::decompress_with_dict(&payload, row.len(), &dict).unwrap(),
            *row
        );
    }
}

#[test]
fn zstd_exact_errors() {
    use zstd::Error;
    let payload = zstd::compress(b"hello hello hello hello").unwrap();
    assert_eq!(zstd::decompress(&[], 0), Err(Error::EmptyPayload));
    assert_eq!(
        zstd::decompress(&payload, 1 << 30),
        Err(Error::RawLenTooLarge {
            raw_len: 1 << 30,
            max: zstd::MAX_RAW_LEN
        })
    );
    assert_eq!(
        zstd::decompress(&payload, 22),
        Err(Error::TooLong { expected: 22 })
    );
    // The decoder gives zstd OUTPUT_ROOM bytes beyond raw_len: a frame that ends inside that
    // room, at its end or past it is too long alike.
    let hundred: Vec<u8> = (0..100u8).map(|i| b"abcdefg"[usize::from(i % 7)]).collect();
    let long = zstd::compress(&hundred).unwrap();
    assert_eq!(zstd::decompress(&long, 100).unwrap(), hundred);
    let room = zstd::OUTPUT_ROOM;
    // Decoding into a buffer with room for the whole frame changes no verdict.
    let mut decompressor = ZstdDecompressor::new().unwrap();
    let mut roomy = vec![0xa5; 4096];
    for raw_len in [0, 1, 100 - room - 1, 100 - room, 100 - room + 1, 99] {
        assert_eq!(
            zstd::decompress(&long, raw_len),
            Err(Error::TooLong { expected: raw_len }),
            "raw_len {raw_len}"
        );
        assert_eq!(
            decompressor.decompress_into(&long, raw_len, &mut roomy),
            Err(Error::TooLong { expected: raw_len }),
            "raw_len {raw_len}, into 4096 bytes of capacity"
        );
        assert!(roomy.capacity() >= 4096);
    }
    decompressor
        .decompress_into(&long, 100, &mut roomy)
        .unwrap();
    assert_eq!(roomy, hundred);
    let mut empty = Vec::new();
    decompressor
        .decompress_into(&long, 100, &mut empty)
        .unwrap();
    assert_eq!(empty, hundred);
    assert!(empty.capacity() >= 100 + room);
    assert_eq!(
        zstd::decompress(&payload, 24),
        Err(Error::LengthMismatch {
            expected: 24,
            produced: 23
        })
    );
    // The prefix of a datum of up to PREFIX_WHOLE_MAX bytes is cut from a whole decode, and
    // fails as that does; a longer datum's prefix is streamed, and stops short.
    assert_eq!(
        zstd::decompress_prefix(&payload, 40, 30),
        Err(Error::LengthMismatch {
            expected: 40,
            produced: 23
        })
    );
    assert_eq!(
        zstd::decompress_prefix(&payload, 40, 20),
        Err(Error::LengthMismatch {
            expected: 40,
            produced: 23
        })
    );
    let streamed = zstd::PREFIX_WHOLE_MAX + 1;
    assert_eq!(
        zstd::decompress_prefix(&payload, streamed, 30),
        Err(Error::PrefixShort {
            wanted: 30,
            produced: 23,
            raw_len: streamed
        })
    );
    assert_eq!(
        zstd::decompress_prefix(&payload, streamed, 20).unwrap(),
        b"hello hello hello he"
    );
    // With the magic number, the frame is not magicless: its first byte is a bad header.
    // A whole decode refuses it before zstd reads it, as a frame its headers cannot walk.
    let framed = [&ZSTD_MAGIC[..], &payload].concat();
    assert_eq!(
        zstd::decompress(&framed, 23),
        Err(Error::MalformedFrame {
            payload_len: framed.len()
        })
    );
    // Bytes after the frame are refused before zstd reads them as a second frame.
    let trailing = [&payload[..], &[0xFF, 0xFF]].concat();
    assert_eq!(
        zstd::decompress(&trailing, 23),
        Err(Error::TrailingBytes {
            frame_len: payload.len(),
            payload_len: payload.len() + 2
        })
    );
    // A dictionary starting with zstd's dictionary magic number but no valid header.
    let bad_dict = [&[0x37, 0xA4, 0x30, 0xEC][..], &[0u8; 100]].concat();
    assert_eq!(
        ZstdDictionary::new(&bad_dict).unwrap_err(),
        Error::Dictionary { len: 104 }
    );
    // A hand-made frame: no content size, window 2^27 (descriptor 0x88), one raw last block
    // holding "a". One-shot decoding needs no window (a short datum's prefix is decoded so);
    // streaming, for a datum claiming PREFIX_WHOLE_MAX + 1 bytes, refuses to set up a 128 MiB
    // window for it (2^19 at most).
    let big_window = [0x00, 0x88, 0x09, 0x00, 0x00, b'a'];
    assert_eq!(zstd::decompress(&big_window, 1), Ok(b"a".to_vec()));
    assert_eq!(
        zstd::decompress_prefix(&big_window, 1, 1),
        Ok(b"a".to_vec())
    );
    assert_eq!(
        zstd::decompress_prefix(&big_window, streamed, 1),
        Err(Error::Corrupt {
            code: 16,
            name: "Frame requires too much memory for decoding",
            payload_len: 6
        })
    );
    let small_window = [0x00, 0x00, 0x09, 0x00, 0x00, b'a'];
    assert_eq!(
        zstd::decompress_prefix(&small_window, streamed, 1),
        Ok(b"a".to_vec())
    );
    let err = zstd::decompress(&payload, 24).unwrap_err();
    assert_eq!(
        err.to_string(),
        "zstd: payload decodes to 23 bytes, expected 24"
    );
}

/// The frame walker that finds where a payload's frame ends, on header shapes pgdict never
/// writes but a hostile payload may: a single-segment frame's 1-byte content size, a 4-byte
/// dictionary id, a checksum. Each frame ends where the walker says: one byte more is
/// trailing, and a frame's own bytes are not.
#[test]
fn zstd_frames_of_every_header_shape_end_where_they_end() {
    use zstd::Error;
    // A raw last block holding "hello": block header (5 << 3) | 1, little-endian.
    let hello_block = [41, 0, 0, b'h', b'e', b'l', b'l', b'o'];
    let frames = [
        // Single segment, content size in 1 byte (5), no window byte.
        ("single segment", vec![0x20, 5]),
        // A window byte, then a 4-byte dictionary id of 0 (no dictionary).
        ("4-byte dictionary id", vec![0x03, 0x00, 0, 0, 0, 0]),
    ];
    for (shape, header) in frames {
        let frame = [&header[..], &hello_block].concat();
        assert_eq!(
            zstd::decompress(&frame, 5),
            Ok(b"hello".to_vec()),
            "{shape}"
        );
        let trailing = [&frame[..], &[0]].concat();
        assert_eq!(
            zstd::decompress(&trailing, 5),
            Err(Error::TrailingBytes {
                frame_len: frame.len(),
                payload_len: frame.len() + 1
            }),
            "{shape}"
        );
    }
    // A checksum flag (bit 2): the 4 bytes after the last block are the frame's. These are
    // not "hello"'s checksum, which zstd may report; they are not trailing bytes.
    let checked = [&[0x24, 5][..], &hello_block, &[0, 0, 0, 0]].concat();
    let decoded = zstd::decompress(&checked, 5);
    assert!(
        !matches!(decoded, Err(Error::TrailingBytes { .. })),
        "{decoded:?}"
    );
    let trailing = [&checked[..], &[0]].concat();
    assert_eq!(
        zstd::decompress(&trailing, 5),
        Err(Error::TrailingBytes {
            frame_len: checked.len(),
            payload_len: checked.len() + 1
        })
    );
}

/// A raw length the frame's blocks cannot produce is refused before any output is allocated:
/// 37 KB of payload claiming 1 GiB - 1 made the decoder into a buffer zero 1 GiB first.
#[test]
fn zstd_claims_beyond_the_frame_are_refused_before_allocating() {
    use zstd::Error;
    let text: Vec<u8> = (0..110_000u32)
        .map(|i| b"acgt"[(i.wrapping_mul(2_654_435_761) >> 30) as usize])
        .collect();
    let dict = ZstdDictionary::new(&text[..4096]).unwrap();
    let payload = ZstdCompressor::new()
        .unwrap()
        .compress_with_dict(&text, &dict)
        .unwrap();
    let mut decompressor = ZstdDecompressor::new().unwrap();
    let mut out = Vec::new();
    decompressor
        .decompress_with_dict_into(&payload, text.len(), &dict, &mut out)
        .unwrap();
    assert_eq!(out, text);
    // One compressed block (110,000 bytes fit in zstd's 128 KiB), and the claim over it.
    let claim = zstd::MAX_RAW_LEN;
    let mut out = Vec::new();
    let err = decompressor
        .decompress_with_dict_into(&payload, claim, &dict, &mut out)
        .unwrap_err();
    assert_eq!(
        err,
        Error::RawLenOverFrame {
            raw_len: claim,
            payload_len: payload.len(),
            max_content: 128 * 1024,
        }
    );
    assert!(
        out.capacity() < 1 << 20,
        "{} bytes allocated",
        out.capacity()
    );
    assert_eq!(zstd::decompress_with_dict(&payload, claim, &dict), Err(err));
    // A frame its headers cannot walk bounds nothing: refused before allocating too (24 KB of
    // payload whose block header has the reserved type, or a block cut off, made the decoder
    // reserve the 1 GiB claimed, and the decoder into a buffer zero it).
    let block_len = (payload.len() - 6) as u32;
    let reserved_type = [
        &[0x00, 0x00][..],
        &(3 << 1 | 1 | block_len << 3).to_le_bytes()[..3],
    ]
    .concat();
    for malformed in [
        [&reserved_type[..], &payload[5..]].concat(),
        payload[..payload.len() - 1].to_vec(),
    ] {
        let (err, largest) = largest_allocation_of(|| {
            decompressor.decompress_with_dict_into(&malformed, claim, &dict, &mut out)
        });
        let expected = Error::MalformedFrame {
            payload_len: malformed.len(),
        };
        assert_eq!(err, Err(expected.clone()));
        assert!(largest < 1 << 20, "{largest} bytes allocated");
        let (err, largest) =
            largest_allocation_of(|| zstd::decompress_with_dict(&malformed, claim, &dict));
        assert_eq!(err, Err(expected));
        assert!(largest < 1 << 20, "{largest} bytes allocated");
    }
    // A prefix decode's output grows with what the frame gives, not with the claim.
    let (prefix, largest) = largest_allocation_of(|| {
        zstd::decompress_prefix_with_dict(&payload, claim, claim - 1, &dict)
    });
    assert!(
        matches!(
            prefix,
            Err(Error::PrefixShort {
                produced: 110_000,
                ..
            })
        ),
        "{prefix:?}"
    );
    assert!(largest < 1 << 20, "{largest} bytes allocated");
    let (prefix, largest) = largest_allocation_of(|| {
        zstd::decompress_prefix_with_dict(&payload, claim, 100_000, &dict)
    });
    assert_eq!(prefix.unwrap(), text[..100_000]);
    assert!(largest < 1 << 20, "{largest} bytes allocated");
    // Up to the blocks' most, the claim is zstd's to judge (the frame is short of it).
    assert!(matches!(
        zstd::decompress_with_dict(&payload, 128 * 1024, &dict),
        Err(Error::LengthMismatch {
            produced: 110_000,
            expected: 131_072
        })
    ));
}

#[test]
fn zstd_corrupt_and_mismatched_input_never_panics() {
    let sets = corpus();
    let mut compressor = ZstdCompressor::new().unwrap();
    let mut decompressor = ZstdDecompressor::new().unwrap();
    for set in sets.iter().take(4) {
        let dict = ZstdDictionary::new(&set.dict(4096)).unwrap();
        let other = ZstdDictionary::new(&sets[sets.len() - 1].dict(4096)).unwrap();
        for row in set.tested().iter().take(8) {
            let n = row.len();
            for payload in [
                compressor.compress(row).unwrap(),
                compressor.compress_with_dict(row, &dict).unwrap(),
            ] {
                for d in [&other, &dict] {
                    if let Ok(v) = decompressor.decompress_with_dict(&payload, n, d) {
                        assert_eq!(v.len(), n);
                    }
                }
                if let Ok(v) = decompressor.decompress(&payload, n) {
                    assert_eq!(v.len(), n);
                }
                assert!(decompressor
                    .decompress_with_dict(&payload, n + 1, &dict)
                    .is_err());
                assert!(decompressor
                    .decompress_with_dict(&payload, n - 1, &dict)
                    .is_err());
                mangle(
                    &payload,
                    |p| {
                        decompressor
                            .decompress_with_dict(p, n, &dict)
                            .ok()
                            .map(|v| v.len())
                    },
                    n,
                );
                mangle(
                    &payload,
                    |p| zstd::decompress(p, n).ok().map(|v| v.len()),
                    n,
                );
                // Decoding into a reused buffer (holding other bytes, longer than the row and
                // its room) gives the same result, or the same error, as a fresh one.
                let mut reused = Vec::new();
                mangle(
                    &payload,
                    |p| {
                        reused.clear();
                        reused.resize(3 * n + zstd::OUTPUT_ROOM, 0xa5);
                        let into = decompressor
                            .decompress_with_dict_into(p, n, &dict, &mut reused)
                            .map(|()| reused.clone());
                        assert_eq!(into, zstd::decompress_with_dict(p, n, &dict));
                        if into.is_err() {
                            assert!(reused.is_empty());
                        }
                        reused.resize(3 * n + zstd::OUTPUT_ROOM, 0xa5);
                        let plain_into = decompressor
                            .decompress_into(p, n, &mut reused)
                            .map(|()| reused.clone());
                        assert_eq!(plain_into, zstd::decompress(p, n));
                        into.ok().map(|v| v.len())
                    },
                    n,
                );
                mangle(
                    &payload,
                    |p| {
                        zstd::decompress_prefix_with_dict(p, n, n / 2, &dict)
                            .ok()
                            .map(|v| v.len())
                    },
                    n / 2,
                );
                mangle(
                    &payload,
                    |p| {
                        zstd::decompress_prefix_with_dict(p, n, n, &other)
                            .ok()
                            .map(|v| v.len())
                    },
                    n,
                );
            }
        }
        // The contexts still work after all that.
        let row = &set.tested()[0];
        let payload = compressor.compress_with_dict(row, &dict).unwrap();
        assert_eq!(
            decompressor
                .decompress_with_dict(&payload, row.len(), &dict)
                .unwrap(),
            *row
        );
    }
}

#[test]
fn zstd_dictionary_is_shared_between_threads() {
    let sets = corpus();
    let set = &sets[1];
    let dict = ZstdDictionary::new(&set.dict(65536)).unwrap();
    let expected: Vec<Vec<u8>> = {
        let mut c = ZstdCompressor::new().unwrap();
        set.tested()
            .iter()
            .map(|r| c.compress_with_dict(r, &dict).unwrap())
            .collect()
    };
    std::thread::scope(|s| {
        for t in 0..4 {
            let (dict, expected) = (&dict, &expected);
            s.spawn(move || {
                let mut c = ZstdCompressor::new().unwrap();
                let mut d = ZstdDecompressor::new().unwrap();
                for (i, row) in set.tested().iter().enumerate().skip(t) {
                    assert_eq!(c.compress_with_dict(row, dict).unwrap(), expected[i]);
                    assert_eq!(
                        d.decompress_with_dict(&expected[i], row.len(), dict)
                            .unwrap(),
                        *row
                    );
                }
            });
        }
    });
}

#[test]
fn large_inputs_with_a_full_window_dictionary() {
    // Over lz4's 4 KiB dictCtx/copy switch and zstd's single-block size, with a 64 KiB
    // dictionary: full and prefix decoding (zstd's streaming window limit must admit them).
    let sets = corpus();
    let set = &sets[5];
    let dict_bytes = set.dict(65536);
    let text: Vec<u8> = set.tested().concat();
    let mut inputs = vec![noise(70_000, 3), text.clone()];
    while inputs.last().unwrap().len() < (1 << 20) {
        let doubled = inputs.last().unwrap().repeat(2);
        inputs.push(doubled);
    }
    let lz4_dict = Lz4Dictionary::new(&dict_bytes);
    let mut lz4c = Lz4Compressor::new();
    for input in &inputs {
        let n = input.len();
        let payload = lz4c.compress_with_dict(input, &lz4_dict).unwrap();
        assert_eq!(lz4_dict.decompress(&payload, n).unwrap(), *input, "lz4 {n}");
        for k in [1, 4096, n / 2, n] {
            assert_eq!(
                lz4_dict.decompress_prefix(&payload, n, k).unwrap(),
                input[..k],
                "lz4 {n} prefix {k}"
            );
        }
    }
    for level in [1, 3, 19] {
        let dict = ZstdDictionary::with_level(&dict_bytes, level).unwrap();
        let mut c = ZstdCompressor::with_level(level).unwrap();
        let mut d = ZstdDecompressor::new().unwrap();
        for input in &inputs {
            let n = input.len();
            for (payload, dict) in [
                (c.compress_with_dict(input, &dict).unwrap(), Some(&dict)),
                (c.compress(input).unwrap(), None),
            ] {
                let ctx = format!("zstd level {level} len {n} dict {}", dict.is_some());
                assert_bare_frame(&payload, &ctx);
                let back = match dict {
                    Some(dict) => d.decompress_with_dict(&payload, n, dict),
                    None => d.decompress(&payload, n),
                };
                assert_eq!(back.unwrap(), *input, "{ctx}");
                for k in [1, 4096, n / 2, n] {
                    let prefix = match dict {
                        Some(dict) => d.decompress_prefix_with_dict(&payload, n, k, dict),
                        None => d.decompress_prefix(&payload, n, k),
                    };
                    assert_eq!(prefix.unwrap(), input[..k], "{ctx} prefix {k}");
                }
            }
        }
    }
}

/// A decompressor's prefix decodes do not depend on what it decoded before: with and without
/// a dictionary, short and streamed datums in turn, each as on a fresh decompressor.
#[test]
fn zstd_prefix_decodes_do_not_depend_on_earlier_ones() {
    let set = &corpus()[0];
    let dict = ZstdDictionary::new(&set.dict(4096)).unwrap();
    let mut compressor = ZstdCompressor::new().unwrap();
    let mut decompressor = ZstdDecompressor::new().unwrap();
    let mut failed_without = 0;
    for row in set.tested().iter().take(50) {
        let n = row.len();
        let payload = compressor.compress_with_dict(row, &dict).unwrap();
        for raw_len in [n, zstd::PREFIX_WHOLE_MAX + n] {
            let with = decompressor.decompress_prefix_with_dict(&payload, raw_len, n, &dict);
            let fresh = zstd::decompress_prefix_with_dict(&payload, raw_len, n, &dict);
            assert_eq!(with, fresh);
            if raw_len == n {
                assert_eq!(with.as_deref(), Ok(&row[..]));
            }
            let without = decompressor.decompress_prefix(&payload, raw_len, n);
            assert_eq!(without, zstd::decompress_prefix(&payload, raw_len, n));
            failed_without += usize::from(without.is_err());
        }
    }
    // Most rows use the dictionary: without it they cannot decode.
    assert!(failed_without >= 80, "{failed_without} of 100");
}
