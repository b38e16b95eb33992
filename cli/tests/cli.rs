//! End-to-end tests of the `pgdict` binary: each runs it in its own temporary directory, with
//! no `PGDICT_STORE` from the environment, and checks output and exit status.

mod common;

use std::fs;
use std::io::Read;
use std::process::Stdio;

use common::{corpus, corpus_arg, DemoStore, Dir, Run};
use pgdict_trainer::progress::thousands;

/// The sizes the demo's pglz dictionary may have: the pgdict builder fills at most pglz's
/// 4095-byte window, and not always to the last byte (what it keeps follows the
/// compressor's choices, so the exact size moves when the compressor does).
const PGLZ_DICT_BYTES: std::ops::RangeInclusive<usize> = 3800..=4095;

/// The size of the pglz dictionary that a demo's output reports adding.
fn added_pglz_bytes(out: &str) -> usize {
    let rest = out
        .split("added dictionary 1 (pglz, ")
        .nth(1)
        .unwrap_or_else(|| panic!("no pglz dictionary added:\n{out}"));
    let number = rest.split(' ').next().unwrap().replace(',', "");
    number
        .parse()
        .unwrap_or_else(|_| panic!("not a size: {number}\n{out}"))
}

#[test]
fn demo_trains_stores_and_compares_on_a_fresh_store() {
    let dir = Dir::new();
    let run = dir.run(&["demo", "--rounds", "1"]).ok();
    let out = run.stdout();
    // From a directory without corpus/, the rows built into the binary.
    assert!(
        out.contains("corpus/events.jsonl (built into pgdict)"),
        "{out}"
    );
    let pglz_bytes = added_pglz_bytes(&out);
    assert!(PGLZ_DICT_BYTES.contains(&pglz_bytes), "{out}");
    assert!(out.contains("added dictionary 2 (lz4, "), "{out}");
    for label in [
        "pglz+dict",
        "lz4+dict",
        "zstd+dict",
        "all sizes: 1,000 datums",
    ] {
        assert!(out.contains(label), "no {label:?} in:\n{out}");
    }
    assert!(dir.path("dicts/00000001.pgdict").is_file());
    assert!(dir.path("dicts/00000002.pgdict").is_file());
    assert!(!dir.path("dicts/00000003.pgdict").exists());
    // The pglz dictionary at least doubles the ratio of plain pglz on these rows.
    let pglz_dict = out
        .lines()
        .find(|l| l.starts_with("pglz+dict"))
        .expect("a pglz+dict row");
    let vs_pglz: f64 = pglz_dict
        .split_whitespace()
        .nth(3)
        .and_then(|x| x.strip_suffix('x'))
        .and_then(|x| x.parse().ok())
        .expect("vs pglz column");
    assert!(vs_pglz >= 2.0, "{pglz_dict}");
    // The commands it suggests next read the default store: no --store.
    assert!(out.contains("\n  pgdict dict list\n"), "{out}");

    // Again: the same dictionaries are kept, not added twice.
    let again = dir.run(&["demo", "--rounds", "1"]).ok().stdout();
    assert!(again.contains("kept dictionary 1 (pglz"), "{again}");
    assert!(!dir.path("dicts/00000003.pgdict").exists());

    // Another store by flag, and by environment variable.
    let out = dir
        .run(&[
            "demo", "--rounds", "1", "--sample", "app-logs", "--store", "other",
        ])
        .ok()
        .stdout();
    assert!(dir.path("other/00000001.pgdict").is_file());
    // The commands it suggests next read that store.
    assert!(
        out.contains("\n  pgdict --store other dict list\n"),
        "{out}"
    );
    let listed = dir
        .command(&["dict", "list"])
        .env("PGDICT_STORE", dir.path("other"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("app_logs.txt"));
}

/// Writes `rows.txt`: 12,000 rows (three batches of 4096 and a short one), the corpus's app
/// logs and events three times over; returns its bytes.
fn write_12000_rows(dir: &Dir) -> Vec<u8> {
    let logs = fs::read(corpus("app_logs.txt")).unwrap();
    let events = fs::read(corpus("events.jsonl")).unwrap();
    let mut rows = Vec::new();
    for _ in 0..3 {
        rows.extend_from_slice(&logs);
        rows.extend_from_slice(&events);
    }
    dir.write("rows.txt", &rows);
    rows
}

/// Batches of rows are compressed on several threads and written back in input order: the
/// same bytes for any number of threads, and an error names its row after the rows before it.
#[test]
fn compress_writes_the_same_datums_on_any_number_of_threads() {
    let dir = Dir::new();
    dir.demo_store();
    let rows = write_12000_rows(&dir);
    let one = dir
        .run(&["compress", "rows.txt", "--jobs", "1", "-o", "one.datums"])
        .ok();
    assert!(one.stderr.contains("12,000 rows"), "{}", one.stderr);
    let datums = fs::read(dir.path("one.datums")).unwrap();
    for jobs in ["2", "3", "8"] {
        let run = dir
            .run(&["compress", "rows.txt", "--jobs", jobs, "-o", "many.datums"])
            .ok();
        assert_eq!(run.stderr, one.stderr, "--jobs {jobs}");
        assert!(
            fs::read(dir.path("many.datums")).unwrap() == datums,
            "--jobs {jobs}: other bytes"
        );
    }
    assert_eq!(dir.run(&["decompress", "one.datums"]).ok().stdout, rows);
    // At most 256 threads: more would fail to start (about 16,000 here) and could hold
    // gigabytes of batches in flight.
    for jobs in ["0", "257"] {
        dir.run(&["compress", "rows.txt", "--jobs", jobs])
            .fails(2, &["--jobs", "1..=256"]);
    }

    // A row that cannot be read (invalid JSON at row 9,000) ends the output after the 8,999
    // rows before it, on any number of threads, with a line no reader takes.
    let events = fs::read(corpus("events.jsonl")).unwrap();
    let mut lines: Vec<&[u8]> = events
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    while lines.len() < 10_000 {
        lines.extend_from_within(..2000);
    }
    lines[8999] = b"{not json";
    let mut jsonl = lines.join(&b'\n');
    jsonl.push(b'\n');
    dir.write("bad.jsonl", &jsonl);
    for jobs in ["1", "2"] {
        let run = dir
            .run(&["compress", "bad.jsonl", "--hex", "--jobs", jobs])
            .fails(1, &["bad.jsonl", "9000"]);
        let stdout = run.stdout();
        let (datums, last) = stdout.trim_end().rsplit_once('\n').unwrap();
        assert_eq!(datums.lines().count(), 8999, "--jobs {jobs}");
        assert!(
            last.starts_with("\\x-- pgdict stopped on an error"),
            "{last}"
        );
    }
}

#[test]
fn decompress_writes_the_same_rows_on_any_number_of_threads() {
    let dir = Dir::new();
    dir.demo_store();
    let rows = write_12000_rows(&dir);
    let hex = dir.run(&["compress", "rows.txt", "--hex"]).ok().stdout;
    dir.write("rows.hex", &hex);
    for jobs in ["1", "2", "3", "8"] {
        let run = dir.run(&["decompress", "rows.hex", "--jobs", jobs]).ok();
        assert!(run.stdout == rows, "--jobs {jobs}: other rows");
        let piped = dir
            .run_with_stdin(&["decompress", "-", "--jobs", jobs], &hex)
            .ok();
        assert!(
            piped.stdout == rows,
            "--jobs {jobs}, standard input: other rows"
        );
    }
    for jobs in ["0", "257"] {
        dir.run(&["decompress", "rows.hex", "--jobs", jobs])
            .fails(2, &["--jobs", "1..=256"]);
    }

    // Datum 9,000 cut short by a byte: a datum that reads but does not decode ends the output
    // after the 8,999 rows before it, on any number of threads; so does a line that is not hex.
    let mut lines: Vec<Vec<u8>> = hex.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let good = lines[8999].clone();
    lines[8999].truncate(good.len() - 2);
    dir.write("cut.hex", lines.join(&b'\n'));
    lines[8999] = b"\\xnot hex".to_vec();
    dir.write("bad.hex", lines.join(&b'\n'));
    for jobs in ["1", "2"] {
        let cut = dir
            .run(&["decompress", "cut.hex", "--jobs", jobs])
            .fails(1, &["cannot decompress datum 9000 (line 9000 of cut.hex)"]);
        assert_eq!(cut.stdout().lines().count(), 8999, "--jobs {jobs}");
        assert!(rows.starts_with(&cut.stdout), "--jobs {jobs}");
        let bad = dir
            .run(&["decompress", "bad.hex", "--jobs", jobs])
            .fails(1, &["bad.hex", "line 9000"]);
        assert_eq!(bad.stdout().lines().count(), 8999, "--jobs {jobs}");
    }
}

#[test]
fn a_count_of_one_is_singular() {
    let dir = Dir::new();
    dir.write("one.txt", "GET /index.html 200 1532\n");
    let run = dir
        .run(&["compress", "one.txt", "--dict", "none", "-o", "one.datums"])
        .ok();
    assert!(
        run.stderr.starts_with("pgdict: 1 row, 24 bytes"),
        "{}",
        run.stderr
    );
    let out = dir.run(&["inspect", "one.datums"]).ok().stdout();
    assert!(
        out.lines()
            .last()
            .unwrap()
            .starts_with("1 datum of one.datums"),
        "{out}"
    );
}

#[test]
fn compress_decompress_round_trip_as_datums_file_hex_and_copy() {
    let dir = Dir::new();
    dir.demo_store();
    let rows = corpus_arg("app_logs.txt");
    let original = fs::read(&rows).unwrap();

    // Datums file.
    let run = dir.run(&["compress", &rows, "-o", "logs.datums"]).ok();
    assert!(
        run.stderr.contains("2,000 rows") && run.stderr.contains("dictionary 1"),
        "{}",
        run.stderr
    );
    let back = dir.run(&["decompress", "logs.datums"]).ok();
    assert_eq!(back.stdout, original);
    // Through standard input both ways, and in a file of another name: told as a datums file
    // by its first records.
    let datums = dir.run_with_stdin(&["compress", "-q"], &original).ok();
    assert_eq!(datums.stdout, fs::read(dir.path("logs.datums")).unwrap());
    let back = dir.run_with_stdin(&["decompress"], &datums.stdout).ok();
    assert_eq!(back.stdout, original);
    dir.write("logs.bin", &datums.stdout);
    assert_eq!(dir.run(&["decompress", "logs.bin"]).ok().stdout, original);

    // Hex lines, as for SQL, through standard input both ways.
    let hex = dir
        .run_with_stdin(&["compress", "--codec", "lz4", "--hex", "-q"], &original)
        .ok();
    let text = hex.stdout();
    assert_eq!(text.lines().count(), 2000);
    assert!(text.lines().all(|l| l.starts_with("\\x")), "{text}");
    assert!(hex.stderr.is_empty(), "{}", hex.stderr);
    let back = dir.run_with_stdin(&["decompress"], &hex.stdout).ok();
    assert_eq!(back.stdout, original);
    // A `.hex` file name asks for the same lines.
    dir.run(&["compress", "--codec", "lz4", "-q", &rows, "-o", "logs.hex"])
        .ok();
    assert_eq!(fs::read(dir.path("logs.hex")).unwrap(), hex.stdout);

    // Binary COPY, through standard input both ways; a `.copy` file name asks for it.
    let copy = dir
        .run_with_stdin(&["compress", "--codec", "lz4", "--copy", "-q"], &original)
        .ok();
    assert!(copy.stdout.starts_with(b"PGCOPY\n\xff\r\n\0"));
    // Its trailer, which a reader does without (as PostgreSQL does).
    assert!(copy.stdout.ends_with(b"\xff\xff"), "no trailer");
    let back = dir.run_with_stdin(&["decompress"], &copy.stdout).ok();
    assert_eq!(back.stdout, original);
    dir.run(&["compress", "--codec", "lz4", "-q", &rows, "-o", "logs.copy"])
        .ok();
    assert_eq!(fs::read(dir.path("logs.copy")).unwrap(), copy.stdout);

    // Prefixes, as substr() reads them.
    let prefix = dir
        .run(&["decompress", "--prefix", "24", "logs.datums"])
        .ok();
    let expected: Vec<String> = String::from_utf8(original.clone())
        .unwrap()
        .lines()
        .map(|l| l[..24].to_string())
        .collect();
    let got: Vec<String> = prefix.stdout().lines().map(str::to_string).collect();
    assert_eq!(got, expected);
    // As JSON Lines, a character the cut splits is left out; a row that is not UTF-8 of its
    // own (its last byte begins a character it does not finish) is still refused.
    dir.write("utf8.txt", "héllo wörld\nab\u{e9}\n");
    let mut rows = fs::read(dir.path("utf8.txt")).unwrap();
    rows.truncate(rows.len() - 2); // "ab" and the first byte of "é"
    rows.push(b'\n');
    dir.write("utf8.txt", &rows);
    dir.run(&["compress", "--dict", "none", "utf8.txt", "-o", "u.datums"])
        .ok();
    let cut = |k: &str| {
        dir.run(&[
            "decompress",
            "--prefix",
            k,
            "--out-format",
            "jsonl",
            "u.datums",
        ])
    };
    assert_eq!(cut("2").ok().stdout(), "\"h\"\n\"ab\"\n");
    let refused = cut("3").fails(1, &["datum 2", "not UTF-8"]);
    assert_eq!(refused.stdout(), "\"hé\"\n");

    // Rows with line feeds: refused as lines, kept as JSON Lines and as a datums file.
    let jsonl = dir.write(
        "multi.jsonl",
        "\"one\\ntwo\"\n{\"k\":[1,2]}\n\"\\\"quoted\\\"\"\n",
    );
    dir.run(&[
        "compress",
        "--dict",
        "none",
        jsonl.to_str().unwrap(),
        "-o",
        "m.datums",
    ])
    .ok();
    dir.run(&["decompress", "m.datums"])
        .fails(1, &["holds a line feed", "--out-format jsonl"]);
    let back = dir
        .run(&["decompress", "m.datums", "--out-format", "jsonl"])
        .ok();
    assert_eq!(back.stdout, fs::read(&jsonl).unwrap());
    dir.run(&[
        "decompress",
        "m.datums",
        "--out-format",
        "datums",
        "-o",
        "m2.datums",
    ])
    .ok();
    dir.run(&["compress", "--dict", "none", "m2.datums", "-o", "m3.datums"])
        .ok();
    let back = dir
        .run(&["decompress", "m3.datums", "--out-format", "jsonl"])
        .ok();
    assert_eq!(back.stdout, fs::read(&jsonl).unwrap());

    // Without --out-format, the output file's name picks the format as --format reads names;
    // an explicit --out-format the name contradicts is refused (see bad_input.rs).
    dir.run(&["decompress", "m.datums", "-o", "m.jsonl"]).ok();
    assert_eq!(
        fs::read(dir.path("m.jsonl")).unwrap(),
        fs::read(&jsonl).unwrap()
    );
    dir.run(&["decompress", "m.datums", "-o", "m4.datums"]).ok();
    assert_eq!(
        fs::read(dir.path("m4.datums")).unwrap(),
        fs::read(dir.path("m2.datums")).unwrap()
    );
    dir.run(&["decompress", "m.datums", "-o", "m.txt"])
        .fails(1, &["holds a line feed", "-o ROWS.jsonl"]);
    dir.run(&[
        "decompress",
        "m.datums",
        "--out-format",
        "lines",
        "-o",
        "m2.jsonl",
    ])
    .fails(2, &["the name m2.jsonl says JSON Lines"]);
    assert!(!dir.path("m.txt").exists() && !dir.path("m2.jsonl").exists());
}

#[test]
fn a_csv_column_with_another_delimiter_is_read_as_the_trainer_reads_it() {
    // COPY ... TO ... (FORMAT csv, DELIMITER E'\t'): a tab inside a field is quoted.
    let dir = Dir::new();
    dir.write(
        "rows.tsv",
        "id\tbody\n1\tplain, with a comma\n2\t\"a\ttab and a \"\"quote\"\"\"\n",
    );
    let compress = |delimiter: &str| {
        dir.run(&[
            "compress",
            "rows.tsv",
            "--csv-column",
            "body",
            "--csv-delimiter",
            delimiter,
            "--dict",
            "none",
            "-o",
            "rows.datums",
            "-q",
        ])
        .ok();
        dir.run(&["decompress", "rows.datums", "--out-format", "jsonl"])
            .ok()
            .stdout()
    };
    for delimiter in ["\\t", "tab"] {
        assert_eq!(
            compress(delimiter),
            "\"plain, with a comma\"\n\"a\\ttab and a \\\"quote\\\"\"\n"
        );
    }
    // QUOTE '''', ESCAPE '\': the same values (in quotes a backslash before a quote).
    dir.write(
        "rows.csv",
        "id,body\n1,'plain, with a comma'\n2,'a\ttab and a \"quote\"'\n3,'it\\'s'\n",
    );
    let quoted = [
        "compress",
        "rows.csv",
        "--csv-column",
        "body",
        "--csv-quote",
        "'",
        "--csv-escape",
        "\\",
        "--dict",
        "none",
        "-o",
        "quoted.datums",
        "-q",
    ];
    dir.run(&quoted).ok();
    let values = dir
        .run(&["decompress", "quoted.datums", "--out-format", "jsonl"])
        .ok()
        .stdout();
    assert_eq!(
        values,
        "\"plain, with a comma\"\n\"a\\ttab and a \\\"quote\\\"\"\n\"it's\"\n"
    );
    // With the default comma the header has one column, `id\tbody`.
    dir.run(&[
        "compress",
        "rows.tsv",
        "--csv-column",
        "body",
        "--dict",
        "none",
        "-o",
        "x.datums",
    ])
    .fails(1, &["no CSV column \"body\""]);
    dir.run(&["compress", "rows.tsv", "--csv-delimiter", "ab"])
        .fails(2, &["\"ab\" is not one byte"]);
    // A column flag for another format than --format's is a usage error.
    for (flags, message) in [
        (
            &["--csv-column", "body", "--format", "lines"][..],
            "--csv-column reads CSV, but --format says lines",
        ),
        (
            &["--copy-column", "1", "--format", "csv"],
            "--copy-column reads COPY data, but --format says csv",
        ),
        (
            &["--copy-column", "1", "--csv-column", "1"],
            "--csv-column reads CSV, but --copy-column reads COPY data",
        ),
        (&["--format", "csv"], "--format csv needs a column"),
        (&["--csv-delimiter", ";"], "--csv-delimiter needs a column"),
        (
            &["--csv-column", "1", "--csv-delimiter", "\""],
            "COPY delimiter and quote must be different",
        ),
        (
            &["--csv-column", "1", "--csv-null", "\"NULL\""],
            "CSV quote character must not appear in the NULL specification",
        ),
        (&["--csv-null", "NULL"], "--csv-null needs a column"),
        (
            &["--csv-column", "1", "--csv-quote", ","],
            "COPY delimiter and quote must be different",
        ),
        (
            &[
                "--csv-column",
                "1",
                "--csv-quote",
                "'",
                "--csv-null",
                "it's",
            ],
            "CSV quote character must not appear in the NULL specification",
        ),
        (&["--csv-escape", "\\"], "--csv-escape needs a column"),
        (
            &["--copy-null", "", "--format", "lines"],
            "--copy-null reads COPY data, but --format says lines",
        ),
        // A CSV column by index: is the first line a header? COPY writes one only if told.
        (
            &["--csv-column", "1"],
            "say whether the CSV's first line is a header (--csv-header) or data \
             (--csv-no-header)",
        ),
        (
            &["--csv-column", "1", "--csv-header", "--csv-no-header"],
            "cannot be used with",
        ),
        // COPY's text options are checked as COPY ... FROM checks them.
        (&["--copy-delimiter", "a"], "COPY delimiter cannot be \"a\""),
        (
            &["--copy-delimiter", "|", "--copy-null", "a|b"],
            "COPY delimiter must not appear in the NULL specification",
        ),
    ] {
        dir.run(&[&["compress", "rows.tsv", "--dict", "none"], flags].concat())
            .fails(2, &[message]);
    }
}

/// `--keep-columns` with values of 1 MiB and more, handed on between the fields around them
/// rather than copied (a datum of 1 MiB, from a value that does not compress; a row of 1 MiB,
/// from one that does): the records come back whole, in COPY text, CSV and binary COPY, the
/// rows around them too.
#[test]
fn keep_columns_gives_back_large_values_and_the_rows_around_them() {
    use pgdict_trainer::source::copy;

    let dir = Dir::new();
    let compressible: String = (0..200_000).map(|n| format!("word{} ", n % 10)).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let incompressible: String = (0..1_300_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (b'a' + (state % 26) as u8) as char
        })
        .collect();
    assert!(compressible.len() > 1 << 20 && incompressible.len() > 1 << 20);
    let values = [
        "small",
        &compressible,
        "small again",
        &incompressible,
        "last",
    ];
    let (mut text, mut csv, mut binary) = (String::new(), String::new(), Vec::new());
    copy::write_header(&mut binary).unwrap();
    for (id, value) in values.iter().enumerate() {
        text.push_str(&format!("{id}\t{value}\ttag\n"));
        csv.push_str(&format!("{id},{value},tag\n"));
        copy::write_tuple(
            &mut binary,
            &[Some(id.to_string().as_bytes()), Some(value.as_bytes())],
        )
        .unwrap();
    }
    copy::write_trailer(&mut binary).unwrap();
    for (name, rows, column) in [
        ("rows.copy", text.as_bytes(), &["--copy-column", "1"][..]),
        (
            "rows.csv",
            csv.as_bytes(),
            &["--csv-column", "1", "--csv-no-header"],
        ),
        ("binary.copy", &binary, &["--copy-column", "1"]),
    ] {
        dir.write(name, rows);
        let keep = [&["--keep-columns", "--dict", "none"][..], column].concat();
        let packed = dir
            .run(&[&["compress", name, "-q"][..], &keep].concat())
            .ok()
            .stdout;
        assert!(packed != rows, "{name} was not compressed");
        dir.write("packed", &packed);
        let back = dir
            .run(&[&["decompress", "packed"][..], &keep[..1], column].concat())
            .ok();
        assert!(back.stdout == rows, "{name} came back different");
    }
}

