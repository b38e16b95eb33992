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
//! libzstd write into it uninitialised). Here every block Rust allocates during a decode is
//! filled with 0xFF (then, decoding again, with 0x00) by this target's global allocator
//! ([`Filling`]), and the two decodes must give the same result: a byte the decoder did not
//! write would differ. This holds under AddressSanitizer too (which quarantines freed memory
//! and fills new blocks with its own byte: poisoning the heap by freeing a filled block first,
//! as this target did before, proved nothing there). zstd's whole decode into the caller's
//! buffer is checked as pglz's: into a buffer filled with 0xFF, then with 0x00.

#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU16, Ordering};

use libfuzzer_sys::fuzz_target;
use pgdict::lz4;
use pgdict::pglz;
use pgdict::zstd::{self, ZstdDecompressor, ZstdDictionary};
use pgdict_fuzz::{fixed_dictionaries, Choice, MAX_LZ4_DICT_LEN};

/// Output sizes fuzzed: below 96 KiB (a zstd datum's prefix up to 128 KiB is cut from a whole
/// decode; beyond it, streamed).
const MAX_OUT: usize = 96 * 1024;

thread_local! {
    static ZSTD: RefCell<ZstdDecompressor> =
        RefCell::new(ZstdDecompressor::new().expect("a zstd decompression context"));
}

/// The system allocator, filling each new block (and the new part of a grown one) with the
/// byte [`FILL`] holds, if it holds one: what a decoder returns without writing shows.
struct Filling;

/// [`NO_FILL`], or the byte [`Filling`] fills new blocks with.
static FILL: AtomicU16 = AtomicU16::new(NO_FILL);
const NO_FILL: u16 = u16::MAX;

#[global_allocator]
static ALLOCATOR: Filling = Filling;

// SAFETY: every call is passed on to `System` with its arguments as given; the fill writes
// only within the block `System` returned (`size` bytes from its start, or from the old size
// to the new one after a realloc), and only when that block is not null.
unsafe impl GlobalAlloc for Filling {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let block = unsafe { System.alloc(layout) };
        let fill = FILL.load(Ordering::Relaxed);
        if !block.is_null() && fill != NO_FILL {
            unsafe { block.write_bytes(fill as u8, layout.size()) };
        }
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        unsafe { System.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let grown = unsafe { System.realloc(block, layout, new_size) };
        let fill = FILL.load(Ordering::Relaxed);
        if !grown.is_null() && fill != NO_FILL && new_size > layout.size() {
            unsafe {
                grown
                    .add(layout.size())
                    .write_bytes(fill as u8, new_size - layout.size())
            };
        }
        grown
    }
}

/// Runs `decode` with every block allocated meanwhile filled with `fill`.
fn filled<T>(fill: u8, decode: impl FnOnce() -> T) -> T {
    FILL.store(u16::from(fill), Ordering::Relaxed);
    let result = decode();
    FILL.store(NO_FILL, Ordering::Relaxed);
    result
}

fuzz_target!(|data: &[u8]| {
    let Choice { choice, input } = Choice::parse(data, MAX_LZ4_DICT_LEN, MAX_OUT);
    let (dict, raw_len, prefix_len, payload) =
        (input.dict, input.raw_len, input.prefix_len, input.payload);
    match choice % 3 {
        0 => pglz_leak(payload, raw_len, prefix_len, dict),
        1 => {
            let whole = |fill| filled(fill, || lz4::decompress_with_dict(payload, raw_len, dict));
            assert_eq!(whole(0xff), whole(0x00));
            let prefix = |fill| {
                filled(fill, || {
                    lz4::decompress_prefix_with_dict(payload, raw_len, prefix_len, dict)
                })
            };
            assert_eq!(prefix(0xff), prefix(0x00));
        }
        _ => {
            // A fixed dictionary (preparing an arbitrary one per run is slow), chosen by the
            // choice byte; zstd reaches any length of history.
            let fixed = fixed_dictionaries();
            let dict: &ZstdDictionary = fixed[usize::from(choice / 3) % fixed.len()]
                .zstd()
                .expect("prepared for every codec");
            // libzstd takes another path with a dictionary it has not just used (`ddictIsCold`),
            // so warm the context up first: both measured decodes then take the same path.
            let decode =
                || ZSTD.with(|z| z.borrow_mut().decompress_with_dict(payload, raw_len, dict));
            let _ = decode();
            assert_eq!(filled(0xff, decode), filled(0x00, decode));
            // The caller's buffer: raw_len and zstd's room beyond it.
            let out_len = raw_len + zstd::OUTPUT_ROOM;
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
            let prefix = || {
                ZSTD.with(|z| {
                    z.borrow_mut()
                        .decompress_prefix_with_dict(payload, raw_len, prefix_len, dict)
                })
            };
            let _ = prefix();
            assert_eq!(filled(0xff, prefix), filled(0x00, prefix));
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
