//! The `pgdict` command's datum inputs (`decompress`, `inspect`: `cli/src/datum_input/`) on
//! arbitrary bytes, opened as the command opens them (`Datums::open`): from a regular file in
//! each of the five formats (`--format datums|hex|escape|varlena|copy`) and with the format told
//! from the bytes, and as the second column of COPY data and of CSV (`--copy-column 1`,
//! `--csv-column 1 --csv-no-header`: each value a datum, a bytea's hex or escape text in text),
//! from a pipe (standard input's path, which tells the format as the bytes come) with the
//! format told, and from a stream that hands the input out in reads of the fuzzer's choosing
//! (`Datums::open_stream`: short reads, interrupted ones) with the format told and in each
//! format. Every datum is read, to the end or the first error.
//!
//! Layout ([`StreamedInput`]): how the stream hands the input out (`reads: [u8; 4]`, one a read
//! in turn: 0 interrupted, 1 to 0x7f that many bytes, 0x80 + k 2^k bytes), a repeat
//! (`repeat_at: u16`, `repeat_len: u16`, `repeat_count: u32`: those bytes of the body stand
//! that many times), then the body. The repeat makes at most 4 KiB of input, or, with the
//! count's top bit set, at most 1 MiB + 128 KiB: a short input crosses the 1 MiB the format is
//! told from and the readers' 64 KiB buffers. Large inputs are thus the fuzzer's choice, and
//! rare: one takes up to a hundred times a small one's time. Every reader reads the whole
//! input when it is at most 128 KiB; a longer one is told, then read only by the readers
//! telling involves (the file and the stream with the format told, the file with the format
//! told given: a datums file or varlenas when nothing is told), and its datums are not written
//! back.
//!
//! Checks: no panic; nothing comes after an error; the datums read hold no more bytes than the
//! input (hex text: half as many), the bytes they span (`bytes_read`) grow and stay within it,
//! and reach its end when no error stopped the reading; each datum is where its position says:
//! a datums file's records and varlenas are the input's bytes up to `bytes_read` (each varlena
//! as long as its own header says), a binary COPY value is the input's bytes at its offset, a
//! hex datum is a `\x` literal of its line (in either case), an escape datum is its line's
//! value, as long as it or up to four characters a byte. Telling the format: the whole input
//! is always told, and what a start of it tells stands ([`tell`] on cuts of it: the pipe holds
//! the whole input before it is read, so these cuts stand in for the reads a stream comes in);
//! a pipe, and the stream however its reads come, are told and read as the file is (the stream
//! in each format too); the format told is the one the start says, else a
//! datums file or varlenas, whichever reads to the end, and reading with the format told is
//! reading with it given (what `Datums::again` relies on). Every datum read, written as hex
//! lines, is told as hex and reads back as itself, and those not empty, written as escape text
//! (as `byteaout` writes it), read back as themselves. `fuzz/ci.sh` runs it with
//! `-malloc_limit_mb=64`: no length an input claims makes a reader allocate ahead of its bytes.

#![no_main]

use std::fmt::Display;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use pgdict::datum;
use pgdict_cli::fuzzing::{
    tell, Datum, DatumFormatArg, DatumInput, Datums, Position, StreamRead, Told, READ_BUFFER,
    TEXT_WINDOW,
};
use pgdict_fuzz::{planned_read, PlannedRead, StreamedInput};
use pgdict_trainer::source::ColumnFlags;

/// The five formats, as `--format` names them.
const FORMATS: [DatumFormatArg; 5] = [
    DatumFormatArg::Datums,
    DatumFormatArg::Hex,
    DatumFormatArg::Escape,
    DatumFormatArg::Varlena,
    DatumFormatArg::Copy,
];

/// The longest input also read through a pipe: what a pipe is sure to hold (`PIPE_BUF`), so
/// that the whole input is written before it is read, with no writer left to wait for.
const MAX_PIPED_LEN: usize = 4096;

/// The longest input every reader reads: two of the readers' 64 KiB reads (`READ_BUFFER`). A
/// longer one (only the layout's large repeat makes one) is read only where the 1 MiB format
/// window needs it: a megabyte of text took the fifteen readers over a second.
const MAX_FULLY_READ_LEN: usize = 2 * READ_BUFFER;

