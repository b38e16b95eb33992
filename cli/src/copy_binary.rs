//! PostgreSQL's binary `COPY` format, for one `bytea` column: what `COPY t (payload) FROM STDIN
//! (FORMAT binary)` loads and `COPY (SELECT payload FROM t) TO STDOUT (FORMAT binary)` writes
//! (PostgreSQL's documentation, "COPY", "Binary Format"). Integers are big-endian.
//!
//! ```text
//!   signature   11 bytes   PGCOPY\n\377\r\n\0
//!   flags       i32        bit 16: OIDs follow each tuple's field count (none since
//!                          PostgreSQL 12: refused); bits 0-15 must be 0; 17-31 are ignored
//!   extension   i32 n      then n bytes, skipped
//!   tuple       i16 1      the field count: one column
//!               i32 len    then len bytes, the value; -1: NULL (no bytes)
//!   ...
//!   trailer     i16 -1     (PostgreSQL also takes the input ending after a whole tuple)
//! ```
//!
//! [`write_header`], [`write_tuple`] and [`write_trailer`] write datums as tuples; [`Reader`]
//! reads tuples back as datums, skipping NULLs.
//! Each refuses what it cannot account for (a tuple of several columns, a truncated value),
//! naming the tuple and the byte, and a value's length is checked against PostgreSQL's limit
//! before it is read, which grows its buffer as bytes arrive: a damaged length cannot make it
//! allocate more than the input holds.

use std::io::{self, Read, Write};

use anyhow::{bail, Context};
use pgdict_trainer::source::datums_file::{self, MAX_DATUM_LEN};

/// The first bytes of every binary COPY stream.
pub const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// The flag that says each tuple carries an OID (PostgreSQL 11 and older, `WITH OIDS`).
const OIDS: u32 = 1 << 16;

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

/// Reads the values of a binary COPY stream of one column, in order, skipping NULLs.
pub struct Reader<R> {
    pub input: R,
    /// Bytes read so far.
    pub offset: u64,
    /// Tuples read so far (1-based number of the last one).
    tuples: u64,
    header_read: bool,
    ended: bool,
}

impl<R: Read> Reader<R> {
    pub fn new(input: R) -> Reader<R> {
        Reader {
            input,
            offset: 0,
            tuples: 0,
            header_read: false,
            ended: false,
        }
    }

    /// The next value and the byte offset of its first byte; `None` after the trailer or at
    /// the end of the input after a whole tuple.
    pub fn next_value(&mut self) -> anyhow::Result<Option<(Vec<u8>, u64)>> {
        if !self.header_read {
            self.read_header()?;
            self.header_read = true;
        }
        while !self.ended {
            let at = self.offset;
            let mut count = [0u8; 2];
            match self.read_up_to(&mut count)? {
                0 => {
                    self.ended = true;
                    break;
                }
                2 => {}
                _ => bail!("the COPY data ends inside the field count at byte {at}"),
            }
            let count = i16::from_be_bytes(count);
            if count == -1 {
                self.ended = true;
                let mut more = [0u8; 1];
                if self.read_up_to(&mut more)? != 0 {
                    bail!("the COPY data goes on after its trailer (byte {})", at + 2);
                }
                break;
            }
            self.tuples += 1;
            if count == 0 {
                bail!(
                    "COPY tuple {} (byte {at}) has no columns: the end `pgdict compress` writes \
                     when it stops on an error (the tuples before it are not all of the rows)",
                    self.tuples
                );
            }
            if count != 1 {
                bail!(
                    "COPY tuple {} (byte {at}) has {count} columns, where pgdict reads one",
                    self.tuples
                );
            }
            let len = i32::from_be_bytes(self.read_exact_at::<4>("field length")?);
            if len == -1 {
                continue; // NULL: no datum.
            }
            let len = match usize::try_from(len) {
                Ok(len) if len <= MAX_DATUM_LEN => len,
                Ok(_) => bail!(
                    "COPY tuple {} (byte {at}) gives its value a length of {len} bytes, over \
                     PostgreSQL's limit of {MAX_DATUM_LEN}",
                    self.tuples
                ),
                Err(_) => bail!(
                    "COPY tuple {} (byte {at}) gives its value a length of {len} (-1, NULL, is \
                     the only one below 0)",
                    self.tuples
                ),
            };
            let start = self.offset;
            // Grows as bytes arrive: a damaged length cannot make this allocate 1 GiB.
            let mut value = Vec::new();
            (&mut self.input)
                .take(len as u64)
                .read_to_end(&mut value)
                .with_context(|| format!("cannot read COPY tuple {}", self.tuples))?;
            self.offset += value.len() as u64;
            if value.len() < len {
                bail!(
                    "COPY tuple {} (byte {at}) says its value is {len} bytes long, but only {} \
                     bytes are left",
                    self.tuples,
                    value.len()
                );
            }
            return Ok(Some((value, start)));
        }
        Ok(None)
    }

