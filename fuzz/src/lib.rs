//! What pgdict's fuzz targets and their seed generator share: the input layouts, a fixed set
//! of dictionaries, and a small reference lz4 block decoder.
//!
//! # Input layouts
//!
//! Every target reads its input with an explicit little-endian layout rather than through
//! `arbitrary`: a crash artifact then reads directly as "raw_len 17, dictionary these bytes,
//! payload those", the seed generator writes valid inputs with the same code
//! ([`WithDict::to_bytes`], ...), and a regression test can state the same values by hand.
//! A field cut off by the end of the input reads as zeros; lengths are reduced modulo their
//! bound so that every input means something.
//!
//! | layout       | fields, in order                                                            |
//! |--------------|-----------------------------------------------------------------------------|
//! | [`Plain`]    | `raw_len: u32`, payload (the rest)                                          |
//! | [`WithDict`] | `dict_len: u32`, `raw_len: u32`, `prefix_len: u32`, dict, payload (rest)    |
//! | [`Choice`]   | `choice: u8`, then a [`WithDict`]                                           |
//! | [`DatumInput`]| `prefix_len: u32`, datum (the rest)                                        |
//! | [`RoundTrip`]| `flags: u8`, `dict_id: u32`, `dict_len: u16`, `prefix_len: u32`, dict, input |
//! | [`StreamedInput`] | `reads: [u8; 4]`, `repeat_at: u16`, `repeat_len: u16`, `repeat_count: u32` (top bit: large), body (the rest) |

use std::sync::{Arc, OnceLock};

use pgdict::datum::{Dictionaries, PreparedDictionary};
use pgdict_cli::fuzzing::{READ_BUFFER, TEXT_WINDOW};

/// Raw lengths fuzzed are below this (1 MiB): large enough for every code path (pglz's
/// window is 4 KiB, lz4's 64 KiB, a zstd block 128 KiB), small enough to stay fast.
pub const MAX_RAW_LEN: usize = 1 << 20;

/// Longest arbitrary dictionary for pglz (its reach is 4095 bytes; more checks the cut).
pub const MAX_PGLZ_DICT_LEN: usize = 8000;

/// Longest arbitrary dictionary for lz4 (its reach is 64 KiB; more checks the cut).
pub const MAX_LZ4_DICT_LEN: usize = 64 * 1024 + 4096;

/// Reads an input front to back; a field cut off by the end reads as zeros.
pub struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data }
    }

    /// Up to `n` bytes (fewer if the input ends first).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.data.split_at(n.min(self.data.len()));
        self.data = tail;
        head
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut array = [0; N];
        let bytes = self.bytes(N);
        array[..bytes.len()].copy_from_slice(bytes);
        array
    }

    /// A byte.
    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    /// A little-endian `u16`.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    /// Everything left.
    pub fn rest(self) -> &'a [u8] {
        self.data
    }
}

/// Builds an input field by field, for seeds and regression tests.
#[derive(Default)]
pub struct Writer(Vec<u8>);

impl Writer {
    /// An empty input.
    pub fn new() -> Writer {
        Writer::default()
    }

    /// Appends a byte.
    pub fn u8(mut self, v: u8) -> Writer {
        self.0.push(v);
        self
    }

