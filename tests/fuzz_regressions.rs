//! Regression tests for what the fuzz targets (`fuzz/`, see `fuzz/README.md`) found.
//!
//! Each test is named after what went wrong, states the input by hand (decoded from the
//! crash artifact's layout: `fuzz/src/lib.rs`) and says which target found it.

use std::hint::black_box;

use pgdict::datum::{self, NoDictionaries};
use pgdict::lz4;

/// An lz4 block: 20 literals "0123456789abcdefghij", then a 24-byte match with **offset 0**,
/// then a last literal run. The block format calls offset 0 invalid, but liblz4 does not
/// check for it: a whole decode writes zeros for the match (see the test after this one),
/// and a partial decode copies the match from the output onto itself, leaving whatever was in
/// the output buffer.
fn offset_zero_block() -> Vec<u8> {
    // Token: literal length 15 + an extension byte of 5 = 20; match length 15 + 5 + 4 = 24.
    let mut block = vec![0xff, 5];
    block.extend_from_slice(b"0123456789abcdefghij");
    // Offset 0, then the match length's extension byte 5.
    block.extend_from_slice(&[0x00, 0x00, 5]);
    // A last sequence of literals, so the block is long enough for liblz4's end rules.
    block.push(0x80);
    block.extend_from_slice(b"ABCDEFGH");
    block
}

/// Found by `lz4_dict_decode` (its reference decoder rejected a match liblz4's partial decoder
/// had accepted, and the returned bytes were AddressSanitizer's 0xbe malloc fill).
///
/// `lz4::decompress_prefix` (and `_with_dict`, `Lz4Dictionary::decompress_prefix`, the datum
/// decoder's `decode_prefix` for lz4 datums) allocates the output uninitialised and trusts
/// liblz4's returned length. With an offset-0 match, `LZ4_decompress_safe_partial` "copies"
/// the match from the bytes it is writing and reports them as written: the caller gets
/// uninitialised heap memory (an information leak, and undefined behaviour in Rust, the
/// `Vec`'s bytes were never initialised). The heap is poisoned with 0xAA just before, so
/// the leaked bytes show.
///
/// pgdict now refuses such a block before liblz4 reads it (the third test), and these two pin
/// that refusal where the leak was: any bytes handed out would be a regression.
#[test]
fn lz4_prefix_with_offset_zero_match_returns_no_unwritten_bytes() {
    let block = offset_zero_block();
    let (raw_len, prefix_len) = (100, 40);
    for poison in [0xaa_u8, 0x55] {
        drop(black_box(vec![poison; prefix_len]));
        // Refused before liblz4 reads it (it used to hand out bytes it never wrote).
        assert_eq!(
            lz4::decompress_prefix(&block, raw_len, prefix_len),
            Err(lz4::Error::ZeroOffset {
                pos: 22,
                payload_len: block.len()
            }),
            "heap poisoned with {poison:#x}"
        );
    }
}

/// The same block through the datum decoder: `substr()` of an lz4 datum.
#[test]
fn lz4_datum_prefix_with_offset_zero_match_returns_no_unwritten_bytes() {
    let block = offset_zero_block();
    let raw_len: u32 = 100;
    let total_len = (8 + block.len()) as u32;
    let mut stored = ((total_len << 2) | 0b10).to_le_bytes().to_vec();
    stored.extend_from_slice(&(raw_len | (1 << 30)).to_le_bytes()); // method 1: lz4
    stored.extend_from_slice(&block);
    let prefix_len = 40;
    drop(black_box(vec![0xaa_u8; prefix_len]));
    match datum::decode_prefix(&stored, prefix_len, &NoDictionaries) {
        Err(datum::DatumError::Lz4 {
            payload_pos: 8,
            error: lz4::Error::ZeroOffset { pos: 22, .. },
        }) => {}
        other => panic!("an offset-0 match in an lz4 datum's prefix: {other:?}"),
    }
}

