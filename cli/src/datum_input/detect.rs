//! Telling an input's format from its start (see the parent module's documentation).

use anyhow::Context;
use pgdict::datum;
use pgdict_trainer::source::copy;

use super::escape::escape_literal;
use super::{Parser, Source, HELD_LIMIT, TEXT_WINDOW};
use crate::fail::user_error;
use crate::DatumFormatArg;

/// Tells the format of `source` (see the module's documentation) and gives it back to be read
/// from its start: hex text, or a datums file by its first records ([`tell`]); otherwise a
/// datums file, then varlenas back to back, whichever reads to the end. A stream is held whole
/// only in that last case.
pub(super) fn detect(mut source: Source, origin: &str) -> anyhow::Result<(DatumFormatArg, Source)> {
    let told = source
        .tell()
        .with_context(|| format!("cannot read {origin}"))?;
    match told {
        Told::Copy => Ok((DatumFormatArg::Copy, source)),
        Told::Hex => Ok((DatumFormatArg::Hex, source)),
        Told::Escape => Ok((DatumFormatArg::Escape, source)),
        Told::DatumsFile => Ok((DatumFormatArg::Datums, source)),
        Told::Unknown => {
            let source = source.rereadable(origin, HELD_LIMIT)?;
            let format = detect_binary(&source, origin)
                .with_context(|| format!("cannot read the datums of {origin}"))?;
            Ok((format, source))
        }
    }
}

/// What the start of an input tells of its format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Told {
    /// PostgreSQL's binary COPY: it starts with the signature.
    Copy,
    /// Hex text: its first line holding `\x`, and the lines before it, are text, and they are
    /// not escape text.
    Hex,
    /// Escape text: text whose first lines each decode to one datum ([`escape_lines_agree`]).
    /// It is told before hex text, as it may hold `\\x`.
    Escape,
    /// A datums file: each of its first records holds a datum exactly as long as the record
    /// ([`datum_records_agree`]).
    DatumsFile,
    /// Not told by its start: a datums file or varlenas back to back, whichever reads to the
    /// end ([`detect_binary`]), or neither.
    Unknown,
}

/// What `start`, the input's first bytes (all of it if `ended`), tells of its format; `None`
/// while it is too short to tell, which it is not once it is the whole input or holds
/// [`TEXT_WINDOW`] bytes. Hex text is text up to the end of its first line holding `\x` (the
/// line's `\n`, or the end of the input or of the window); what follows is the hex reader's
/// to judge, which names the line.
pub fn tell(start: &[u8], ended: bool) -> Option<Told> {
    if start.starts_with(copy::SIGNATURE) {
        return Some(Told::Copy);
    }
    // The signature's first bytes (or none yet), so far.
    if !ended && copy::SIGNATURE.starts_with(start) {
        return None;
    }
    let window = &start[..start.len().min(TEXT_WINDOW)];
    let settled = ended || start.len() >= TEXT_WINDOW;
    let text = &window[..text_len(window, ended)];
    let all_text = text.len() == window.len();
    let text_end = match (all_text, settled) {
        (false, _) => TextEnd::Cut,
        (true, true) => TextEnd::Settled,
        (true, false) => TextEnd::Open,
    };
    // Escape text first: psql writes a backslash in a value as `\\`, so a value holding a
    // backslash then `x` puts `\\x` in escape text. No line of hex text reads as escape text
    // (`\x` is no escape; a header line is no datum), so hex text is told by its first line.
    match escape_lines_agree(text, text_end) {
        Some(true) => return Some(Told::Escape),
        // Escape text so far: its next lines tell.
        None => return None,
        Some(false) => {}
    }
    if let Some(x) = text.windows(2).position(|w| w == b"\\x") {
        if text[x..].contains(&b'\n') || text_end == TextEnd::Settled {
            return Some(Told::Hex);
        }
    }
    // Text so far, with a literal on a line yet to end.
    if text_end == TextEnd::Open {
        return None;
    }
    match datum_records_agree(window, settled)? {
        true => Some(Told::DatumsFile),
        false => Some(Told::Unknown),
    }
}

/// How many of `bytes` are text from the start: UTF-8 with no control characters but tab,
/// carriage return and line feed. A character cut off at the end counts unless the input has
/// `ended` there. Reads no further than the first byte that is not text.
pub(super) fn text_len(bytes: &[u8], ended: bool) -> usize {
    let controls = bytes
        .iter()
        .position(|&b| is_control(b))
        .unwrap_or(bytes.len());
    match std::str::from_utf8(&bytes[..controls]) {
        Ok(_) => controls,
        Err(e) if e.error_len().is_none() && controls == bytes.len() && !ended => controls,
        Err(e) => e.valid_up_to(),
    }
}