/// Text COPY written with HEADER, its column given by index: `--copy-header` says the first
/// line is the header (it was taken for a row: compressed, and trained on), which
/// `--keep-columns` writes back as it came.
#[test]
fn a_copy_header_is_passed_over_when_said() {
    let dir = Dir::new();
    dir.write("h.copy", "id\tbody\n1\tfirst\n2\tsecond\n");
    let hex = |extra: &[&str]| {
        let args = [
            &[
                "compress",
                "h.copy",
                "--copy-column",
                "1",
                "--dict",
                "none",
                "--hex",
            ],
            extra,
        ]
        .concat();
        dir.run(&args).ok().stdout()
    };
    assert_eq!(hex(&[]).lines().count(), 3);
    assert_eq!(
        hex(&["--copy-header"]),
        "\\x0d6669727374\n\\x0f7365636f6e64\n"
    );
    let packed = [
        "compress",
        "h.copy",
        "--copy-column",
        "1",
        "--copy-header",
        "--keep-columns",
        "--dict",
        "none",
        "-o",
        "packed.copy",
    ];
    dir.run(&packed).ok();
    let back = dir
        .run(&[
            "decompress",
            "packed.copy",
            "--copy-column",
            "1",
            "--copy-header",
            "--keep-columns",
        ])
        .ok();
    assert_eq!(back.stdout, b"id\tbody\n1\tfirst\n2\tsecond\n");
}

