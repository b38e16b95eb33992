//! The builder's check: compress a slice of the training rows with a candidate dictionary,
//! using the real codec, and see what each dictionary byte earned.
//!
//! A row's stored size is what the datum encoder would keep: the smallest of its raw form,
//! its plain form (both independent of the dictionary, so computed once) and its dictionary
//! form (a 10-byte extended header and the codec's payload). When the dictionary form wins,
//! the bytes it saved over the best other form are shared among the dictionary bytes the
//! payload copied, in proportion to what each copy saved; that is the *usage* of each byte.
//! A probe may instead credit a copy only for the bytes the row could not have copied from
//! its own earlier bytes ([`Probe::crediting_new_bytes`]).

use pgdict::datum::{Codec, DatumEncoder};
use pgdict::lz4::{Lz4Compressor, Lz4Dictionary};
use pgdict::pglz::{Compressor, PglzDictionary, Strategy};

use super::parse::{self, Op};

/// Header of a dictionary datum with an id of 1..=127: varlena word, raw length and method,
/// codec byte, 1-byte id.
pub const DICT_HEADER_LEN: usize = 10;

/// Threads the check runs on.
const THREADS: usize = 2;

/// Rows to check candidate dictionaries against.
#[derive(Clone)]
pub struct Probe<'a> {
    codec: Codec,
    rows: Vec<&'a [u8]>,
    /// Per row, the stored size without the dictionary (the smaller of raw and plain).
    base: Vec<usize>,
    /// Empty, or per row and byte position, how many of the row's bytes before it its plain
    /// pglz parse copies from the row itself (see [`Probe::crediting_new_bytes`]): one more
    /// entry than the row has bytes, so a copy's own bytes are a difference of two.
    own: Vec<Vec<u32>>,
}

/// What a dictionary did for the probe rows.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Total stored bytes of the rows.
    pub stored: usize,
    /// Each row's stored bytes.
    pub sizes: Vec<u32>,
    /// Per dictionary byte (indexed like the whole dictionary), the stored bytes it saved;
    /// empty unless asked for.
    pub usage: Vec<f64>,
    /// Per dictionary byte, its usage times the datum position of the copies that used it
    /// (so `reach / usage` is the mean datum position it was copied at); empty unless asked.
    pub reach: Vec<f64>,
}

impl<'a> Probe<'a> {
    /// A probe over `rows` for `codec` (pglz or lz4).
    pub fn new(rows: Vec<&'a [u8]>, codec: Codec) -> Probe<'a> {
        assert!(
            matches!(codec, Codec::Pglz | Codec::Lz4),
            "the probe reads pglz and lz4 payloads only"
        );
        let mut encoder = DatumEncoder::new();
        let base = rows
            .iter()
            .map(|row| {
                encoder
                    .encode(row, codec, None)
                    .map(|d| d.len())
                    .unwrap_or(usize::MAX)
            })
            .collect();
        Probe {
            codec,
            rows,
            base,
            own: Vec::new(),
        }
    }

    /// The same probe (pglz only) crediting a dictionary copy only for the bytes the row's
    /// plain parse left literal: a piece that copies what the datum would have copied from
    /// its own earlier bytes saves little. The stored sizes do not change, only which
    /// dictionary bytes earn them (so which pieces are dropped and where they go).
    pub fn crediting_new_bytes(mut self) -> Probe<'a> {
        assert_eq!(self.codec, Codec::Pglz, "new-byte credit is for pglz");
        let empty = PglzDictionary::new(&[]);
        let mut compressor = Compressor::new();
        self.own = self
            .rows
            .iter()
            .map(|row| {
                let mut own = vec![false; row.len()];
                if let Some(payload) =
                    compressor.compress_with_dict(row, &empty, &Strategy::DICTIONARY)
                {
                    parse::pglz_ops(payload, row.len(), |op| {
                        if let Op::Copy { pos, len, .. } = op {
                            let end = (pos + len).min(own.len());
                            own[pos.min(end)..end].fill(true);
                        }
                    });
                }
                let mut before = Vec::with_capacity(own.len() + 1);
                before.push(0);
                for &o in &own {
                    before.push(before.last().unwrap() + u32::from(o));
                }
                before
            })
            .collect();
        self
    }

    /// How many rows are checked.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Total bytes of the rows (what one check compresses).
    pub fn bytes(&self) -> usize {
        self.rows.iter().map(|r| r.len()).sum()
    }

    /// Total stored bytes of the rows without a dictionary.
    pub fn base_stored(&self) -> usize {
        self.base.iter().sum()
    }

