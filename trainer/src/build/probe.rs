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
}