/// `--keep-columns`: COPY data of several columns comes out as the same rows with the
/// column's values replaced by their datums (the datums `compress` writes for the column
/// alone, NULLs kept, empty values compressed), in the text format with its header line (its
/// lines ended in `\n`, `\r\n` or `\r`: written back with `\n`), in the binary one and in CSV;
/// `decompress --keep-columns` gives back the very bytes that went in.
#[test]
fn keep_columns_writes_the_rows_back_with_datums_and_decompress_restores_them() {
    use pgdict_trainer::source::copy;

    let dir = Dir::new();
    dir.demo_store();
    let events = fs::read_to_string(corpus("events.jsonl")).unwrap();
    // Three times over (6,000 rows: two batches), with NULL and empty bodies among them.
    let mut rows: Vec<[Option<Vec<u8>>; 3]> = Vec::new();
    for (n, event) in events.lines().cycle().take(6000).enumerate() {
        let body = match n % 500 {
            7 => None,
            8 => Some(Vec::new()),
            _ => Some(event.as_bytes().to_vec()),
        };
        let tag = (n % 3 != 0).then(|| format!("t\\{n}\t").into_bytes());
        rows.push([Some(n.to_string().into_bytes()), body, tag]);
    }
    // COPY's text format with a HEADER line, each body cut to `prefix` bytes if given.
    let text_of = |prefix: Option<usize>| {
        let mut text = b"id\tbody\ttag\n".to_vec();
        for row in &rows {
            for (at, field) in row.iter().enumerate() {
                if at > 0 {
                    text.push(b'\t');
                }
                match field {
                    Some(value) if at == 1 => {
                        let cut = prefix.map_or(value.len(), |k| k.min(value.len()));
                        copy::escape_text(&value[..cut], &mut text);
                    }
                    Some(value) => copy::escape_text(value, &mut text),
                    None => text.extend_from_slice(b"\\N"),
                }
            }
            text.push(b'\n');
        }
        text
    };
    let text = text_of(None);
    let mut binary = Vec::new();
    copy::write_header(&mut binary).unwrap();
    for row in &rows {
        let fields: Vec<Option<&[u8]>> = row.iter().map(Option::as_deref).collect();
        copy::write_tuple(&mut binary, &fields).unwrap();
    }
    copy::write_trailer(&mut binary).unwrap();
    dir.write("rows.copy", &text);

    // Text, by the header's name: one line a row, the header first, a datum as bytea text.
    let keep = ["--keep-columns", "--copy-column", "body"];
    let packed = dir
        .run(&[&["compress", "rows.copy", "-j", "2"], &keep[..]].concat())
        .ok();
    assert!(
        packed.stderr.contains("5,988 rows")
            && packed.stderr.contains("dictionary 1")
            && packed.stderr.contains("; 12 NULLs kept"),
        "{}",
        packed.stderr
    );
    let one_job = dir
        .run(&[&["compress", "rows.copy", "-j", "1", "-q"], &keep[..]].concat())
        .ok();
    assert_eq!(one_job.stdout, packed.stdout);
    let out = packed.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6001);
    assert_eq!(lines[0], "id\tbody\ttag");
    assert_eq!(lines[8], "7\t\\N\tt\\\\7\\t");
    assert!(lines[9].starts_with("8\t\\\\x03\t"), "{}", lines[9]);
    // The datums are those of the column alone, as hex lines (which leave out the NULLs and
    // the empty values).
    let alone = dir
        .run(&[
            "compress",
            "rows.copy",
            "--copy-column",
            "body",
            "--hex",
            "-q",
        ])
        .ok()
        .stdout();
    let kept: Vec<String> = lines[1..]
        .iter()
        .map(|line| line.split('\t').nth(1).unwrap())
        .filter(|field| *field != "\\N" && *field != "\\\\x03")
        .map(|field| field.replacen("\\\\x", "\\x", 1))
        .collect();
    assert_eq!(kept, alone.lines().collect::<Vec<_>>());
    dir.write("packed.copy", &packed.stdout);
    let back = dir
        .run(&[&["decompress", "packed.copy"], &keep[..]].concat())
        .ok();
    assert!(back.stdout == text, "the text rows came back different");
    // The datum column read alone: inspect sees every datum (NULLs are none), and decompress
    // gives the rows (a datums file of them: an empty value is a row there).
    let inspected = dir
        .run(&[&["inspect", "packed.copy"], &keep[1..]].concat())
        .ok()
        .stdout();
    assert!(
        inspected.contains("5,988 datums of packed.copy (COPY column \"body\")")
            && inspected.contains("with a dictionary (dictionary 1)"),
        "{inspected}"
    );
    let mut bodies = Vec::new();
    for body in rows.iter().filter_map(|row| row[1].as_deref()) {
        bodies.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bodies.extend_from_slice(body);
    }
    let column = ["decompress", "packed.copy", "--out-format", "datums"];
    let column_rows = dir.run(&[&column[..], &keep[1..]].concat()).ok();
    assert!(
        column_rows.stdout == bodies,
        "the column's rows came back different"
    );
    // Lines that end in \r\n, or in \r alone, as COPY ... FROM takes them (the first line
    // decides for all): the same rows, written back with the same line ends (the text
    // format's data holds no raw line end byte: each is escaped).
    for line_end in [&b"\r\n"[..], b"\r"] {
        let ended: Vec<u8> = (text.split_inclusive(|&byte| byte == b'\n'))
            .flat_map(|line| [&line[..line.len() - 1], line_end])
            .flatten()
            .copied()
            .collect();
        dir.write("ended.copy", &ended);
        let repacked = dir
            .run(&[&["compress", "ended.copy", "-q"], &keep[..]].concat())
            .ok();
        let with_line_feeds: Vec<u8> = String::from_utf8(repacked.stdout)
            .unwrap()
            .replace(std::str::from_utf8(line_end).unwrap(), "\n")
            .into_bytes();
        assert!(
            with_line_feeds == packed.stdout,
            "lines ended in {line_end:?}"
        );
    }
    // Prefixes, as substr() reads them.
    let prefix = dir
        .run(&[&["decompress", "packed.copy", "--prefix", "12"], &keep[..]].concat())
        .ok();
    assert!(
        prefix.stdout == text_of(Some(12)),
        "the prefixes are not the rows' first bytes"
    );

    // Binary, by index, through standard input both ways.
    let keep = ["--keep-columns", "--copy-column", "1"];
    let packed = dir
        .run_with_stdin(
            &[&["compress", "--codec", "lz4", "-q"], &keep[..]].concat(),
            &binary,
        )
        .ok();
    assert!(packed.stdout.starts_with(copy::SIGNATURE));
    let mut trailer = Vec::new();
    copy::write_trailer(&mut trailer).unwrap();
    assert!(packed.stdout.ends_with(&trailer), "no trailer");
    assert!(
        packed.stdout.len() * 2 < binary.len(),
        "{}",
        packed.stdout.len()
    );
    let back = dir
        .run_with_stdin(&[&["decompress"], &keep[..]].concat(), &packed.stdout)
        .ok();
    assert!(back.stdout == binary, "the binary rows came back different");

    // CSV with a header, semicolons between fields: the bodies (JSON) quoted, a NULL an empty
    // field, the empty string `""`; the datums are those of the text format.
    let mut csv_rows = b"id;body;tag\n".to_vec();
    let syntax = pgdict_trainer::source::CsvSyntax {
        delimiter: b';',
        ..Default::default()
    };
    for row in &rows {
        for (at, field) in row.iter().enumerate() {
            if at > 0 {
                csv_rows.push(b';');
            }
            if let Some(value) = field {
                syntax.write_field(value, false, &mut csv_rows);
            }
        }
        csv_rows.push(b'\n');
    }
    dir.write("rows.csv", &csv_rows);
    let keep = [
        "--keep-columns",
        "--csv-column",
        "body",
        "--csv-delimiter",
        ";",
    ];
    let packed_csv = dir
        .run(&[&["compress", "rows.csv", "-q"], &keep[..]].concat())
        .ok();
    let csv_datums: Vec<String> = (packed_csv.stdout().lines().skip(1))
        .map(|line| line.split(';').nth(1).unwrap().to_string())
        .collect();
    let text_datums: Vec<String> = lines[1..]
        .iter()
        .map(|line| match line.split('\t').nth(1).unwrap() {
            "\\N" => String::new(),
            datum => datum.replacen("\\\\x", "\\x", 1),
        })
        .collect();
    assert_eq!(csv_datums, text_datums);
    let back = dir
        .run_with_stdin(
            &[&["decompress", "-"], &keep[..]].concat(),
            &packed_csv.stdout,
        )
        .ok();
    assert!(back.stdout == csv_rows, "the CSV rows came back different");
    // Lines that end in `\r\n`, as COPY writes them on Windows (a quoted line end kept as it
    // is), come back so, in CSV and in the text format.
    let crlf_csv = b"id,body\r\n1,hello\r\n2,\"multi\r\nline\"\r\n".to_vec();
    let crlf_text = b"id\tbody\r\n1\thello\r\n2\tmulti\\r\\nline\r\n".to_vec();
    for (rows, flags) in [
        (&crlf_csv, ["--csv-column", "body"]),
        (&crlf_text, ["--copy-column", "body"]),
    ] {
        let keep = [&["--keep-columns"][..], &flags[..]].concat();
        let packed = dir
            .run_with_stdin(&[&["compress", "-", "-q"][..], &keep[..]].concat(), rows)
            .ok();
        assert_eq!(packed.stdout.iter().filter(|&&b| b == b'\r').count(), 3);
        let back = dir
            .run_with_stdin(
                &[&["decompress", "-"][..], &keep[..]].concat(),
                &packed.stdout,
            )
            .ok();
        assert!(
            &back.stdout == rows,
            "{}",
            String::from_utf8_lossy(&back.stdout)
        );
    }
    let inspected = dir
        .run_with_stdin(
            &[&["inspect", "-"], &keep[1..]].concat(),
            &packed_csv.stdout,
        )
        .ok()
        .stdout();
    assert!(
        inspected.contains("5,988 datums of standard input (CSV column \"body\")"),
        "{inspected}"
    );
    // Read as hex lines, the packed CSV is unreadable: the hint names the flags that read it,
    // and they do (with and without the header).
    let no_header: Vec<u8> = (packed_csv.stdout.split_inclusive(|&b| b == b'\n').skip(1))
        .flatten()
        .copied()
        .collect();
    dir.write("packed.csv", &packed_csv.stdout);
    dir.write("packed-no-header.csv", &no_header);
    for (file, flags) in [
        ("packed.csv", "--csv-column body --csv-delimiter ';'"),
        (
            "packed-no-header.csv",
            "--csv-column 1 --csv-no-header --csv-delimiter ';'",
        ),
    ] {
        for command in ["inspect", "decompress"] {
            let stderr = dir.run(&[command, file]).fails(1, &["line 1"]).stderr;
            assert!(
                stderr.contains("hint: this looks like CSV") && stderr.contains(flags),
                "{stderr}"
            );
        }
        let flags: Vec<&str> = (flags.split(' ').map(|flag| flag.trim_matches('\''))).collect();
        let inspected = dir.run(&[&["inspect", file], &flags[..]].concat()).ok();
        assert!(inspected.stdout().contains("5,988 datums"), "{file}");
    }

    // What cannot be done is said (before a file that is not there).
    for rows in [&corpus_arg("app_logs.txt")[..], "missing.txt"] {
        dir.run(&["compress", rows, "--keep-columns"]).fails(
            2,
            &["--keep-columns writes COPY data or CSV back, so it reads COPY data or CSV"],
        );
    }
    dir.run(&[
        "decompress",
        "packed.copy",
        "--csv-column",
        "1",
        "--format",
        "hex",
    ])
    .fails(2, &["cannot be used with"]);
    dir.run(&["compress", "rows.copy", "--keep-columns", "--hex"])
        .fails(2, &["cannot be used with"]);
    for command in ["compress", "decompress"] {
        dir.run(&[command, "rows.copy", "--keep-columns", "-o", "rows.datums"])
            .fails(
                2,
                &["--keep-columns writes COPY data or CSV, but the name rows.datums says a datums file"],
            );
    }
    assert!(!dir.path("rows.datums").exists());
    // A column of NULLs holds no datums; a CSV error's hint is the reader's.
    dir.write("nulls.csv", b"id,body\n1,\n");
    dir.run(&["inspect", "nulls.csv", "--csv-column", "body"])
        .fails(
            1,
            &["nulls.csv holds no datums", "the column holds only NULLs"],
        );
    dir.write("open.csv", b"id,body\n1,\"open\n");
    let open = ["decompress", "open.csv", "--csv-column", "body"];
    let stderr = dir.run(&open).fails(1, &["open.csv:2: bad CSV"]).stderr;
    assert!(
        stderr.contains("hint: the input must be CSV") && !stderr.contains("name the column"),
        "{stderr}"
    );
    // By index, the header line is data: it holds no datum.
    dir.run(&["decompress", "packed.copy", "--copy-column", "1"])
        .fails(
            1,
            &[
                "line 1 of packed.copy does not hold a datum as a bytea in COPY's text format",
                "name the column that holds the datums",
            ],
        );
    dir.run(&[
        "decompress",
        "open.csv",
        "--csv-column",
        "1",
        "--csv-no-header",
    ])
    .fails(
        1,
        &["line 1 of open.csv does not hold a datum as a bytea in CSV (\\x... or escape"],
    );
    dir.run(&[
        "decompress",
        "rows.copy",
        "--keep-columns",
        "--copy-column",
        "body",
    ])
    .fails(1, &["line 2 of rows.copy does not hold a datum as a bytea"]);
    dir.write("empty.copy", b"id\tbody\n");
    dir.run(&[
        "compress",
        "empty.copy",
        "--keep-columns",
        "--copy-column",
        "body",
        "-o",
        "e.copy",
    ])
    .fails(1, &["holds no rows"]);
    assert!(!dir.path("e.copy").exists());
}