    /// Per row, the stored size without the dictionary.
    pub fn base_sizes(&self) -> &[usize] {
        &self.base
    }

    /// The codec the rows are checked with.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Compresses every row with `dict` and returns the stored sizes and, if `usage`, each
    /// dictionary byte's usage.
    pub fn measure(&self, dict: &[u8], usage: bool) -> Outcome {
        let parts = match self.codec {
            Codec::Pglz => {
                let prepared = PglzDictionary::new(dict);
                let measured = Measured {
                    dict_len: dict.len(),
                    window: prepared.len(),
                    is_pglz: true,
                    want_usage: usage,
                };
                self.in_parts(|rows, base, own| {
                    let mut compressor = Compressor::new();
                    measure_rows(rows, base, own, measured, |row, ops| {
                        let payload =
                            compressor.compress_with_dict(row, &prepared, &Strategy::DICTIONARY)?;
                        if usage {
                            parse::pglz_ops(payload, row.len(), ops);
                        }
                        Some(payload.len())
                    })
                })
            }
            Codec::Lz4 | Codec::Zstd => {
                let prepared = Lz4Dictionary::new(dict);
                let measured = Measured {
                    dict_len: dict.len(),
                    window: prepared.len(),
                    is_pglz: false,
                    want_usage: usage,
                };
                self.in_parts(|rows, base, own| {
                    let mut compressor = Lz4Compressor::new();
                    let mut block = Vec::new();
                    measure_rows(rows, base, own, measured, |row, ops| {
                        block.clear();
                        compressor
                            .compress_with_dict_into(row, &prepared, &mut block)
                            .ok()?;
                        if usage {
                            parse::lz4_ops(&block, ops);
                        }
                        Some(block.len())
                    })
                })
            }
        };
        let per_byte = || {
            if usage {
                vec![0.0; dict.len()]
            } else {
                Vec::new()
            }
        };
        let mut total = Outcome {
            stored: 0,
            sizes: Vec::with_capacity(self.rows.len()),
            usage: per_byte(),
            reach: per_byte(),
        };
        for part in parts {
            total.stored += part.stored;
            total.sizes.extend(part.sizes);
            for (sum, u) in total.usage.iter_mut().zip(part.usage) {
                *sum += u;
            }
            for (sum, r) in total.reach.iter_mut().zip(part.reach) {
                *sum += r;
            }
        }
        total
    }