/// liblz4 accepts an offset-0 match in a whole decode too (as PostgreSQL, which uses the same
/// `LZ4_decompress_safe`, does): it writes zeros for it, while its partial decoder writes other
/// bytes (the tests above). pgdict rejects the block before liblz4 sees it, so a whole read and
/// `substr()` of such a datum fail alike, with an error naming the offset field's position.
#[test]
fn lz4_offset_zero_match_is_rejected_whole_and_prefix() {
    let block = offset_zero_block();
    let raw_len = 20 + 24 + 8;
    // The offset field follows the token, the extension byte and 20 literals.
    let expected = lz4::Error::ZeroOffset {
        pos: 22,
        payload_len: block.len(),
    };
    assert_eq!(lz4::decompress(&block, raw_len), Err(expected.clone()));
    assert_eq!(lz4::decompress_prefix(&block, raw_len, 30), Err(expected));
}

/// Found by `round_trip` (built with debug assertions, as `cargo fuzz build -a` and `cargo
/// test` build): compressing with a dictionary, a match exactly 4095 bytes back (which
/// dictionary mode allows on purpose, `DICT_WALK_LIMIT`, so that all of `DICT_WINDOW` is
/// reachable from the datum's first byte) trips the debug assertion in the tag writer
/// (`TagWriter::tag`, `src/pglz/compress.rs`), which still checks plain pglz's limit
/// `off < WALK_LIMIT` (4095):
///
/// ```text
/// assertion failed: (MIN_MATCH..=MAX_MATCH).contains(&len) && (1..WALK_LIMIT).contains(&off)
/// ```
///
/// Release builds are unaffected (the tag encodes 4095 correctly and it decodes). Here the
/// datum's first 40 bytes are the dictionary's first 40: one tag, offset 4095, length 40.
#[test]
fn pglz_dict_match_at_offset_4095_compresses() {
    use pgdict::pglz::{self, Compressor, PglzDictionary, Strategy};

    // 4095 pseudo-random bytes (a 64-bit LCG's top byte), so no other match competes.
    let mut state = 1u64;
    let dict: Vec<u8> = (0..4095)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect();
    let input = dict[..40].to_vec();
    let prepared = PglzDictionary::new(&dict);
    let payload = Compressor::new()
        .compress_with_dict(&input, &prepared, &Strategy::DICTIONARY)
        .expect("a 40-byte match compresses")
        .to_vec();
    // Control byte 0b1 (one tag); tag 0xff 0xff: offset 0xfff, length code 0xf (long);
    // length byte 40 - 18 = 22.
    assert_eq!(payload, [0x01, 0xff, 0xff, 22]);
    assert_eq!(pglz::decompress_with_dict(&payload, 40, &dict), Ok(input));
}

/// Found by `zstd_dict_decode` and `no_output_leak`: the same corrupt frame gives a different
/// *error* on a decompression context that has already used the dictionary (`TooLong`,
/// zstd's `dstSize_tooSmall`) than on a fresh one (`Corrupt`, `corruption_detected`).
/// libzstd picks its sequence decoder by whether the dictionary is "cold" in the context
/// (`ddictIsCold`), and the two decoders notice this damage at different points. Not a
/// pgdict bug: both fail. This pins what pgdict can promise, and what the fuzz targets now
/// check: a reused decoder and a fresh one agree on success or failure, and on the bytes.
#[test]
fn zstd_corrupt_frame_fails_on_fresh_and_reused_decoders() {
    use pgdict::zstd::{self, ZstdDecompressor, ZstdDictionary};

    // A magicless frame header (no content size, window 1 KiB), one compressed last block
    // of 8 bytes whose sequences section has 0 sequences and then extra bytes, and trailing
    // bytes.
    let payload = [
        0x00, 0x00, 0x45, 0x00, 0x00, 0x00, 0x01, 0x00, 0xff, 0xff, 0xfd, 0xff, 0xfb, 0x02, 0xa0,
        0x1e, 0x20,
    ];
    let dict_bytes: Vec<u8> =
        b"{\"type\":\"page_viewed\",\"ts\":\"2024-03-11T07:00:42Z\"}\n".repeat(80);
    let dict = ZstdDictionary::new(&dict_bytes).expect("raw content prepares");
    let raw_len = 510;
    let mut reused = ZstdDecompressor::new().expect("a context");
    for _ in 0..3 {
        let fresh = zstd::decompress_with_dict(&payload, raw_len, &dict);
        let warm = reused.decompress_with_dict(&payload, raw_len, &dict);
        assert!(fresh.is_err(), "{fresh:?}");
        assert!(warm.is_err(), "{warm:?}");
    }
}

