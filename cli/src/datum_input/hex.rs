//! Hex text: what psql prints of a bytea column (`\x09616263`), with its decorations, what
//! COPY's text format writes of one (`\\x09616263`), and bytea arrays; and the hint for CSV
//! read as hex text.

use std::collections::VecDeque;
use std::io::BufRead;

use anyhow::anyhow;
use pgdict_trainer::source::datums_file;

use super::{read_bounded_line, Datum, Position};
use crate::fail::Hint;

/// The longest hex line read: a value at PostgreSQL's limit (1 GiB - 1) as psql prints it,
/// `\x` and two digits a byte, with room for a few other columns and the line end.
const MAX_HEX_LINE_LEN: usize = 2 * datums_file::MAX_DATUM_LEN + 4096;

/// Hex text: each line holds datums as psql prints a bytea (`\x09616263`) or COPY's text
/// format writes one (`\\x09616263`, and `\N` for a NULL, which is no datum), or a bytea array
/// as pageinspect's `tuple_data_split` prints one (`{"\\x09616263",NULL}`). psql's decorations
/// (a header line over a line of dashes, `(3 rows)`, `-[ RECORD 1 ]-`) are skipped, and in
/// rows of several columns (`1 | \x0b61`, or COPY's `1<tab>\\x0b61`) every field that is a
/// bytea is a datum.
pub(super) struct HexLines<R> {
    pub(super) input: R,
    /// The longest line read ([`MAX_HEX_LINE_LEN`]; tests make it shorter).
    pub(super) max_line_len: usize,
    /// Number of the last line read (1-based).
    line_number: usize,
    /// Byte offset of the end of the last line read.
    pub(super) offset: u64,
    /// The line after the current one and its number, read ahead to tell a header line by the
    /// rule under it (only for a line that holds no datum: a datum line is not held back).
    next_line: Option<(usize, String)>,
    /// Datums of the current line not yet returned.
    queue: VecDeque<Datum>,
}

impl<R: BufRead> HexLines<R> {
    pub(super) fn new(input: R) -> HexLines<R> {
        HexLines {
            input,
            max_line_len: MAX_HEX_LINE_LEN,
            line_number: 0,
            offset: 0,
            next_line: None,
            queue: VecDeque::new(),
        }
    }

    /// The next line, trimmed, and its number, or `None` at the end of the input.
    fn read_line(&mut self) -> anyhow::Result<Option<(usize, String)>> {
        let number = self.line_number + 1;
        let Some(line) = read_bounded_line(&mut self.input, self.max_line_len, number)? else {
            return Ok(None);
        };
        let start = self.offset;
        self.offset += line.len() as u64;
        self.line_number += 1;
        let text = String::from_utf8(line).map_err(|e| {
            let at = start + e.utf8_error().valid_up_to() as u64;
            anyhow!("not text: invalid UTF-8 at byte {at}")
        })?;
        Ok(Some((self.line_number, text.trim().to_string())))
    }

    pub(super) fn next_datum(&mut self) -> anyhow::Result<Option<Datum>> {
        loop {
            if let Some(datum) = self.queue.pop_front() {
                return Ok(Some(datum));
            }
            let next = match self.next_line.take() {
                Some(line) => Some(line),
                None => self.read_line()?,
            };
            let Some((number, line)) = next else {
                return Ok(None);
            };
            if line.is_empty()
                || is_rule(&line)
                || is_row_count(&line)
                || line.starts_with("-[ RECORD")
            {
                continue;
            }
            if !holds_datums(&line) {
                // A header line if a rule is under it (psql's aligned output), or if it is the
                // first line, its fields tab-separated, and the line under it holds datums
                // (COPY's text format with HEADER, what `compress --keep-columns` writes back
                // of it); otherwise `parse_line` says what is wrong.
                self.next_line = self.read_line()?;
                let copy_header = number == 1 && line.contains('\t');
                if self
                    .next_line
                    .as_ref()
                    .is_some_and(|(_, next)| is_rule(next) || (copy_header && holds_datums(next)))
                {
                    continue;
                }
            }
            if let Err(e) = self.parse_line(&line, number) {
                let e = anyhow!("line {number}: {e}");
                let next = self.next_line.as_ref().map(|(_, next)| next.as_str());
                return Err(match csv_column_flags(&line, next) {
                    Some(flags) => e.context(Hint(format!(
                        "this looks like CSV, as `pgdict compress --keep-columns` writes it: \
                         name the column that holds the datums ({flags})"
                    ))),
                    None => e,
                });
            }
        }
    }