    /// Appends a little-endian `u16`.
    pub fn u16(mut self, v: u16) -> Writer {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends a little-endian `u32`; `v` must fit (the layouts' lengths all do).
    pub fn u32(mut self, v: usize) -> Writer {
        let v = u32::try_from(v).expect("a layout field over u32::MAX");
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends bytes.
    pub fn bytes(mut self, v: &[u8]) -> Writer {
        self.0.extend_from_slice(v);
        self
    }

    /// The input.
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// A payload and the raw length it should decode to (`pglz_decode`).
#[derive(Debug)]
pub struct Plain<'a> {
    /// Below [`MAX_RAW_LEN`].
    pub raw_len: usize,
    /// The codec's payload.
    pub payload: &'a [u8],
}

impl<'a> Plain<'a> {
    /// Reads the layout.
    pub fn parse(data: &'a [u8]) -> Plain<'a> {
        let mut r = Reader::new(data);
        let raw_len = r.u32() as usize % MAX_RAW_LEN;
        Plain {
            raw_len,
            payload: r.rest(),
        }
    }

    /// Writes the layout (`raw_len` must be below [`MAX_RAW_LEN`] to read back the same).
    pub fn to_bytes(&self) -> Vec<u8> {
        Writer::new().u32(self.raw_len).bytes(self.payload).finish()
    }
}

/// A payload, a dictionary, a raw length and a prefix length (the pglz, lz4 and leak targets).
#[derive(Debug)]
pub struct WithDict<'a> {
    /// At most the `max_dict` given to [`WithDict::parse`].
    pub dict: &'a [u8],
    /// Below the `max_raw` given to [`WithDict::parse`].
    pub raw_len: usize,
    /// At most `raw_len + 32`: some prefixes ask for more than the whole.
    pub prefix_len: usize,
    /// The codec's payload.
    pub payload: &'a [u8],
}

impl<'a> WithDict<'a> {
    /// Reads the layout; the dictionary is at most `max_dict` bytes, `raw_len` below `max_raw`.
    pub fn parse(data: &'a [u8], max_dict: usize, max_raw: usize) -> WithDict<'a> {
        let mut r = Reader::new(data);
        let dict_len = r.u32() as usize % (max_dict + 1);
        let raw_len = r.u32() as usize % max_raw;
        let prefix_len = r.u32() as usize % (raw_len + 33);
        let dict = r.bytes(dict_len);
        WithDict {
            dict,
            raw_len,
            prefix_len,
            payload: r.rest(),
        }
    }

    /// Writes the layout.
    pub fn to_bytes(&self) -> Vec<u8> {
        Writer::new()
            .u32(self.dict.len())
            .u32(self.raw_len)
            .u32(self.prefix_len)
            .bytes(self.dict)
            .bytes(self.payload)
            .finish()
    }
}

/// A choice byte before a [`WithDict`] (`zstd_dict_decode`: which dictionary;
/// `no_output_leak`: which codec).
#[derive(Debug)]
pub struct Choice<'a> {
    /// The choice byte, as read.
    pub choice: u8,
    /// The rest.
    pub input: WithDict<'a>,
}

impl<'a> Choice<'a> {
    /// Reads the layout (see [`WithDict::parse`] for the bounds).
    pub fn parse(data: &'a [u8], max_dict: usize, max_raw: usize) -> Choice<'a> {
        let choice = data.first().copied().unwrap_or(0);
        Choice {
            choice,
            input: WithDict::parse(data.get(1..).unwrap_or(&[]), max_dict, max_raw),
        }
    }

    /// Writes the layout.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = vec![self.choice];
        bytes.extend_from_slice(&self.input.to_bytes());
        bytes
    }
}

/// A whole datum and a prefix length (`datum_header`).
#[derive(Debug)]
pub struct DatumInput<'a> {
    /// Any `u32`.
    pub prefix_len: usize,
    /// The datum.
    pub datum: &'a [u8],
}

impl<'a> DatumInput<'a> {
    /// Reads the layout.
    pub fn parse(data: &'a [u8]) -> DatumInput<'a> {
        let mut r = Reader::new(data);
        let prefix_len = r.u32() as usize;
        DatumInput {
            prefix_len,
            datum: r.rest(),
        }
    }

    /// Writes the layout.
    pub fn to_bytes(&self) -> Vec<u8> {
        Writer::new()
            .u32(self.prefix_len)
            .bytes(self.datum)
            .finish()
    }
}

/// Raw input, a codec and an optional dictionary (`round_trip`).
#[derive(Debug)]
pub struct RoundTrip<'a> {
    /// Bits 0–1: the codec (0 pglz, 1 lz4, 2 zstd, 3 pglz again). Bits 2–3: the dictionary
    /// (0 none, 1 the `dict` bytes, 2 and 3 one of the [`fixed_dictionaries`], picked by
    /// `dict_id`).
    pub flags: u8,
    /// The dictionary's id (0 reads as 1).
    pub dict_id: u32,
    /// At most [`MAX_PGLZ_DICT_LEN`] bytes.
    pub dict: &'a [u8],
    /// Any `u32`.
    pub prefix_len: usize,
    /// The value to compress.
    pub input: &'a [u8],
}

impl<'a> RoundTrip<'a> {
    /// Reads the layout.
    pub fn parse(data: &'a [u8]) -> RoundTrip<'a> {
        let mut r = Reader::new(data);
        let flags = r.u8();
        let dict_id = r.u32().max(1);
        let dict_len = usize::from(r.u16()) % (MAX_PGLZ_DICT_LEN + 1);
        let prefix_len = r.u32() as usize;
        let dict = r.bytes(dict_len);
        RoundTrip {
            flags,
            dict_id,
            dict,
            prefix_len,
            input: r.rest(),
        }
    }

    /// Writes the layout.
    pub fn to_bytes(&self) -> Vec<u8> {
        Writer::new()
            .u8(self.flags)
            .u32(self.dict_id as usize)
            .u16(self.dict.len() as u16)
            .u32(self.prefix_len)
            .bytes(self.dict)
            .bytes(self.input)
            .finish()
    }
}

/// The longest input `datum_input` reads, its repeat expanded: past the 1 MiB a datum input's
/// format is told from (`TEXT_WINDOW`) by two of its 64 KiB reads (`READ_BUFFER`).
pub const MAX_STREAMED_LEN: usize = TEXT_WINDOW + 2 * READ_BUFFER;

/// The longest input `datum_input`'s repeat makes without [`LARGE_REPEAT`]: what a pipe is
/// sure to hold (`PIPE_BUF`), so that every reader, the pipe too, reads it.
pub const MAX_SMALL_STREAMED_LEN: usize = 4096;

/// The bit of [`StreamedInput`]'s `repeat_count` field that lets the repeat make a large input.
pub const LARGE_REPEAT: u32 = 1 << 31;

/// How many of a stream's reads follow [`StreamedInput::reads`]; each read after them gives
/// what it asks for. Telling a stream's format looks at its whole start again after each read
/// that brings a line end, so a megabyte of short lines handed out a few bytes a read would
/// take seconds (see `fuzz/README.md`).
pub const MAX_PLANNED_READS: usize = 256;

/// What one planned read of a [`StreamedInput`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlannedRead {
    /// It fails with `Interrupted`, as a read a signal interrupted does: the reader tries again.
    Interrupted,
    /// It gives at most this many bytes (fewer if the reader asks for fewer, or fewer are left).
    Bytes(usize),
}

/// What read `step` (from 0) of a stream whose plan is `reads` ([`StreamedInput::reads`])
/// does; `None` past the plan: it gives what it asks for.
pub fn planned_read(reads: [u8; 4], step: usize) -> Option<PlannedRead> {
    if step >= MAX_PLANNED_READS {
        return None;
    }
    Some(match reads[step % reads.len()] {
        0 => PlannedRead::Interrupted,
        small @ 1..=0x7f => PlannedRead::Bytes(usize::from(small)),
        power => PlannedRead::Bytes(1 << (power - 0x80).min(20)),
    })
}

/// A datum input and how a pipe hands it out (`datum_input`). The input is the body with its
/// bytes `repeat_at..repeat_at + repeat_len` standing `repeat_count` times in a row (0 reads
/// as 1), so that a short input can cross the 64 KiB and 1 MiB marks of the reader; the
/// offsets are reduced to the body. The count field's top bit ([`LARGE_REPEAT`]) says how far
/// the repeat may take the input: with it, to at most [`MAX_STREAMED_LEN`] bytes; without it,
/// to at most [`MAX_SMALL_STREAMED_LEN`] (a body longer than that stands as it is). Large
/// inputs take up to a hundred times a small one's time, so they come only when the fuzzer
/// sets the bit. The pipe's reads take `reads` in turn, one byte a read (the first
/// [`MAX_PLANNED_READS`] of them): 0 is a read interrupted, 1 to 0x7f that many bytes,
/// 0x80 + k 2^k bytes (k above 20 reads as 20: 1 MiB).
#[derive(Debug)]
pub struct StreamedInput<'a> {
    /// The read plan, used in turn.
    pub reads: [u8; 4],
    /// Where the repeated bytes start in the body.
    pub repeat_at: usize,
    /// How many bytes are repeated.
    pub repeat_len: usize,
    /// How many times they stand (at least 1, below [`LARGE_REPEAT`]).
    pub repeat_count: usize,
    /// The input before expansion.
    pub body: &'a [u8],
}

impl<'a> StreamedInput<'a> {
    /// Reads the layout.
    pub fn parse(data: &'a [u8]) -> StreamedInput<'a> {
        let mut r = Reader::new(data);
        let reads = [r.u8(), r.u8(), r.u8(), r.u8()];
        let repeat_at = usize::from(r.u16());
        let repeat_len = usize::from(r.u16());
        let count_field = r.u32();
        let body = r.rest();
        let repeat_at = repeat_at % (body.len() + 1);
        let repeat_len = repeat_len % (body.len() - repeat_at + 1);
        let budget = if count_field & LARGE_REPEAT != 0 {
            MAX_STREAMED_LEN
        } else {
            MAX_SMALL_STREAMED_LEN
        };
        let repeat_count = (count_field & !LARGE_REPEAT) as usize;
        let most = match repeat_len {
            0 => 1,
            len => (budget.saturating_sub(body.len()) / len).saturating_add(1),
        };
        StreamedInput {
            reads,
            repeat_at,
            repeat_len,
            repeat_count: repeat_count.clamp(1, most),
            body,
        }
    }

    /// The input: the body, its repeated bytes expanded.
    pub fn input(&self) -> Vec<u8> {
        let repeated = self.repeat_at..self.repeat_at + self.repeat_len;
        let mut input = Vec::with_capacity(self.body.len() + self.repeat_len * self.repeat_count);
        input.extend_from_slice(&self.body[..repeated.start]);
        for _ in 0..self.repeat_count {
            input.extend_from_slice(&self.body[repeated.clone()]);
        }
        input.extend_from_slice(&self.body[repeated.end..]);
        input
    }

    /// Writes the layout (`repeat_count` must be below [`LARGE_REPEAT`]); [`LARGE_REPEAT`] is
    /// set when the input is longer than [`MAX_SMALL_STREAMED_LEN`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let field = |v: usize| u16::try_from(v).expect("a repeat offset over u16::MAX");
        let count = u32::try_from(self.repeat_count)
            .ok()
            .filter(|count| count & LARGE_REPEAT == 0)
            .expect("a repeat count of 2^31 or more");
        let len = self.body.len() + self.repeat_len * self.repeat_count.saturating_sub(1);
        let large = if len > MAX_SMALL_STREAMED_LEN {
            LARGE_REPEAT
        } else {
            0
        };
        Writer::new()
            .bytes(&self.reads)
            .u16(field(self.repeat_at))
            .u16(field(self.repeat_len))
            .u32((count | large) as usize)
            .bytes(self.body)
            .finish()
    }
}

/// Whether two decodes agree: both succeed with the same bytes, or both fail (for whatever
/// reason: libzstd may report one damage differently on a fresh and on a warm context, see
/// `zstd_corrupt_frame_fails_on_fresh_and_reused_decoders` in `tests/fuzz_regressions.rs`).
pub fn same_outcome<T: PartialEq, E>(a: &Result<T, E>, b: &Result<T, E>) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(_), Err(_)) => true,
        _ => false,
    }
}

