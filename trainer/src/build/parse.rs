//! Reading back what a codec did: the literal runs and copies of a pglz or lz4 payload.
//!
//! The builder compresses sample rows with a candidate dictionary and reads the payloads back
//! to see which dictionary bytes the codec actually copied, and how much each copy saved.
//! Only payloads that pgdict's own compressors just wrote are read here, so these readers
//! trust their input (a malformed payload ends the walk early; it cannot read out of bounds).

/// One step of a payload: bytes written literally, or copied from earlier history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `len` literal bytes written at datum position `pos`.
    Literal {
        /// Datum position of the first byte.
        pos: usize,
        /// How many bytes.
        len: usize,
    },
    /// `len` bytes copied to datum position `pos` from `offset` bytes back; when `offset` is
    /// over `pos` the copy starts in the dictionary.
    Copy {
        /// Datum position of the first byte written.
        pos: usize,
        /// How many bytes.
        len: usize,
        /// How far back the copy starts.
        offset: usize,
    },
}

/// The steps of a pglz payload that decodes to `raw_len` bytes (see `pgdict::pglz` for the
/// format: a control byte, then eight items, each a literal byte or a 2–3 byte tag).
pub fn pglz_ops(payload: &[u8], raw_len: usize, mut f: impl FnMut(Op)) {
    let mut sp = 0;
    let mut dp = 0;
    while sp < payload.len() && dp < raw_len {
        let ctrl = payload[sp];
        sp += 1;
        for bit in 0..8 {
            if sp >= payload.len() || dp >= raw_len {
                break;
            }
            if ctrl & (1 << bit) == 0 {
                f(Op::Literal { pos: dp, len: 1 });
                sp += 1;
                dp += 1;
                continue;
            }
            let Some(&[t1, t2]) = payload.get(sp..sp + 2) else {
                return;
            };
            sp += 2;
            let mut len = usize::from(t1 & 0x0f) + 3;
            let offset = (usize::from(t1 & 0xf0) << 4) | usize::from(t2);
            if len == 18 {
                let Some(&extra) = payload.get(sp) else {
                    return;
                };
                len += usize::from(extra);
                sp += 1;
            }
            f(Op::Copy {
                pos: dp,
                len,
                offset,
            });
            dp += len;
        }
    }
}

