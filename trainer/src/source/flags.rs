//! The command-line flags that say how a file holds its rows (`--format`, `--csv-column` and
//! its options, `--copy-column` and its options), declared once ([`ColumnFlags`], flattened
//! into `pgdict`'s and `pgdict-trainer`'s arguments) and read into a [`Format`] in one place,
//! so that both commands take the same flags and refuse the same contradictions with the same
//! words.

use clap::ValueEnum;

use super::copy::CopyOptions;
use super::{parse_delimiter, Column, CsvOptions, CsvSyntax, Format};

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

/// The flags that say which column of CSV or COPY data holds the values, and how the data is
/// laid out (`#[command(flatten)]` them into a command's arguments).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ColumnFlags {
    /// Read CSV (as COPY ... TO ... (FORMAT csv) writes it), this column of it: a name from
    /// the header line, or a 0-based index.
    #[arg(long, value_name = "NAME|INDEX")]
    pub csv_column: Option<String>,

    /// The CSV's first line is a header, as COPY ... TO ... (FORMAT csv, HEADER) writes one.
    /// A column name implies it; with an index, say this or --csv-no-header.
    #[arg(long, conflicts_with = "csv_no_header")]
    pub csv_header: bool,

    /// The CSV has no header line, as COPY ... TO ... (FORMAT csv) writes it without HEADER
    /// (its first record is data; name the column by index).
    #[arg(long)]
    pub csv_no_header: bool,

    /// The CSV field delimiter, as COPY ... TO was given it (FORMAT csv, DELIMITER): one byte,
    /// or `\t` (or `tab`) for a tab. Default: a comma.
    #[arg(long, value_name = "CHAR", value_parser = parse_delimiter)]
    pub csv_delimiter: Option<u8>,

    /// The NULL string of the CSV, as COPY ... TO was given it (FORMAT csv, NULL): an unquoted
    /// field that is this string is NULL. Default: an unquoted empty field.
    #[arg(long, value_name = "STRING")]
    pub csv_null: Option<String>,

    /// The CSV quote, as COPY ... TO was given it (FORMAT csv, QUOTE): one byte. Default: `"`.
    #[arg(long, value_name = "CHAR", value_parser = parse_delimiter)]
    pub csv_quote: Option<u8>,

    /// The CSV escape, as COPY ... TO was given it (FORMAT csv, ESCAPE): the byte written
    /// before a quote or an escape in a quoted field. Default: the quote (a quote in a quoted
    /// field is doubled).
    #[arg(long, value_name = "CHAR", value_parser = parse_delimiter)]
    pub csv_escape: Option<u8>,

    /// The CSV column's values are quoted whatever they hold, as COPY ... TO quotes them when
    /// given FORCE_QUOTE for the column (or *): written back so too.
    #[arg(long)]
    pub csv_force_quote: bool,

    /// Read COPY data (text or binary), this column of it: a 0-based index, or the name the
    /// first line gives it (text COPY ... TO with HEADER). Without it the data must have one
    /// column.
    #[arg(long, value_name = "INDEX|NAME")]
    pub copy_column: Option<String>,

    /// The field delimiter of COPY's text format, as COPY ... TO was given it (DELIMITER):
    /// one byte, or `\t`. Default: a tab.
    #[arg(long, value_name = "CHAR", value_parser = parse_delimiter)]
    pub copy_delimiter: Option<u8>,

    /// The NULL string of COPY's text format, as COPY ... TO was given it (NULL, say '').
    /// Default: \N.
    #[arg(long, value_name = "STRING")]
    pub copy_null: Option<String>,

    /// The text COPY data starts with a header line, as COPY ... TO writes it given HEADER:
    /// with --copy-column INDEX it is passed over (a column name says so anyway).
    #[arg(long)]
    pub copy_header: bool,
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