    /// Queues the datums of one line (`number`), its fields split at `|` or a tab.
    fn parse_line(&mut self, line: &str, number: usize) -> anyhow::Result<()> {
        if !holds_datums(line) {
            anyhow::bail!(
                "not a hex datum (no field starts with \\x): {}",
                shorten(line, 60)
            );
        }
        let position = || Position::Line(number);
        for field in line.split(FIELD_SEPARATORS).map(str::trim) {
            if let Some(literal) = hex_field(field) {
                self.queue.push_back(Datum {
                    bytes: hex_literal(literal)?,
                    position: position(),
                });
            } else if is_bytea_array(field) {
                for bytes in bytea_array(field)? {
                    self.queue.push_back(Datum {
                        bytes,
                        position: position(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The flags that would read `line` as CSV, when it, or the line after it (`next`) under it as
/// a header, has a `\x...` field among others split at commas or semicolons:
/// `--csv-column body`, or `--csv-column 1 --csv-no-header`, with `--csv-delimiter ';'` if need
/// be. `None` when neither line has one. A guess for a hint: fields are split at every
/// delimiter, so the column goes unnamed (`NAME`) when a quoted field, which may hold one, is
/// before it.
pub(super) fn csv_column_flags(line: &str, next: Option<&str>) -> Option<String> {
    let datum_index = |line: &str, delimiter: char| {
        let mut fields = line.split(delimiter);
        let index = fields.position(|field| field.trim_matches('"').starts_with("\\x"));
        index.filter(|_| line.contains(delimiter))
    };
    /// Field `index` of `line`, where no quoted field before it can have moved it.
    fn unmoved_field(line: &str, delimiter: char, index: usize) -> Option<&str> {
        let mut fields = line.split(delimiter);
        let moved = fields.by_ref().take(index).any(|field| field.contains('"'));
        fields.next().filter(|_| !moved)
    }
    for delimiter in [',', ';'] {
        let column = if let Some(index) = datum_index(line, delimiter) {
            unmoved_field(line, delimiter, index).map(|_| format!("{index} --csv-no-header"))
        } else if let Some((next, index)) =
            next.and_then(|next| Some((next, datum_index(next, delimiter)?)))
        {
            let name =
                unmoved_field(next, delimiter, index).and(unmoved_field(line, delimiter, index));
            let plain = |c: char| c.is_ascii_alphanumeric() || c == '_';
            name.filter(|name| !name.is_empty() && name.chars().all(plain))
                .map(str::to_string)
        } else {
            continue;
        };
        let column = column.unwrap_or_else(|| "NAME".to_string());
        let delimiter_flag = match delimiter {
            ',' => String::new(),
            other => format!(" --csv-delimiter '{other}'"),
        };
        return Some(format!("--csv-column {column}{delimiter_flag}"));
    }
    None
}

/// What separates the fields of a hex line: psql's `|` (aligned, or `-A`), and the tab of
/// COPY's text format (`COPY t TO STDOUT`, all of a table's columns) and of `psql -At -F'\t'`.
/// Neither is in a hex literal.
const FIELD_SEPARATORS: [char; 2] = ['|', '\t'];

/// Whether a line has a field that is a datum (`\x...`), a bytea array (`{...}`) or COPY's
/// NULL (`\N`).
fn holds_datums(line: &str) -> bool {
    line.split(FIELD_SEPARATORS)
        .map(str::trim)
        .any(|field| hex_field(field).is_some() || is_bytea_array(field) || field == COPY_NULL)
}

/// A NULL in COPY's text format: a field of a datum line that holds no datum.
const COPY_NULL: &str = "\\N";

/// The `\x...` literal a field holds: the field, or with COPY's text format its backslash
/// doubled (`\\x...`: what `COPY t (payload) TO STDOUT` and psql's `\copy` write; hex digits
/// need no other escape).
fn hex_field(field: &str) -> Option<&str> {
    let literal = field
        .strip_prefix('\\')
        .filter(|f| f.starts_with("\\x"))
        .unwrap_or(field);
    literal.starts_with("\\x").then_some(literal)
}

/// psql's rule under a header line: `----+-----`.
fn is_rule(line: &str) -> bool {
    !line.is_empty() && line.chars().all(|c| c == '-' || c == '+')
}

/// psql's `(1 row)`, `(25 rows)`.
fn is_row_count(line: &str) -> bool {
    line.strip_prefix('(')
        .and_then(|l| l.strip_suffix(" rows)").or_else(|| l.strip_suffix(" row)")))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The bytes of a `\x...` literal.
pub(super) fn hex_literal(field: &str) -> anyhow::Result<Vec<u8>> {
    let digits = field
        .strip_prefix("\\x")
        .ok_or_else(|| anyhow!("a bytea in hex starts with \\x: {}", shorten(field, 40)))?;
    // const_hex reads a `0x` in front as a prefix to skip; after `\x` it is a bad digit.
    let prefixed = digits.starts_with("0x") || digits.starts_with("0X");
    match const_hex::decode(digits) {
        Ok(bytes) if !prefixed => Ok(bytes),
        _ => Err(bad_hex_digits(digits)),
    }
}

/// [`hex_literal`] made in `text`'s own buffer, which then holds the bytes: a large datum's hex
/// text and the datum are not held at once. The digits are decoded from the front, 64 KiB of
/// them at a time into a buffer aside, then copied to where the bytes go, always before the
/// digits not yet read. Text that [`hex_literal`] refuses is left as it is, and refused by it,
/// with its words.
pub(super) fn hex_literal_in_place(text: &mut Vec<u8>) -> anyhow::Result<()> {
    const BYTES_AT_ONCE: usize = 32 * 1024;
    let well_formed = text.strip_prefix(b"\\x").is_some_and(|digits| {
        digits.len() % 2 == 0
            && !digits.starts_with(b"0x")
            && !digits.starts_with(b"0X")
            && digits.iter().all(u8::is_ascii_hexdigit)
    });
    if !well_formed {
        // Refused, with hex_literal's words (should it take text the check above does not,
        // its bytes stand, rather than the text).
        *text = hex_literal(std::str::from_utf8(text)?)?;
        return Ok(());
    }
    let len = (text.len() - 2) / 2;
    let mut aside = [0; BYTES_AT_ONCE];
    for start in (0..len).step_by(BYTES_AT_ONCE) {
        let end = len.min(start + BYTES_AT_ONCE);
        let bytes = &mut aside[..end - start];
        const_hex::decode_to_slice(&text[2 + 2 * start..2 + 2 * end], bytes)
            .map_err(|_| anyhow!("hex digits checked before are not hex"))?;
        text[start..end].copy_from_slice(bytes);
    }
    text.truncate(len);
    // Gives back the half the digits took (resident, as they were written), before the datum
    // is decoded beside it: a large buffer shrinks where it is.
    text.shrink_to_fit();
    Ok(())
}

/// Why `digits`, those of a `\x` literal, are not hex.
#[cold]
fn bad_hex_digits(digits: &str) -> anyhow::Error {
    if let Some(pos) = digits.find(|c: char| !c.is_ascii_hexdigit()) {
        return anyhow!(
            "{:?} at character {} of the \\x literal is not a hex digit",
            digits[pos..].chars().next().unwrap_or(' '),
            pos + 3
        );
    }
    anyhow!(
        "the \\x literal has an odd number of hex digits ({}): is it cut off?",
        digits.len()
    )
}

/// Whether a field is a bytea array literal: `{...}` whose elements are each NULL or a `\x`
/// literal (quoted, its backslash doubled: `"\\x0b61"`). An array of anything else (a
/// `text[]`, an `int[]`, a JSON object in a table's other column) is no datum field.
fn is_bytea_array(field: &str) -> bool {
    let Some(inner) = field.strip_prefix('{').and_then(|f| f.strip_suffix('}')) else {
        return false;
    };
    inner.split(',').map(str::trim).all(|element| {
        let unquoted = element.strip_prefix('"').unwrap_or(element);
        element.is_empty() || element.eq_ignore_ascii_case("NULL") || hex_field(unquoted).is_some()
    })
}

/// The non-NULL elements of a bytea array literal, `{"\\x0b61",NULL,"\\x0d6263"}`.
fn bytea_array(field: &str) -> anyhow::Result<Vec<Vec<u8>>> {
    let inner = field
        .strip_prefix('{')
        .and_then(|f| f.strip_suffix('}'))
        .ok_or_else(|| anyhow!("an array literal ends with }}: {}", shorten(field, 40)))?;
    let mut out = Vec::new();
    for element in inner.split(',').map(str::trim) {
        if element.is_empty() || element.eq_ignore_ascii_case("NULL") {
            continue;
        }
        let unquoted = element
            .strip_prefix('"')
            .and_then(|e| e.strip_suffix('"'))
            .map(|e| e.replace("\\\\", "\\"))
            .unwrap_or_else(|| element.to_string());
        out.push(hex_literal(&unquoted)?);
    }
    Ok(out)
}

/// `text` cut to `max` characters, with an ellipsis.
pub(super) fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}...", text.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_decoded_in_place_is_what_hex_literal_decodes_and_refuses() {
        let mut texts: Vec<Vec<u8>> = [0, 1, 32_767, 32_768, 32_769, 65_537]
            .into_iter()
            .map(|len| {
                let bytes: Vec<u8> = (0..len as u32).map(|i| (i * 13) as u8).collect();
                [&b"\\x"[..], const_hex::encode(bytes).as_bytes()].concat()
            })
            .collect();
        let mut upper = texts[3].to_ascii_uppercase();
        upper[1] = b'x';
        texts.push(upper);
        // Refused: odd digits, a bad digit far in, `0x` after `\x`, no `\x`, not UTF-8.
        let mut bad_far = texts[5].clone();
        bad_far[60_000] = b'g';
        texts.extend([
            b"\\x0".to_vec(),
            bad_far,
            b"\\x0x12".to_vec(),
            b"0a0b".to_vec(),
            b"\\x0a\xff".to_vec(),
        ]);
        for text in texts {
            let expected = std::str::from_utf8(&text)
                .map_err(anyhow::Error::from)
                .and_then(hex_literal);
            let mut in_place = text.clone();
            match (hex_literal_in_place(&mut in_place), expected) {
                (Ok(()), Ok(bytes)) => assert!(in_place == bytes),
                (Err(e), Err(expected)) => {
                    assert_eq!(e.to_string(), expected.to_string());
                    assert!(in_place == text, "refused text is left as it was");
                }
                (got, expected) => panic!("{got:?} where {expected:?}"),
            }
        }
    }

    #[test]
    fn a_csv_line_is_told_with_the_flags_that_read_it() {
        for (line, next, flags) in [
            ("id,body", Some("1,\\x0b61"), Some("--csv-column body")),
            (
                "id,event_body",
                Some("1,\\x0b61"),
                Some("--csv-column event_body"),
            ),
            // A name the shell or the flag would take otherwise, or none: NAME.
            ("id,the body", Some("1,\\x0b61"), Some("--csv-column NAME")),
            ("id,", Some("1,\\x0b61"), Some("--csv-column NAME")),
            ("1,\\x0b61,x", None, Some("--csv-column 1 --csv-no-header")),
            ("\\x0b61,x", None, Some("--csv-column 0 --csv-no-header")),
            (
                "id;body",
                Some("1;\"\\x0b61\""),
                Some("--csv-column body --csv-delimiter ';'"),
            ),
            // A quoted field before the datum's may hold the delimiter: no index is sure.
            ("\"a,b\",\\x0b61", None, Some("--csv-column NAME")),
            (
                "\"the id\",body",
                Some("1,\\x0b61"),
                Some("--csv-column NAME"),
            ),
            // Hex lines, and lines of other text, are not CSV.
            ("\\x0b6", None, None),
            ("\\x0b61|\\x0b62", None, None),
            ("{\"a\": 1, \"b\": 2}", Some("hello, world"), None),
        ] {
            assert_eq!(csv_column_flags(line, next).as_deref(), flags, "{line}");
        }
    }
}