/// The steps of an lz4 block: sequences of a token, literals, a 2-byte offset and a match
/// length (the last sequence has literals only).
pub fn lz4_ops(block: &[u8], mut f: impl FnMut(Op)) {
    let mut sp = 0;
    let mut dp = 0;
    // Reads the 255-continued extension of a 4-bit length.
    let extend = |sp: &mut usize, mut len: usize| -> Option<usize> {
        loop {
            let b = *block.get(*sp)?;
            *sp += 1;
            len += usize::from(b);
            if b != 255 {
                return Some(len);
            }
        }
    };
    while sp < block.len() {
        let token = block[sp];
        sp += 1;
        let mut literals = usize::from(token >> 4);
        if literals == 15 {
            let Some(len) = extend(&mut sp, literals) else {
                return;
            };
            literals = len;
        }
        if literals > 0 {
            f(Op::Literal {
                pos: dp,
                len: literals,
            });
        }
        sp += literals;
        dp += literals;
        let Some(&[lo, hi]) = block.get(sp..sp + 2) else {
            return;
        };
        sp += 2;
        let offset = usize::from(u16::from_le_bytes([lo, hi]));
        let mut len = usize::from(token & 0x0f);
        if len == 15 {
            let Some(extended) = extend(&mut sp, len) else {
                return;
            };
            len = extended;
        }
        len += 4;
        f(Op::Copy {
            pos: dp,
            len,
            offset,
        });
        dp += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgdict::lz4::{Lz4Compressor, Lz4Dictionary};
    use pgdict::pglz::{Compressor, PglzDictionary, Strategy};

    /// Rebuilds the datum from the ops, with `dict` as history.
    fn replay(ops: &[Op], dict: &[u8], raw: &[u8]) -> Vec<u8> {
        let mut out: Vec<u8> = Vec::new();
        for &op in ops {
            match op {
                Op::Literal { pos, len } => {
                    assert_eq!(pos, out.len());
                    out.extend_from_slice(&raw[pos..pos + len]);
                }
                Op::Copy { pos, len, offset } => {
                    assert_eq!(pos, out.len());
                    for i in 0..len {
                        let at = pos + i;
                        let byte = if offset > at {
                            dict[dict.len() - (offset - at)]
                        } else {
                            out[at - offset]
                        };
                        out.push(byte);
                    }
                }
            }
        }
        out
    }

    const DICT: &[u8] =
        b"{\"name\":\"\",\"country\":\"\",\"population\":,\"timezone\":\"Europe/\"}";
    const ROW: &[u8] = b"{\"name\":\"Lyon\",\"country\":\"FR\",\"population\":513275,\
        \"timezone\":\"Europe/Paris\"} {\"name\":\"Lyon\",\"country\":\"FR\"}";

    #[test]
    fn pglz_ops_replay_the_datum() {
        let dict = PglzDictionary::new(DICT);
        let payload = Compressor::new()
            .compress_with_dict(ROW, &dict, &Strategy::ALWAYS)
            .unwrap()
            .to_vec();
        let mut ops = Vec::new();
        pglz_ops(&payload, ROW.len(), |op| ops.push(op));
        assert!(ops
            .iter()
            .any(|op| matches!(op, Op::Copy { pos, offset, .. } if offset > pos)));
        assert_eq!(replay(&ops, DICT, ROW), ROW);
    }

    #[test]
    fn pglz_ops_replay_rows_of_every_mix_of_literals_and_copies() {
        let dict = PglzDictionary::new(DICT);
        let mut compressor = Compressor::new();
        let mut state = 0x2545_f491_u32;
        for n in 0..400usize {
            // Runs of noise (literals, up to whole control bytes of them) between pieces of
            // the dictionary and of the row itself (copies).
            let mut row = Vec::new();
            while row.len() < 20 + n {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let noise = (state % 23) as usize;
                row.extend((0..noise).map(|i| (state >> (i % 24)) as u8));
                let from: &[u8] = if state & 1 == 0 { DICT } else { ROW };
                let start = (state >> 8) as usize % (from.len() - 12);
                row.extend_from_slice(&from[start..start + 3 + (state >> 20) as usize % 10]);
            }
            let Some(payload) = compressor.compress_with_dict(&row, &dict, &Strategy::ALWAYS)
            else {
                continue;
            };
            let mut ops = Vec::new();
            pglz_ops(payload, row.len(), |op| ops.push(op));
            assert_eq!(replay(&ops, DICT, &row), row, "row {n}");
        }
    }

    /// A pglz payload written by hand, with the ops it holds: literals, a short copy, a copy
    /// of 18 bytes and more (its third tag byte), offsets needing the tag's high nibble, and a
    /// second control byte with two of its eight items.
    fn hand_made_pglz() -> (Vec<u8>, usize, Vec<Op>) {
        let copy = |pos, len, offset| Op::Copy { pos, len, offset };
        let literal = |pos| Op::Literal { pos, len: 1 };
        let payload = vec![
            0b0011_0100, // items 2, 4 and 5 are tags
            b'x',
            b'y',
            0x02, // length 3 + 2, offset 2
            0x02,
            b'z',
            0x0f, // length 18 + 200, offset 7
            0x07,
            200,
            0x91, // length 3 + 1, offset 0x9ab: reaches into the dictionary
            0xab,
            b'u',
            b'v',
            0b0000_0001, // item 0 is a tag
            0x1e,        // length 3 + 14, offset 0x12c
            0x2c,
            b'w',
        ];
        let ops = vec![
            literal(0),
            literal(1),
            copy(2, 5, 2),
            literal(7),
            copy(8, 218, 7),
            copy(226, 4, 0x9ab),
            literal(230),
            literal(231),
            copy(232, 17, 0x12c),
            literal(249),
        ];
        (payload, 250, ops)
    }

    fn pglz_ops_of(payload: &[u8], raw_len: usize) -> Vec<Op> {
        let mut ops = Vec::new();
        pglz_ops(payload, raw_len, |op| ops.push(op));
        ops
    }

    #[test]
    fn pglz_ops_read_every_kind_of_item() {
        let (payload, raw_len, ops) = hand_made_pglz();
        assert_eq!(pglz_ops_of(&payload, raw_len), ops);
    }

    #[test]
    fn pglz_ops_stop_at_the_end_of_the_payload_or_of_the_datum() {
        let (payload, raw_len, ops) = hand_made_pglz();
        // The payload ends before the datum's length: the ops it holds, nothing past its end.
        assert_eq!(pglz_ops_of(&payload, raw_len + 50), ops);
        // Cut inside a tag (after its first byte) or before a long tag's third byte: the
        // ops before it, no partial copy.
        assert_eq!(pglz_ops_of(&payload[..15], raw_len), ops[..8]);
        assert_eq!(pglz_ops_of(&payload[..8], raw_len), ops[..4]);
        // The datum ends first: the ops that write its bytes.
        assert_eq!(pglz_ops_of(&payload, 8), ops[..4]);
        assert_eq!(pglz_ops_of(&payload, 9), ops[..5]);
        assert_eq!(pglz_ops_of(&payload, 0), []);
        assert_eq!(pglz_ops_of(&[], raw_len), []);
    }

    #[test]
    fn lz4_ops_replay_the_datum() {
        let dict = Lz4Dictionary::new(DICT);
        let block = Lz4Compressor::new().compress_with_dict(ROW, &dict).unwrap();
        let mut ops = Vec::new();
        lz4_ops(&block, |op| ops.push(op));
        assert!(ops
            .iter()
            .any(|op| matches!(op, Op::Copy { pos, offset, .. } if offset > pos)));
        assert_eq!(replay(&ops, DICT, ROW), ROW);
    }

    /// An lz4 block written by hand, with the ops it holds: a literal run and a match whose
    /// lengths take extension bytes (one of them 255, continued), a two-byte offset, a
    /// sequence without literals, and the last sequence's literals.
    fn hand_made_lz4() -> (Vec<u8>, Vec<Op>) {
        let mut block = vec![0xff, 5]; // 15 + 5 literals; match length extended
        block.extend_from_slice(&[b'a'; 20]);
        block.extend_from_slice(&[0x02, 0x01]); // offset 0x102
        block.extend_from_slice(&[255, 10]); // match length 4 + 15 + 255 + 10
        block.extend_from_slice(&[0x03, 0x05, 0x00]); // no literals, length 4 + 3, offset 5
        block.extend_from_slice(&[0x20, b'b', b'c']); // the last sequence: 2 literals
        let ops = vec![
            Op::Literal { pos: 0, len: 20 },
            Op::Copy {
                pos: 20,
                len: 284,
                offset: 0x102,
            },
            Op::Copy {
                pos: 304,
                len: 7,
                offset: 5,
            },
            Op::Literal { pos: 311, len: 2 },
        ];
        (block, ops)
    }

    fn lz4_ops_of(block: &[u8]) -> Vec<Op> {
        let mut ops = Vec::new();
        lz4_ops(block, |op| ops.push(op));
        ops
    }

    #[test]
    fn lz4_ops_read_every_kind_of_sequence() {
        let (block, ops) = hand_made_lz4();
        assert_eq!(lz4_ops_of(&block), ops);
    }

    #[test]
    fn lz4_ops_stop_at_the_end_of_the_block() {
        let (block, ops) = hand_made_lz4();
        assert_eq!(lz4_ops_of(&[]), []);
        // Ending after a match (no last sequence), inside a match length's extension, before
        // an offset, or inside a literal length's extension: the ops before, no partial one.
        assert_eq!(lz4_ops_of(&block[..29]), ops[..3]);
        assert_eq!(lz4_ops_of(&block[..25]), ops[..1]);
        assert_eq!(lz4_ops_of(&block[..22]), ops[..1]);
        assert_eq!(lz4_ops_of(&block[..1]), []);
    }
}