/// The project's sample rows (`corpus/` at the repository root), compiled in: dictionary
/// content that looks like what users train on.
const EVENTS: &[u8] = include_bytes!("../../corpus/events.jsonl");
const ORDERS: &[u8] = include_bytes!("../../corpus/orders_csv.txt");
const LOGS: &[u8] = include_bytes!("../../corpus/app_logs.txt");

/// Ids of the [`fixed_dictionaries`], in order. Their LEB128 forms take 1, 2, 3, 4 and 5 bytes.
pub const FIXED_IDS: [u32; 5] = [1, 300, 0x20_0000, 0x1000_0000, u32::MAX];

/// The bytes of the fixed dictionaries, in [`FIXED_IDS`] order: JSON events (4095 bytes, all
/// reachable by pglz), CSV orders (8000 bytes, over pglz's reach), log lines (70,000 bytes,
/// over lz4's), a zstd-format dictionary trained on the events (entropy tables and content),
/// and the empty dictionary.
pub fn fixed_dictionary_bytes() -> &'static [Vec<u8>] {
    static BYTES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let lines: Vec<&[u8]> = EVENTS.split(|&b| b == b'\n').skip(100).take(2000).collect();
        let trained = zstd::dict::from_samples(&lines, 4096)
            .expect("zstd trains a dictionary on the project's sample events");
        vec![
            EVENTS[..4095].to_vec(),
            ORDERS[..8000].to_vec(),
            LOGS[..70_000].to_vec(),
            trained,
            Vec::new(),
        ]
    })
}