/// Found by `zstd_dict_decode`: a payload of **two** magicless frames. The whole decode
/// (`ZSTD_decompressDCtx`/`_usingDDict`, which decode every frame in the buffer one after
/// another) accepts it and returns both frames' bytes; the prefix decode (streaming, which
/// stops at the end of the first frame) refuses the same payload with `PrefixShort` as soon
/// as the prefix reaches into the second frame. So `substr()` of a datum fails where reading
/// the whole value works. The same holds with a dictionary, and for extended zstd datums.
///
/// DESIGN.md says a zstd payload is *a* frame, so the likely fix is for the whole decode to
/// reject anything but exactly one frame; this test asks only that the two decodes agree.
#[test]
fn zstd_two_frame_payload_whole_and_prefix_decodes_agree() {
    use pgdict::zstd;

    let mut payload = zstd::compress(b"first frame, ").expect("compresses");
    payload.extend_from_slice(&zstd::compress(b"second frame").expect("compresses"));
    // Both refuse the second frame as bytes after the first, the prefix decode too (a prefix
    // cut from two frames would give `substr()` bytes of a datum whose whole read fails), for
    // a datum whose prefix is cut from a whole decode and for one streamed.
    let frame_len = zstd::compress(b"first frame, ").expect("compresses").len();
    let trailing = zstd::Error::TrailingBytes {
        frame_len,
        payload_len: payload.len(),
    };
    for raw_len in [25, zstd::PREFIX_WHOLE_MAX + 1] {
        assert_eq!(zstd::decompress(&payload, raw_len), Err(trailing.clone()));
        for prefix in [10, 20] {
            assert_eq!(
                zstd::decompress_prefix(&payload, raw_len, prefix),
                Err(trailing.clone()),
                "raw_len {raw_len}, prefix {prefix}"
            );
        }
    }
}

/// Found by `zstd_dict_decode` (twenty-fourth session), against a decompressor that kept its
/// streaming context between prefix decodes: a frame whose header declares a content size of
/// 0 (descriptor 0x80: a 4-byte content size, window 1 KiB), then three empty raw blocks and a
/// raw block claiming 256 bytes, cut short after 86. zstd sizes a streaming context's output
/// buffer from the content size, so a fresh context has no room and fails ("Destination buffer
/// is too small"), while a context that had decoded any frame before kept its buffer and
/// handed out the block's first bytes. The prefix of one corrupt datum depended on what the
/// decoder had read before it. Now only datums over `PREFIX_WHOLE_MAX` bytes are streamed, in
/// a context of their own, and shorter ones have their prefixes cut from a whole decode.
#[test]
fn zstd_prefix_does_not_depend_on_the_decoders_history() {
    use pgdict::zstd::{self, ZstdDecompressor};

    let mut payload = vec![0x80, 0x00, 0x00, 0x00, 0x00, 0x00];
    payload.extend_from_slice(&[0x00; 9]); // three empty raw blocks
    payload.extend_from_slice(&[0x00, 0x08, 0x00]); // a raw block of 256 bytes
    payload.extend_from_slice(&[0x08, 0x29, 0x00]);
    payload.extend_from_slice(&[0xff; 83]);
    // An earlier datum's frame: no content size, window 1 KiB, a raw last block "a".
    let earlier = [0x00, 0x00, 0x09, 0x00, 0x00, b'a'];
    for raw_len in [9, 1_048_321] {
        let fresh = zstd::decompress_prefix(&payload, raw_len, 9);
        assert!(fresh.is_err(), "raw_len {raw_len}: {fresh:?}");
        let mut reused = ZstdDecompressor::new().expect("a context");
        for earlier_len in [1, zstd::PREFIX_WHOLE_MAX + 1] {
            assert_eq!(
                reused
                    .decompress_prefix(&earlier, earlier_len, 1)
                    .as_deref(),
                Ok(&b"a"[..])
            );
            let after = reused.decompress_prefix(&payload, raw_len, 9);
            assert_eq!(after, fresh, "raw_len {raw_len}, after {earlier_len}");
        }
    }
}