#[test]
fn inspect_reads_known_datums_and_psql_output() {
    let dir = Dir::new();
    // psql's aligned output of a bytea column: "abcd" with a 1-byte header, "abc" with a
    // 4-byte header (total_len 7 << 2 = 0x1c).
    let psql = " datum\n----------------\n \\x0b61626364\n \\x1c000000616263\n(2 rows)\n\n";
    dir.write("psql.txt", psql);
    let out = dir.run(&["inspect", "psql.txt"]).ok().stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "datum  at      form  method  codec  dict  header  raw  stored  ratio"
    );
    assert_eq!(
        lines[1],
        "    1  line 3  raw        -  -         -       1    4       5   0.80"
    );
    assert_eq!(
        lines[2],
        "    2  line 4  raw        -  -         -       4    3       7   0.43"
    );
    assert!(
        lines[3].starts_with("2 datums of psql.txt (hex): 7 raw bytes stored in 12"),
        "{out}"
    );

    // pageinspect's tuple_data_split, as `psql -At` prints the bytea array, NULLs included.
    dir.write(
        "split.txt",
        "{\"\\\\x0b61626364\",NULL,\"\\\\x1c000000616263\"}\n",
    );
    let out = dir.run(&["inspect", "--json", "split.txt"]).ok().stdout();
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["form"], "raw");
    assert_eq!(first["raw_bytes"], 4);
    assert_eq!(first["postgres_compatible"], true);
    assert_eq!(out.lines().count(), 2);

    // What compress writes: PostgreSQL's own pglz form without a dictionary, pgdict's
    // extended form with one.
    dir.demo_store();
    let row = "{\"event\":\"page_view\",\"event\":\"page_view\",\"event\":\"page_view\",\"event\":\"page_view\"}\n";
    dir.write("row.txt", row);
    dir.run(&[
        "compress",
        "--dict",
        "none",
        "row.txt",
        "-o",
        "plain.datums",
    ])
    .ok();
    let out = dir
        .run(&["inspect", "--verify", "plain.datums"])
        .ok()
        .stdout();
    let fields: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        &fields[..8],
        ["1", "byte", "0", "compressed", "0", "pglz", "-", "8"],
        "{out}"
    );
    assert_eq!(fields[8], (row.len() - 1).to_string());
    assert_eq!(fields.last(), Some(&"ok"));
    let events = corpus_arg("events.jsonl");
    dir.run(&["compress", &events, "--hex", "-o", "events.hex"])
        .ok();
    let out = dir
        .run(&["inspect", "--verify", "events.hex"])
        .ok()
        .stdout();
    let fields: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        &fields[..8],
        ["1", "line", "1", "extended", "3", "pglz", "1", "10"],
        "{out}"
    );
    assert!(
        out.contains("2,000 with a dictionary (dictionary 1)"),
        "{out}"
    );

    // A datum whose header reads but whose payload does not give its raw length: FAILED.
    let first = read_lines(&dir.path("events.hex")).remove(0);
    let mut bytes: Vec<u8> = (2..first.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&first[i..i + 2], 16).unwrap())
        .collect();
    bytes[4] ^= 1; // the low bit of raw_len
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    dir.write("off.hex", format!("\\x{hex}\n"));
    let out = dir
        .run(&["inspect", "--verify", "off.hex"])
        .fails(3, &["1 of the 1 datums of off.hex are invalid"])
        .stdout();
    assert!(out.lines().nth(1).unwrap().ends_with("FAILED"), "{out}");
    assert!(out.contains("  datum 1 (line 1): datum: "), "{out}");

    // A damaged datum is marked, and the exit status is 3.
    dir.write("bad.txt", "\\x0b61626364\n\\x0b6162\n");
    let run = dir
        .run(&["inspect", "bad.txt"])
        .fails(3, &["1 of the 2 datums"]);
    let out = run.stdout();
    assert!(out.contains("INVALID"), "{out}");
    assert!(
        out.contains("datum 2 (line 2): datum: header says total_len 5, but the datum has 3 bytes"),
        "{out}"
    );
}