/// The fixed dictionaries, prepared once per process (preparing zstd's side is slow).
pub fn fixed_dictionaries() -> &'static [Arc<PreparedDictionary>] {
    static PREPARED: OnceLock<Vec<Arc<PreparedDictionary>>> = OnceLock::new();
    PREPARED.get_or_init(|| {
        FIXED_IDS
            .iter()
            .zip(fixed_dictionary_bytes())
            .map(|(&id, bytes)| {
                Arc::new(PreparedDictionary::new(id, bytes).expect("a fixed dictionary prepares"))
            })
            .collect()
    })
}

/// The fixed dictionaries as a lookup set, for datum decoding.
pub fn fixed_set() -> &'static Dictionaries {
    static SET: OnceLock<Dictionaries> = OnceLock::new();
    SET.get_or_init(|| {
        let mut set = Dictionaries::described("the fuzz targets' fixed dictionaries");
        for dict in fixed_dictionaries() {
            set.insert(Arc::clone(dict));
        }
        set
    })
}

/// What the reference lz4 decoder made of a block.
#[derive(Debug, PartialEq, Eq)]
pub struct Lz4Reference {
    /// The decoded bytes.
    pub out: Vec<u8>,
    /// Whether a match with offset 0 was decoded (as zeros, the way liblz4's whole decode
    /// does; its partial decode leaves the output's previous content there instead). pgdict
    /// refuses such blocks before liblz4 sees them, so a pgdict success must have none.
    pub zero_offset: bool,
}

