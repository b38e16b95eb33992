//! The command-line flags that say how a file holds its rows (`--format`, `--csv-column` and
//! its options, `--copy-column`), read into a [`Format`] in one place for `pgdict` and
//! `pgdict-trainer`, so that both take the same flags and refuse the same contradictions with
//! the same words.

use clap::ValueEnum;

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
    /// COPY column is; `None` when they say nothing (the file's name then tells:
    /// [`Format::from_path`]).
    pub fn format(&self) -> Result<Option<Format>, FormatConflict> {
        let conflict = |message: String, hint| Err(FormatConflict { message, hint });
        let copy_column = self.copy_column.map(Column::parse);
        let csv = |column: &str| {
            Format::Csv(CsvOptions {
                column: Column::parse(column),
                has_header: !self.csv_no_header,
                delimiter: self.csv_delimiter,
            })
        };
        match (self.format, self.csv_column, &copy_column) {
            (Some(other), _, Some(_)) if other != FormatName::Copy => {
                return conflict(
                    format!("--copy-column reads COPY data, but --format says {other}"),
                    "drop --format (or say --format copy)",
                )
            }
            (Some(other), Some(_), _) if other != FormatName::Csv => {
                return conflict(
                    format!("--csv-column reads CSV, but --format says {other}"),
                    "drop --format (or say --format csv)",
                )
            }
            (None, Some(_), Some(_)) => {
                return conflict(
                    "--csv-column and --copy-column name columns of different formats".into(),
                    "give the one for the input's format",
                )
            }
            _ => {}
        }
        // A column goes with its format now: only CSV has a CSV column, only COPY a COPY one.
        Ok(match (self.format, self.csv_column) {
            (Some(FormatName::Csv), None) => {
                return conflict(
                    "--format csv needs a column".into(),
                    "name it with --csv-column NAME (from the header line) or a 0-based index",
                )
            }
            (Some(FormatName::Csv) | None, Some(column)) => Some(csv(column)),
            (Some(FormatName::Copy), _) => Some(Format::Copy(copy_column)),
            (None, None) => copy_column.map(|column| Format::Copy(Some(column))),
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
            csv_no_header: false,
            csv_delimiter: b',',
            copy_column,
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
            Some(Format::Copy(Some(Column::Index(2))))
        );
        assert_eq!(
            said(Some(Copy), None, None).unwrap(),
            Some(Format::Copy(None))
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
                "--csv-column and --copy-column name columns of different formats",
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
}
