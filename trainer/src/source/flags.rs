//! The command-line flags that say how a file holds its rows (`--format`, `--csv-column` and
//! its options, `--copy-column` and its options), read into a [`Format`] in one place for
//! `pgdict` and
//! `pgdict-trainer`, so that both take the same flags and refuse the same contradictions with
//! the same words.

use clap::ValueEnum;

use super::copy::CopyOptions;
use super::{Column, CsvOptions, Format};

/// A file format as `--format` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatName {
    /// One row per line (the line feed, and a carriage return before it, are not part of it;
    /// empty lines are skipped).
    Lines,
    /// One JSON value per line: a JSON string is the row's decoded text, any other value the
    /// line as it is.
    Jsonl,
    /// Length-prefixed records: u32 little-endian length, then the bytes (binary rows welcome).
    Datums,
    /// One column of a CSV file (--csv-column).
    Csv,
    /// What COPY ... TO writes, in the text format or (FORMAT binary): one column, or the one
    /// --copy-column names. NULLs and empty values are skipped.
    Copy,
}

impl std::fmt::Display for FormatName {
    /// The name as `--format` spells it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to_possible_value() {
            Some(value) => f.write_str(value.get_name()),
            None => Ok(()),
        }
    }
}

/// What a command line says of how a file holds its rows.
#[derive(Clone, Copy, Debug)]
pub struct FormatFlags<'a> {
    /// `--format`.
    pub format: Option<FormatName>,
    /// `--csv-column`: a name from the header line, or a 0-based index.
    pub csv_column: Option<&'a str>,
    /// `--csv-no-header`.
    pub csv_no_header: bool,
    /// `--csv-delimiter`.
    pub csv_delimiter: u8,
    /// `--copy-column`: a 0-based index, or a name from a text HEADER line.
    pub copy_column: Option<&'a str>,
    /// `--copy-delimiter`: the text format's DELIMITER.
    pub copy_delimiter: Option<u8>,
    /// `--copy-null`: the text format's NULL.
    pub copy_null: Option<&'a str>,
}

impl Default for FormatFlags<'_> {
    /// No flags: the format is told by the file's name, and CSV is comma-separated.
    fn default() -> Self {
        FormatFlags {
            format: None,
            csv_column: None,
            csv_no_header: false,
            csv_delimiter: b',',
            copy_column: None,
            copy_delimiter: None,
            copy_null: None,
        }
    }
}

/// Flags that contradict each other, or leave out what they need: a usage error.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct FormatConflict {
    /// What is wrong, naming the flags as they are spelled.
    pub message: String,
    /// What to give instead.
    pub hint: &'static str,
}