/// A reference lz4 block decoder, written from the block format description and kept simple
/// rather than fast: the differential oracle for liblz4 in `lz4_dict_decode`.
///
/// `dict` is history before the output (its last 64 KiB, as for liblz4). Returns `None` for a
/// block that is cut off, has a match reaching before the history, or would produce more than
/// `max_out` bytes. A match with offset 0, which the block format calls invalid, is decoded as
/// zeros, because liblz4 (1.10) accepts it and writes zeros in a whole decode; that is noted in
/// [`Lz4Reference::zero_offset`]. The reference is more lenient than liblz4 (which also
/// insists on the end-of-block rules: the last five bytes are literals, the last match starts
/// twelve bytes before the end), so only "liblz4 accepted it" implies "this accepts it too,
/// with the same bytes".
pub fn lz4_reference_decode(block: &[u8], dict: &[u8], max_out: usize) -> Option<Lz4Reference> {
    lz4_reference(block, dict, max_out, false)
}

/// [`lz4_reference_decode`] of the first `wanted` output bytes only, as lenient as liblz4's
/// partial decoder: the block may end anywhere after them, or inside a literal run (whatever
/// literals are there are output). Returns the bytes produced, at most `wanted`; fewer when
/// the block ends first. `None` for a bad match before `wanted` bytes are out.
pub fn lz4_reference_decode_prefix(
    block: &[u8],
    dict: &[u8],
    wanted: usize,
) -> Option<Lz4Reference> {
    lz4_reference(block, dict, wanted, true)
}