/// The format `told` names, or, when nothing is told, the two an input is then read as (a
/// datums file, else varlenas: whichever reads to the end).
fn formats_meant(told: Told) -> &'static [DatumFormatArg] {
    match told {
        Told::Copy => &[DatumFormatArg::Copy],
        Told::Hex => &[DatumFormatArg::Hex],
        Told::Escape => &[DatumFormatArg::Escape],
        Told::DatumsFile => &[DatumFormatArg::Datums],
        Told::Unknown => &[DatumFormatArg::Datums, DatumFormatArg::Varlena],
    }
}

/// What reading an input gave.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// The format read (given, or told); `None` if the input did not open.
    format: Option<DatumFormatArg>,
    datums: Vec<Datum>,
    /// The error that ended the reading, `{:#}`, the input's name in it as `INPUT`.
    error: Option<String>,
    /// `Datums::bytes_read` at the end.
    bytes_read: u64,
}

impl Outcome {
    /// Whether the reading went to the end of the input (holding no datums, which the
    /// iterator's last item says, is not an error of the format).
    fn read_to_end(&self) -> bool {
        match &self.error {
            None => true,
            Some(error) => self.datums.is_empty() && error.ends_with("INPUT holds no datums"),
        }
    }
}

/// `path` opened as `decompress` and `inspect` open it, in `format` or with the format told,
/// and every datum read; `len`: the input's length, to check against.
fn read(path: &Path, format: Option<DatumFormatArg>, len: usize) -> Outcome {
    read_with(path, format, ColumnFlags::default(), len)
}

/// [`read`], the datums in a column of COPY data or CSV as `columns` say
/// (`--copy-column`, `--csv-column`).
fn read_column(path: &Path, columns: ColumnFlags, len: usize) -> Outcome {
    read_with(path, None, columns, len)
}

fn read_with(
    path: &Path,
    format: Option<DatumFormatArg>,
    columns: ColumnFlags,
    len: usize,
) -> Outcome {
    let input = DatumInput {
        input: path.to_path_buf(),
        format,
        columns,
    };
    let name = path.display().to_string();
    read_opened(Datums::open(&input), &name, format, len)
}

/// Every datum of `opened` (`name` the input in its messages), as [`read`] says.
fn read_opened(
    opened: Result<Datums, impl Display>,
    name: &str,
    format: Option<DatumFormatArg>,
    len: usize,
) -> Outcome {
    let message = |e: &dyn Display| format!("{e:#}").replace(name, "INPUT");
    let mut datums = match opened {
        Ok(datums) => datums,
        Err(e) => {
            return Outcome {
                format: None,
                datums: Vec::new(),
                error: Some(message(&e)),
                bytes_read: 0,
            }
        }
    };
    if let Some(given) = format {
        assert_eq!(datums.format, given);
    }
    let mut read = Vec::new();
    let mut error = None;
    let mut spanned = 0;
    loop {
        let item = datums.next();
        let now = datums.bytes_read();
        assert!(
            spanned <= now && now <= len as u64,
            "{spanned} then {now} of {len}"
        );
        spanned = now;
        match item {
            None => break,
            Some(_) if error.is_some() => panic!("an item after the error {error:?}"),
            Some(Ok(datum)) => {
                // Each datum spans a byte of the input at least, so room for `len` of them is
                // enough: doubling past it asked 80 MiB at once, over the malloc limit (2^21
                // datums of 40 bytes, for a 1.1 MiB input of one-byte varlenas).
                if read.len() == read.capacity() {
                    let room = read.len().max(8).min(len.saturating_sub(read.len()));
                    read.reserve_exact(room.max(1));
                }
                read.push(datum)
            }
            Some(Err(e)) => error = Some(message(&e)),
        }
    }
    assert!(datums.next().is_none(), "an item after the end");
    let outcome = Outcome {
        format: Some(datums.format),
        datums: read,
        error,
        bytes_read: spanned,
    };
    if outcome.error.is_none() {
        assert_eq!(spanned, len as u64, "no error before the input's end");
    }
    outcome
}

/// A regular file that no directory names (created, then removed): each input is written to it
/// and opened through `/proc/self/fd`, as a path. It is in memory (`/dev/shm`) where it can
/// be: on ext4, closing a file that was emptied and written again writes it to disk, which took
/// a tenth of the target's time.
fn scratch() -> &'static File {
    static FILE: OnceLock<File> = OnceLock::new();
    FILE.get_or_init(|| {
        let name = format!("pgdict-fuzz-datum-input-{}", std::process::id());
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let path = dir.join(name);
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("a scratch file");
        std::fs::remove_file(&path).expect("the scratch file removed");
        file
    })
}