/// A regular file is read twice (the table's widths, then its lines), standard input once:
/// the same table either way, each datum's check on its own line.
#[test]
fn inspect_writes_the_same_table_from_a_file_and_from_standard_input() {
    let dir = Dir::new();
    dir.demo_store();
    let events = corpus_arg("events.jsonl");
    dir.run(&["compress", &events, "--hex", "-o", "events.hex"])
        .ok();
    dir.run(&[
        "compress",
        &events,
        "--dict",
        "none",
        "--hex",
        "-o",
        "plain.hex",
    ])
    .ok();
    // Extended datums and PostgreSQL's own forms (most of them raw), mixed, and a line that
    // is no datum.
    let extended: Vec<String> = read_lines(&dir.path("events.hex"));
    let plain: Vec<String> = read_lines(&dir.path("plain.hex"));
    let mut mix = String::new();
    for i in 0..300 {
        mix.push_str(if i % 3 == 0 { &extended[i] } else { &plain[i] });
        mix.push('\n');
    }
    mix.push_str("\\x0b6162\n");
    dir.write("mix.hex", &mix);
    fs::create_dir(dir.path("empty-store")).unwrap();
    // With a store that lacks their dictionary, the extended datums read but cannot be
    // checked: not invalid (the last one is), and said once for all of them.
    let verify = ["inspect", "--verify", "--store", "empty-store"];
    let from_file = dir.run(&[&verify[..], &["mix.hex"]].concat()).fails(
        3,
        &[
            "1 of the 301 datums of mix.hex are invalid",
            "cannot check 100 datums of mix.hex, which name dictionary 1",
        ],
    );
    let from_stdin = dir
        .run_with_stdin(&[&verify[..], &["-"]].concat(), mix.as_bytes())
        .fails(3, &["1 of the 301 datums of standard input are invalid"]);
    let (file_out, stdin_out) = (from_file.stdout(), from_stdin.stdout());
    assert_eq!(
        file_out.replace("mix.hex", "INPUT"),
        stdin_out.replace("standard input", "INPUT")
    );
    let lines: Vec<&str> = file_out.lines().collect();
    for (i, line) in lines[1..=300].iter().enumerate() {
        let check = if i % 3 == 0 { "unchecked" } else { "ok" };
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[0], (i + 1).to_string(), "{line}");
        assert_eq!(fields[3] == "extended", i % 3 == 0, "{line}");
        assert_eq!(fields.last(), Some(&check), "{line}");
    }
    let last: Vec<&str> = lines[301].split_whitespace().collect();
    assert_eq!(
        &last[..5],
        ["301", "line", "301", "INVALID", "-"],
        "{file_out}"
    );
    assert_eq!(last.last(), Some(&"-"));
    assert!(
        lines[302].starts_with("301 datums of mix.hex (hex)")
            && lines[302].ends_with(", 1 invalid, 100 not checked"),
        "{file_out}"
    );
    // Under the summary: the one that does not read, then the 100 not checked, in one line.
    assert_eq!(lines.len(), 303 + 2, "{file_out}");
    assert!(
        lines[303].starts_with("  datum 301 (line 301): "),
        "{file_out}"
    );
    assert!(
        lines[304].starts_with("  100 datums not checked: datum: dictionary 1 is not in"),
        "{file_out}"
    );
    // Without the invalid one, what is left is an error: the check could not be done.
    let extended_only: String = mix
        .lines()
        .take(300)
        .step_by(3)
        .map(|l| format!("{l}\n"))
        .collect();
    dir.write("extended.hex", &extended_only);
    dir.run(&[&verify[..], &["extended.hex"]].concat()).fails(
        1,
        &[
            "error: cannot check 100 datums of extended.hex, which name dictionary 1",
            "hint: copy it from a store that has it",
        ],
    );
    // JSON Lines, written as read, say the same of each datum.
    let json = dir
        .run(&[&verify[..], &["--json", "mix.hex"]].concat())
        .fails(3, &["1 of the 301 datums"]);
    let objects: Vec<serde_json::Value> = json
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 301);
    assert_eq!(objects[0]["decodes"], serde_json::Value::Null);
    assert!(objects[0]["not_checked"]
        .as_str()
        .unwrap()
        .contains("dictionary 1 is not in"));
    assert_eq!(objects[0]["valid"], true);
    assert_eq!(objects[1]["decodes"], true);
    assert_eq!(objects[300]["valid"], false);
}

fn read_lines(path: &std::path::Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Binary output is not written to a terminal (datums, binary COPY): refused before any work,
/// with the other ways to have it; text goes there.
#[test]
fn binary_output_to_a_terminal_is_refused() {
    use pgdict_trainer::source::copy;

    let dir = Dir::new();
    let rows = corpus_arg("events.jsonl");
    let refused = |args: &[&str], other_way: &str| {
        let shown = dir.run_on_terminal(args).fails(
            1,
            &[
                "refusing to write binary datums to a terminal",
                "write to a file with -o FILE, pipe the output, or ",
                other_way,
            ],
        );
        assert!(!shown.stderr.contains(" rows, "), "{}", shown.stderr);
    };
    let none = ["--dict", "none"];
    refused(&[&["compress", &rows][..], &none].concat(), "--hex");
    refused(
        &[&["compress", &rows, "--copy"][..], &none].concat(),
        "--hex",
    );
    dir.run(&[&["compress", &rows, "-o", "a.datums"][..], &none].concat())
        .ok();
    for format in ["datums", "copy"] {
        refused(
            &["decompress", "a.datums", "--out-format", format],
            "--out-format lines or jsonl",
        );
    }
    let mut binary = Vec::new();
    copy::write_header(&mut binary).unwrap();
    copy::write_tuple(&mut binary, &[Some(b"1"), Some(b"a row")]).unwrap();
    copy::write_trailer(&mut binary).unwrap();
    dir.write("binary.copy", binary);
    refused(
        &[
            "compress",
            "binary.copy",
            "--keep-columns",
            "--copy-column",
            "1",
            "--dict",
            "none",
        ],
        "give COPY text (no FORMAT binary)",
    );
    let hex = dir
        .run_on_terminal(&[&["compress", &rows, "--hex"][..], &none].concat())
        .ok();
    assert!(hex.stdout().starts_with("\\x"), "{}", hex.stdout());
    let lines = dir.run_on_terminal(&["decompress", "a.datums"]).ok();
    let first = fs::read_to_string(corpus("events.jsonl")).unwrap();
    let first = first.lines().next().unwrap();
    assert!(lines.stdout().starts_with(first), "{}", lines.stdout());
}

/// compress says what it stored (its ratio that of the bytes it gives; none for a column of
/// NULLs, which stores nothing), and that zstd without a dictionary stores every row raw;
/// `--quiet` says neither.
#[test]
fn compress_says_what_it_stored_unless_quiet() {
    let dir = Dir::new();
    let rows = corpus_arg("events.jsonl");
    let said = |args: &[&str]| {
        let base = ["compress", &rows, "--dict", "none", "-o", "out.datums"];
        dir.run(&[&base[..], args].concat()).ok().stderr
    };
    let text = fs::read_to_string(corpus("events.jsonl")).unwrap();
    let row_bytes: usize = text.lines().map(str::len).sum();
    for codec in ["zstd", "pglz"] {
        let summary = said(&["--codec", codec]);
        let note = "note: zstd without a dictionary has no stored form";
        assert_eq!(summary.contains(note), codec == "zstd", "{summary}");
        let raw = summary_count(&summary, " bytes ->");
        let stored = summary_count(&summary, " bytes stored");
        assert_eq!(raw, row_bytes as u64, "{summary}");
        let datums = datum_lengths(&fs::read(dir.path("out.datums")).unwrap());
        assert_eq!(stored, datums.iter().sum::<u64>(), "{summary}");
        let ratio = raw as f64 / stored as f64;
        let ratio = format!(" stored ({ratio:.2}x) with {codec}, no dictionary");
        assert!(summary.contains(&ratio), "{summary}");
    }
    for codec in ["zstd", "pglz"] {
        assert_eq!(said(&["--codec", codec, "--quiet"]), "", "{codec}");
    }
    dir.write("nulls.copy", "1\t\\N\n2\t\\N\n");
    let nulls = dir
        .run(&[
            "compress",
            "nulls.copy",
            "--keep-columns",
            "--copy-column",
            "1",
            "--dict",
            "none",
            "-o",
            "packed.copy",
        ])
        .ok()
        .stderr;
    assert!(
        nulls.contains(
            "0 rows, 0 bytes -> 0 bytes stored with pglz, no dictionary: 0 with the \
                        dictionary, 0 plain, 0 raw; 2 NULLs kept"
        ),
        "{nulls}"
    );
}

/// Progress is drawn on standard error when it is a terminal: not with `--quiet`, nor where
/// the output itself goes to the terminal (the bars would break it up), nor beside
/// `compare --json`; a finished bar stays on screen with its count.
#[test]
fn progress_is_drawn_on_a_terminal_unless_quiet_or_beside_the_output() {
    let dir = Dir::new();
    dir.demo_store();
    let rows = corpus_arg("events.jsonl");
    let table: String = (0..3000)
        .map(|n| format!("{n}\tevent {n} from host-{} ok\n", n % 7))
        .collect();
    dir.write("table.copy", table);
    let keep = ["--keep-columns", "--copy-column", "1"];
    // The phases whose bars the terminal showed.
    let bars = |args: &[&str]| -> Vec<&'static str> {
        let shown = dir.run_on_terminal(args).ok().stdout();
        let phases = [
            "reading",
            "building",
            "evaluating",
            "compressing",
            "decompressing",
        ];
        common::child::bars_drawn(&shown, &phases)
    };
    assert_eq!(
        bars(&["compress", &rows, "-o", "a.datums"]),
        ["compressing"]
    );
    assert!(bars(&["compress", &rows, "-o", "b.datums", "--quiet"]).is_empty());
    assert!(bars(&["compress", &rows, "--hex"]).is_empty());
    let packed = [&["compress", "table.copy", "-o", "packed.copy"][..], &keep].concat();
    assert_eq!(bars(&packed), ["compressing"]);
    assert!(bars(&[&packed[..], &["--quiet"]].concat()).is_empty());
    assert!(bars(&[&["compress", "table.copy"][..], &keep].concat()).is_empty());

    assert_eq!(
        bars(&["decompress", "a.datums", "-o", "rows.txt"]),
        ["decompressing"]
    );
    assert!(bars(&["decompress", "a.datums"]).is_empty());
    let unpacked = [&["decompress", "packed.copy", "-o", "back.copy"][..], &keep].concat();
    assert_eq!(bars(&unpacked), ["decompressing"]);
    assert_eq!(
        fs::read(dir.path("back.copy")).unwrap(),
        fs::read(dir.path("table.copy")).unwrap()
    );
    assert!(bars(&[&["decompress", "packed.copy"][..], &keep].concat()).is_empty());

    assert!(!bars(&["compare", &rows, "--rounds", "1"]).is_empty());
    assert!(bars(&["compare", &rows, "--rounds", "1", "--json"]).is_empty());
}

