//! The binary format (the table in the parent module's documentation): writing it, and
//! reading one column of it a value or a tuple at a time.

use std::io::{self, Read, Write};

use super::super::datums_file::{self, MAX_DATUM_LEN};
use super::{malformed, CopyError, Place, Record, SourceError};

/// The first bytes of every binary COPY stream.
pub const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// The flag that says each tuple carries an OID (PostgreSQL 11 and older, `WITH OIDS`).
const OIDS: u32 = 1 << 16;

/// A tuple of no columns: what pgdict writes to end binary COPY that an error stopped half way
/// (`compress --copy`, `decompress --out-format copy`), so that `COPY ... FROM` fails rather
/// than loading the tuples before it (it takes data that ends after a whole tuple), and so does
/// [`BinaryReader`].
pub const BROKEN_END: &[u8] = &[0, 0];

/// Writes the binary format's header: the signature, no flags, no header extension.
pub fn write_header(out: &mut impl Write) -> io::Result<()> {
    out.write_all(SIGNATURE)?;
    out.write_all(&0u32.to_be_bytes())?;
    out.write_all(&0u32.to_be_bytes())
}

/// Appends one tuple of `fields` (`None`: NULL) in the binary format.
pub fn write_tuple(out: &mut Vec<u8>, fields: &[Option<&[u8]>]) -> io::Result<()> {
    let count = i16::try_from(fields.len())
        .map_err(|_| io::Error::other("too many fields for one COPY tuple"))?;
    out.extend_from_slice(&count.to_be_bytes());
    for field in fields {
        write_field(out, *field)?;
    }
    Ok(())
}

/// Appends one field (`None`: NULL) of a binary tuple: its length, then its bytes.
pub(super) fn write_field(out: &mut Vec<u8>, field: Option<&[u8]>) -> io::Result<()> {
    match field {
        Some(value) => {
            write_field_len(out, value.len())?;
            out.extend_from_slice(value);
        }
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
    }
    Ok(())
}

/// Appends the length of a field of `len` bytes.
fn write_field_len(out: &mut Vec<u8>, len: usize) -> io::Result<()> {
    let len =
        i32::try_from(len).map_err(|_| io::Error::other("a value too long for one COPY field"))?;
    out.extend_from_slice(&len.to_be_bytes());
    Ok(())
}

/// Appends what comes before the value of a one-field tuple whose value is `len` bytes, which
/// the caller writes right after it: [`write_tuple`] of that one field.
pub fn write_one_field_start(out: &mut Vec<u8>, len: usize) -> io::Result<()> {
    out.extend_from_slice(&1i16.to_be_bytes());
    write_field_len(out, len)
}

/// Writes the binary format's trailer, which ends the tuples.
pub fn write_trailer(out: &mut impl Write) -> io::Result<()> {
    out.write_all(&(-1i16).to_be_bytes())
}

/// Reads one column of a binary COPY stream, a value at a time, skipping NULLs.
pub struct BinaryReader<R> {
    /// The stream.
    pub input: R,
    /// Bytes read so far.
    pub offset: u64,
    /// Which column: `None` for the only one (a tuple of more columns is refused).
    column: Option<usize>,
    /// The field count of the first tuple, which every tuple must have.
    fields: Option<i16>,
    /// Tuples read so far (the 1-based number of the last one).
    tuples: u64,
    header_read: bool,
    ended: bool,
}

impl<R: Read> BinaryReader<R> {
    /// A reader of `column` (0-based) of `input`; `None`: the tuples must have one column.
    pub fn new(input: R, column: Option<usize>) -> BinaryReader<R> {
        BinaryReader {
            input,
            offset: 0,
            column,
            fields: None,
            tuples: 0,
            header_read: false,
            ended: false,
        }
    }

    /// The next value and the byte offset of its first byte; `None` after the trailer or at
    /// the end of the input after a whole tuple.
    pub fn next_value(&mut self) -> Result<Option<(Vec<u8>, u64)>, CopyError> {
        while let Some((record, at)) = self.next_tuple(false)? {
            if let Some(value) = record.value {
                return Ok(Some((value, at)));
            } // A NULL: on to the next tuple.
        }
        Ok(None)
    }