/// How the text an input starts with ([`text_len`]) ends, which says whether the last piece
/// of it after a line feed is a line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TextEnd {
    /// At the end of what has come of the input, more of which may come: a line yet to end.
    Open,
    /// At the end of the input, or of the window: a line.
    Settled,
    /// At a byte that is no text: no line of text, and no line of text follows.
    Cut,
}

/// Whether `text` begins as escape text: each of its first [`RECORDS_TO_TELL`] lines that are
/// not empty decodes ([`escape_literal`]) to a datum whose own header says it is as long as the
/// bytes. Fewer lines tell it only where the text is all of the input (or the window): at
/// least one, complete once it is [`TextEnd::Settled`]. `None` while fewer lines are complete
/// and more may come. Telling by four complete lines, whatever follows them, is what lets a
/// start of the input tell what the whole input tells.
fn escape_lines_agree(text: &[u8], end: TextEnd) -> Option<bool> {
    let mut lines = text.split(|&b| b == b'\n').peekable();
    let mut agreeing = 0;
    while let Some(line) = lines.next() {
        // The last piece is a line only at the end of the input.
        let complete = lines.peek().is_some() || end == TextEnd::Settled;
        if !complete || agreeing == RECORDS_TO_TELL {
            break;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let agrees = escape_literal(line).is_ok_and(|bytes| {
            datum::read_header(&bytes).is_ok_and(|header| header.total_len == bytes.len())
        });
        if !agrees {
            return Some(false);
        }
        agreeing += 1;
    }
    match end {
        TextEnd::Cut => Some(agreeing == RECORDS_TO_TELL),
        _ => told_by_records(agreeing, end == TextEnd::Settled),
    }
}

/// What `agreeing` records (or lines) that each hold one datum tell, once no record disagreed:
/// a format if there are [`RECORDS_TO_TELL`] of them, or, once the input is `settled`, at
/// least one; `None` while fewer are complete and more may come.
fn told_by_records(agreeing: usize, settled: bool) -> Option<bool> {
    match agreeing {
        RECORDS_TO_TELL => Some(true),
        _ if !settled => None,
        0 => Some(false),
        _ => Some(true),
    }
}

/// A control character that text does not hold: all but tab, carriage return and line feed.
pub(super) fn is_control(byte: u8) -> bool {
    byte < 0x20 && !matches!(byte, b'\t' | b'\r' | b'\n')
}

/// How many records of a datums file, at most, tell it by [`datum_records_agree`].
const RECORDS_TO_TELL: usize = 4;

/// Whether `start` begins as the datums file `pgdict compress` writes: each of its first
/// [`RECORDS_TO_TELL`] records (those of them complete in `start`, once it is `settled`, at
/// least one) holds a datum whose own header says it is as long as the record. `None` while
/// fewer records are complete and more may come.
fn datum_records_agree(start: &[u8], settled: bool) -> Option<bool> {
    let mut rest = start;
    let mut records = 0;
    while records < RECORDS_TO_TELL {
        let Some((len, after)) = rest.split_first_chunk::<4>() else {
            break;
        };
        let len = u32::from_le_bytes(*len) as usize;
        let Some(record) = after.get(..len) else {
            break;
        };
        if !datum::read_header(record).is_ok_and(|header| header.total_len == len) {
            return Some(false);
        }
        records += 1;
        rest = &after[len..];
    }
    told_by_records(records, settled)
}

/// Tells a datums file from varlenas back to back: whichever reads to the end.
pub(super) fn detect_binary(source: &Source, origin: &str) -> anyhow::Result<DatumFormatArg> {
    let reads_as = |format| -> anyhow::Result<()> {
        let mut parser = Parser::new(format, source.reread()?, origin);
        while parser.next_datum()?.is_some() {}
        Ok(())
    };
    let as_datums = match reads_as(DatumFormatArg::Datums) {
        Ok(()) => return Ok(DatumFormatArg::Datums),
        Err(e) => e,
    };
    let as_varlenas = match reads_as(DatumFormatArg::Varlena) {
        Ok(()) => return Ok(DatumFormatArg::Varlena),
        Err(e) => e,
    };
    Err(user_error(
        format!(
            "the input is neither hex text (no `\\x`), nor a datums file ({}), nor varlenas back \
             to back ({})",
            root_message(&as_datums),
            root_message(&as_varlenas)
        ),
        "say which it is with --format datums|hex|escape|copy|varlena; for a bytea column of \
         COPY data or CSV (what \\copy writes, also of one column), name it with --copy-column \
         or --csv-column (0 for the first)",
    ))
}

fn root_message(error: &anyhow::Error) -> String {
    error
        .chain()
        .last()
        .map(|e| e.to_string())
        .unwrap_or_default()
}