#[test]
fn compare_reports_every_method_overall_and_per_bucket() {
    let dir = Dir::new();
    let events = corpus_arg("events.jsonl");
    let run = dir
        .run(&[
            "compare",
            &events,
            "--json",
            "--rounds",
            "1",
            "--max-rows",
            "300",
            "--svg",
            "chart.svg",
        ])
        .ok();
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["rows"], 2000);
    // 2 x 300 rows sampled as the file is read, then split.
    assert_eq!(report["sampled_rows"], 600);
    assert_eq!(report["train_rows"], 300);
    assert_eq!(report["evaluated_rows"], 300);
    assert_eq!(report["split"], "interleaved");
    let pglz_bytes = report["dictionaries"]["pglz"]["bytes"].as_u64().unwrap();
    assert!(
        PGLZ_DICT_BYTES.contains(&(pglz_bytes as usize)),
        "{pglz_bytes}"
    );
    let methods = &report["all"]["methods"];
    for method in ["pglz", "pglz_dict", "lz4", "lz4_dict", "zstd", "zstd_dict"] {
        let m = &methods[method];
        for field in [
            "datums",
            "raw_bytes",
            "stored_bytes",
            "ratio",
            "ratio_vs_pglz",
            "stored_raw_share",
            "compress_mb_s",
            "decompress_mb_s",
        ] {
            assert!(!m[field].is_null(), "{method}.{field} missing: {m}");
        }
        assert_eq!(m["datums"], 300);
    }
    assert_eq!(methods["pglz"]["ratio_vs_pglz"], 1.0);
    assert_eq!(methods["zstd"]["storable"], false);
    assert!(methods["pglz_dict"]["ratio_vs_pglz"].as_f64().unwrap() > 2.0);
    let buckets = report["buckets"].as_array().unwrap();
    let labels: Vec<&str> = buckets
        .iter()
        .map(|b| b["bucket"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        ["< 64 B", "64-256 B", "256 B-1 KB", "1-4 KB", ">= 4 KB"]
    );
    let datums: u64 = buckets.iter().map(|b| b["datums"].as_u64().unwrap()).sum();
    assert_eq!(datums, 300);
    let svg = fs::read_to_string(dir.path("chart.svg")).unwrap();
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("pglz+dict") && svg.contains("256 B-1 KB"));
    // A chart that cannot be written fails before the work (it failed after it, and the
    // report was lost), and `-` would mix it with the report.
    dir.run(&["compare", &events, "--svg", "no-such-dir/chart.svg"])
        .fails(1, &["cannot create no-such-dir/chart.svg"]);
    dir.run(&["compare", &events, "--svg", "-"])
        .fails(2, &["--svg - would mix with the report on standard output"]);
    assert!(!dir.path("-").exists());

    // The table, with dictionaries from the store.
    let pglz_bytes = added_pglz_bytes(&dir.demo_store());
    let run = dir
        .run(&["compare", "--dict", "auto", "--rounds", "1", &events])
        .ok();
    // The demo trained its dictionaries on these rows: said, as it flatters them.
    let err = &run.stderr;
    for id in [1, 2] {
        assert!(
            err.contains(&format!("note: dictionary {id} was trained on")),
            "{err}"
        );
    }
    let out = run.stdout();
    assert!(
        out.contains("evaluated with dictionaries from the store"),
        "{out}"
    );
    // Every row was read and evaluated: nothing says it was sampled.
    assert!(!out.contains("a sample of"), "{out}");
    assert!(
        out.contains(&format!(
            "pglz   {} bytes  dictionary 1 of",
            thousands(pglz_bytes as u64)
        )),
        "{out}"
    );
    assert!(
        out.contains(", trained on corpus/events.jsonl (built into pgdict)\n"),
        "{out}"
    );
    assert!(out.contains("zstd  none"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("zstd+dict")), "{out}");
    for column in [
        "stored bytes",
        "ratio",
        "vs pglz",
        "stored raw",
        "compress MB/s",
    ] {
        assert!(out.contains(column), "{out}");
    }

    // --max-rows with the store's dictionaries: N rows sampled, all of them evaluated.
    let out = dir
        .run(&[
            "compare",
            "--dict",
            "auto",
            "--rounds",
            "1",
            "--max-rows",
            "50",
            &events,
        ])
        .ok()
        .stdout();
    for line in [
        "rows: 2,000 from ",
        "      a sample of 50 of them kept (seeded, uniform, in input order)\n",
        "      50 evaluated with dictionaries from the store\n",
    ] {
        assert!(out.contains(line), "{line:?} not in\n{out}");
    }

    // Without --max-rows a large input is sampled too (10,000 rows with --dict, twice that
    // when training), so that memory and time stay bounded.
    let many: String = (0..10_007).map(|i| format!("event {i} ok\n")).collect();
    dir.write("many.txt", &many);
    let out = dir
        .run(&["compare", "--dict", "auto", "--rounds", "1", "many.txt"])
        .ok()
        .stdout();
    for line in [
        "rows: 10,007 from ",
        "      a sample of 10,000 of them kept (seeded, uniform, in input order)\n",
        "      10,000 evaluated with dictionaries from the store\n",
    ] {
        assert!(out.contains(line), "{line:?} not in\n{out}");
    }

    // A file name with control characters (ESC, 0x01) and markup: the table shows them
    // escaped, and the chart stays XML (0x01 is refused by XML even as a reference; it went
    // in as it was).
    let odd = "we<i&rd\"\u{1}\u{1b}[31m.txt";
    dir.write(odd, &many);
    let run = dir
        .run(&[
            "compare", "--dict", "auto", "--rounds", "1", "--svg", "odd.svg", odd,
        ])
        .ok();
    let out = run.stdout();
    assert!(
        out.contains("from file we<i&rd\"\\u{1}\\u{1b}[31m.txt"),
        "{out}"
    );
    let svg = fs::read(dir.path("odd.svg")).unwrap();
    assert!(
        !svg.iter().any(|&b| b < 0x20 && !b"\t\n\r".contains(&b)),
        "a control byte in the chart"
    );
    let svg = String::from_utf8(svg).unwrap();
    assert!(
        svg.contains("we&lt;i&amp;rd&quot;\\u{1}\\u{1b}[31m.txt"),
        "{svg}"
    );

    // Empty rows (a datums file of zero-length records) train no dictionary: said so, and the
    // plain methods are measured (it failed with the trainer's words for other cases).
    dir.write("empty.datums", [0u8; 4 * 100]);
    let run = dir.run(&["compare", "--rounds", "1", "empty.datums"]).ok();
    assert!(
        run.stderr
            .contains("no pglz dictionary: the 50 rows it would train on are empty"),
        "{}",
        run.stderr
    );
    assert!(run.stdout().contains("rows: 100 from"));
}

/// The lengths of a datums file's records (u32 little-endian length, then the bytes).
fn datum_lengths(file: &[u8]) -> Vec<u64> {
    let mut lengths = Vec::new();
    let mut rest = file;
    while let Some((length, after)) = rest.split_first_chunk::<4>() {
        let length = u32::from_le_bytes(*length) as usize;
        lengths.push(length as u64);
        rest = &after[length..];
    }
    lengths
}

/// The number before `what` in compress's summary ("..., 2,154,536 bytes -> ..., 271 with the
/// dictionary, 0 plain, 29 raw"), its thousands separators dropped.
fn summary_count(summary: &str, what: &str) -> u64 {
    let before = summary
        .split(what)
        .next()
        .filter(|before| before.len() < summary.len())
        .unwrap_or_else(|| panic!("no {what:?} in {summary}"));
    let number = before.rsplit([' ', ':']).find(|w| !w.is_empty()).unwrap();
    number
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("{number:?} in {summary}"))
}

/// compare's sizes and counts are those of the datums compress stores for the same rows: its
/// stored bytes the sum of their lengths, its raw and dictionary datums the counts compress
/// prints; and each method's size buckets add up to its `all`.
#[test]
fn compare_counts_what_compress_stores() {
    let dir = Dir::new();
    dir.demo_store();
    // Rows of every size bucket up to 4 KB, some stored raw, some plain, some with a
    // dictionary.
    let mut rows = String::new();
    for name in ["app_logs.txt", "orders_csv.txt", "events.jsonl"] {
        let text = fs::read_to_string(corpus(name)).unwrap();
        for line in text.lines().take(60) {
            rows.push_str(line);
            rows.push('\n');
        }
    }
    for i in 0..20 {
        rows.push_str(&format!("short row {i}\n"));
        rows.push_str(&format!(
            "{}\n",
            format!("long row {i} of repeated words, ").repeat(60)
        ));
    }
    dir.write("rows.txt", &rows);

    let run = dir
        .run(&[
            "compare", "--dict", "auto", "--json", "--rounds", "1", "rows.txt",
        ])
        .ok();
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["evaluated_rows"], 220);
    assert_eq!(report["split"], "none");
    assert!(report["eval_rows_identical_to_training_rows"].is_null());
    for (codec, dict, method) in [
        ("pglz", "none", "pglz"),
        ("pglz", "1", "pglz_dict"),
        ("lz4", "none", "lz4"),
        ("lz4", "2", "lz4_dict"),
    ] {
        let run = dir
            .run(&[
                "compress", "--codec", codec, "--dict", dict, "rows.txt", "-o", "x.datums",
            ])
            .ok();
        let lengths = datum_lengths(&fs::read(dir.path("x.datums")).unwrap());
        let all = &report["all"]["methods"][method];
        assert_eq!(all["datums"], lengths.len() as u64, "{method}");
        assert_eq!(all["stored_bytes"], lengths.iter().sum::<u64>(), "{method}");
        let summary = &run.stderr;
        let raw = summary_count(summary, " raw");
        let with_dict = summary_count(summary, " with the dictionary");
        assert_eq!(all["raw_datums"], raw, "{method}: {summary}");
        assert_eq!(all["dict_datums"], with_dict, "{method}: {summary}");
        // The dictionary used, or not.
        assert_eq!(with_dict > 0, dict != "none", "{method}: {summary}");
    }
    let buckets = report["buckets"].as_array().unwrap();
    let filled = buckets.iter().filter(|b| b["datums"] != 0).count();
    assert_eq!(filled, 4, "{buckets:?}");
    for method in ["pglz", "pglz_dict", "lz4", "lz4_dict", "zstd", "zstd_dict"] {
        let all = &report["all"]["methods"][method];
        if all.is_null() {
            continue;
        }
        for field in [
            "datums",
            "raw_bytes",
            "stored_bytes",
            "raw_datums",
            "dict_datums",
        ] {
            let sum: u64 = buckets
                .iter()
                .map(|b| b["methods"][method][field].as_u64().unwrap())
                .sum();
            assert_eq!(all[field], sum, "{method}.{field}");
        }
    }
    // The rounds run, each phase at least the one asked for.
    assert_eq!(report["min_rounds"], 1);
    for phase in ["compress", "decompress"] {
        assert!(report["rounds"][phase].as_u64().unwrap() >= 1, "{report}");
    }
}

/// The interleaved split keeps rows apart, not values: rows that repeat a few values fall on
/// both sides, and the report says how many evaluated rows equal a training row.
#[test]
fn compare_says_how_many_evaluated_rows_equal_a_training_row() {
    let dir = Dir::new();
    // 30 values of 40 words, each repeated: 400 rows of them, two by two (so that every value
    // is on both sides of the split).
    let values: Vec<String> = (0..30)
        .map(|v| {
            (0..40)
                .map(|w| format!("word{}-{}", (v * 7 + w) % 10, (v * 40 + w) * 7919 % 100_000))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let repeated: String = (0..400)
        .map(|i| format!("{}\n", values[i / 2 % 30]))
        .collect();
    dir.write("repeated.txt", &repeated);
    let run = dir.run(&["compare", "--rounds", "1", "repeated.txt"]).ok();
    let out = run.stdout();
    assert!(
        out.contains(
            "note: 200 of the 200 evaluated rows are identical to a training row: the gain \
             measured on them is that of a value seen before"
        ),
        "{out}"
    );
    let run = dir
        .run(&["compare", "--rounds", "1", "--json", "repeated.txt"])
        .ok();
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["eval_rows_identical_to_training_rows"], 200);

    // Distinct rows: no note, and 0.
    let distinct: String = (0..400)
        .map(|i| format!("{} {i}\n", values[i % 30]))
        .collect();
    dir.write("distinct.txt", &distinct);
    let out = dir
        .run(&["compare", "--rounds", "1", "distinct.txt"])
        .ok()
        .stdout();
    assert!(!out.contains("identical to a training row"), "{out}");
    let run = dir
        .run(&["compare", "--rounds", "1", "--json", "distinct.txt"])
        .ok();
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["eval_rows_identical_to_training_rows"], 0);
}