fn lz4_reference(block: &[u8], dict: &[u8], limit: usize, partial: bool) -> Option<Lz4Reference> {
    let dict = &dict[dict.len().saturating_sub(64 * 1024)..];
    let mut out = Vec::new();
    let mut zero_offset = false;
    let mut pos = 0;
    // A length nibble of 15 continues in bytes that add up until one is not 255.
    let long_length = |pos: &mut usize, mut len: usize| -> Option<usize> {
        loop {
            let byte = *block.get(*pos)?;
            *pos += 1;
            len = len.checked_add(usize::from(byte))?;
            if byte != 255 {
                return Some(len);
            }
        }
    };
    loop {
        if partial && (out.len() == limit || pos == block.len()) {
            return Some(Lz4Reference { out, zero_offset });
        }
        let token = *block.get(pos)?;
        pos += 1;
        let mut literals = usize::from(token >> 4);
        if literals == 15 {
            literals = long_length(&mut pos, literals)?;
        }
        if partial {
            // Whatever literals there are, up to the limit.
            let n = literals.min(block.len() - pos).min(limit - out.len());
            out.extend_from_slice(&block[pos..pos + n]);
            pos += n;
            if out.len() == limit || block.len() - pos < 2 {
                return Some(Lz4Reference { out, zero_offset });
            }
        } else {
            let end = pos.checked_add(literals)?;
            if out.len() + literals > limit {
                return None;
            }
            out.extend_from_slice(block.get(pos..end)?);
            pos = end;
            if pos == block.len() {
                // The last sequence has literals only.
                return Some(Lz4Reference { out, zero_offset });
            }
        }
        let offset = usize::from(u16::from_le_bytes([*block.get(pos)?, *block.get(pos + 1)?]));
        pos += 2;
        let mut length = usize::from(token & 0x0f);
        if length == 15 {
            length = long_length(&mut pos, length)?;
        }
        let mut length = length + 4;
        if offset > out.len() + dict.len() {
            return None;
        }
        if out.len() + length > limit {
            if !partial {
                return None;
            }
            length = limit - out.len();
        }
        if offset == 0 {
            zero_offset = true;
            out.resize(out.len() + length, 0);
            continue;
        }
        // Byte by byte: a match may overlap what it writes, and may start in the dictionary.
        for _ in 0..length {
            let byte = if offset <= out.len() {
                out[out.len() - offset]
            } else {
                dict[dict.len() - (offset - out.len())]
            };
            out.push(byte);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `StreamedInput` of `body` with the repeat fields as written, read back.
    fn streamed(repeat_at: u16, repeat_len: u16, count_field: u32, body: &[u8]) -> usize {
        let data = Writer::new()
            .bytes(&[0x90; 4])
            .u16(repeat_at)
            .u16(repeat_len)
            .u32(count_field as usize)
            .bytes(body)
            .finish();
        StreamedInput::parse(&data).input().len()
    }

    #[test]
    fn streamed_input_is_large_only_with_the_large_bit() {
        let body = b"\\x0b616263\n";
        // Any count without the bit: at most 4 KiB (the most 11-byte lines that fit).
        assert_eq!(streamed(0, 11, 1 << 30, body), 4092);
        assert_eq!(streamed(0, 11, 3, body), 33);
        // With it: past the 1 MiB window, by at most two 64 KiB reads.
        let large = streamed(0, 11, LARGE_REPEAT | (1 << 30), body);
        assert!(large > TEXT_WINDOW && large <= MAX_STREAMED_LEN, "{large}");
        assert_eq!(streamed(0, 11, LARGE_REPEAT | 3, body), 33);
        // A body over the small budget stands as it is; the bit lets it grow.
        let long = vec![b'a'; 5000];
        assert_eq!(streamed(0, 1, 10, &long), 5000);
        assert_eq!(streamed(0, 1, LARGE_REPEAT | 10, &long), 5009);
    }

    #[test]
    fn streamed_input_writes_the_large_bit_for_large_inputs() {
        for (count, len) in [(372, 4092), (100_000, 1_100_000)] {
            let written = StreamedInput {
                reads: [1, 2, 3, 0],
                repeat_at: 0,
                repeat_len: 11,
                repeat_count: count,
                body: b"\\x0b616263\n",
            }
            .to_bytes();
            let read = StreamedInput::parse(&written);
            assert_eq!(read.repeat_count, count);
            assert_eq!(read.input().len(), len);
        }
    }
}