/// The scratch file, holding `bytes` alone; its path.
fn write_scratch(bytes: &[u8]) -> PathBuf {
    let file = scratch();
    file.set_len(0).expect("the scratch file emptied");
    file.write_all_at(bytes, 0)
        .expect("the scratch file written");
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// `bytes` read from a pipe with the format told, as standard input is read.
fn read_piped(bytes: &[u8]) -> Outcome {
    assert!(bytes.len() <= MAX_PIPED_LEN);
    let (reader, mut writer) = std::io::pipe().expect("a pipe");
    writer
        .write_all(bytes)
        .expect("a pipe holds PIPE_BUF bytes");
    drop(writer);
    // An anonymous pipe opens at once, writer or not; it then ends after `bytes`.
    let path = PathBuf::from(format!("/proc/self/fd/{}", reader.as_raw_fd()));
    read(&path, None, bytes.len())
}

/// The input as a stream hands it out: read by read as its plan says ([`StreamedInput`]).
struct Trickle {
    input: Arc<[u8]>,
    /// Bytes handed out so far.
    at: usize,
    plan: [u8; 4],
    /// Reads so far, interrupted ones included.
    step: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let planned = planned_read(self.plan, self.step);
        self.step += 1;
        let most = match planned {
            Some(PlannedRead::Interrupted) => return Err(io::ErrorKind::Interrupted.into()),
            Some(PlannedRead::Bytes(most)) => most,
            None => buf.len(),
        };
        let n = most.min(buf.len()).min(self.input.len() - self.at);
        buf[..n].copy_from_slice(&self.input[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl StreamRead for Trickle {
    fn ready_within(&self, _wait: Duration) -> bool {
        true
    }
}

/// `input` read from a stream that hands it out as `plan` says, in `format` or told.
fn read_streamed(input: &Arc<[u8]>, plan: [u8; 4], format: Option<DatumFormatArg>) -> Outcome {
    let stream = Trickle {
        input: input.clone(),
        at: 0,
        plan,
        step: 0,
    };
    let name = "the fuzzed stream";
    read_opened(
        Datums::open_stream(name, stream, format),
        name,
        format,
        input.len(),
    )
}

/// Where the stream reader may ask what a start tells (after a read that ends a line or brings
/// a control character, or any later read): the first bytes one by one, after each line feed
/// and at each control character (the first 16 of each), the middle, either side of the
/// window's end, the end.
fn cuts(input: &[u8]) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..=input.len().min(16)).collect();
    let after_line_feeds = (input.iter().enumerate())
        .filter(|(_, &b)| b == b'\n')
        .map(|(i, _)| i + 1);
    cuts.extend(after_line_feeds.take(16));
    let controls = (input.iter().enumerate())
        .filter(|(_, &b)| b < 0x20 && !matches!(b, b'\t' | b'\r' | b'\n'))
        .map(|(i, _)| i);
    cuts.extend(controls.take(16));
    cuts.extend([input.len() / 2, input.len()]);
    if input.len() >= TEXT_WINDOW {
        cuts.extend([
            TEXT_WINDOW - 1,
            TEXT_WINDOW,
            input.len().min(TEXT_WINDOW + 1),
        ]);
    }
    cuts
}

/// Line `number` (from 1) of `lines`, the input's lines without their line feeds.
fn line<'a>(lines: &[&'a [u8]], number: usize) -> &'a [u8] {
    lines
        .get(number - 1)
        .expect("a datum's line is in the input")
}

/// `bytes` as a `\x` literal, in lower case.
fn hex_literal(bytes: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut literal = b"\\x".to_vec();
    for byte in bytes {
        literal.extend([
            DIGITS[usize::from(byte >> 4)],
            DIGITS[usize::from(byte & 15)],
        ]);
    }
    literal
}

/// The offset a binary position gives.
fn byte(position: &Position) -> usize {
    match position {
        Position::Byte(offset) => *offset as usize,
        Position::Line(_) => panic!("a binary format gave a line: {position:?}"),
    }
}

/// The line number a text position gives.
fn line_number(position: &Position) -> usize {
    match position {
        Position::Line(number) => *number,
        Position::Byte(_) => panic!("a text format gave a byte offset: {position:?}"),
    }
}

