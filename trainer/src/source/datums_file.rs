//! The length-prefixed datums file: any bytes, one record per datum, nothing else.
//!
//! ```text
//!   record   u32  length, little-endian        0..=MAX_DATUM_LEN
//!            length bytes: the datum
//!   file     record*                           no header, no trailer; an empty file holds
//!                                              no datums
//! ```
//!
//! The format carries binary datums (newlines, NUL bytes, invalid UTF-8), which a file of lines
//! cannot. `pgdict-trainer` reads it (`--format datums`, or a `.datums` file), and the `pgdict`
//! CLI writes it (`compress` writes one stored datum per record), with this module's
//! [`Writer`] and [`Reader`].
//!
//! A reader rejects, naming the record (counting from 1) and its byte offset: a length prefix cut off by the
//! end of the file, a datum shorter than its prefix says, and a length over
//! [`MAX_DATUM_LEN`] (checked before anything is allocated, so a damaged prefix cannot make the
//! reader ask for 4 GiB).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// The longest datum a record may hold: PostgreSQL's varlena limit (1 GiB − 1), which is also
/// [`pgdict::datum::MAX_RAW_LEN`].
pub const MAX_DATUM_LEN: usize = pgdict::datum::MAX_RAW_LEN;

/// Length of a record's prefix.
pub const PREFIX_LEN: usize = 4;

/// A datums file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatumsFileError {
    /// Reading failed.
    #[error("datums file {origin}: cannot read record {record} at byte {offset}: {source}")]
    Io {
        /// The file.
        origin: String,
        /// The record's number, counting from 1.
        record: u64,
        /// Byte offset of the record's length prefix.
        offset: u64,
        /// What the system said.
        source: io::Error,
    },
    /// The file ends inside a record.
    #[error(
        "datums file {origin}: record {record} at byte {offset} is cut off: {what} (the file \
         ends after {have} of {need} bytes); is this a length-prefixed datums file (u32 \
         little-endian length, then the bytes)?"
    )]
    Truncated {
        /// The file.
        origin: String,
        /// The record's number, counting from 1.
        record: u64,
        /// Byte offset of the record's length prefix.
        offset: u64,
        /// "length prefix" or "datum".
        what: &'static str,
        /// Bytes there were.
        have: usize,
        /// Bytes there should have been.
        need: usize,
    },
    /// A length prefix over [`MAX_DATUM_LEN`].
    #[error(
        "datums file {origin}: record {record} at byte {offset} says it holds {len} bytes, over \
         the limit of {max}; is this a length-prefixed datums file (u32 little-endian length, \
         then the bytes)?"
    )]
    TooLong {
        /// The file.
        origin: String,
        /// The record's number, counting from 1.
        record: u64,
        /// Byte offset of the record's length prefix.
        offset: u64,
        /// The length read.
        len: u64,
        /// [`MAX_DATUM_LEN`].
        max: usize,
    },
}

/// Reads datums one by one from a datums file (an iterator of datums).
#[derive(Debug)]
pub struct Reader<R> {
    inner: R,
    origin: String,
    /// Records read so far.
    records_read: u64,
    offset: u64,
    done: bool,
}

impl<R: Read> Reader<R> {
    /// Reads from `inner`; `origin` names it in errors (a path, "standard input").
    pub fn new(inner: R, origin: impl Into<String>) -> Reader<R> {
        Reader {
            inner,
            origin: origin.into(),
            records_read: 0,
            offset: 0,
            done: false,
        }
    }

    /// The reader it reads from.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Byte offset of the next record: of the datums read so far, the bytes they span.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next datum, `Ok(None)` at the end of the file.
    pub fn read_datum(&mut self) -> Result<Option<Vec<u8>>, DatumsFileError> {
        let mut prefix = [0u8; PREFIX_LEN];
        let got = self.fill(&mut prefix)?;
        if got == 0 {
            return Ok(None);
        }
        if got < PREFIX_LEN {
            return Err(self.truncated("length prefix", got, PREFIX_LEN));
        }
        let len = u32::from_le_bytes(prefix) as usize;
        if len > MAX_DATUM_LEN {
            return Err(DatumsFileError::TooLong {
                origin: self.origin.clone(),
                record: self.record_number(),
                offset: self.offset,
                len: len as u64,
                max: MAX_DATUM_LEN,
            });
        }
        // Grow as bytes arrive rather than trusting the prefix with one allocation: a short,
        // damaged file then costs only what it holds.
        let mut datum = Vec::with_capacity(len.min(1 << 20));
        let read = (&mut self.inner)
            .take(len as u64)
            .read_to_end(&mut datum)
            .map_err(|source| self.io(source))?;
        if read < len {
            return Err(self.truncated("datum", PREFIX_LEN + read, PREFIX_LEN + len));
        }
        self.records_read += 1;
        self.offset += (PREFIX_LEN + len) as u64;
        Ok(Some(datum))
    }

