//! PostgreSQL 15's own C pglz, behind a safe wrapper: the oracle for pgdict's differential
//! tests and the C side of its benchmarks.
//!
//! This crate is test-only. The root package `pgdict` lists it as a dev-dependency, so tests
//! and benches link it and the library never does. It links `pg_lzcompress.o` from
//! PostgreSQL 15's `libpgcommon.a` (Debian package `postgresql-server-dev-15`; see `build.rs`
//! for how the archive is found and why the plain, non-`_shlib` archive links) and wraps:
//!
//! | C (`src/common/pg_lzcompress.c`)   | here                                        |
//! |------------------------------------|---------------------------------------------|
//! | `pglz_compress`                    | [`compress`], [`compress_into`]             |
//! | `pglz_decompress`                  | [`decompress`], [`decompress_into`], [`decompress_padded_into`] |
//! | `pglz_maximum_compressed_size`     | [`maximum_compressed_size`]                 |
//! | `PGLZ_strategy_default` / `_always`| [`strategy_default`], [`strategy_always`]   |
//!
//! and, from the system's `libpq.so`, libpq's connection-string parser ([`libpq`]).
//!
//! What the wrapper takes care of, so that callers (fuzzers included) cannot misuse the C:
//!
//! - **Compression is serialised.** `pglz_compress` keeps its history in file-static arrays
//!   (`hist_start`, `hist_entries`), so two concurrent calls corrupt each other's output, and
//!   `cargo test` runs tests on many threads. Every call to it goes through one global
//!   [`Mutex`]. Compression timings therefore include an uncontended lock (tens of
//!   nanoseconds), which benchmarks should keep in mind for tiny inputs.
//! - **The compress destination is big enough.** PostgreSQL's contract is
//!   `PGLZ_MAX_OUTPUT(slen) = slen + 4` bytes ([`max_output`]); the wrapper always provides it.
//! - **Decompression reads only padded input.** On corrupt input `pglz_decompress` can read up
//!   to 2 bytes past the end of the source: it reads a tag's two (or three) bytes before it
//!   checks `sp > srcend`. Every payload is copied into a buffer followed by
//!   [`DECOMPRESS_PADDING`] zero bytes before C sees it (the real length is what C is told),
//!   so feeding it arbitrary bytes is memory-safe. It never writes past `rawsize` bytes of
//!   the destination, and it has no static state, so it needs no lock.
//! - **Lengths fit `int32`.** A length over `i32::MAX` panics with a message saying so: this
//!   is a test crate, and PostgreSQL never sees such a datum (its limit is 1 GB).
//!
//! ```
//! let rows = b"{\"id\": 1, \"name\": \"alpha\"}{\"id\": 2, \"name\": \"alpha\"}".repeat(4);
//! let packed = pgdict_pgref::compress(&rows, &pgdict_pgref::strategy_default()).unwrap();
//! let unpacked = pgdict_pgref::decompress(&packed, rows.len(), true).unwrap();
//! assert_eq!(unpacked, rows);
//! ```

pub mod libpq;

use std::cell::RefCell;
use std::os::raw::c_char;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// `pg_config --version` of the PostgreSQL whose `libpgcommon.a` was linked, e.g.
/// `"PostgreSQL 15.20 (Debian 15.20-0+deb12u1)"`, for benchmark and test reports.
pub const PG_VERSION: &str = env!("PGDICT_PGREF_PG_VERSION");

/// Bytes of slack PostgreSQL requires after `slen` in the compress destination:
/// `PGLZ_MAX_OUTPUT(_dlen) = _dlen + 4`. The compressor checks its output size only between
/// items, and one item (a control byte plus a 3-byte tag) can be 4 bytes.
pub const PGLZ_MAX_OUTPUT_SLACK: usize = 4;

/// Zero bytes placed after every payload handed to C's `pglz_decompress`, which reads up to
/// 2 bytes past the end of a corrupt one (the third byte of a 3-byte tag starting at the last
/// byte). 4 leaves a margin.
pub const DECOMPRESS_PADDING: usize = 4;