    /// The next tuple, NULL or not, as a record, and the byte its value starts at (0 for a
    /// NULL); with `others` the record holds the other fields as the input holds them, else
    /// they are skipped. `None` after the trailer or at the end of the input after a
    /// whole tuple.
    fn next_tuple(&mut self, others: bool) -> Result<Option<(Record, u64)>, CopyError> {
        if !self.header_read {
            self.read_header()?;
            self.header_read = true;
        }
        if self.ended {
            return Ok(None);
        }
        let at = self.offset;
        let mut count = [0u8; 2];
        match self.read_up_to(&mut count)? {
            0 => {
                self.ended = true;
                return Ok(None);
            }
            2 => {}
            _ => {
                return Err(malformed(format!(
                    "the COPY data ends inside a field count at byte {at}"
                )))
            }
        }
        let count = i16::from_be_bytes(count);
        if count == -1 {
            self.ended = true;
            let mut more = [0u8; 1];
            if self.read_up_to(&mut more)? != 0 {
                return Err(malformed(format!(
                    "the COPY data goes on after its trailer (byte {})",
                    at + 2
                )));
            }
            return Ok(None);
        }
        self.tuples += 1;
        let wanted = self.wanted_field(count, at)?;
        let mut record = Record {
            value: None,
            place: Place::Tuple {
                number: self.tuples,
                byte: at,
            },
            before: Vec::new(),
            after: Vec::new(),
            fields: count,
            end: b"",
        };
        let mut value_at = 0;
        for field in 0..count as usize {
            if field == wanted {
                if let Some((value, start)) = self.read_field(true)? {
                    record.value = Some(value);
                    value_at = start;
                }
                continue;
            }
            let value = self.read_field(others)?;
            if others {
                let side = if field < wanted {
                    &mut record.before
                } else {
                    &mut record.after
                };
                write_field(side, value.as_ref().map(|(value, _)| &value[..]))
                    .expect("a value read is within PostgreSQL's limit");
            }
        }
        Ok(Some((record, value_at)))
    }