    fn read_header(&mut self) -> anyhow::Result<()> {
        let mut signature = [0u8; 11];
        let read = self.read_up_to(&mut signature)?;
        if signature[..read] != SIGNATURE[..read] || read < SIGNATURE.len() {
            bail!("the input does not start with the COPY signature PGCOPY\\n\\377\\r\\n\\0");
        }
        let flags = u32::from_be_bytes(self.read_exact_at::<4>("header flags")?);
        if flags & OIDS != 0 {
            bail!("the COPY data carries OIDs (WITH OIDS, PostgreSQL 11 and older): copy the column alone");
        }
        if flags & 0xffff != 0 {
            bail!("the COPY header has flags {flags:#010x}, which no PostgreSQL release writes");
        }
        let extension = u32::from_be_bytes(self.read_exact_at::<4>("header extension length")?);
        let skipped = io::copy(
            &mut (&mut self.input).take(u64::from(extension)),
            &mut io::sink(),
        )
        .context("cannot read the COPY header")?;
        self.offset += skipped;
        if skipped < u64::from(extension) {
            bail!("the COPY header extension of {extension} bytes is cut short");
        }
        Ok(())
    }

    /// `N` bytes that must be there, `what` naming them if they are not.
    fn read_exact_at<const N: usize>(&mut self, what: &str) -> anyhow::Result<[u8; N]> {
        let at = self.offset;
        let mut bytes = [0u8; N];
        if self.read_up_to(&mut bytes)? < N {
            bail!("the COPY data ends inside the {what} at byte {at}");
        }
        Ok(bytes)
    }

    /// Fills `buf` as far as the input goes; the number of bytes read.
    fn read_up_to(&mut self, buf: &mut [u8]) -> anyhow::Result<usize> {
        let filled =
            datums_file::read_up_to(&mut self.input, buf).context("cannot read the COPY data")?;
        self.offset += filled as u64;
        Ok(filled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy_of(values: &[Option<&[u8]>]) -> Vec<u8> {
        let mut out = Vec::new();
        write_header(&mut out).unwrap();
        for value in values {
            match value {
                Some(value) => write_tuple(&mut out, value).unwrap(),
                None => out.extend_from_slice(&[0, 1, 0xff, 0xff, 0xff, 0xff]),
            }
        }
        write_trailer(&mut out).unwrap();
        out
    }

    fn values(input: &[u8]) -> anyhow::Result<Vec<(Vec<u8>, u64)>> {
        let mut reader = Reader::new(input);
        let mut values = Vec::new();
        while let Some(value) = reader.next_value()? {
            values.push(value);
        }
        Ok(values)
    }

    #[test]
    fn values_come_back_nulls_skipped() {
        let input = copy_of(&[Some(b"\x07abc"), None, Some(b""), Some(b"\x05z")]);
        let read = values(&input).unwrap();
        assert_eq!(
            read,
            vec![
                (b"\x07abc".to_vec(), 25),
                (Vec::new(), 41),
                (b"\x05z".to_vec(), 47)
            ]
        );
        // Without the trailer, as PostgreSQL takes it; a header extension is skipped.
        assert_eq!(values(&input[..input.len() - 2]).unwrap().len(), 3);
        let mut extended = input.clone();
        extended.splice(15..19, [0, 0, 0, 3, b'x', b'y', b'z']);
        assert_eq!(values(&extended).unwrap()[0].0, b"\x07abc");
    }

    proptest::proptest! {
        // What the writer writes reads back; any bytes after a valid header read or fail,
        // never panic, and allocate no more than they hold.
        #[test]
        fn written_values_read_back_and_any_bytes_are_safe(
            given in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..40)),
                0..20,
            ),
            tail in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        ) {
            let slices: Vec<Option<&[u8]>> = given.iter().map(|v| v.as_deref()).collect();
            let read: Vec<Vec<u8>> = values(&copy_of(&slices))
                .unwrap()
                .into_iter()
                .map(|(value, _)| value)
                .collect();
            let expected: Vec<Vec<u8>> = given.iter().flatten().cloned().collect();
            proptest::prop_assert_eq!(read, expected);
            let mut input = copy_of(&[]);
            input.truncate(19);
            input.extend_from_slice(&tail);
            let _ = values(&input);
        }
    }

    #[test]
    fn what_cannot_be_read_is_named() {
        let input = copy_of(&[Some(b"\x07abc")]);
        let error = |input: &[u8]| format!("{:#}", values(input).unwrap_err());
        assert!(error(b"PGCOPY\n").contains("COPY signature"));
        assert!(error(b"hello world, no copy").contains("COPY signature"));
        let mut oids = input.clone();
        oids[12] = 1;
        assert!(error(&oids).contains("OIDs"));
        let mut reserved = input.clone();
        reserved[14] = 1;
        assert!(error(&reserved).contains("flags 0x00000001"));
        assert!(error(&input[..21]).contains("field length at byte 21"));
        assert!(error(&input[..26]).contains("only 1 bytes are left"));
        let mut two = input.clone();
        two[20] = 2;
        assert!(error(&two).contains("tuple 1 (byte 19) has 2 columns"));
        let mut long = input.clone();
        long[21..25].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
        assert!(error(&long).contains("over PostgreSQL's limit"));
        let mut negative = input.clone();
        negative[21..25].copy_from_slice(&(-2i32).to_be_bytes());
        assert!(error(&negative).contains("a length of -2 (-1, NULL"));
        let mut after = input.clone();
        after.push(0);
        assert!(error(&after).contains("after its trailer"));
    }
}
