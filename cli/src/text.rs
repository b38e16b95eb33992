//! Text output helpers: aligned tables, numbers, times.

/// A column's alignment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table of text cells, printed with columns aligned and two spaces between them.
pub struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            columns: columns
                .iter()
                .map(|&(name, align)| (name.to_string(), align))
                .collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.columns.len());
        self.rows.push(cells);
    }

    /// The table, a line per row after the header line; trailing spaces trimmed.
    pub fn render(&self) -> String {
        let widths = self.widths(&self.rows);
        let mut out = self.line(&widths, &self.header());
        for row in &self.rows {
            out.push_str(&self.line(&widths, row));
        }
        out
    }

    /// The header line's cells: the column names.
    pub fn header(&self) -> Vec<String> {
        self.columns.iter().map(|c| c.0.clone()).collect()
    }

    /// The width of each column over the header and `rows` (rows not held by the table: a
    /// caller with too many to hold measures them here, or one at a time with
    /// [`Table::widen`], then writes each [`Table::line`]).
    pub fn widths<R: AsRef<[String]>>(&self, rows: impl IntoIterator<Item = R>) -> Vec<usize> {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.0.chars().count()).collect();
        for row in rows {
            self.widen(&mut widths, row.as_ref());
        }
        widths
    }

    /// Widens `widths` to hold `row`'s cells.
    pub fn widen(&self, widths: &mut [usize], row: &[String]) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }

    /// One line of the table with columns `widths` wide, trailing spaces trimmed.
    pub fn line(&self, widths: &[usize], cells: &[String]) -> String {
        debug_assert_eq!(cells.len(), self.columns.len());
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let pad = widths[i].saturating_sub(cell.chars().count());
            match self.columns[i].1 {
                Align::Left => {
                    text.push_str(cell);
                    text.push_str(&" ".repeat(pad));
                }
                Align::Right => {
                    text.push_str(&" ".repeat(pad));
                    text.push_str(cell);
                }
            }
        }
        text.truncate(text.trim_end().len());
        text.push('\n');
        text
    }
}

// Counts for messages are written as the trainer writes them.
pub use pgdict_trainer::progress::{counted, thousands};

/// A ratio to two decimals (`2.61`), `-` when there is none (nothing measured, or a count of 0
/// under it).
pub fn ratio(ratio: Option<f64>) -> String {
    ratio.map_or("-".into(), |r| format!("{r:.2}"))
}

/// A gain as `2.61x`, `-` when there is none ([`ratio`]).
pub fn times(gain: Option<f64>) -> String {
    gain.map_or("-".into(), |g| format!("{g:.2}x"))
}

/// A speed in MB/s, `-` when not measured.
pub fn mb_s(speed: Option<f64>) -> String {
    match speed {
        Some(s) if s >= 100.0 => format!("{s:.0}"),
        Some(s) => format!("{s:.1}"),
        None => "-".into(),
    }
}

/// `share` as a percentage to one decimal, never rounded to 0.0 or 100.0 unless exactly so: a
/// share of 1 in 4,001 is `99.9 %`, not `100.0 %` (which would say all).
pub fn percent(share: f64) -> String {
    let shown = (share * 1000.0).round() / 10.0;
    let shown = if share > 0.0 && share < 1.0 {
        shown.clamp(0.1, 99.9)
    } else {
        shown
    };
    format!("{shown:.1} %")
}

/// Microseconds since the Unix epoch as UTC: `2026-11-30 01:02:03Z`.
pub fn utc(micros: u64) -> String {
    let secs = micros / 1_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day number (days since 1970-01-01): the well-known
/// era-based conversion (400-year eras of 146,097 days, years starting in March).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `text` to show in a message, a table or a chart: control characters (NUL, ESC, C1's CSI,
/// ...), invisible format characters ([`is_invisible_format`]: a bidirectional override) and
/// bytes that are not UTF-8 escaped as Rust writes them (`\0`, `\u{1b}`, `\u{202e}`, `\xff`),
/// so none reaches the terminal or an XML file; the rest, backslashes included, as it is.
pub fn printable(text: &[u8]) -> String {
    let mut shown = String::with_capacity(text.len());
    for chunk in text.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() {
                shown.extend(c.escape_debug());
            } else if is_invisible_format(c) {
                shown.extend(c.escape_unicode());
            } else {
                shown.push(c);
            }
        }
        for byte in chunk.invalid() {
            shown.push_str(&format!("\\x{byte:02x}"));
        }
    }
    shown
}

/// A character that changes how the text around it shows while showing nothing itself:
/// bidirectional overrides and isolates (which can make a name read as another: "Trojan
/// Source"), zero-width characters, the byte order mark, and the noncharacters U+FFFE and
/// U+FFFF (which XML refuses).
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
            | '\u{fffe}'
            | '\u{ffff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_what_would_act_on_a_terminal_or_hide() {
        assert_eq!(
            printable("a\x1b[31m\u{9b}b\u{202e}c\\d\u{fffe}é".as_bytes()),
            "a\\u{1b}[31m\\u{9b}b\\u{202e}c\\d\\u{fffe}é"
        );
        assert_eq!(printable(b"\xff\x00"), "\\xff\\0");
    }

    #[test]
    fn a_percentage_is_all_or_none_only_when_exactly() {
        assert_eq!(percent(1.0), "100.0 %");
        assert_eq!(percent(0.0), "0.0 %");
        assert_eq!(percent(4000.0 / 4001.0), "99.9 %");
        assert_eq!(percent(1.0 / 10_000.0), "0.1 %");
        assert_eq!(percent(0.5), "50.0 %");
        assert_eq!(percent(0.1234), "12.3 %");
    }

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00Z");
        // 2000-02-29 12:34:56 UTC.
        assert_eq!(utc(951_827_696_000_000), "2000-02-29 12:34:56Z");
        // 2026-11-30 00:00:00 UTC.
        assert_eq!(utc(1_795_996_800_000_000), "2026-11-30 00:00:00Z");
        // Around the leap days a century skips and the one 400 years keep.
        for (micros, date) in [
            (983_404_800_000_000, "2001-03-01 00:00:00Z"),
            (4_107_542_399_000_000, "2100-02-28 23:59:59Z"),
            (4_107_542_400_000_000, "2100-03-01 00:00:00Z"),
            (13_569_465_599_000_000, "2399-12-31 23:59:59Z"),
            (13_574_585_228_000_000, "2400-02-29 06:07:08Z"),
        ] {
            assert_eq!(utc(micros), date);
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(mb_s(Some(1234.4)), "1234");
        assert_eq!(mb_s(Some(12.34)), "12.3");
        assert_eq!(mb_s(None), "-");
    }

    #[test]
    fn table_aligns() {
        let mut t = Table::new(&[("name", Align::Left), ("n", Align::Right)]);
        t.row(vec!["a".into(), "10".into()]);
        t.row(vec!["bcd".into(), "2".into()]);
        assert_eq!(t.render(), "name   n\na     10\nbcd    2\n");
    }
}