    /// The index of the field to keep in a tuple of `count` fields starting at byte `at`.
    fn wanted_field(&mut self, count: i16, at: u64) -> Result<usize, CopyError> {
        let tuple = self.tuples;
        if count == 0 {
            return Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) has no columns: the end pgdict writes when it \
                 stops on an error (`compress`, `decompress`) (the tuples before it are not all of the rows)"
            )));
        }
        if count < 0 {
            return Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) gives a field count of {count} (-1, the \
                 trailer, is the only one below 0)"
            )));
        }
        match self.fields {
            Some(fields) if fields != count => {
                return Err(malformed(format!(
                    "COPY tuple {tuple} (byte {at}) has {count} columns, where the tuples \
                     before have {fields}"
                )))
            }
            _ => self.fields = Some(count),
        }
        match self.column {
            None if count != 1 => Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) has {count} columns, where one is read (say \
                 which)"
            ))),
            None => Ok(0),
            Some(column) if column >= count as usize => Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) has {count} columns: there is no column #{column} \
                 (columns count from 0)"
            ))),
            Some(column) => Ok(column),
        }
    }

    /// Reads one field: its value and offset if `keep` and it is not NULL; else skips it.
    fn read_field(&mut self, keep: bool) -> Result<Option<(Vec<u8>, u64)>, CopyError> {
        let tuple = self.tuples;
        let at = self.offset;
        let len = i32::from_be_bytes(self.read_exact_at::<4>("field length")?);
        if len == -1 {
            return Ok(None);
        }
        let len = match usize::try_from(len) {
            Ok(len) if len <= MAX_DATUM_LEN => len,
            Ok(_) => {
                return Err(malformed(format!(
                    "COPY tuple {tuple} (byte {at}) gives a value a length of {len} bytes, over \
                     PostgreSQL's limit of {MAX_DATUM_LEN}"
                )))
            }
            Err(_) => {
                return Err(malformed(format!(
                    "COPY tuple {tuple} (byte {at}) gives a value a length of {len} (-1, NULL, \
                     is the only one below 0)"
                )))
            }
        };
        let start = self.offset;
        let mut value = Vec::new();
        let got = if keep {
            // Grows as bytes arrive: a damaged length cannot make this allocate 1 GiB.
            (&mut self.input)
                .take(len as u64)
                .read_to_end(&mut value)
                .map_err(CopyError::Io)? as u64
        } else {
            io::copy(&mut (&mut self.input).take(len as u64), &mut io::sink())
                .map_err(CopyError::Io)?
        };
        self.offset += got;
        if got < len as u64 {
            return Err(malformed(format!(
                "COPY tuple {tuple} (byte {at}) says a value is {len} bytes long, but only {got} \
                 bytes are left"
            )));
        }
        Ok(keep.then_some((value, start)))
    }

    fn read_header(&mut self) -> Result<(), CopyError> {
        let mut signature = [0u8; 11];
        let read = self.read_up_to(&mut signature)?;
        if signature[..read] != SIGNATURE[..read] || read < SIGNATURE.len() {
            return Err(malformed(
                "the input does not start with the binary COPY signature PGCOPY\\n\\377\\r\\n\\0",
            ));
        }
        let flags = u32::from_be_bytes(self.read_exact_at::<4>("header flags")?);
        if flags & OIDS != 0 {
            return Err(malformed(
                "the COPY data carries OIDs (WITH OIDS, PostgreSQL 11 and older): copy the \
                 columns alone",
            ));
        }
        if flags >> 16 != 0 {
            return Err(malformed(format!(
                "the COPY header has critical flags {flags:#010x} that no PostgreSQL release \
                 writes (bits 17-31)"
            )));
        }
        let extension = u32::from_be_bytes(self.read_exact_at::<4>("header extension length")?);
        if extension > i32::MAX as u32 {
            return Err(malformed(format!(
                "the COPY header gives its extension a length of {} (below 0)",
                extension as i32
            )));
        }
        let skipped = io::copy(
            &mut (&mut self.input).take(u64::from(extension)),
            &mut io::sink(),
        )
        .map_err(CopyError::Io)?;
        self.offset += skipped;
        if skipped < u64::from(extension) {
            return Err(malformed(format!(
                "the COPY header extension of {extension} bytes is cut short"
            )));
        }
        Ok(())
    }

    /// `N` bytes that must be there, `what` naming them if they are not.
    fn read_exact_at<const N: usize>(&mut self, what: &str) -> Result<[u8; N], CopyError> {
        let at = self.offset;
        let mut bytes = [0u8; N];
        if self.read_up_to(&mut bytes)? < N {
            return Err(malformed(format!(
                "the COPY data ends inside the {what} at byte {at}"
            )));
        }
        Ok(bytes)
    }

    /// Fills `buf` as far as the input goes; the number of bytes read.
    fn read_up_to(&mut self, buf: &mut [u8]) -> Result<usize, CopyError> {
        let filled = datums_file::read_up_to(&mut self.input, buf).map_err(CopyError::Io)?;
        self.offset += filled as u64;
        Ok(filled)
    }
}

/// One column of binary COPY data, as rows.
pub(super) struct BinaryRows<R> {
    pub(super) reader: BinaryReader<R>,
    pub(super) origin: String,
}

impl<R: Read> BinaryRows<R> {
    /// The reader's error, naming the input.
    fn error(&self, error: CopyError) -> SourceError {
        let origin = self.origin.clone();
        match error {
            CopyError::Io(source) => SourceError::Io { origin, source },
            CopyError::Format(message) => SourceError::BadCopy { origin, message },
        }
    }

    pub(super) fn next_record(&mut self) -> Result<Option<Record>, SourceError> {
        let tuple = self.reader.next_tuple(true).map_err(|e| self.error(e))?;
        Ok(tuple.map(|(record, _)| record))
    }
}

impl<R: Read> BinaryRows<R> {
    /// The next non-NULL, non-empty value, `None` at the end of the data.
    pub(super) fn next_row(&mut self) -> Result<Option<Vec<u8>>, SourceError> {
        loop {
            match self.reader.next_value() {
                Ok(Some((value, _))) if value.is_empty() => {} // An empty value is no row.
                Ok(value) => return Ok(value.map(|(value, _)| value)),
                Err(error) => return Err(self.error(error)),
            }
        }
    }
}