/// PostgreSQL's `PGLZ_Strategy` (`src/include/common/pg_lzcompress.h`): six `int32`, in this
/// order, with PostgreSQL's names.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PglzStrategy {
    /// Inputs shorter than this are not compressed (default 32).
    pub min_input_size: i32,
    /// Inputs longer than this are not compressed (default `INT_MAX`).
    pub max_input_size: i32,
    /// Minimum saving in percent, clamped to 0..=99 (default 25); the output must also be
    /// smaller than the input whatever this says.
    pub min_comp_rate: i32,
    /// Give up if no match was found in the first this-many output bytes (default 1024).
    pub first_success_by: i32,
    /// A match this long ends the history walk at once; clamped to 17..=273 (default 128).
    pub match_size_good: i32,
    /// Percent by which `match_size_good` drops after each history entry checked, clamped
    /// to 0..=100 (default 10).
    pub match_size_drop: i32,
}

/// The raw C declarations, exactly as in `pg_lzcompress.h` (`int32` = `i32`, `bool` is C99
/// `_Bool` since PostgreSQL 12 = Rust `bool`).
mod ffi {
    use super::PglzStrategy;
    use std::os::raw::c_char;

    #[allow(non_upper_case_globals)]
    unsafe extern "C" {
        /// `extern const PGLZ_Strategy *const PGLZ_strategy_default;`
        pub static PGLZ_strategy_default: *const PglzStrategy;
        /// `extern const PGLZ_Strategy *const PGLZ_strategy_always;`
        pub static PGLZ_strategy_always: *const PglzStrategy;

        pub fn pglz_compress(
            source: *const c_char,
            slen: i32,
            dest: *mut c_char,
            strategy: *const PglzStrategy,
        ) -> i32;

        pub fn pglz_decompress(
            source: *const c_char,
            slen: i32,
            dest: *mut c_char,
            rawsize: i32,
            check_complete: bool,
        ) -> i32;

        pub fn pglz_maximum_compressed_size(rawsize: i32, total_compressed_size: i32) -> i32;
    }
}

/// Serialises `pglz_compress`, whose history arrays are file-static in C (see the crate docs).
static COMPRESS_LOCK: Mutex<()> = Mutex::new(());

thread_local! {
    /// Per-thread buffer that [`decompress_into`] pads payloads in, so it allocates only when
    /// a payload is larger than any before it on this thread.
    static PADDED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// PostgreSQL's `PGLZ_strategy_default`, read from the C static: the strategy TOAST uses.
pub fn strategy_default() -> PglzStrategy {
    // SAFETY: `PGLZ_strategy_default` is a `const` pointer initialised at compile time in C
    // (it is in `.data.rel.ro`, fixed up at load) to `strategy_default_data`, a `const`
    // struct of six `int32` that `PglzStrategy` mirrors with `#[repr(C)]`. Neither is ever
    // written, so reading them from any thread is sound.
    unsafe { *ffi::PGLZ_strategy_default }
}

/// PostgreSQL's `PGLZ_strategy_always`, read from the C static: compress inputs of any
/// length, falling back only when the output would not be smaller than the input.
pub fn strategy_always() -> PglzStrategy {
    // SAFETY: as in `strategy_default`: a never-written `const` pointer to a never-written
    // `const` struct with the layout of `PglzStrategy`.
    unsafe { *ffi::PGLZ_strategy_always }
}

/// `PGLZ_MAX_OUTPUT(len)`: the destination size `pglz_compress` needs for `len` input bytes.
pub fn max_output(len: usize) -> usize {
    len + PGLZ_MAX_OUTPUT_SLACK
}

/// Compresses `input` with PostgreSQL's C `pglz_compress`.
///
/// Returns `None` when C returns -1: the input is outside the strategy's size limits, no
/// match was found within `first_success_by` bytes, or the result would not save
/// `min_comp_rate` percent (or would not be smaller at all).
///
/// # Panics
///
/// If `input` is longer than `i32::MAX` bytes.
pub fn compress(input: &[u8], strategy: &PglzStrategy) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    compress_into(input, strategy, &mut out)?;
    Some(out)
}