#[test]
fn dict_list_show_and_retire() {
    let dir = Dir::new();
    dir.run(&["dict", "list"])
        .fails(1, &["is not a dictionary store", "pgdict demo"]);
    let pglz_bytes = added_pglz_bytes(&dir.demo_store());
    let out = dir.run(&["dict", "list"]).ok().stdout();
    assert!(out.starts_with("id  codecs"), "{out}");
    assert!(out.contains("active, auto for pglz"), "{out}");
    assert!(out.contains("active, auto for lz4"), "{out}");
    let out = dir.run(&["dict", "list", "--json"]).ok().stdout();
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["id"], 1);
    assert_eq!(first["codecs"], serde_json::json!(["pglz"]));
    assert_eq!(first["bytes"], pglz_bytes);
    // The demo measured the dictionary: its gain over plain pglz, to three places.
    let gain = &first["gains"][0];
    assert_eq!(gain["codec"], "pglz", "{out}");
    let (plain, dict) = (gain["plain_bytes"].as_f64(), gain["dict_bytes"].as_f64());
    let exact = plain.unwrap() / dict.unwrap();
    let shown = gain["gain"].as_f64().unwrap();
    assert!((shown - exact).abs() <= 0.0005, "{out}");
    assert_eq!((shown * 1000.0).round() / 1000.0, shown, "{out}");

    let out = dir
        .run(&["dict", "show", "1", "--content", "dict1.bin"])
        .ok()
        .stdout();
    assert!(out.starts_with("dictionary 1\n"), "{out}");
    assert!(
        out.contains(&format!(
            "content:    {} bytes, sha256 ",
            thousands(pglz_bytes as u64)
        )),
        "{out}"
    );
    assert!(out.contains("measured:   on 1,000 held-out rows"), "{out}");
    let parameters = out.lines().find(|line| line.starts_with("  parameters: {"));
    assert!(
        parameters.is_some_and(|line| line.contains(r#""demo":"events""#)),
        "{out}"
    );
    assert_eq!(fs::read(dir.path("dict1.bin")).unwrap().len(), pglz_bytes);
    dir.run(&["dict", "show", "1", "--content", "-"]).fails(
        2,
        &["--content - would mix with the report on standard output"],
    );
    assert!(!dir.path("-").exists());
    // No output is written over a dictionary, nor under a name a store reads: either could
    // destroy the only copy of a dictionary that datums name, or add or retire one.
    let dictionary = fs::read(dir.path("dicts/00000001.pgdict")).unwrap();
    fs::write(dir.path("backup.bin"), &dictionary).unwrap();
    let rows = corpus_arg("orders_csv.txt");
    for (args, message) in [
        (
            &["dict", "show", "2", "--content", "dicts/00000001.pgdict"][..],
            "named as a dictionary store's file",
        ),
        (
            &["compress", &rows, "-o", "dicts/00000009.pgdict"],
            "named as a dictionary store's file",
        ),
        (
            &["compress", &rows, "-o", "dicts/00000001.retired"],
            "named as a dictionary store's file",
        ),
        (
            &["compress", &rows, "--hex", "-o", "backup.bin"],
            "backup.bin is a pgdict dictionary file",
        ),
    ] {
        dir.run(args).fails(1, &[message]);
    }
    assert_eq!(
        fs::read(dir.path("dicts/00000001.pgdict")).unwrap(),
        dictionary
    );
    assert_eq!(fs::read(dir.path("backup.bin")).unwrap(), dictionary);
    assert!(!dir.path("dicts/00000009.pgdict").exists());
    assert!(!dir.path("dicts/00000001.retired").exists());

    // Compress with it, retire it: old datums still decode, auto no longer picks it.
    dir.run(&["compress", &rows, "-o", "orders.datums"]).ok();
    let out = dir.run(&["dict", "retire", "1"]).ok().stdout();
    assert!(out.starts_with("retired dictionary 1"), "{out}");
    let out = dir.run(&["dict", "retire", "1"]).ok().stdout();
    assert!(out.contains("already retired"), "{out}");
    let out = dir.run(&["dict", "list"]).ok().stdout();
    assert!(out.lines().nth(1).unwrap().contains("retired"), "{out}");
    let back = dir.run(&["decompress", "orders.datums"]).ok();
    assert_eq!(back.stdout, fs::read(&rows).unwrap());
    dir.run(&["compress", &rows]).fails(
        1,
        &["has no active dictionary built for pglz", "--dict none"],
    );
    // Nor does naming it: a retired dictionary no longer compresses (DESIGN.md).
    dir.run(&["compress", &rows, "--dict", "1", "-o", "again.datums"])
        .fails(1, &["dictionary 1 is retired", "--dict auto"]);
    // compare measures it when named, and says it is retired.
    let out = dir
        .run(&[
            "compare",
            "--dict",
            "1",
            "--rounds",
            "1",
            "--max-rows",
            "50",
            &rows,
        ])
        .ok()
        .stdout();
    assert!(out.contains("  dictionary 1 (retired) of "), "{out}");
    assert!(!dir.path("again.datums").exists());
    // PostgreSQL has no zstd: the hint names the trainer, not a plain form.
    let out = dir
        .run(&["compress", "--codec", "zstd", &rows])
        .fails(1, &["no active dictionary built for zstd", "--codec zstd"]);
    assert!(!out.stderr.contains("PostgreSQL's plain"), "{}", out.stderr);
    dir.run(&["dict", "show", "7"])
        .fails(1, &["dictionary 7 is not in", "pgdict dict list"]);
    dir.run(&["dict", "retire", "0"])
        .fails(2, &["dictionary ids start at 1"]);

    // PGDICT_PG_STORE is the store unless a flag says otherwise: --store outranks it (it
    // used to be outranked, and the database's dictionaries used in its place), and the two
    // flags together are a usage error, wherever they stand.
    let nowhere = format!("host={}", dir.path("no-server").display());
    let with_env = |args: &[&str]| {
        Run::from(
            dir.command(args)
                .env("PGDICT_PG_STORE", &nowhere)
                .output()
                .unwrap(),
        )
    };
    with_env(&["dict", "list"]).fails(1, &["no-server"]);
    // Exported empty, it names no store (it connected to the local server's defaults).
    let empty = Run::from(
        dir.command(&["dict", "list"])
            .env("PGDICT_PG_STORE", "")
            .output()
            .unwrap(),
    );
    assert!(empty.ok().stdout().contains("retired"));
    let out = with_env(&["--store", "dicts", "dict", "list"])
        .ok()
        .stdout();
    assert!(out.contains("retired"), "{out}");
    let out = with_env(&["dict", "list", "--store", "dicts"])
        .ok()
        .stdout();
    assert!(out.contains("retired"), "{out}");
    for args in [
        &["--store", "dicts", "--pg-store", &nowhere, "dict", "list"][..],
        &["--store", "dicts", "dict", "list", "--pg-store", &nowhere],
        &["dict", "list", "--pg-store", &nowhere, "--store", "dicts"],
    ] {
        dir.run(args).fails(2, &["cannot be used with"]);
    }

    // A damaged dictionary can be retired, and the message does not say it still decodes.
    let file = dir.path("dicts/00000002.pgdict");
    let bytes = fs::read(&file).unwrap();
    fs::write(&file, &bytes[..40]).unwrap();
    let out = dir.run(&["dict", "retire", "2"]).ok().stdout();
    assert!(
        out.contains("it is damaged: datums that name it decode once it is mended"),
        "{out}"
    );
}

#[test]
fn sync_copies_between_directory_stores_and_refuses_diverged_ones() {
    let dir = Dir::new();
    dir.copy_demo_store(DemoStore::Events, "a");
    let out = dir
        .run(&["dict", "sync", "--from", "a", "--to", "b"])
        .ok()
        .stdout();
    assert!(out.contains("copied:          1, 2"), "{out}");
    assert_eq!(
        fs::read(dir.path("a/00000002.pgdict")).unwrap(),
        fs::read(dir.path("b/00000002.pgdict")).unwrap()
    );
    // A store is not synced from itself, however spelled: a usage error.
    dir.run(&["dict", "sync", "--from", "a", "--to", "./a/"])
        .fails(2, &["the source and the destination are the same store"]);
    for (args, message) in [
        (
            &["dict", "retire", "auto"][..],
            "`auto` is not a dictionary id",
        ),
        (
            &["dict", "show", "4294967296"],
            "(a number from 1 to 4294967295)",
        ),
    ] {
        dir.run(args).fails(2, &[message]);
    }
    // Datums written with store a decode with store b.
    let rows = corpus_arg("events.jsonl");
    dir.run(&["compress", &rows, "--store", "a", "-o", "e.datums"])
        .ok();
    let back = dir.run(&["decompress", "e.datums", "--store", "b"]).ok();
    assert_eq!(back.stdout, fs::read(&rows).unwrap());

    // Retirement travels; a second sync finds everything there. --to defaults to --store.
    dir.run(&["dict", "retire", "2", "--store", "a"]).ok();
    let out = dir
        .run(&["dict", "sync", "--from", "a", "--store", "b"])
        .ok()
        .stdout();
    assert!(out.contains("copied:          none"), "{out}");
    assert!(out.contains("already there:   1, 2"), "{out}");
    assert!(out.contains("retired there:   2"), "{out}");

    // A sync killed while copying a retired dictionary (aborted after writing its temporary
    // file): the marker went in first, so it is never active there; the next sync copies it
    // in beside the marker. (Copying first and retiring last, a crash in between left it
    // active, and --dict auto compressed with it.)
    fs::create_dir(dir.path("d")).unwrap();
    fs::copy(dir.path("a/00000001.pgdict"), dir.path("d/00000001.pgdict")).unwrap();
    let crashed = dir
        .command(&["dict", "sync", "--from", "a", "--to", "d"])
        .env("PGDICT_FAULT_INJECT", "dir-store-add-after-temp")
        .output()
        .unwrap();
    assert!(!crashed.status.success());
    assert!(dir.path("d/00000001.pgdict").exists() && dir.path("d/00000002.retired").exists());
    assert!(!dir.path("d/00000002.pgdict").exists());
    let out = dir.run(&["dict", "list", "--store", "d"]).ok().stdout();
    assert!(!out.contains("lz4"), "{out}");
    let out = dir
        .run(&["dict", "sync", "--from", "a", "--to", "d"])
        .ok()
        .stdout();
    assert!(out.contains("copied:          2"), "{out}");
    let out = dir.run(&["dict", "list", "--store", "d"]).ok().stdout();
    assert!(out.lines().nth(2).unwrap().contains("retired"), "{out}");

    // A store whose dictionary 1 is another one: refused, nothing changed, status 4.
    dir.copy_demo_store(DemoStore::OrdersCsv, "c");
    let before = fs::read(dir.path("c/00000001.pgdict")).unwrap();
    dir.run(&["dict", "sync", "--from", "a", "--to", "c"])
        .fails(
            4,
            &[
                "refused, nothing changed",
                "id 1",
                "hint: the stores have diverged",
            ],
        );
    assert_eq!(fs::read(dir.path("c/00000001.pgdict")).unwrap(), before);
    assert!(!dir.path("c/00000002.retired").exists());

    dir.run(&["dict", "sync", "--from", "missing"]).fails(
        1,
        &["cannot open the source store", "is not a dictionary store"],
    );
    dir.run(&["dict", "sync"]).fails(2, &["--from"]);

    // A sync that fails part way says what it did before the error; one that did nothing
    // says nothing. An add in progress (its claim file) holds the id it is putting there.
    let claim = |store: &str, id: u32| {
        fs::create_dir_all(dir.path(store)).unwrap();
        dir.write(&format!("{store}/.tmp-claim-{id:08}"), b"")
    };
    let stopped_at = |store: &str, id: u32| {
        let put = format!("cannot put dictionary {id} in");
        dir.run(&["dict", "sync", "--from", "a", "--to", store])
            .fails(1, &[&put, "claims the id"])
            .stdout()
    };
    let first = claim("e", 1);
    assert_eq!(stopped_at("e", 1), "");
    fs::remove_file(first).unwrap();
    claim("e", 2);
    let out = stopped_at("e", 2);
    assert!(out.starts_with("stopped syncing "), "{out}");
    assert!(
        out.contains("; done before the error:\n  copied:          1\n"),
        "{out}"
    );
    // Dictionary 1 retired in the source: copied and retired there.
    dir.run(&["dict", "retire", "1", "--store", "a"]).ok();
    claim("f", 2);
    let out = stopped_at("f", 2);
    assert!(out.contains("  copied:          1\n"), "{out}");
    assert!(out.contains("  retired there:   1\n"), "{out}");
}

#[test]
fn errors_say_what_failed_and_what_to_do() {
    let dir = Dir::new();
    let rows = corpus_arg("app_logs.txt");
    // A missing store.
    dir.run(&["compress", &rows, "--store", "nowhere"]).fails(
        1,
        &[
            "error: cannot open the dictionary store nowhere",
            "is not a dictionary store",
            "hint:",
            "--dict none",
        ],
    );
    // An unknown dictionary id.
    dir.demo_store();
    dir.run(&["compress", &rows, "--dict", "42"]).fails(
        1,
        &[
            "cannot load dictionary 42",
            "dictionary 42 is not in the dictionary store dicts",
            "hint: `pgdict dict list`",
        ],
    );
    // `compare --dict none` is a usage error (it used to blame the store, which held two).
    dir.run(&["compare", &rows, "--dict", "none"])
        .fails(2, &["`none` leaves nothing to compare", "leave --dict out"]);
    // So is `--rounds 0` (it was taken, and ran rounds all the same).
    dir.run(&["compare", &rows, "--rounds", "0"])
        .fails(2, &["0 rounds time nothing"]);
    dir.run(&["demo", "--rounds", "0"])
        .fails(2, &["0 rounds time nothing"]);
    // A dictionary built for another codec.
    dir.run(&["compress", &rows, "--dict", "2", "--codec", "pglz"])
        .fails(
            1,
            &[
                "dictionary 2 was built for lz4, not for pglz",
                "--codec lz4",
            ],
        );
    // A bad JSON line, by number; no half-written output is left behind.
    dir.write("bad.jsonl", "{\"a\":1}\n{\"b\":2}\n{oops\n{\"d\":4}\n");
    dir.run(&["compress", "bad.jsonl", "-o", "out.datums"])
        .fails(
            1,
            &[
                "bad.jsonl:3: not a JSON value",
                "hint: each line of a JSON Lines file",
            ],
        );
    assert!(!dir.path("out.datums").exists());
    // Files that cannot be read.
    dir.run(&["compress", "no-such-file.txt"])
        .fails(1, &["cannot read no-such-file.txt", "hint: check the path"]);
    dir.run(&["inspect", "no-such-file.datums"]).fails(
        1,
        &["cannot read no-such-file.datums", "hint: check the path"],
    );
    fs::create_dir(dir.path("a-directory")).unwrap();
    dir.run(&["decompress", "a-directory"])
        .fails(1, &["cannot read a-directory"]);
    // An output in a directory that does not exist: named, not the temporary file's path.
    let run = dir
        .run(&["compress", &rows, "-o", "no-such-dir/out.datums"])
        .fails(
            1,
            &[
                "cannot create no-such-dir/out.datums: there is no directory no-such-dir",
                "hint: create the directory first",
            ],
        );
    assert!(!run.stderr.contains(".pgdict-"), "{}", run.stderr);
    // A bad hex line, by number.
    dir.write("bad.hex", "\\x0b61626364\n\\x0b616\n");
    dir.run(&["decompress", "--format", "hex", "bad.hex"])
        .fails(1, &["line 2", "odd number of hex digits", "hint:"]);
    // A datum whose dictionary the store lacks.
    dir.run(&["compress", &rows, "-o", "logs.datums"]).ok();
    dir.run(&["decompress", "logs.datums", "--store", "empty"])
        .fails(
            1,
            &["datum 1", "dictionary 1 is not in", "pgdict dict sync"],
        );
    // Usage errors: status 2.
    dir.run(&["compress", "--codec", "brotli"])
        .fails(2, &["invalid value 'brotli'"]);
    dir.run(&["compress", "--dict", "latest"])
        .fails(2, &["is not a dictionary id"]);
    dir.run(&["compare", &rows, "--max-rows", "0"])
        .fails(2, &["0 rows leave nothing to work on"]);
    dir.run(&["frobnicate"])
        .fails(2, &["unrecognized subcommand"]);
    // Binary output is not written to... a pipe is fine; help goes to stdout with status 0.
    let help = dir.run(&["--help"]).ok().stdout();
    assert!(
        help.contains("Exit status:") && help.contains("PGDICT_STORE"),
        "{help}"
    );
}

/// Runs the command, reads a little of its output and closes the pipe, as `| head -1` does.
fn read_a_line_and_close(dir: &Dir, args: &[&str]) -> Run {
    let mut child = dir
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    let n = stdout.read(&mut first).unwrap();
    assert!(n > 0);
    drop(stdout);
    Run::from(child.wait_with_output().unwrap())
}

#[test]
fn a_closed_pipe_is_success() {
    let dir = Dir::new();
    dir.demo_store();
    let rows = corpus_arg("events.jsonl");
    dir.run(&["compress", &rows, "-o", "e.datums"]).ok();
    // Outputs far larger than a pipe's buffer, so that the writes after the close fail.
    for args in [
        &["inspect", "e.datums"][..],
        &["inspect", "--json", "e.datums"],
        &["compress", &rows, "--hex", "-q"],
        &["decompress", "e.datums"],
    ] {
        let run = read_a_line_and_close(&dir, args);
        assert_eq!(run.status, Some(0), "{args:?}: {}", run.stderr);
        assert!(run.stderr.is_empty(), "{args:?}: {}", run.stderr);
    }
}

/// The demo stores its dictionaries whoever reads its output: `pgdict demo | head -1` stored
/// the pglz one only (the closed pipe ended it, with success, before the lz4 one was added).
#[test]
fn a_demo_whose_reader_goes_early_stores_both_dictionaries() {
    let dir = Dir::new();
    let run = read_a_line_and_close(&dir, &["demo", "--rounds", "1"]);
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    assert!(dir.path("dicts/00000001.pgdict").is_file());
    assert!(dir.path("dicts/00000002.pgdict").is_file());
}

/// `decompress` and `compress` stream: what has come in on standard input comes out while it
/// stays open.
#[test]
fn decompress_and_compress_stream_their_input() {
    let dir = Dir::new();
    // A raw datum of 100 bytes (a 1-byte header, then the row) in a datums file record.
    let row = [b'r'; 100];
    let mut record = 101u32.to_le_bytes().to_vec();
    record.push((101 << 1) | 1);
    record.extend_from_slice(&row);
    let mut line = row.to_vec();
    line.push(b'\n');
    assert_streams(
        &dir,
        &["decompress", "--format", "datums", "-"],
        &record,
        &line,
    );
    // Told from the stream as a datums file, without --format: by its first records.
    assert_streams(&dir, &["decompress", "-"], &record, &line);
    // The same datum as a hex line: a line is not held back until the next comes.
    let hex_line = format!("\\x{:02x}{}\n", (101 << 1) | 1, "72".repeat(100));
    let args = ["decompress", "--format", "hex", "-"];
    assert_streams(&dir, &args, hex_line.as_bytes(), &line);
    // Told from the stream as hex, without --format: by its first line, not its end.
    assert_streams(&dir, &["decompress", "-"], hex_line.as_bytes(), &line);
    // Varlenas back to back, shorter than the longest header (14 bytes): a datum is not held
    // back until bytes of the next come.
    let args = ["decompress", "--format", "varlena", "-"];
    assert_streams(&dir, &args, b"\x09abc", b"abc\n");
    // A row too short for pglz, so each hex line is the same.
    let row = b"a short row\n";
    let args = ["compress", "-", "--hex", "--dict", "none", "-q"];
    let hex = dir.run_with_stdin(&args, row).ok().stdout;
    assert_eq!(hex.len(), 3 + 2 * 12);
    assert_streams(&dir, &args, row, &hex);
}

/// Runs pgdict with `args`, writing its standard input in three parts (3000 copies of
/// `unit_in`, then one, then one more), each only after every `unit_out` of the part before has
/// come out, and keeping it open meanwhile. A command that waited for the end of its input, for
/// a whole batch, or that did not flush its output before waiting for more input, fails this.
fn assert_streams(dir: &Dir, args: &[&str], unit_in: &[u8], unit_out: &[u8]) {
    use std::io::Write;
    use std::sync::mpsc;
    use std::time::Duration;

    let mut child = dir.spawn_piped(args);
    // Read on a thread (pgdict stops reading while its output is not read), a unit at a time.
    let mut stdout = child.stdout.take().unwrap();
    let (sender, units) = mpsc::channel();
    let len = unit_out.len();
    std::thread::spawn(move || loop {
        let mut unit = vec![0u8; len];
        let read = stdout.read_exact(&mut unit).map(|()| unit);
        let end = read.is_err();
        if sender.send(read).is_err() || end {
            break;
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    for count in [3000, 1, 1] {
        let part = unit_in.repeat(count);
        let writer = std::thread::spawn(move || {
            stdin.write_all(&part).unwrap();
            stdin.flush().unwrap();
            stdin
        });
        for n in 0..count {
            let unit = units.recv_timeout(Duration::from_secs(60));
            let unit = unit.unwrap_or_else(|_| {
                panic!("{args:?}: output {n} of {count} did not come while the input was open")
            });
            assert!(unit.unwrap() == unit_out, "{args:?}");
        }
        stdin = writer.join().unwrap();
    }
    drop(stdin);
    // The end of the input ends the output, with nothing more.
    let end = units.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(end.is_err(), "{args:?}");
    let run = Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.status, Some(0), "{}", run.stderr);
}
