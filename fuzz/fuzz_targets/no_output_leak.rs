//! No output leak: a decoder must return only bytes it wrote, never what was in the buffer
//! before.
//!
//! pglz (choice 0), whose API takes the caller's buffer: decode the same payload into a buffer
//! pre-filled with 0xFF and into one filled with 0x00, with `decompress_prefix_into` and with
//! `decompress_into`; the results must be the same, and so must every byte returned (the
//! whole buffer after a whole decode, the first `n` after a prefix decode that reports `n`).
//! The `Vec` APIs must agree with them, with and without a dictionary.
//!
//! lz4 (choice 1) and zstd (choice 2) allocate their own output (lz4 zero-fills it, zstd lets
//! libzstd write into it uninitialised). Here the heap is poisoned instead: a block of the
//! output's size (for zstd's whole decode and short datums' prefixes, with its `OUTPUT_ROOM`)
//! filled with 0xFF (then 0x00) is freed just before each decode, so the allocator likely
//! hands the same memory to the decoder, and the two decodes must give the same result. This
//! works with the system allocator only: build this target with `-s none` (AddressSanitizer
//! quarantines freed memory and fills new blocks itself, so the check runs but proves less).
//! zstd's whole decode into the caller's buffer is checked as pglz's: into a buffer filled
//! with 0xFF, then with 0x00.

#![no_main]

use std::cell::RefCell;
use std::hint::black_box;

use libfuzzer_sys::fuzz_target;
use pgdict::lz4;
use pgdict::pglz;
use pgdict::zstd::{self, ZstdDecompressor, ZstdDictionary};
use pgdict_fuzz::{fixed_dictionaries, Choice, MAX_LZ4_DICT_LEN};

/// Output sizes fuzzed: below 96 KiB, under glibc's threshold (128 KiB) for giving each
/// block its own fresh (zeroed) mapping, so freed blocks are reused.
const MAX_OUT: usize = 96 * 1024;

thread_local! {
    static ZSTD: RefCell<ZstdDecompressor> =
        RefCell::new(ZstdDecompressor::new().expect("a zstd decompression context"));
}

/// Runs `decode` right after freeing a `len`-byte block filled with `fill`.
fn after_poison<T>(fill: u8, len: usize, decode: impl FnOnce() -> T) -> T {
    drop(black_box(vec![fill; len]));
    decode()
}

fuzz_target!(|data: &[u8]| {
    let Choice { choice, input } = Choice::parse(data, MAX_LZ4_DICT_LEN, MAX_OUT);
    let (dict, raw_len, prefix_len, payload) =
        (input.dict, input.raw_len, input.prefix_len, input.payload);
    match choice % 3 {
        0 => pglz_leak(payload, raw_len, prefix_len, dict),
        1 => {
            let whole = |fill| {
                after_poison(fill, raw_len, || {
                    lz4::decompress_with_dict(payload, raw_len, dict)
                })
            };
            assert_eq!(whole(0xff), whole(0x00));
            let wanted = prefix_len.min(raw_len);
            let prefix = |fill| {
                after_poison(fill, wanted, || {
                    lz4::decompress_prefix_with_dict(payload, raw_len, prefix_len, dict)
                })
            };
            assert_eq!(prefix(0xff), prefix(0x00));
        }
        _ => {
            // A fixed dictionary (preparing an arbitrary one per run is slow), chosen by the
            // choice byte; zstd reaches any length of history.
            let fixed = fixed_dictionaries();
            let dict: &ZstdDictionary = fixed[usize::from(choice / 3) % fixed.len()].zstd();
            // libzstd takes another path with a dictionary it has not just used (`ddictIsCold`),
            // so warm the context up first: both measured decodes then take the same path.
            let decode =
                || ZSTD.with(|z| z.borrow_mut().decompress_with_dict(payload, raw_len, dict));
            let _ = decode();
            // A whole decode allocates raw_len and zstd's room beyond it.
            let out_len = raw_len + zstd::OUTPUT_ROOM;
            assert_eq!(
                after_poison(0xff, out_len, decode),
                after_poison(0x00, out_len, decode)
            );
            // Into the caller's buffer: whatever it held before must not show through.
            let into = |fill: u8| {
                let mut out = vec![fill; out_len];
                ZSTD.with(|z| {
                    z.borrow_mut()
                        .decompress_with_dict_into(payload, raw_len, dict, &mut out)
                })
                .map(|()| out)
            };
            assert_eq!(into(0xff), into(0x00));
            let wanted = prefix_len.min(raw_len);
            let prefix = || {
                ZSTD.with(|z| {
                    z.borrow_mut()
                        .decompress_prefix_with_dict(payload, raw_len, prefix_len, dict)
                })
            };
            let _ = prefix();
            // A prefix of a datum up to PREFIX_WHOLE_MAX (all of them here) is cut from a
            // whole decode, which allocates what that does; a longer one, its length.
            let prefix_out_len = if raw_len <= zstd::PREFIX_WHOLE_MAX {
                out_len
            } else {
                wanted
            };
            assert_eq!(
                after_poison(0xff, prefix_out_len, prefix),
                after_poison(0x00, prefix_out_len, prefix)
            );
        }
    }
});

fn pglz_leak(payload: &[u8], raw_len: usize, prefix_len: usize, dict: &[u8]) {
    // Prefix decode into the caller's buffer (PostgreSQL's check_complete = false).
    let mut ones = vec![0xffu8; raw_len];
    let mut zeros = vec![0x00u8; raw_len];
    let a = pglz::decompress_prefix_into(payload, &mut ones);
    let b = pglz::decompress_prefix_into(payload, &mut zeros);
    assert_eq!(a, b);
    if let Ok(n) = a {
        assert!(n <= raw_len);
        assert_eq!(
            ones[..n],
            zeros[..n],
            "a byte the prefix decode did not write"
        );
        // The Vec API: the same bytes (it reads only the first maximum_compressed_size bytes,
        // which never changes the first n).
        let short = prefix_len.min(n);
        if let Ok(v) = pglz::decompress_prefix(payload, raw_len, prefix_len) {
            if prefix_len < raw_len {
                assert_eq!(v[..short.min(v.len())], ones[..short.min(v.len())]);
            }
        }
    }

    // Whole decode into the caller's buffer.
    ones.fill(0xff);
    zeros.fill(0x00);
    let a = pglz::decompress_into(payload, &mut ones);
    let b = pglz::decompress_into(payload, &mut zeros);
    assert_eq!(a, b);
    if a.is_ok() {
        assert_eq!(ones, zeros, "a byte the whole decode did not write");
        assert_eq!(pglz::decompress(payload, raw_len).as_ref(), Ok(&ones));
        // Any dictionary: a payload that never reaches before its output ignores it.
        assert_eq!(
            pglz::decompress_with_dict(payload, raw_len, dict).as_ref(),
            Ok(&ones)
        );
    }
}