/// [`compress`] into a reusable buffer, for benchmarks.
///
/// `out` is cleared and its capacity grown to [`max_output`]`(input.len())` if needed (never
/// zero-filled, so reusing one buffer costs no allocation and no memset). On `Some(n)`, `out`
/// holds exactly the `n` compressed bytes; on `None` it is empty.
///
/// # Panics
///
/// If `input` is longer than `i32::MAX` bytes.
pub fn compress_into(input: &[u8], strategy: &PglzStrategy, out: &mut Vec<u8>) -> Option<usize> {
    exclusive().compress_into(input, strategy, out)
}

/// Holds the lock that serialises C's `pglz_compress` for as long as it lives, so a batch of
/// calls pays for the lock once: what benchmarks use, so that C's timings carry no per-call
/// lock that pgdict's do not. Calling [`compress`] or [`compress_into`] on the same thread
/// while holding it deadlocks.
pub struct ExclusiveCompressor {
    _guard: MutexGuard<'static, ()>,
}

/// Takes the compress lock; see [`ExclusiveCompressor`].
pub fn exclusive() -> ExclusiveCompressor {
    // A poisoned lock only means another thread panicked while holding it; C's static arrays
    // are reinitialised by every call, so carry on.
    ExclusiveCompressor {
        _guard: COMPRESS_LOCK.lock().unwrap_or_else(PoisonError::into_inner),
    }
}

impl ExclusiveCompressor {
    /// [`compress_into`] under the lock this guard holds.
    pub fn compress_into(
        &mut self,
        input: &[u8],
        strategy: &PglzStrategy,
        out: &mut Vec<u8>,
    ) -> Option<usize> {
        let slen = to_i32(input.len(), "compress: input");
        let capacity = max_output(input.len());
        out.clear();
        out.reserve(capacity);

        // SAFETY: `input` is valid for reads of `slen` bytes (C reads nothing past
        // `source + slen`); `out` has capacity for `slen + 4` bytes, PostgreSQL's
        // `PGLZ_MAX_OUTPUT`, the most C writes for any strategy values (it clamps them and
        // stops once the output reaches `slen`, checking before each item of at most 4
        // bytes); `strategy` points to a live `#[repr(C)]` copy of `PGLZ_Strategy`, only
        // read. The global lock gives C's file-static `hist_start` / `hist_entries` to this
        // call alone (this guard holds it).
        let written = unsafe {
            ffi::pglz_compress(
                input.as_ptr().cast::<c_char>(),
                slen,
                out.as_mut_ptr().cast::<c_char>(),
                strategy,
            )
        };
        let written = usize::try_from(written).ok()?;
        assert!(
            written <= capacity,
            "pgdict-pgref: pglz_compress reported {written} bytes for a {capacity}-byte buffer"
        );
        // SAFETY: C initialised the first `written` bytes of `out`'s buffer, and `written` is
        // within its capacity (checked above).
        unsafe { out.set_len(written) };
        Some(written)
    }
}

/// Decompresses a pglz `payload` of a datum whose raw length is `raw_len`, with PostgreSQL's
/// C `pglz_decompress`.
///
/// With `check_complete`, C fails unless the payload is consumed exactly and produces exactly
/// `raw_len` bytes (what PostgreSQL does for a whole datum). Without it, C stops once it has
/// `raw_len` bytes or runs out of payload, and the result may be shorter than `raw_len` (what
/// PostgreSQL does for a prefix, as in `substr()` on a TOAST value).
///
/// Returns `None` when C returns -1 (corrupt payload, or incomplete with `check_complete`).
/// The payload is copied into a padded buffer first, so any bytes are safe to pass.
///
/// # Panics
///
/// If `payload.len()` or `raw_len` is over `i32::MAX`.
pub fn decompress(payload: &[u8], raw_len: usize, check_complete: bool) -> Option<Vec<u8>> {
    // Check before allocating `raw_len` bytes.
    to_i32(raw_len, "decompress: raw_len");
    let mut out = vec![0; raw_len];
    let written = decompress_into(payload, &mut out, check_complete)?;
    out.truncate(written);
    Some(out)
}