/// Checks that each datum is where its position says in `input`, as `format` holds it.
fn check_places(input: &[u8], format: DatumFormatArg, outcome: &Outcome) {
    let datums = &outcome.datums;
    let total: usize = datums.iter().map(|d| d.bytes.len()).sum();
    assert!(
        total <= input.len(),
        "{total} bytes of datums in {}",
        input.len()
    );
    let spanned = &input[..outcome.bytes_read as usize];
    // Split once: a line looked for a datum at a time made a megabyte of short lines take
    // minutes.
    let lines = || -> Vec<&[u8]> { input.split(|&b| b == b'\n').collect() };
    match format {
        DatumFormatArg::Datums => {
            let mut records = Vec::new();
            for datum in datums {
                assert_eq!(byte(&datum.position), records.len());
                records.extend_from_slice(&(datum.bytes.len() as u32).to_le_bytes());
                records.extend_from_slice(&datum.bytes);
            }
            assert_eq!(records, spanned);
        }
        DatumFormatArg::Varlena => {
            let mut varlenas = Vec::new();
            for datum in datums {
                assert_eq!(byte(&datum.position), varlenas.len());
                let header = datum::read_header(&datum.bytes).expect("a varlena's header reads");
                assert_eq!(header.total_len, datum.bytes.len());
                varlenas.extend_from_slice(&datum.bytes);
            }
            assert_eq!(varlenas, spanned);
        }
        DatumFormatArg::Copy => {
            let mut after = 0;
            for datum in datums {
                let at = byte(&datum.position);
                assert!(at >= after, "values out of order");
                after = at + datum.bytes.len();
                assert_eq!(input.get(at..after), Some(&datum.bytes[..]));
            }
        }
        DatumFormatArg::Hex => {
            assert!(2 * total <= input.len());
            let lines = lines();
            let mut last = 0;
            // The current line in lower case, and where its next datum's literal may start:
            // a line's datums are its literals in order.
            let mut text = Vec::new();
            let mut from = 0;
            for datum in datums {
                let number = line_number(&datum.position);
                assert!(number >= last, "lines out of order");
                if number != last {
                    text = line(&lines, number).to_ascii_lowercase();
                    from = 0;
                }
                last = number;
                let literal = hex_literal(&datum.bytes);
                // The literal, all of it: no hex digit goes on after it.
                let whole = |at: &usize| {
                    text[*at..].starts_with(&literal)
                        && !text
                            .get(at + literal.len())
                            .is_some_and(u8::is_ascii_hexdigit)
                };
                let Some(at) = (from..text.len()).find(whole) else {
                    panic!(
                        "{datum:?} is not a literal of its line {:?} after byte {from}",
                        String::from_utf8_lossy(&text)
                    );
                };
                from = at + literal.len();
            }
        }
        DatumFormatArg::Escape => {
            let lines = lines();
            let mut last = 0;
            for datum in datums {
                let number = line_number(&datum.position);
                assert!(number > last, "one datum a line, in order");
                last = number;
                let text = line(&lines, number);
                let value = text.strip_suffix(b"\r").unwrap_or(text);
                let len = datum.bytes.len();
                assert!(len > 0, "an empty line is no datum");
                // A byte is one character, or a backslash and two or three more.
                assert!(len <= value.len() && value.len() <= 4 * len);
                if !value.contains(&b'\\') {
                    assert_eq!(value, &datum.bytes[..]);
                }
            }
        }
    }
}

/// `datums` as hex lines, as `pgdict compress --hex` writes them.
fn hex_lines(datums: &[&[u8]]) -> Vec<u8> {
    let mut text = Vec::new();
    for datum in datums {
        text.extend_from_slice(&hex_literal(datum));
        text.push(b'\n');
    }
    text
}

/// `datums` as escape text, one a line, as PostgreSQL's `byteaout` writes a bytea under
/// `bytea_output = escape`: a backslash doubled, printable ASCII as itself, any other byte as
/// a backslash and three octal digits.
fn escape_lines(datums: &[&[u8]]) -> Vec<u8> {
    let mut text = Vec::new();
    for datum in datums {
        for &byte in *datum {
            match byte {
                b'\\' => text.extend_from_slice(b"\\\\"),
                0x20..=0x7e => text.push(byte),
                _ => text.extend_from_slice(format!("\\{byte:03o}").as_bytes()),
            }
        }
        text.push(b'\n');
    }
    text
}

