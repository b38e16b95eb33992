//! Dictionary file parsing (`pgdict::dict::Dictionary::from_bytes`) on arbitrary bytes.
//!
//! Layout: a mode byte, then the file. The file's two SHA-256 sums would stop almost every
//! mutation at the checksum check, so the mode can repair them before parsing: bit 0
//! recomputes `content_sha256` (when the lengths in the header describe the file), bit 1 the
//! trailing `file_sha256`. The fuzzer then reaches the checks behind them: id, codec bits,
//! metadata (UTF-8, JSON, its shape).
//!
//! Checks: no panic; a file that parses writes back byte for byte (`to_bytes`) and parses
//! again to the same dictionary; its content is not empty, and its content and metadata are
//! within their caps; its metadata reads back the same after `Metadata::to_json`; it prepares
//! for the codecs unless it is a zstd-format dictionary zstd refuses; and (the module's
//! promise) cutting off its last byte, or flipping any one bit (the mode byte picks which),
//! makes it fail.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgdict::datum::DatumError;
use pgdict::dict::file::{sha256, CHECKSUM_LEN, HEADER_LEN, MAX_CONTENT_LEN, MAX_METADATA_LEN};
use pgdict::dict::{Dictionary, Metadata};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, file)) = data.split_first() else {
        return;
    };
    let mut file = file.to_vec();
    if mode & 1 != 0 && file.len() >= HEADER_LEN + CHECKSUM_LEN {
        let metadata_len = u32::from_le_bytes(file[24..28].try_into().unwrap()) as usize;
        let content_start = HEADER_LEN.saturating_add(metadata_len);
        let content_end = file.len() - CHECKSUM_LEN;
        if content_start <= content_end {
            let sum = sha256(&file[content_start..content_end]);
            file[32..64].copy_from_slice(&sum);
        }
    }
    if mode & 2 != 0 && file.len() >= CHECKSUM_LEN {
        let body_end = file.len() - CHECKSUM_LEN;
        let sum = sha256(&file[..body_end]);
        file[body_end..].copy_from_slice(&sum);
    }

    let Ok(dict) = Dictionary::from_bytes(&file) else {
        return;
    };
    assert_eq!(dict.file_len(), file.len());
    let written = dict.to_bytes();
    assert_eq!(written, file, "the file does not write back byte for byte");
    assert_eq!(Dictionary::from_bytes(&written).as_ref(), Ok(&dict));
    assert!(dict.id() != 0 && !dict.codecs().is_empty());
    assert_eq!(dict.content_sha256(), sha256(dict.content()));
    assert!((1..=MAX_CONTENT_LEN).contains(&dict.content().len()));
    assert!(dict.metadata_json().len() <= MAX_METADATA_LEN);

    let metadata = dict.metadata();
    assert_eq!(
        Metadata::from_json(dict.metadata_json()).as_ref(),
        Ok(&metadata)
    );
    let again = Metadata::from_json(&metadata.to_json());
    assert_eq!(
        again.as_ref(),
        Ok(&metadata),
        "metadata JSON: {}",
        metadata.to_json()
    );

    match dict.prepare() {
        Ok(prepared) => {
            assert_eq!(prepared.id(), dict.id());
            assert_eq!(prepared.as_bytes(), dict.content());
            assert_eq!(prepared.codecs(), Some(dict.codecs()));
        }
        Err(DatumError::DictionaryPrepare { .. }) => {
            assert!(dict.content().starts_with(&[0x37, 0xa4, 0x30, 0xec]));
        }
        Err(e) => panic!("a parsed dictionary does not prepare: {e:?}"),
    }

    // Every truncation and every single-bit flip is detected.
    assert!(Dictionary::from_bytes(&file[..file.len() - 1]).is_err());
    let bit = (usize::from(mode >> 2) * 104_729 + file.len()) % (file.len() * 8);
    file[bit / 8] ^= 1 << (bit % 8);
    assert!(
        Dictionary::from_bytes(&file).is_err(),
        "bit {bit} flipped goes unnoticed"
    );
});