    /// Splits the rows into [`THREADS`] parts in order and measures each on a thread of its
    /// own: `measure_part` gets a part's rows, their base sizes and their own-copy counts
    /// (empty unless [`Probe::crediting_new_bytes`]).
    fn in_parts(
        &self,
        measure_part: impl Fn(&[&[u8]], &[usize], &[Vec<u32>]) -> Outcome + Sync,
    ) -> Vec<Outcome> {
        let chunk = self.rows.len().div_ceil(THREADS).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = (self.rows.chunks(chunk).zip(self.base.chunks(chunk)))
                .enumerate()
                .map(|(part, (rows, base))| {
                    let own = self.own.chunks(chunk).nth(part).unwrap_or(&[]);
                    let measure_part = &measure_part;
                    scope.spawn(move || measure_part(rows, base, own))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }
}

/// Per row of `rows`, which of its bytes `dict` leaves costly for `codec` (pglz or lz4):
/// written literally, or copied in a match shorter than `short` bytes (from the dictionary
/// or from the row itself).
pub fn costly_bytes(rows: &[&[u8]], codec: Codec, dict: &[u8], short: usize) -> Vec<Vec<bool>> {
    let is_pglz = codec == Codec::Pglz;
    let pglz = PglzDictionary::new(if is_pglz { dict } else { &[] });
    let lz4 = Lz4Dictionary::new(if is_pglz { &[] } else { dict });
    let chunk = rows.len().div_ceil(THREADS).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = rows
            .chunks(chunk)
            .map(|rows| {
                let (pglz, lz4) = (&pglz, &lz4);
                scope.spawn(move || {
                    let mut pglz_compressor = Compressor::new();
                    let mut lz4_compressor = Lz4Compressor::new();
                    let mut block = Vec::new();
                    rows.iter()
                        .map(|row| {
                            let mut costly = vec![true; row.len()];
                            let mut mark = |op: Op| {
                                if let Op::Copy { pos, len, .. } = op {
                                    if len >= short {
                                        let end = (pos + len).min(costly.len());
                                        costly[pos.min(end)..end].fill(false);
                                    }
                                }
                            };
                            if is_pglz {
                                let payload = pglz_compressor.compress_with_dict(
                                    row,
                                    pglz,
                                    &Strategy::DICTIONARY,
                                );
                                if let Some(payload) = payload {
                                    parse::pglz_ops(payload, row.len(), &mut mark);
                                }
                            } else {
                                block.clear();
                                if lz4_compressor
                                    .compress_with_dict_into(row, lz4, &mut block)
                                    .is_ok()
                                {
                                    parse::lz4_ops(&block, &mut mark);
                                }
                            }
                            costly
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// What one copy saves over writing its bytes literally, in stored bytes, by codec: pglz pays
/// 9 bits a literal and a 2-byte tag (3 bytes from 18 bytes on) plus a control bit; lz4 about
/// a byte a literal and 3 bytes a match (token, 2-byte offset).
fn copy_saving(codec_is_pglz: bool, len: usize) -> f64 {
    if codec_is_pglz {
        let tag = if len > 17 { 3.125 } else { 2.125 };
        1.125 * len as f64 - tag
    } else {
        len as f64 - 3.0
    }
}

/// The dictionary that `measure_rows` measures, and what to find out.
#[derive(Clone, Copy)]
struct Measured {
    /// The whole dictionary's length.
    dict_len: usize,
    /// How much of it the codec reaches (its end).
    window: usize,
    /// Whether pglz's costs apply (otherwise lz4's).
    is_pglz: bool,
    /// Whether to share each row's gain among the dictionary bytes it copies.
    want_usage: bool,
}

/// Measures `rows` (whose stored sizes without the dictionary are `base`) with
/// `compress(row, ops)`, which compresses a row, reports its payload's ops and returns the
/// payload's length (`None`: no dictionary form). `own`, unless empty, counts per row the
/// bytes a copy earns nothing for (as `Probe::own`).
fn measure_rows(
    rows: &[&[u8]],
    base: &[usize],
    own: &[Vec<u32>],
    measured: Measured,
    mut compress: impl FnMut(&[u8], &mut dyn FnMut(Op)) -> Option<usize>,
) -> Outcome {
    let Measured {
        dict_len,
        window,
        is_pglz,
        want_usage,
    } = measured;
    let window_start = dict_len - window;
    let mut usage = if want_usage {
        vec![0.0; dict_len]
    } else {
        Vec::new()
    };
    let mut reach = usage.clone();
    let mut stored = 0;
    let mut sizes = Vec::with_capacity(rows.len());
    // Copies from the dictionary in the current row: (first dictionary index, bytes, saving).
    let mut copies: Vec<(usize, usize, f64, usize)> = Vec::new();
    for (r, (row, &base)) in rows.iter().zip(base).enumerate() {
        copies.clear();
        let own_row = own.get(r);
        let payload_len = compress(row, &mut |op| {
            if let Op::Copy { pos, len, offset } = op {
                if offset > pos && offset - pos <= window {
                    let back = offset - pos;
                    let in_dict = len.min(back);
                    let mut saving = copy_saving(is_pglz, len) * in_dict as f64 / len as f64;
                    if let Some(own_row) = own_row {
                        let end = (pos + in_dict).min(own_row.len() - 1);
                        let mine = (own_row[end] - own_row[pos.min(end)]) as usize;
                        saving *= (in_dict - mine) as f64;
                        saving /= in_dict as f64;
                    }
                    if saving > 0.0 {
                        copies.push((window_start + window - back, in_dict, saving, pos));
                    }
                }
            }
        });
        let with_dict = payload_len.map_or(usize::MAX, |p| DICT_HEADER_LEN + p);
        if with_dict >= base {
            stored += base;
            sizes.push(base as u32);
            continue;
        }
        stored += with_dict;
        sizes.push(with_dict as u32);
        // Share the row's real gain among the copies, in proportion to their savings.
        let gain = (base - with_dict) as f64;
        let total: f64 = copies.iter().map(|c| c.2).sum();
        if total <= 0.0 {
            continue;
        }
        for &(start, len, saving, pos) in &copies {
            let per_byte = gain * saving / total / len as f64;
            for u in &mut usage[start..start + len] {
                *u += per_byte;
            }
            for r in &mut reach[start..start + len] {
                *r += per_byte * pos as f64;
            }
        }
    }
    Outcome {
        stored,
        sizes,
        usage,
        reach,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costly_bytes_follow_the_dictionary() {
        let dict: &[u8] = b"{\"name\":\"\",\"country\":\"\",\"timezone\":\"Europe/Paris\"}";
        let row: &[u8] = b"{\"name\":\"Lyon\",\"country\":\"FR\",\"timezone\":\"Europe/Paris\"}";
        for codec in [Codec::Pglz, Codec::Lz4] {
            let with = costly_bytes(&[row], codec, dict, 5);
            let without = costly_bytes(&[row], codec, &[], 5);
            assert_eq!(with[0].len(), row.len());
            // Without a dictionary the row repeats nothing of 5 bytes: all of it is costly.
            assert!(without[0].iter().all(|&c| c), "{codec}");
            // With it, the long keys and the time zone are copied; the values are not.
            let costly = with[0].iter().filter(|&&c| c).count();
            assert!(costly < row.len() / 2, "{codec}: {costly} of {}", row.len());
            let lyon = row.windows(4).position(|w| w == b"Lyon").unwrap();
            assert!(with[0][lyon..lyon + 4].iter().all(|&c| c), "{codec}");
        }
    }

    #[test]
    fn a_copy_of_the_short_length_is_not_costly() {
        // The row copies "QWERTY", 6 bytes, and a long string from the dictionary (without
        // the long one, pglz does not find the row worth compressing).
        let long: &[u8] = b"the long string the rows share";
        let dict = [&b"QWERTYUIOP"[..], long].concat();
        let row = [&b"0123456789QWERTYz"[..], long, b"!abcdefghijklmnop"].concat();
        let long_at = 17..17 + long.len();
        for codec in [Codec::Pglz, Codec::Lz4] {
            for (short, copied_is_costly) in [(6, false), (7, true)] {
                let costly = costly_bytes(&[&row], codec, &dict, short).remove(0);
                let want: Vec<bool> = (0..row.len())
                    .map(|i| !long_at.contains(&i) && (copied_is_costly || !(10..16).contains(&i)))
                    .collect();
                assert_eq!(costly, want, "{codec}, short {short}");
            }
        }
    }

    #[test]
    fn costly_bytes_follow_each_codecs_reach() {
        // "QWERTY" at the front of a dictionary of more than 4095 bytes: lz4 reaches it
        // (liblz4 indexes its position 0), pglz does not.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..4200)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (x >> 56) as u8
            })
            .collect();
        let long: &[u8] = b"the long string the rows share";
        let dict = [&b"QWERTYUIOP"[..], &noise, long].concat();
        let row = [&b"0123456789QWERTYz"[..], long, b"!abcdefghijklmnop"].concat();
        for (codec, qwerty_is_costly) in [(Codec::Pglz, true), (Codec::Lz4, false)] {
            let costly = costly_bytes(&[&row], codec, &dict, 6).remove(0);
            assert!(
                costly[10..16].iter().all(|&c| c == qwerty_is_costly),
                "{codec}"
            );
            assert!(costly[17..17 + long.len()].iter().all(|&c| !c), "{codec}");
        }
    }

    /// Rows of a JSON shape: keys every row shares, values that vary, at varied lengths.
    fn json_rows(count: usize) -> Vec<Vec<u8>> {
        (0..count)
            .map(|i| {
                format!(
                    "{{\"name\":\"station {}\",\"country\":\"{}\",\"timezone\":\"Europe/{}\"{}}}",
                    i * 7919 % 1000,
                    ["FR", "DE", "IT"][i % 3],
                    ["Paris", "Berlin", "Rome"][i % 3],
                    ",\"note\":\"none\"".repeat(i % 4),
                )
                .into_bytes()
            })
            .collect()
    }

    /// 64 bytes in which no 3-byte string of the rows above occurs.
    const JUNK: &[u8] = b"#%&'()*+;<=>?@[]^_`|~#%&'()*+;<=>?@[]^_`|~#%&'()*+;<=>?@[]^_`|~!!";

    #[test]
    fn a_probe_measures_what_the_datum_encoder_stores() {
        // An odd number of rows: the two threads' parts differ in size.
        let rows = json_rows(31);
        let row_refs: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
        let mut dict = JUNK.to_vec();
        dict.extend_from_slice(b"\",\"country\":\"\",\"timezone\":\"Europe/\",\"note\":\"none\"");
        for codec in [Codec::Pglz, Codec::Lz4] {
            let probe = Probe::new(row_refs.clone(), codec);
            assert_eq!(probe.codec(), codec);
            assert_eq!(probe.rows(), 31);
            assert_eq!(probe.bytes(), rows.iter().map(Vec::len).sum::<usize>());
            let stored = |row: &[u8], dict| crate::eval::stored_bytes(&[row], codec, dict).unwrap();
            let base: Vec<usize> = rows.iter().map(|row| stored(row, None)).collect();
            assert_eq!(probe.base_sizes(), base, "{codec}");
            assert_eq!(probe.base_stored(), base.iter().sum::<usize>(), "{codec}");
            let with: Vec<u32> = rows
                .iter()
                .map(|row| stored(row, Some(&dict)) as u32)
                .collect();
            assert!(
                with.iter().zip(&base).all(|(&w, &b)| (w as usize) < b),
                "{codec}"
            );

            let sizes_only = probe.measure(&dict, false);
            assert_eq!(sizes_only.sizes, with, "{codec}");
            assert_eq!(
                sizes_only.stored,
                with.iter().sum::<u32>() as usize,
                "{codec}"
            );
            assert!(sizes_only.usage.is_empty() && sizes_only.reach.is_empty());

            let outcome = probe.measure(&dict, true);
            assert_eq!(outcome.sizes, with, "{codec}");
            assert_eq!(outcome.usage.len(), dict.len());
            assert_eq!(outcome.reach.len(), dict.len());
            // Every row copies from the dictionary: its gain is shared among the bytes it
            // copied, none among the junk nothing copies.
            let gain = (probe.base_stored() - outcome.stored) as f64;
            let shared: f64 = outcome.usage.iter().sum();
            assert!(
                (shared - gain).abs() < 1e-6 * gain,
                "{codec}: {shared} of {gain}"
            );
            assert!(
                outcome.usage[..JUNK.len()].iter().all(|&u| u == 0.0),
                "{codec}"
            );
            assert!(
                outcome.reach[..JUNK.len()].iter().all(|&r| r == 0.0),
                "{codec}"
            );
            // Every row holds `"timezone":"Europe/` at datum position 31 to 35 or later.
            let europe = dict.len() - 14;
            let mean_position = outcome.reach[europe] / outcome.usage[europe];
            assert!(
                (31.0..120.0).contains(&mean_position),
                "{codec}: {mean_position}"
            );
        }
    }

    #[test]
    fn a_copy_saves_its_literals_less_its_tag() {
        // pglz: 9 bits a literal; a 2-byte tag up to 17 bytes, 3 from 18 on; a control bit.
        assert_eq!(copy_saving(true, 3), 1.25);
        assert_eq!(copy_saving(true, 17), 17.0);
        assert_eq!(copy_saving(true, 18), 17.125);
        // lz4: a byte a literal, 3 bytes a match.
        assert_eq!(copy_saving(false, 4), 1.0);
        assert_eq!(copy_saving(false, 20), 17.0);
    }

    /// The ops of a made-up codec, one list per row, and its payload lengths (`None`: no
    /// dictionary form).
    fn measure_made_up(own: &[Vec<u32>]) -> Outcome {
        let copy = |pos, len, offset| Op::Copy { pos, len, offset };
        let rows: Vec<Vec<u8>> = (0..4u8).map(|r| vec![r; 60]).collect();
        let row_refs: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
        let base = [60, 30, 45, 40];
        let ops: [(Vec<Op>, Option<usize>); 4] = [
            (
                vec![
                    copy(0, 10, 20),  // dictionary bytes 80..90
                    copy(10, 8, 5),   // from the row itself
                    copy(18, 20, 70), // dictionary bytes 48..68
                    copy(38, 4, 99),  // beyond the window: not reachable, not credited
                    copy(42, 3, 102), // the window's first bytes, 40..43
                    Op::Literal { pos: 45, len: 2 },
                    copy(47, 10, 51), // 4 dictionary bytes (96..100), then the row's
                ],
                Some(25),
            ),
            // Not smaller than without the dictionary: the row's base size, no credit.
            (vec![copy(0, 20, 30)], Some(20)),
            (vec![copy(0, 20, 30)], None),
            // Smaller without copying the dictionary: nothing to credit.
            (vec![copy(10, 20, 10)], Some(5)),
        ];
        let measured = Measured {
            dict_len: 100,
            window: 60,
            is_pglz: true,
            want_usage: true,
        };
        measure_rows(&row_refs, &base, own, measured, |row, report| {
            let (ops, payload) = &ops[usize::from(row[0])];
            ops.iter().for_each(|&op| report(op));
            *payload
        })
    }

    #[test]
    fn a_rows_gain_is_shared_among_the_dictionary_bytes_it_copied() {
        let outcome = measure_made_up(&[]);
        assert_eq!(outcome.sizes, [35, 30, 45, 15]);
        assert_eq!(outcome.stored, 125);
        // Row 0 gains 60 - 35 = 25 bytes, shared in proportion to what each copy saved:
        // 9.125 (10 bytes), 19.375 (20 bytes), 1.25 (3 bytes) and 9.125 * 4 / 10 = 3.65 (4
        // of 10 bytes).
        let total = 9.125 + 19.375 + 1.25 + 3.65;
        let mut usage = vec![0.0; 100];
        let mut reach = vec![0.0; 100];
        for (range, saving, pos) in [
            (80..90, 9.125, 0.0),
            (48..68, 19.375, 18.0),
            (40..43, 1.25, 42.0),
            (96..100, 3.65, 47.0),
        ] {
            let per_byte = 25.0 * saving / total / range.len() as f64;
            usage[range.clone()].fill(per_byte);
            reach[range].fill(per_byte * pos);
        }
        assert_close(&outcome.usage, &usage);
        assert_close(&outcome.reach, &reach);
    }

    #[test]
    fn crediting_new_bytes_leaves_out_what_the_row_copies_from_itself() {
        // Row 0 copies its bytes 28..38 (half of the 20-byte copy) and 49..50 (one of the 4
        // dictionary bytes of the last copy) from itself in its plain form.
        let mut own = vec![vec![0u32; 61]; 4];
        for (i, count) in own[0].iter_mut().enumerate() {
            *count = (i.clamp(28, 38) - 28 + i.clamp(49, 50) - 49) as u32;
        }
        let outcome = measure_made_up(&own);
        assert_eq!(outcome.sizes, [35, 30, 45, 15]);
        let savings = [9.125, 19.375 / 2.0, 1.25, 3.65 * 3.0 / 4.0];
        let total: f64 = savings.iter().sum();
        let mut usage = vec![0.0; 100];
        for (range, saving) in [
            (80..90, savings[0]),
            (48..68, savings[1]),
            (40..43, savings[2]),
            (96..100, savings[3]),
        ] {
            let per_byte = 25.0 * saving / total / range.len() as f64;
            usage[range].fill(per_byte);
        }
        assert_close(&outcome.usage, &usage);
    }

    fn assert_close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).abs() < 1e-9, "byte {i}: {g}, not {w}");
        }
    }

    #[test]
    fn new_byte_credit_counts_the_bytes_a_row_copies_from_itself() {
        // Plain pglz writes the first 10 bytes literally, copies the next 8 from the first and
        // writes the last 2 literally.
        let row: &[u8] = b"abcdefghXYabcdefghZW";
        let probe = Probe::new(vec![b"no copies", row], Codec::Pglz).crediting_new_bytes();
        assert_eq!(probe.own[0], [0; 10]);
        let before: Vec<u32> = (0..=row.len())
            .map(|i| (i.clamp(10, 18) - 10) as u32)
            .collect();
        assert_eq!(probe.own[1], before);
    }

    #[test]
    fn rows_measured_together_add_up_to_rows_measured_alone() {
        let rows = json_rows(13);
        let row_refs: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
        let dict: &[u8] = b"\",\"note\":\"none\",\"country\":\"\",\"timezone\":\"Europe/";
        let probes = [
            Probe::new(row_refs.clone(), Codec::Pglz),
            Probe::new(row_refs.clone(), Codec::Pglz).crediting_new_bytes(),
            Probe::new(row_refs.clone(), Codec::Lz4),
        ];
        for probe in probes {
            let together = probe.measure(dict, true);
            let mut usage = vec![0.0; dict.len()];
            let mut reach = vec![0.0; dict.len()];
            let mut sizes = Vec::new();
            for row in &row_refs {
                let mut alone = Probe::new(vec![row], probe.codec());
                if !probe.own.is_empty() {
                    alone = alone.crediting_new_bytes();
                }
                let outcome = alone.measure(dict, true);
                sizes.extend(outcome.sizes);
                usage
                    .iter_mut()
                    .zip(&outcome.usage)
                    .for_each(|(u, a)| *u += a);
                reach
                    .iter_mut()
                    .zip(&outcome.reach)
                    .for_each(|(r, a)| *r += a);
            }
            assert_eq!(together.sizes, sizes);
            assert_close(&together.usage, &usage);
            assert_close(&together.reach, &reach);
        }
    }
}