/// The bytes of the datums of `outcome`.
fn bytes_of(outcome: &Outcome) -> Vec<Vec<u8>> {
    outcome.datums.iter().map(|d| d.bytes.clone()).collect()
}

fuzz_target!(|data: &[u8]| {
    let streamed = StreamedInput::parse(data);
    let input: Arc<[u8]> = streamed.input().into();
    let stream = &input;
    let input = &input[..];

    // Telling: the whole input is told, and a start tells nothing else.
    let told = tell(input, true).expect("the whole input is told");
    for cut in cuts(input) {
        if let Some(start_tells) = tell(&input[..cut], false) {
            assert_eq!(start_tells, told, "the first {cut} bytes");
        }
    }

    let path = write_scratch(input);
    // A large input is read only where its size matters: telling its format (the 1 MiB
    // window) and reading it as told, from the file and the stream, and as the format told
    // given; the other readers meet their limits (the 64 KiB reads) in inputs up to 128 KiB.
    let every_reader = input.len() <= MAX_FULLY_READ_LEN;
    let formats = if every_reader {
        &FORMATS[..]
    } else {
        formats_meant(told)
    };
    let given: Vec<Outcome> = formats
        .iter()
        .map(|&format| read(&path, Some(format), input.len()))
        .collect();
    for (format, outcome) in formats.iter().zip(&given) {
        check_places(input, *format, outcome);
    }
    // A column of COPY data (text, or binary by its signature) or CSV: each value a datum, a
    // bytea's hex or escape text where the data is text.
    let mut columns_read = Vec::new();
    let column_flags = [
        ColumnFlags {
            copy_column: Some("1".into()),
            ..ColumnFlags::default()
        },
        ColumnFlags {
            csv_column: Some("1".into()),
            csv_no_header: true,
            ..ColumnFlags::default()
        },
    ];
    for columns in column_flags.into_iter().filter(|_| every_reader) {
        let column = read_column(&path, columns, input.len());
        let total: usize = column.datums.iter().map(|d| d.bytes.len()).sum();
        assert!(
            total <= input.len(),
            "{total} bytes of datums in {}",
            input.len()
        );
        columns_read.push(column);
    }
    let detected = read(&path, None, input.len());
    let given_as = |format| &given[formats.iter().position(|&f| f == format).unwrap()];
    let expected = match formats_meant(told) {
        &[format] => Some(format),
        // Nothing told: whichever reads to the end.
        candidates => candidates
            .iter()
            .copied()
            .find(|&format| given_as(format).read_to_end()),
    };
    match expected {
        Some(format) => assert_eq!(&detected, given_as(format)),
        None => {
            assert_eq!(detected.format, None);
            let error = detected.error.as_deref().unwrap_or_default();
            assert!(error.contains("the input is neither hex text"), "{error}");
        }
    }
    if input.len() <= MAX_PIPED_LEN {
        assert_eq!(read_piped(input), detected, "piped");
    }
    assert_eq!(
        read_streamed(stream, streamed.reads, None),
        detected,
        "streamed"
    );
    if !every_reader {
        return;
    }
    for (format, outcome) in formats.iter().zip(&given) {
        let read = read_streamed(stream, streamed.reads, Some(*format));
        assert_eq!(&read, outcome, "streamed as {format:?}");
    }

    // Every datum read, written back as hex lines and as escape text.
    let all: Vec<Vec<u8>> = given
        .iter()
        .chain(&columns_read)
        .flat_map(bytes_of)
        .collect();
    let all: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
    if !all.is_empty() {
        let text = hex_lines(&all);
        let back = read(&write_scratch(&text), None, text.len());
        assert_eq!(back.format, Some(DatumFormatArg::Hex));
        assert_eq!(back.error, None);
        assert_eq!(bytes_of(&back), all);
    }
    let not_empty: Vec<&[u8]> = all.into_iter().filter(|d| !d.is_empty()).collect();
    if !not_empty.is_empty() {
        let text = escape_lines(&not_empty);
        let format = Some(DatumFormatArg::Escape);
        let back = read(&write_scratch(&text), format, text.len());
        assert_eq!(back.error, None);
        assert_eq!(bytes_of(&back), not_empty);
    }
});