/// [`decompress`] into `out`, whose length is the raw length C is given (`rawsize`).
///
/// Returns the number of bytes written to the front of `out`; the rest is left as it was.
/// Pads the payload in a per-thread buffer (one `memcpy` per call, no allocation once the
/// buffer has grown); [`decompress_padded_into`] avoids even the copy.
///
/// # Panics
///
/// If `payload.len()` or `out.len()` is over `i32::MAX`.
pub fn decompress_into(payload: &[u8], out: &mut [u8], check_complete: bool) -> Option<usize> {
    PADDED.with(|padded| {
        let mut padded = padded.borrow_mut();
        padded.clear();
        padded.extend_from_slice(payload);
        padded.resize(payload.len() + DECOMPRESS_PADDING, 0);
        decompress_padded(&padded, payload.len(), out, check_complete)
    })
}

/// A pglz payload copied once into a buffer with [`DECOMPRESS_PADDING`] zero bytes after it,
/// so that benchmarks can decompress it repeatedly with [`decompress_padded_into`] and time C
/// alone, without a copy per call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaddedPayload {
    /// The payload followed by `DECOMPRESS_PADDING` zero bytes.
    buf: Box<[u8]>,
}

impl PaddedPayload {
    /// Copies `payload` and pads it.
    pub fn new(payload: &[u8]) -> Self {
        let mut buf = Vec::with_capacity(payload.len() + DECOMPRESS_PADDING);
        buf.extend_from_slice(payload);
        buf.resize(payload.len() + DECOMPRESS_PADDING, 0);
        PaddedPayload {
            buf: buf.into_boxed_slice(),
        }
    }

    /// The payload, without the padding.
    pub fn payload(&self) -> &[u8] {
        &self.buf[..self.len()]
    }

