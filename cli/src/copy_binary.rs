//! Writing PostgreSQL's binary `COPY` format for one column: what `COPY t (payload) FROM STDIN
//! (FORMAT binary)` loads (into a `bytea` column for datums, a `text` or `bytea` one for rows).
//! The format, and its reader, are `pgdict_trainer::source::copy`'s.
//!
//! [`write_header`], [`write_tuple`] and [`write_trailer`] write values as tuples of one
//! column; [`BROKEN_END`] marks an output that an error stopped.

use std::io::{self, Write};

pub use pgdict_trainer::source::copy::{BinaryReader, SIGNATURE};

/// A tuple of no columns, where COPY expects one: what ends an output that an error stopped
/// half way, so that `COPY ... FROM` fails rather than loading the tuples before it (it takes
/// data that ends after a whole tuple).
pub const BROKEN_END: &[u8] = &[0, 0];

/// Writes the header: the signature, no flags, no header extension.
pub fn write_header(out: &mut impl Write) -> io::Result<()> {
    out.write_all(SIGNATURE)?;
    out.write_all(&0u32.to_be_bytes())?;
    out.write_all(&0u32.to_be_bytes())
}

/// Writes one tuple: one field, `datum`.
pub fn write_tuple(out: &mut Vec<u8>, datum: &[u8]) -> io::Result<()> {
    let len = i32::try_from(datum.len())
        .map_err(|_| io::Error::other("a datum too long for one COPY field"))?;
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(datum);
    Ok(())
}

/// Writes the trailer, which ends the tuples.
pub fn write_trailer(out: &mut impl Write) -> io::Result<()> {
    out.write_all(&(-1i16).to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        // What the writer writes, the reader reads back (NULLs, written by hand, skipped).
        #[test]
        fn written_values_read_back(
            given in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..40)),
                0..20,
            ),
            trailer: bool,
        ) {
            let mut input = Vec::new();
            write_header(&mut input).unwrap();
            for value in &given {
                match value {
                    Some(value) => write_tuple(&mut input, value).unwrap(),
                    None => input.extend_from_slice(&[0, 1, 0xff, 0xff, 0xff, 0xff]),
                }
            }
            if trailer {
                write_trailer(&mut input).unwrap();
            }
            let mut reader = BinaryReader::new(&input[..], None);
            let mut read = Vec::new();
            while let Some((value, _)) = reader.next_value().unwrap() {
                read.push(value);
            }
            let expected: Vec<Vec<u8>> = given.iter().flatten().cloned().collect();
            proptest::prop_assert_eq!(read, expected);
            proptest::prop_assert_eq!(reader.offset, input.len() as u64);
            let mut broken = input[..input.len() - if trailer { 2 } else { 0 }].to_vec();
            broken.extend_from_slice(BROKEN_END);
            let mut reader = BinaryReader::new(&broken[..], None);
            let error = loop {
                match reader.next_value() {
                    Ok(Some(_)) => {}
                    Ok(None) => panic!("the broken end was read as an end"),
                    Err(error) => break error.to_string(),
                }
            };
            proptest::prop_assert!(error.contains("has no columns"), "{}", error);
        }
    }
}