impl FormatFlags<'_> {
    /// The format the flags say: `--format`'s, or CSV when a CSV column is named, COPY when a
    /// COPY flag is given; `None` when they say nothing (the file's name then tells:
    /// [`Format::from_path`]).
    pub fn format(&self) -> Result<Option<Format>, FormatConflict> {
        let conflict = |message: String, hint| Err(FormatConflict { message, hint });
        let copy = CopyOptions {
            column: self.copy_column.map(Column::parse),
            delimiter: self.copy_delimiter,
            null: self.copy_null.map(|null| null.as_bytes().to_vec()),
        };
        let copy_flag = [
            ("--copy-column", self.copy_column.is_some()),
            ("--copy-delimiter", self.copy_delimiter.is_some()),
            ("--copy-null", self.copy_null.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag));
        let csv = |column: &str| {
            Format::Csv(CsvOptions {
                column: Column::parse(column),
                has_header: !self.csv_no_header,
                delimiter: self.csv_delimiter,
            })
        };
        match (self.format, self.csv_column, copy_flag) {
            (Some(other), _, Some(flag)) if other != FormatName::Copy => {
                return conflict(
                    format!("{flag} reads COPY data, but --format says {other}"),
                    "drop --format (or say --format copy)",
                )
            }
            (Some(other), Some(_), _) if other != FormatName::Csv => {
                return conflict(
                    format!("--csv-column reads CSV, but --format says {other}"),
                    "drop --format (or say --format csv)",
                )
            }
            (None, Some(_), Some(flag)) => {
                return conflict(
                    format!("--csv-column reads CSV, but {flag} reads COPY data"),
                    "give the flags of the input's format",
                )
            }
            _ => {}
        }
        if let Err(message) = copy.check() {
            return conflict(
                message,
                "give --copy-delimiter and --copy-null as COPY ... TO was given DELIMITER and NULL",
            );
        }
        // A column goes with its format now: only CSV has a CSV column, only COPY COPY flags.
        Ok(match (self.format, self.csv_column) {
            (Some(FormatName::Csv), None) => {
                return conflict(
                    "--format csv needs a column".into(),
                    "name it with --csv-column NAME (from the header line) or a 0-based index",
                )
            }
            (Some(FormatName::Csv) | None, Some(column)) => Some(csv(column)),
            (Some(FormatName::Copy), _) => Some(Format::Copy(copy)),
            (None, None) => copy_flag.map(|_| Format::Copy(copy)),
            (Some(FormatName::Lines), _) => Some(Format::Lines),
            (Some(FormatName::Jsonl), _) => Some(Format::JsonLines),
            (Some(FormatName::Datums), _) => Some(Format::Datums),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags<'a>(
        format: Option<FormatName>,
        csv_column: Option<&'a str>,
        copy_column: Option<&'a str>,
    ) -> FormatFlags<'a> {
        FormatFlags {
            format,
            csv_column,
            copy_column,
            ..FormatFlags::default()
        }
    }

    #[test]
    fn the_flags_say_a_format_or_a_conflict() {
        use FormatName::*;
        let said = |format, csv, copy| flags(format, csv, copy).format().map_err(|e| e.message);
        assert_eq!(said(None, None, None).unwrap(), None);
        assert_eq!(
            said(Some(Jsonl), None, None).unwrap(),
            Some(Format::JsonLines)
        );
        assert_eq!(
            said(None, None, Some("2")).unwrap(),
            Some(Format::Copy(CopyOptions::column(Some(Column::Index(2)))))
        );
        assert_eq!(
            said(Some(Copy), None, None).unwrap(),
            Some(Format::Copy(CopyOptions::default()))
        );
        let Some(Format::Csv(options)) = said(None, Some("body"), None).unwrap() else {
            panic!("not CSV");
        };
        assert_eq!(options.column, Column::Name("body".into()));
        assert!(options.has_header);
        assert!(matches!(
            said(Some(Csv), Some("1"), None),
            Ok(Some(Format::Csv(_)))
        ));
        for (format, csv, copy, message) in [
            (
                None,
                Some("a"),
                Some("1"),
                "--csv-column reads CSV, but --copy-column reads COPY data",
            ),
            (
                Some(Csv),
                None,
                Some("1"),
                "--copy-column reads COPY data, but --format says csv",
            ),
            (
                Some(Lines),
                Some("a"),
                None,
                "--csv-column reads CSV, but --format says lines",
            ),
            (
                Some(Copy),
                Some("a"),
                None,
                "--csv-column reads CSV, but --format says copy",
            ),
            (Some(Csv), None, None, "--format csv needs a column"),
        ] {
            assert_eq!(said(format, csv, copy).unwrap_err(), message);
        }
    }

    #[test]
    fn copy_options_say_copy_and_are_checked_as_copy_checks_them() {
        let with = |delimiter: Option<u8>, null: Option<&'static str>| FormatFlags {
            copy_delimiter: delimiter,
            copy_null: null,
            ..flags(None, None, None)
        };
        assert_eq!(
            with(Some(b'|'), Some("")).format().unwrap(),
            Some(Format::Copy(CopyOptions {
                column: None,
                delimiter: Some(b'|'),
                null: Some(Vec::new()),
            }))
        );
        for (delimiter, null, message) in [
            (
                b'\n',
                None,
                "COPY delimiter cannot be newline or carriage return",
            ),
            (b'\\', None, "COPY delimiter cannot be \"\\\\\""),
            (b'a', None, "COPY delimiter cannot be \"a\""),
            (b'7', None, "COPY delimiter cannot be \"7\""),
            (
                0xe9,
                None,
                "COPY delimiter must be a single one-byte character",
            ),
            (
                b'|',
                Some("a|b"),
                "COPY delimiter must not appear in the NULL specification",
            ),
            (
                b'|',
                Some("a\rb"),
                "COPY null representation cannot use newline or carriage return",
            ),
        ] {
            let said = with(Some(delimiter), null).format().unwrap_err().message;
            assert_eq!(said, message);
        }
        let csv = FormatFlags {
            copy_null: Some(""),
            ..flags(Some(FormatName::Csv), Some("a"), None)
        };
        assert_eq!(
            csv.format().unwrap_err().message,
            "--copy-null reads COPY data, but --format says csv"
        );
    }
}