    /// Length of the payload, without the padding.
    pub fn len(&self) -> usize {
        self.buf.len() - DECOMPRESS_PADDING
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// [`decompress_into`] for a payload that is already padded: no copy, C alone.
///
/// # Panics
///
/// If the payload or `out` is longer than `i32::MAX` bytes.
pub fn decompress_padded_into(
    payload: &PaddedPayload,
    out: &mut [u8],
    check_complete: bool,
) -> Option<usize> {
    decompress_padded(&payload.buf, payload.len(), out, check_complete)
}

/// Calls C's `pglz_decompress` on `padded[..slen]`, whose padding C may read on corrupt
/// input.
fn decompress_padded(
    padded: &[u8],
    slen: usize,
    out: &mut [u8],
    check_complete: bool,
) -> Option<usize> {
    assert!(
        padded.len() >= slen + DECOMPRESS_PADDING,
        "pgdict-pgref: payload of {slen} bytes is not padded"
    );
    let slen_i32 = to_i32(slen, "decompress: payload");
    let rawsize = to_i32(out.len(), "decompress: raw length");
    // SAFETY: C reads `source` from `source` to at most `source + slen + 2` (a tag read
    // before its bounds check), all inside `padded`, which has at least
    // `slen + DECOMPRESS_PADDING` (4) bytes (asserted above). It writes only inside
    // `dest .. dest + rawsize` = `out` (every literal and match is bounded by `destend`),
    // and copies matches only from bytes it already wrote (`off > dp - dest` is rejected),
    // never from before `dest`. It keeps no state between calls, so it needs no lock.
    let written = unsafe {
        ffi::pglz_decompress(
            padded.as_ptr().cast::<c_char>(),
            slen_i32,
            out.as_mut_ptr().cast::<c_char>(),
            rawsize,
            check_complete,
        )
    };
    let written = usize::try_from(written).ok()?;
    assert!(
        written <= out.len(),
        "pgdict-pgref: pglz_decompress reported {written} bytes for a {}-byte buffer",
        out.len()
    );
    Some(written)
}

/// PostgreSQL's `pglz_maximum_compressed_size`: how many payload bytes can be needed to
/// decode the first `raw_len` bytes of a datum, capped at `total_compressed_size`. PostgreSQL
/// 15.20 computes `(raw_len * 9 + 7) / 8 + 2` in 64-bit arithmetic: at worst every byte is a
/// literal costing 9 bits (a control bit), plus a tag that may straddle the end.
pub fn maximum_compressed_size(raw_len: i32, total_compressed_size: i32) -> i32 {
    // SAFETY: pure arithmetic on its two arguments (in `int64`), defined for every `int32`;
    // touches no memory.
    unsafe { ffi::pglz_maximum_compressed_size(raw_len, total_compressed_size) }
}

/// Converts a length to C's `int32`, panicking with `what` when it does not fit.
fn to_i32(len: usize, what: &str) -> i32 {
    i32::try_from(len).unwrap_or_else(|_| {
        panic!(
            "pgdict-pgref: {what} is {len} bytes, over PostgreSQL's int32 limit ({})",
            i32::MAX
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows shaped like the corpus: small JSON objects sharing keys, some values repeating.
    fn json_rows(n: usize) -> Vec<u8> {
        let mut rows = Vec::new();
        for i in 0..n {
            rows.extend_from_slice(
                format!(
                    "{{\"id\": {i}, \"status\": \"{}\", \"path\": \"/api/v1/items/{}\", \"ms\": {}}}\n",
                    ["ok", "error", "timeout"][i % 3],
                    i * 7919 % 1000,
                    i * 31 % 97
                )
                .as_bytes(),
            );
        }
        rows
    }

    /// Incompressible bytes from a fixed xorshift generator.
    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn strategies_are_postgresql_15s() {
        // Values from src/common/pg_lzcompress.c.
        assert_eq!(
            strategy_default(),
            PglzStrategy {
                min_input_size: 32,
                max_input_size: i32::MAX,
                min_comp_rate: 25,
                first_success_by: 1024,
                match_size_good: 128,
                match_size_drop: 10,
            }
        );
        assert_eq!(
            strategy_always(),
            PglzStrategy {
                min_input_size: 0,
                max_input_size: i32::MAX,
                min_comp_rate: 0,
                first_success_by: i32::MAX,
                match_size_good: 128,
                match_size_drop: 6,
            }
        );
        // "unknown (...)" when the archive's directory was given directly.
        assert!(
            PG_VERSION.starts_with("PostgreSQL 15.") || PG_VERSION.starts_with("unknown"),
            "{PG_VERSION}"
        );
    }

    #[test]
    fn round_trips_json_rows() {
        let rows = json_rows(40);
        for strategy in [strategy_default(), strategy_always()] {
            let packed = compress(&rows, &strategy).expect("repetitive rows compress");
            assert!(
                packed.len() * 2 < rows.len(),
                "{} of {}",
                packed.len(),
                rows.len()
            );
            assert_eq!(decompress(&packed, rows.len(), true).unwrap(), rows);
        }
    }

    #[test]
    fn default_refuses_31_bytes_and_takes_32() {
        let default = strategy_default();
        assert_eq!(compress(&[b'a'; 31], &default), None);
        let packed = compress(&[b'a'; 32], &default).unwrap();
        // Control byte, literal 'a', then a 2-byte tag: 31 bytes at offset 1.
        assert_eq!(packed, [0b10, b'a', 0x0f, 0x01, 13]);
    }

    #[test]
    fn always_compresses_short_runs_and_refuses_growth() {
        let always = strategy_always();
        let run = [b'a'; 100];
        let packed = compress(&run, &always).unwrap();
        assert!(packed.len() < 10, "{packed:?}");
        assert_eq!(decompress(&packed, run.len(), true).unwrap(), run);
        // Nothing to gain: both strategies refuse rather than grow the datum.
        assert_eq!(compress(&noise(200), &always), None);
        assert_eq!(compress(&noise(2000), &strategy_default()), None);
        assert_eq!(compress(b"", &always), None);
    }

    #[test]
    fn compress_into_reuses_its_buffer() {
        let rows = json_rows(20);
        let mut out = Vec::new();
        let n = compress_into(&rows, &strategy_default(), &mut out).unwrap();
        assert_eq!(out.len(), n);
        assert_eq!(Some(out.clone()), compress(&rows, &strategy_default()));
        let capacity = out.capacity();
        assert!(capacity >= max_output(rows.len()));
        // A refusal leaves the buffer empty, and the next call does not reallocate.
        assert_eq!(
            compress_into(&noise(64), &strategy_default(), &mut out),
            None
        );
        assert!(out.is_empty());
        compress_into(&rows[..rows.len() / 2], &strategy_default(), &mut out).unwrap();
        assert_eq!(out.capacity(), capacity);
    }

    #[test]
    fn concurrent_compression_matches_serial() {
        // Without the lock, C's shared history arrays would make these differ.
        let inputs: Vec<Vec<u8>> = (1..=8).map(|i| json_rows(40 * i)).collect();
        let serial: Vec<_> = inputs
            .iter()
            .map(|input| compress(input, &strategy_always()))
            .collect();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..50 {
                        for (input, expected) in inputs.iter().zip(&serial) {
                            assert_eq!(&compress(input, &strategy_always()), expected);
                        }
                    }
                });
            }
        });
    }