    /// Reads until `buf` is full or the input ends; returns how many bytes were read.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, DatumsFileError> {
        read_up_to(&mut self.inner, buf).map_err(|source| self.io(source))
    }

    /// The number of the record being read, from 1, for errors.
    fn record_number(&self) -> u64 {
        self.records_read + 1
    }

    fn io(&self, source: io::Error) -> DatumsFileError {
        DatumsFileError::Io {
            origin: self.origin.clone(),
            record: self.record_number(),
            offset: self.offset,
            source,
        }
    }

    fn truncated(&self, what: &'static str, have: usize, need: usize) -> DatumsFileError {
        DatumsFileError::Truncated {
            origin: self.origin.clone(),
            record: self.record_number(),
            offset: self.offset,
            what,
            have,
            need,
        }
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Vec<u8>, DatumsFileError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let datum = self.read_datum();
        super::end_after_error(&mut self.done, datum)
    }
}

/// Reads `input` until `buf` is full or the input ends (a read a signal interrupted is tried
/// again); returns how many bytes were read.
pub fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Writes datums as records (see the module documentation).
#[derive(Debug)]
pub struct Writer<W: Write> {
    inner: W,
    datums: u64,
}

impl<W: Write> Writer<W> {
    /// Writes records to `inner` (wrap a file in a `BufWriter`; [`create`] does).
    pub fn new(inner: W) -> Writer<W> {
        Writer { inner, datums: 0 }
    }

    /// Appends one datum. A datum over [`MAX_DATUM_LEN`] bytes is refused
    /// (`io::ErrorKind::InvalidInput`) and nothing is written.
    pub fn write_datum(&mut self, datum: &[u8]) -> io::Result<()> {
        self.write_datum_len(datum.len())?;
        self.inner.write_all(datum)
    }

    /// Appends the length of a datum of `len` bytes, which the caller writes right after it
    /// (as [`Writer::write_datum`] does), refused as that refuses it.
    pub fn write_datum_len(&mut self, len: usize) -> io::Result<()> {
        if len > MAX_DATUM_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a datum of {len} bytes is over the datums file limit of {MAX_DATUM_LEN}"),
            ));
        }
        self.inner.write_all(&(len as u32).to_le_bytes())?;
        self.datums += 1;
        Ok(())
    }

    /// How many datums were written.
    pub fn datums(&self) -> u64 {
        self.datums
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.inner.flush()?;
        Ok(self.inner)
    }
}

/// Opens a datums file for reading.
pub fn read(path: impl AsRef<Path>) -> io::Result<Reader<BufReader<File>>> {
    let path = path.as_ref();
    let file = File::open(path)?;
    Ok(Reader::new(
        BufReader::with_capacity(1 << 16, file),
        path.display().to_string(),
    ))
}

/// Creates (or truncates) a datums file for writing; call [`Writer::finish`] at the end, and
/// `sync_all` on the file if it must survive a crash.
pub fn create(path: impl AsRef<Path>) -> io::Result<Writer<BufWriter<File>>> {
    let file = File::create(path)?;
    Ok(Writer::new(BufWriter::with_capacity(1 << 16, file)))
}

/// Writes `datums` to a new datums file at `path` (replacing any file there) and returns how
/// many were written.
pub fn write<I>(path: impl AsRef<Path>, datums: I) -> io::Result<u64>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let mut writer = create(path)?;
    for datum in datums {
        writer.write_datum(datum.as_ref())?;
    }
    let count = writer.datums();
    writer.finish()?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8]) -> Result<Vec<Vec<u8>>, DatumsFileError> {
        Reader::new(bytes, "t.datums").collect()
    }

    #[test]
    fn round_trip_binary_and_empty_datums() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.datums");
        let datums: Vec<Vec<u8>> = vec![
            b"hello".to_vec(),
            vec![],
            vec![0, 0xff, b'\n', 0x80, 0],
            vec![7; 70_000],
        ];
        assert_eq!(write(&path, &datums).unwrap(), 4);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..9], b"\x05\x00\x00\x00hello");
        assert_eq!(bytes.len(), 4 * 4 + 5 + 5 + 70_000);
        let back: Vec<Vec<u8>> = read(&path).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(back, datums);
    }

    #[test]
    fn empty_file_holds_no_datums() {
        assert_eq!(read_all(b"").unwrap(), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn damaged_files_name_the_record() {
        // A prefix cut after 2 bytes, in the second record (at byte 5).
        let err = read_all(b"\x01\x00\x00\x00a\x03\x00").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("datums file t.datums: record 2 at byte 5 is cut off: length prefix"),
            "{err}"
        );
        // A datum shorter than its prefix says.
        let err = read_all(b"\x09\x00\x00\x00abc").unwrap_err();
        assert!(matches!(
            err,
            DatumsFileError::Truncated {
                record: 1,
                offset: 0,
                what: "datum",
                have: 7,
                need: 13,
                ..
            }
        ));
        // A length over the limit: refused before allocating.
        let err = read_all(b"\xff\xff\xff\xffabc").unwrap_err();
        assert!(
            matches!(
                err,
                DatumsFileError::TooLong {
                    len: 0xffff_ffff,
                    ..
                }
            ),
            "{err}"
        );
        // The iterator stops after an error.
        let mut reader = Reader::new(&b"\x01\x00"[..], "x");
        assert!(reader.next().unwrap().is_err());
        assert!(reader.next().is_none());
    }
}
