//! One module per command.

pub mod compare;
pub mod compress;
pub mod decompress;
pub mod demo;
pub mod dict;
pub mod inspect;

/// For the commands' tests: the layout and records of `text` (COPY text data) and of `csv`
/// (CSV without a header), each read for its second column, as `--copy-column 1` and
/// `--csv-column 1 --csv-no-header` read them.
#[cfg(test)]
fn second_column_records(
    text: &str,
    csv: &str,
) -> [(
    pgdict_trainer::source::copy::Layout,
    Vec<pgdict_trainer::source::copy::Record>,
); 2] {
    use pgdict_trainer::source::copy::{self, CopyOptions};
    use pgdict_trainer::source::csv::{self, CsvOptions};
    use pgdict_trainer::source::Column;
    use std::io::Cursor;
    let (text_layout, text_records) = copy::records(
        Cursor::new(text.as_bytes().to_vec()),
        &CopyOptions::column(Some(Column::Index(1))),
        "in".into(),
    )
    .unwrap();
    let csv_options = CsvOptions {
        has_header: false,
        ..CsvOptions::new(Column::Index(1))
    };
    let (csv_layout, csv_records) = csv::records(
        Cursor::new(csv.as_bytes().to_vec()),
        &csv_options,
        "in".into(),
    )
    .unwrap();
    [
        (text_layout, text_records.collect::<Result<_, _>>().unwrap()),
        (csv_layout, csv_records.collect::<Result<_, _>>().unwrap()),
    ]
}