    #[test]
    fn decompresses_a_prefix_without_check_complete() {
        let rows = json_rows(30);
        let packed = compress(&rows, &strategy_default()).unwrap();
        let prefix = decompress(&packed, 100, false).unwrap();
        assert_eq!(prefix, &rows[..100]);
        // The same request with check_complete fails: payload is left over.
        assert_eq!(decompress(&packed, 100, true), None);
        // A truncated payload yields fewer bytes than asked for, without check_complete
        // (or -1 where the cut splits a tag).
        let mut partials = 0;
        for cut in 0..packed.len() {
            if let Some(partial) = decompress(&packed[..cut], rows.len(), false) {
                assert!(partial.len() < rows.len(), "cut {cut}");
                assert_eq!(partial, &rows[..partial.len()], "cut {cut}");
                partials += 1;
            }
        }
        assert!(
            partials > packed.len() / 2,
            "{partials} of {}",
            packed.len()
        );
        // PostgreSQL's bound on payload bytes needed for the prefix is enough.
        let need = maximum_compressed_size(100, packed.len() as i32) as usize;
        assert_eq!(
            decompress(&packed[..need], 100, false).unwrap(),
            &rows[..100]
        );
    }

    #[test]
    fn rejects_corrupt_payloads() {
        let cases: &[(&str, &[u8], usize)] = &[
            // Control byte announces a tag, payload ends after its first byte: C reads 2
            // bytes past the end (into our padding) and then rejects it.
            ("truncated tag", &[0x01, 0x0f], 10),
            // 3-byte tag (length nibble 0xf) cut after two bytes.
            ("truncated long tag", &[0x02, b'a', 0x0f, 0x01], 300),
            // Offset 0 would copy forever from the byte being written.
            ("offset zero", &[0x02, b'a', 0x00, 0x00], 4),
            // Offset 2 with only one byte written reaches before the output.
            ("offset before output", &[0x02, b'a', 0x00, 0x02], 4),
            // Payload has bytes left when the output is full.
            ("trailing payload", &[0x00, b'a', b'b'], 1),
            // Output not filled.
            ("short output", &[0x00, b'a'], 2),
        ];
        for &(what, payload, raw_len) in cases {
            assert_eq!(decompress(payload, raw_len, true), None, "{what}");
        }
    }

    #[test]
    fn padded_payload_decodes_like_the_copying_form() {
        let rows = json_rows(25);
        let packed = compress(&rows, &strategy_default()).unwrap();
        let padded = PaddedPayload::new(&packed);
        assert_eq!(padded.payload(), &packed[..]);
        assert_eq!(padded.len(), packed.len());
        let mut out = vec![0xff; rows.len()];
        assert_eq!(
            decompress_padded_into(&padded, &mut out, true),
            Some(rows.len())
        );
        assert_eq!(out, rows);
        assert_eq!(decompress_into(b"", &mut [], true), Some(0));
    }

    #[test]
    fn maximum_compressed_size_is_postgresql_15_20s() {
        // (K * 9 + 7) / 8 + 2, capped at the payload size.
        assert_eq!(maximum_compressed_size(100, 1000), (100 * 9 + 7) / 8 + 2);
        assert_eq!(maximum_compressed_size(100, 1000), 115);
        assert_eq!(maximum_compressed_size(100, 50), 50);
        assert_eq!(maximum_compressed_size(0, 1000), 2);
        // 64-bit arithmetic in C: no overflow near the int32 limit.
        assert_eq!(maximum_compressed_size(i32::MAX, i32::MAX), i32::MAX);
    }

    #[test]
    #[should_panic(expected = "over PostgreSQL's int32 limit")]
    fn rejects_raw_len_over_i32_max() {
        let _ = decompress(b"", i32::MAX as usize + 1, true);
    }
}