/// Found by `dict_file_parse`: a float in a dictionary's metadata (here under a key this
/// version does not know, kept in `Metadata::other`) changes in its last bits when the
/// metadata is written with `Metadata::to_json` and read back. serde_json, built without its
/// `float_roundtrip` feature, parses floats with a fast algorithm that is not always
/// correctly rounded, so the shortest representation it writes can read back as a
/// neighbouring `f64`. The dictionary file itself is unaffected (it keeps the metadata text
/// byte for byte); what changes is metadata that is parsed and written again, as a store
/// that re-serialises it would. Enabling `serde_json/float_roundtrip` would fix it.
#[test]
fn dict_metadata_float_survives_to_json_and_back() {
    use pgdict::dict::Metadata;

    let mut metadata = Metadata::new();
    let value = serde_json::Number::from_f64(4.000033333333333e49).expect("finite");
    metadata.other.insert("ratio".into(), value.into());
    let json = metadata.to_json();
    assert_eq!(
        Metadata::from_json(&json),
        Ok(metadata),
        "read back from {json}"
    );
}

/// Found by `zstd_dict_decode` (forty-ninth session): a 6-byte frame (no content size, a
/// 256 KiB window) of one RLE block repeating `C` 136,380 times, more than a block may hold
/// (128 KiB). libzstd's one-shot decoder took it, and the whole decode gave the 136,380 bytes;
/// its streaming decoder refused it ("Destination buffer is too small"), so the prefix of a
/// datum that decoded whole failed. Both now refuse the frame before libzstd sees it.
#[test]
fn zstd_oversized_rle_block_is_refused_whole_and_prefix() {
    use pgdict::zstd::{self, Error};

    let size: u32 = 136_380;
    let header = 1 | 1 << 1 | size << 3; // last block, RLE, Block_Size
    let payload = [
        0x00, // frame header descriptor: no content size, not single segment, no checksum
        0x40, // window descriptor: 2^18 bytes
        header as u8,
        (header >> 8) as u8,
        (header >> 16) as u8,
        b'C',
    ];
    let too_large = Error::BlockTooLarge {
        size: size as usize,
        max: zstd::MAX_BLOCK_CONTENT,
    };
    assert_eq!(
        zstd::decompress(&payload, size as usize),
        Err(too_large.clone())
    );
    assert_eq!(
        zstd::decompress_prefix(&payload, size as usize, 20),
        Err(too_large)
    );
    // The largest block allowed still decodes, whole and by prefix.
    let header = 1 | 1 << 1 | (zstd::MAX_BLOCK_CONTENT as u32) << 3;
    let payload = [
        0x00,
        0x40,
        header as u8,
        (header >> 8) as u8,
        (header >> 16) as u8,
        b'C',
    ];
    let whole = zstd::decompress(&payload, zstd::MAX_BLOCK_CONTENT).unwrap();
    assert!(whole.len() == zstd::MAX_BLOCK_CONTENT && whole.iter().all(|&b| b == b'C'));
    assert_eq!(
        zstd::decompress_prefix(&payload, zstd::MAX_BLOCK_CONTENT, 20).unwrap(),
        [b'C'; 20]
    );
}