impl ColumnFlags {
    /// The first CSV flag given, as it is spelled.
    fn csv_flag(&self) -> Option<&'static str> {
        [
            ("--csv-column", self.csv_column.is_some()),
            ("--csv-header", self.csv_header),
            ("--csv-no-header", self.csv_no_header),
            ("--csv-delimiter", self.csv_delimiter.is_some()),
            ("--csv-null", self.csv_null.is_some()),
            ("--csv-quote", self.csv_quote.is_some()),
            ("--csv-escape", self.csv_escape.is_some()),
            ("--csv-force-quote", self.csv_force_quote),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }

    /// The first COPY flag given, as it is spelled.
    fn copy_flag(&self) -> Option<&'static str> {
        [
            ("--copy-column", self.copy_column.is_some()),
            ("--copy-delimiter", self.copy_delimiter.is_some()),
            ("--copy-null", self.copy_null.is_some()),
            ("--copy-header", self.copy_header),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }

    /// The first flag given, as it is spelled; `None` when none is.
    pub fn given(&self) -> Option<&'static str> {
        self.csv_flag().or_else(|| self.copy_flag())
    }

    /// The format these flags and `--format` (`format`) say: `--format`'s, or CSV when a CSV
    /// flag is given, COPY when a COPY flag is; `None` when they say nothing (the file's name
    /// then tells: [`Format::from_path`]).
    pub fn format(&self, format: Option<FormatName>) -> Result<Option<Format>, FormatConflict> {
        let conflict = |message: String, hint| Err(FormatConflict { message, hint });
        let copy = CopyOptions {
            column: self.copy_column.as_deref().map(Column::parse),
            delimiter: self.copy_delimiter,
            null: self.copy_null.as_ref().map(|null| null.as_bytes().to_vec()),
            header: self.copy_header,
        };
        let (csv_flag, copy_flag) = (self.csv_flag(), self.copy_flag());
        match (format, csv_flag, copy_flag) {
            (Some(other), _, Some(flag)) if other != FormatName::Copy => {
                return conflict(
                    format!("{flag} reads COPY data, but --format says {other}"),
                    "drop --format (or say --format copy)",
                )
            }
            (Some(other), Some(flag), _) if other != FormatName::Csv => {
                return conflict(
                    format!("{flag} reads CSV, but --format says {other}"),
                    "drop --format (or say --format csv)",
                )
            }
            (None, Some(csv), Some(copy)) => {
                return conflict(
                    format!("{csv} reads CSV, but {copy} reads COPY data"),
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
        // The flags go with their format now: CSV flags with CSV, COPY flags with COPY.
        Ok(match (format, csv_flag) {
            (Some(FormatName::Csv), _) => Some(self.csv("--format csv")?),
            (None, Some(flag)) => Some(self.csv(flag)?),
            (Some(FormatName::Copy), _) => Some(Format::Copy(copy)),
            (None, None) => copy_flag.map(|_| Format::Copy(copy)),
            (Some(FormatName::Lines), _) => Some(Format::Lines),
            (Some(FormatName::Jsonl), _) => Some(Format::JsonLines),
            (Some(FormatName::Datums), _) => Some(Format::Datums),
        })
    }

    /// CSV as the CSV flags say; `said_by` names the flag that asked for CSV.
    fn csv(&self, said_by: &str) -> Result<Format, FormatConflict> {
        let Some(column) = &self.csv_column else {
            return Err(FormatConflict {
                message: format!("{said_by} needs a column"),
                hint: "name it with --csv-column NAME (from the header line) or a 0-based index",
            });
        };
        let default = CsvSyntax::default();
        let quote = self.csv_quote.unwrap_or(default.quote);
        let csv = CsvOptions {
            column: Column::parse(column),
            has_header: !self.csv_no_header,
            syntax: CsvSyntax {
                delimiter: self.csv_delimiter.unwrap_or(default.delimiter),
                quote,
                escape: self.csv_escape.unwrap_or(quote),
                null: self
                    .csv_null
                    .as_ref()
                    .map_or(default.null, |null| null.as_bytes().to_vec()),
                force_quote: self.csv_force_quote,
            },
        };
        csv.check().map_err(|message| FormatConflict {
            message,
            hint: "give --csv-delimiter, --csv-null, --csv-quote and --csv-escape as COPY ... TO \
                   was given DELIMITER, NULL, QUOTE and ESCAPE",
        })?;
        // A name says there is a header; an index does not, and COPY writes none unless told:
        // taken for a header, a first record of data would be passed over (or, with
        // --keep-columns, written back as it is where a datum belongs).
        if let (Column::Name(name), true) = (&csv.column, self.csv_no_header) {
            return Err(FormatConflict {
                message: format!(
                    "--csv-column {name} names a column, which only a header line can, but \
                     --csv-no-header says there is none"
                ),
                hint: "give the column's 0-based index, or drop --csv-no-header",
            });
        }
        if let Column::Index(index) = csv.column {
            if !self.csv_header && !self.csv_no_header {
                return Err(FormatConflict {
                    message: format!(
                        "--csv-column {index} is an index: say whether the CSV's first line is \
                         a header (--csv-header) or data (--csv-no-header)"
                    ),
                    hint: "COPY ... TO ... (FORMAT csv) writes a header line only when given \
                           HEADER",
                });
            }
        }
        Ok(Format::Csv(csv))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(csv_column: Option<&str>, copy_column: Option<&str>) -> ColumnFlags {
        ColumnFlags {
            csv_column: csv_column.map(Into::into),
            copy_column: copy_column.map(Into::into),
            ..ColumnFlags::default()
        }
    }

    #[test]
    fn the_flags_say_a_format_or_a_conflict() {
        use FormatName::*;
        let said = |format, csv, copy| flags(csv, copy).format(format).map_err(|e| e.message);
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
        // An index leaves the header unsaid: the flags must say it.
        assert_eq!(
            said(Some(Csv), Some("1"), None).unwrap_err(),
            "--csv-column 1 is an index: say whether the CSV's first line is a header \
             (--csv-header) or data (--csv-no-header)"
        );
        let named_without_header = ColumnFlags {
            csv_no_header: true,
            ..flags(Some("body"), None)
        };
        assert_eq!(
            named_without_header.format(None).unwrap_err().message,
            "--csv-column body names a column, which only a header line can, but \
             --csv-no-header says there is none"
        );
        for (header, no_header) in [(true, false), (false, true)] {
            let flags = ColumnFlags {
                csv_header: header,
                csv_no_header: no_header,
                ..flags(Some("1"), None)
            };
            let Ok(Some(Format::Csv(options))) = flags.format(Some(Csv)) else {
                panic!("not CSV");
            };
            assert_eq!(options.column, Column::Index(1));
            assert_eq!(options.has_header, header);
        }
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
        let with = |delimiter: Option<u8>, null: Option<&str>| ColumnFlags {
            copy_delimiter: delimiter,
            copy_null: null.map(Into::into),
            ..ColumnFlags::default()
        };
        assert_eq!(
            with(Some(b'|'), Some("")).format(None).unwrap(),
            Some(Format::Copy(CopyOptions {
                column: None,
                delimiter: Some(b'|'),
                null: Some(Vec::new()),
                header: false,
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
            let said = with(Some(delimiter), null)
                .format(None)
                .unwrap_err()
                .message;
            assert_eq!(said, message);
        }
        let csv = ColumnFlags {
            copy_null: Some(String::new()),
            ..flags(Some("a"), None)
        };
        assert_eq!(
            csv.format(Some(FormatName::Csv)).unwrap_err().message,
            "--copy-null reads COPY data, but --format says csv"
        );
    }

    #[test]
    fn csv_options_say_csv_and_need_a_column() {
        let csv = |flags: ColumnFlags, format| flags.format(format).map_err(|e| e.message);
        let tab = ColumnFlags {
            csv_delimiter: Some(b'\t'),
            csv_no_header: true,
            ..flags(Some("2"), None)
        };
        assert_eq!(
            csv(tab, None).unwrap(),
            Some(Format::Csv(CsvOptions {
                column: Column::Index(2),
                has_header: false,
                syntax: CsvSyntax {
                    delimiter: b'\t',
                    ..CsvSyntax::default()
                },
            }))
        );
        let no_column = ColumnFlags {
            csv_delimiter: Some(b';'),
            ..ColumnFlags::default()
        };
        assert_eq!(
            csv(no_column.clone(), None).unwrap_err(),
            "--csv-delimiter needs a column"
        );
        assert_eq!(
            csv(no_column, Some(FormatName::Lines)).unwrap_err(),
            "--csv-delimiter reads CSV, but --format says lines"
        );
        let quote = ColumnFlags {
            csv_delimiter: Some(b'"'),
            ..flags(Some("a"), None)
        };
        assert_eq!(
            csv(quote, None).unwrap_err(),
            "COPY delimiter and quote must be different"
        );
        let null = |null: &str| ColumnFlags {
            csv_null: Some(null.into()),
            ..flags(Some("a"), None)
        };
        assert_eq!(
            csv(null("NULL"), None).unwrap(),
            Some(Format::Csv(CsvOptions {
                syntax: CsvSyntax {
                    null: b"NULL".to_vec(),
                    ..CsvSyntax::default()
                },
                ..CsvOptions::new(Column::Name("a".into()))
            }))
        );
        assert_eq!(
            csv(null("a,b"), None).unwrap_err(),
            "COPY delimiter must not appear in the NULL specification"
        );
        let null_alone = ColumnFlags {
            csv_null: Some("NULL".into()),
            ..ColumnFlags::default()
        };
        assert_eq!(
            csv(null_alone, None).unwrap_err(),
            "--csv-null needs a column"
        );
    }

    #[test]
    fn the_escape_is_the_quote_unless_given() {
        let syntax = |quote: Option<u8>, escape: Option<u8>| {
            let flags = ColumnFlags {
                csv_quote: quote,
                csv_escape: escape,
                ..flags(Some("a"), None)
            };
            match flags.format(None).map_err(|e| e.message)? {
                Some(Format::Csv(options)) => {
                    Ok::<_, String>((options.syntax.quote, options.syntax.escape))
                }
                other => panic!("not CSV: {other:?}"),
            }
        };
        assert_eq!(syntax(None, None), Ok((b'"', b'"')));
        assert_eq!(syntax(Some(b'\''), None), Ok((b'\'', b'\'')));
        assert_eq!(syntax(None, Some(b'\\')), Ok((b'"', b'\\')));
        assert_eq!(syntax(Some(b'\''), Some(b'\\')), Ok((b'\'', b'\\')));
        assert_eq!(
            syntax(Some(b','), None).unwrap_err(),
            "COPY delimiter and quote must be different"
        );
        assert_eq!(
            syntax(None, Some(b'\n')).unwrap_err(),
            "pgdict does not read CSV whose quote or escape is a line end"
        );
        let quote_alone = ColumnFlags {
            csv_quote: Some(b'\''),
            ..ColumnFlags::default()
        };
        assert_eq!(
            quote_alone.format(None).unwrap_err().message,
            "--csv-quote needs a column"
        );
        let force_quote = |csv_column: Option<&str>| ColumnFlags {
            csv_force_quote: true,
            ..flags(csv_column, None)
        };
        let Ok(Some(Format::Csv(options))) = force_quote(Some("a")).format(None) else {
            panic!("not CSV");
        };
        assert!(options.syntax.force_quote);
        assert_eq!(
            force_quote(None).format(None).unwrap_err().message,
            "--csv-force-quote needs a column"
        );
    }
}
