//! The `pgdict` binary on bad input and a hostile environment: empty, huge, binary, truncated
//! and wrongly formatted input, the wrong dictionary, a read-only store, a full disk. Each case
//! asserts the exit status, the message, and that nothing was lost or half written (an
//! existing output file is left as it was; a store holds only whole dictionaries).
//! docs/bad-input.md has the whole matrix, the trainer's cases included.

mod common;

#[path = "../../tests/support/small_fs.rs"]
mod small_fs;

use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use std::process::Stdio;

use common::{corpus_arg, DemoStore, Dir, Run};
use small_fs::SmallFs;

/// A datums file (u32 little-endian length, then the bytes) holding `datums`.
fn datums_file(datums: &[&[u8]]) -> Vec<u8> {
    let mut file = Vec::new();
    for datum in datums {
        file.extend_from_slice(&(datum.len() as u32).to_le_bytes());
        file.extend_from_slice(datum);
    }
    file
}

/// The temporary files in `dir` (an `-o` output's is `.pgdict-*.tmp`).
fn temporary_files(dir: &Dir) -> Vec<String> {
    fs::read_dir(dir.path("."))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// Where `compress` must not leave anything: an existing output stays, and no temporary file
/// lingers beside it.
fn assert_output_untouched(dir: &Dir, name: &str, before: &[u8]) {
    assert_eq!(fs::read(dir.path(name)).unwrap(), before, "{name} changed");
    let strays = temporary_files(dir);
    assert!(strays.is_empty(), "temporary files left: {strays:?}");
}

#[test]
fn empty_input_is_an_error_and_writes_nothing() {
    let dir = Dir::new();
    dir.write("empty.txt", "");
    dir.write("blank.txt", "\n\n\n");
    for rows in ["empty.txt", "blank.txt"] {
        dir.run(&["compress", rows, "--dict", "none", "-o", "out.datums"])
            .fails(1, &["holds no rows", "nothing was written"]);
        assert!(!dir.path("out.datums").exists());
    }
    // Nor to standard output: not even binary COPY's trailer.
    for form in ["--hex", "--copy"] {
        let run = dir
            .run_with_stdin(&["compress", "-", "--dict", "none", form], b"")
            .fails(1, &["standard input", "holds no rows"]);
        assert!(run.stdout.is_empty(), "{form}: {:?}", run.stdout);
    }
    // compare: no rows, or one (nothing to train on and evaluate apart); two are enough.
    dir.run(&["compare", "empty.txt"])
        .fails(1, &["empty.txt (lines) holds no rows", "hint:"]);
    dir.write("one.txt", "the one row\n");
    dir.run(&["compare", "one.txt"]).fails(
        1,
        &["holds a single row: nothing to train on", "--dict auto"],
    );
    dir.write("two.txt", "the first row\nthe second row\n");
    let out = dir
        .run(&["compare", "two.txt", "--rounds", "1"])
        .ok()
        .stdout();
    assert!(out.contains("rows: 2 from file two.txt"), "{out}");
    dir.write("empty.datums", "");
    for command in ["decompress", "inspect"] {
        dir.run(&[command, "empty.datums"])
            .fails(1, &["empty.datums holds no datums", "hint:"]);
    }
}

#[test]
fn a_stream_stopped_by_an_error_ends_so_that_no_reader_takes_it() {
    let dir = Dir::new();
    dir.write("bad.jsonl", "{\"a\": 1}\n{\"a\": 2}\n{bad\n{\"a\": 4}\n");
    for (form, mark, refused) in [
        (
            "--copy",
            &b"\0\0"[..],
            "has no columns: the end pgdict writes when it stops on an error",
        ),
        (
            "--hex",
            b"the datums before this line are not all of the rows\n",
            "line 3",
        ),
        ("--quiet", b"\xff\xff\xff\xff", "record 3 at byte"),
    ] {
        let run = dir
            .run(&["compress", "bad.jsonl", "--dict", "none", form])
            .fails(1, &["bad.jsonl:3: not a JSON value"]);
        assert!(run.stdout.ends_with(mark), "{form}: {:?}", run.stdout());
        // The two rows before the error, and then the reader's error.
        dir.write("out", &run.stdout);
        let read = dir.run(&["decompress", "out"]).fails(1, &[refused]);
        assert_eq!(read.stdout(), "{\"a\": 1}\n{\"a\": 2}\n", "{form}");
        // A first row that cannot be read: the mark alone, not even binary COPY's header.
        dir.write("bad1.jsonl", "{bad\n{\"a\": 2}\n");
        let run = dir
            .run(&["compress", "bad1.jsonl", "--dict", "none", form])
            .fails(1, &["bad1.jsonl:1: not a JSON value"]);
        let whole = match form {
            "--hex" => [&b"\\x-- pgdict stopped on an error: "[..], mark].concat(),
            _ => mark.to_vec(),
        };
        assert!(run.stdout == whole, "{form}: {:?}", run.stdout());
    }
    // decompress writing rows as binary COPY ends the same way: the two rows, then a tuple of
    // no columns, which COPY ... FROM refuses, and so does pgdict reading them as rows.
    let read = dir
        .run(&["decompress", "out", "--out-format", "copy"])
        .fails(1, &["record 3 at byte"]);
    assert!(
        read.stdout.starts_with(b"PGCOPY\n\xff\r\n\0"),
        "{:?}",
        read.stdout
    );
    assert!(read.stdout.ends_with(b"\0\0"), "{:?}", read.stdout);
    dir.write("rows.copy", &read.stdout);
    dir.run(&["compress", "rows.copy", "--dict", "none", "-o", "x.datums"])
        .fails(
            1,
            &["COPY tuple 3", "has no columns: the end pgdict writes"],
        );
    assert!(!dir.path("x.datums").exists());
}

/// A system that cannot start as many threads as --jobs asks for (here every thread: each
/// asks for a stack larger than the address space) is an error naming the thread, where it
/// used to be a panic and an abort that left a temporary file behind; the output is left as it
/// was.
#[test]
fn too_few_threads_for_the_jobs_asked_is_an_error_and_loses_nothing() {
    let dir = Dir::new();
    let rows = corpus_arg("events.jsonl");
    dir.run(&["compress", &rows, "--dict", "none", "-o", "rows.datums"])
        .ok();
    dir.write("out", "before");
    for args in [
        ["compress", &rows, "--dict", "none"].as_slice(),
        &["decompress", "rows.datums"],
    ] {
        let mut command = dir.command(args);
        // 2^48 bytes: more than x86-64's user address space, so no mapping can hold it.
        command
            .env("RUST_MIN_STACK", (1u64 << 48).to_string())
            .args(["--jobs", "4", "-o", "out"]);
        Run::from(command.output().unwrap()).fails(1, &["cannot start worker thread 1 of 4"]);
        assert_output_untouched(&dir, "out", b"before");
    }
}

#[test]
fn the_input_is_never_the_output() {
    let dir = Dir::new();
    let rows = "{\"a\": 1}\n{\"a\": 2}\n";
    dir.write("rows.jsonl", rows);
    fs::hard_link(dir.path("rows.jsonl"), dir.path("link.jsonl")).unwrap();
    let same_file = "writing it would replace what is being read";
    for output in ["rows.jsonl", "./rows.jsonl", "link.jsonl"] {
        dir.run(&["compress", "rows.jsonl", "--dict", "none", "-o", output])
            .fails(
                1,
                &[
                    &format!("the output {output} is the input rows.jsonl"),
                    same_file,
                ],
            );
    }
    // Standard input redirected from the file.
    let stdin = File::open(dir.path("rows.jsonl")).unwrap();
    let run = common::Run::from(
        dir.command(&["compress", "-", "--dict", "none", "-o", "rows.jsonl"])
            .stdin(stdin)
            .output()
            .unwrap(),
    );
    run.fails(1, &["is the input file on standard input", same_file]);
    assert_eq!(fs::read_to_string(dir.path("rows.jsonl")).unwrap(), rows);
    // decompress --prefix would cut the rows short for good.
    dir.run(&["compress", "rows.jsonl", "--dict", "none", "-o", "d.datums"])
        .ok();
    let datums = fs::read(dir.path("d.datums")).unwrap();
    dir.run(&["decompress", "d.datums", "--prefix", "2", "-o", "d.datums"])
        .fails(1, &["the output d.datums is the input d.datums", same_file]);
    assert_eq!(fs::read(dir.path("d.datums")).unwrap(), datums);
    // Another file, or a device written in place, is fine.
    dir.run(&["decompress", "d.datums", "-o", "/dev/null"]).ok();
    // A directory's files are its rows: an output among them would be read as one, the next
    // time (named there, or where a symbolic link outside it leads).
    fs::create_dir(dir.path("rows")).unwrap();
    dir.write("rows/a.txt", "first row");
    dir.write("rows/b.txt", "second row");
    std::os::unix::fs::symlink("rows/new.datums", dir.path("into.datums")).unwrap();
    for output in ["rows/out.datums", "rows/a.txt", "into.datums"] {
        dir.run(&["compress", "rows", "--dict", "none", "-q", "-o", output])
            .fails(
                1,
                &[
                    &format!("the output {output} is in the input directory rows"),
                    "hint: write to a file outside the directory",
                ],
            );
    }
    assert_eq!(fs::read_dir(dir.path("rows")).unwrap().count(), 2);
    dir.run(&[
        "compress",
        "rows",
        "--dict",
        "none",
        "-q",
        "-o",
        "rows.datums",
    ])
    .ok();
    // Standard output is no file among them, even from inside the directory.
    let args = ["compress", ".", "--dict", "none", "-q", "--hex", "-o", "-"];
    let mut command = dir.command(&args);
    let run = Run::from(command.current_dir(dir.path("rows")).output().unwrap());
    assert_eq!(run.ok().stdout().lines().count(), 2);
}

#[test]
fn huge_rows_and_huge_claims_are_refused_before_allocating() {
    let dir = Dir::new();
    // A line longer than PostgreSQL's limit for a value (1 GiB - 1) and a line end, sparse on
    // disk: the line reader stops at the limit instead of buffering the whole line.
    let huge = File::create(dir.path("huge.txt")).unwrap();
    huge.set_len((1 << 30) + 16).unwrap();
    drop(huge);
    let before = b"an existing file".to_vec();
    dir.write("out.datums", &before);
    dir.run(&["compress", "huge.txt", "--dict", "none", "-o", "out.datums"])
        .fails(
            1,
            &["huge.txt:1: the line is over PostgreSQL's limit of 1073741823 bytes"],
        );
    assert_output_untouched(&dir, "out.datums", &before);
    // COPY text whose line goes on past the limit through a `\` and a line feed (which make
    // the line feed part of the value) right where the limit falls: refused, not taken for
    // the end of the line.
    let limit = (1u64 << 30) + 1; // The value limit and a line end.
    let mut huge = File::create(dir.path("huge.copy")).unwrap();
    huge.seek(SeekFrom::Start(limit - 2)).unwrap();
    huge.write_all(b"\\\nmore of the same value\n").unwrap();
    drop(huge);
    dir.run(&[
        "compress",
        "huge.copy",
        "--dict",
        "none",
        "-o",
        "out.datums",
    ])
    .fails(
        1,
        &["huge.copy:2: the line is over PostgreSQL's limit of 1073741823 bytes"],
    );
    assert_output_untouched(&dir, "out.datums", &before);
    // A datums file record claiming 4 GiB.
    dir.write("claims.datums", [0xff, 0xff, 0xff, 0xff, b'x']);
    dir.run(&["decompress", "claims.datums"]).fails(
        1,
        &["record 1 at byte 0 says it holds 4294967295 bytes, over the limit of 1073741823"],
    );
    // A pglz datum of 20 bytes claiming 1 GiB - 1 of raw data.
    let mut datum = ((20u32 << 2) | 0b10).to_le_bytes().to_vec();
    datum.extend_from_slice(&((1u32 << 30) - 1).to_le_bytes());
    datum.extend_from_slice(&[0; 12]);
    dir.write("inflated.datums", datums_file(&[&datum]));
    dir.run(&["decompress", "inflated.datums"])
        .fails(1, &["datum 1", "1073741823"]);
}

#[test]
fn binary_rows_round_trip_and_binary_noise_is_no_datums() {
    let dir = Dir::new();
    // Rows of every byte but the line feed (and no trailing carriage return).
    let rows: Vec<Vec<u8>> = (0..200u32)
        .map(|i| {
            (0..(40 + i % 90))
                .map(|j| ((i * 31 + j * 7) % 256) as u8)
                .map(|b| if b == b'\n' || b == b'\r' { 0 } else { b })
                .collect()
        })
        .collect();
    let mut text = Vec::new();
    for row in &rows {
        text.extend_from_slice(row);
        text.push(b'\n');
    }
    dir.write("binary.txt", &text);
    dir.run(&["compress", "binary.txt", "--dict", "none", "-o", "b.datums"])
        .ok();
    let back = dir
        .run(&["decompress", "b.datums", "--out-format", "lines"])
        .ok();
    assert_eq!(back.stdout, text);
    // Noise is neither hex, nor a datums file, nor varlenas: each reason is given.
    let noise: Vec<u8> = (0..3000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    dir.write("noise.bin", &noise);
    dir.run(&["decompress", "noise.bin"]).fails(
        1,
        &[
            "neither hex text",
            "nor a datums file",
            "nor varlenas back to back",
            "--format datums|hex|escape|copy|varlena",
        ],
    );
}

#[test]
fn truncated_input_names_the_record_and_keeps_the_output() {
    let dir = Dir::new();
    dir.demo_store();
    let rows = corpus_arg("app_logs.txt");
    dir.run(&["compress", &rows, "-o", "logs.datums", "-q"])
        .ok();
    let whole = fs::read(dir.path("logs.datums")).unwrap();
    // Cut inside a record: the reader names the record, its offset and the lengths.
    dir.write("cut.datums", &whole[..1000]);
    let before = b"rows decoded earlier".to_vec();
    dir.write("out.txt", &before);
    // The record cut, counting from 1, and where it starts.
    let (mut record, mut offset) = (1, 0);
    loop {
        let len = u32::from_le_bytes(whole[offset..offset + 4].try_into().unwrap()) as usize;
        if offset + 4 + len > 1000 {
            break;
        }
        (record, offset) = (record + 1, offset + 4 + len);
    }
    let what = if offset + 4 > 1000 {
        "length prefix"
    } else {
        "datum"
    };
    let cut_record = format!("cut.datums: record {record} at byte {offset} is cut off: {what}");
    dir.run(&["decompress", "cut.datums", "-o", "out.txt"])
        .fails(1, &[&cut_record, "the file ends after"]);
    assert_output_untouched(&dir, "out.txt", &before);
    // A datum whose payload was cut (its datums-file framing is intact).
    let first_len = u32::from_le_bytes(whole[..4].try_into().unwrap()) as usize;
    let datum = &whole[4..4 + first_len];
    dir.write("short.datums", datums_file(&[&datum[..datum.len() - 3]]));
    dir.run(&["decompress", "short.datums"])
        .fails(1, &["datum 1"]);
    // A damaged dictionary file: decoding says which file and why, and nothing is written.
    let dict = dir.path("dicts/00000001.pgdict");
    let mut bytes = fs::read(&dict).unwrap();
    bytes.truncate(bytes.len() - 1);
    fs::write(&dict, bytes).unwrap();
    dir.run(&["decompress", "logs.datums", "-o", "out.txt"])
        .fails(
            1,
            &[
                "datum 1",
                "dictionary 1",
                "00000001.pgdict",
                "hint: mend it from a store that holds it intact",
            ],
        );
    assert_output_untouched(&dir, "out.txt", &before);
}

#[test]
fn wrong_formats_say_which_format_was_expected() {
    let dir = Dir::new();
    dir.write("rows.hex", "\\x0b61626364\n");
    dir.run(&["decompress", "--format", "datums", "rows.hex"])
        .fails(1, &["datums file", "for hex text use --format hex"]);
    dir.write("a.datums", datums_file(&[b"\x0b61626364"]));
    dir.run(&["decompress", "--format", "hex", "a.datums"])
        .fails(1, &["hint: give one datum per line as psql prints a bytea"]);
    dir.write("rows.jsonl", "{\"a\": 1}\n[1, 2\n");
    dir.run(&["compress", "rows.jsonl", "--dict", "none", "--hex"])
        .fails(1, &["rows.jsonl:2: not a JSON value"]);
    // A quote left open: the CSV reader would take the rest of the input as one field.
    dir.write("open.csv", "id,body\n1,ok\n2,\"broken\n3,after\n4,more\n");
    dir.run(&[
        "compress",
        "open.csv",
        "--csv-column",
        "body",
        "--dict",
        "none",
        "-o",
        "o.datums",
    ])
    .fails(
        1,
        &[
            "open.csv:3: bad CSV: a quoted field in this record is not closed",
            "hint: the input must be CSV as COPY",
        ],
    );
    assert!(!dir.path("o.datums").exists());
    dir.write("rows.csv", "a,b\n1,2\n");
    dir.run(&[
        "compress",
        "rows.csv",
        "--csv-column",
        "c",
        "--dict",
        "none",
        "--hex",
    ])
    .fails(1, &["rows.csv: no CSV column \"c\": the header has a, b"]);

    // Binary COPY where lines are expected (standard input, a file not named *.copy) is
    // refused by its signature, where it was read as its bytes cut at line feeds; it is read
    // as what it is when the format says so.
    dir.write("three.txt", "one\ntwo\nthree\n");
    dir.run(&[
        "compress",
        "three.txt",
        "--dict",
        "none",
        "-o",
        "three.datums",
    ])
    .ok();
    dir.run(&["decompress", "three.datums", "-o", "three.copy"])
        .ok();
    let copy = fs::read(dir.path("three.copy")).unwrap();
    dir.write("three.bin", &copy);
    let refusal = [
        "starts with the signature of binary COPY data",
        "--format copy",
    ];
    for args in [
        ["compress", "-", "--dict", "none", "--hex"].as_slice(),
        &["compare", "-"],
    ] {
        dir.run_with_stdin(args, &copy)
            .fails(1, &[&["standard input"], refusal.as_slice()].concat());
    }
    dir.run(&["compress", "three.bin", "--dict", "none", "-o", "o.datums"])
        .fails(1, &[&["three.bin"], refusal.as_slice()].concat());
    assert!(!dir.path("o.datums").exists());
    let rows = dir
        .run(&[
            "compress",
            "three.bin",
            "--format",
            "copy",
            "--dict",
            "none",
        ])
        .ok()
        .stdout;
    assert_eq!(rows, fs::read(dir.path("three.datums")).unwrap());

    // An output name that says another format than the one written is refused (it was
    // written, and read back as what its name says); names are read in any case.
    for (flags, name, message) in [
        (
            &["--hex"][..],
            "x.datums",
            "compress writes hex lines, but the name x.datums says a datums file",
        ),
        (
            &[],
            "x.jsonl",
            "compress writes a datums file, but the name x.jsonl says JSON Lines",
        ),
        (
            &["--copy"],
            "x.HEX",
            "compress writes binary COPY data, but the name x.HEX says hex lines",
        ),
        (
            &[],
            "x.csv",
            "compress writes a datums file, but the name x.csv says CSV",
        ),
    ] {
        let mut args = vec!["compress", "three.txt", "--dict", "none", "-o", name];
        args.extend(flags);
        dir.run(&args)
            .fails(2, &[message, "name the output for what it holds"]);
        assert!(!dir.path(name).exists(), "{name}");
    }
    dir.run(&["compress", "three.txt", "--dict", "none", "-o", "x.HEX"])
        .ok();
    let hex = fs::read_to_string(dir.path("x.HEX")).unwrap();
    assert!(hex.starts_with("\\x"), "{hex}");
    dir.run(&[
        "compress",
        "three.txt",
        "--dict",
        "none",
        "--hex",
        "-o",
        "x.csv",
    ])
    .ok();
    assert_eq!(fs::read_to_string(dir.path("x.csv")).unwrap(), hex);
    // A directory is rows (one a file) only when no format is given.
    fs::create_dir(dir.path("rows.d")).unwrap();
    dir.write("rows.d/a", "one");
    dir.run(&[
        "compress", "rows.d", "--format", "jsonl", "--dict", "none", "--hex",
    ])
    .fails(
        1,
        &[
            "Is a directory",
            "a directory is read as one row per file only without --format",
        ],
    );
    dir.run(&["decompress", "x.HEX", "-o", "back.JSONL"]).ok();
    assert_eq!(
        fs::read_to_string(dir.path("back.JSONL")).unwrap(),
        "\"one\"\n\"two\"\n\"three\"\n"
    );
    // decompress refuses such names too (it wrote lines into back.jsonl or back.hex).
    for (flags, name, message) in [
        (
            &["--out-format", "lines"][..],
            "back.jsonl",
            "decompress writes lines of text, but the name back.jsonl says JSON Lines",
        ),
        (
            &[],
            "back.hex",
            "decompress writes lines of text, but the name back.hex says hex lines",
        ),
        (
            &["--out-format", "datums"],
            "back.copy",
            "decompress writes a datums file, but the name back.copy says COPY data",
        ),
    ] {
        let mut args = vec!["decompress", "x.HEX", "-o", name];
        args.extend(flags);
        dir.run(&args)
            .fails(2, &[message, "name the output for what it holds"]);
        assert!(!dir.path(name).exists(), "{name}");
    }
    dir.run(&["decompress", "x.HEX", "-o", "back.csv"]).ok();
    assert_eq!(
        fs::read_to_string(dir.path("back.csv")).unwrap(),
        "one\ntwo\nthree\n"
    );
}

/// A dictionary of another store under the same id cannot be recognised from the datum (the
/// format carries the id, not a checksum): what pgdict guards is the store, whose ids are
/// never reused and whose sync refuses a different dictionary under a known id.
#[test]
fn a_conflicting_store_is_refused_by_sync() {
    let dir = Dir::new();
    dir.demo_store();
    let other = Dir::new();
    other.copy_demo_store(DemoStore::AppLogs, "dicts");
    let other_store = other.path("dicts").display().to_string();
    let before = fs::read(dir.path("dicts/00000001.pgdict")).unwrap();
    dir.run(&["dict", "sync", "--from", &other_store]).fails(
        4,
        &[
            "refused, nothing changed",
            "hold different dictionaries",
            "id 1 (",
        ],
    );
    assert_eq!(fs::read(dir.path("dicts/00000001.pgdict")).unwrap(), before);
    // The codec a dictionary was built for is checked.
    let rows = corpus_arg("events.jsonl");
    dir.run(&["compress", &rows, "--dict", "2", "--codec", "pglz"])
        .fails(1, &["dictionary 2 was built for lz4, not for pglz"]);
}

/// A damaged dictionary file: the store lists the others and says which one cannot be read,
/// and `dict sync --repair` mends it from another store, keeping the damaged bytes.
#[test]
fn a_damaged_dictionary_is_listed_and_repaired_from_another_store() {
    let dir = Dir::new();
    dir.demo_store();
    dir.copy_demo_store(DemoStore::Events, "intact");
    let dict = dir.path("dicts/00000001.pgdict");
    let mut damaged = fs::read(&dict).unwrap();
    damaged[100] ^= 0x04;
    fs::write(&dict, &damaged).unwrap();

    let listed = dir
        .run(&["dict", "list"])
        .fails(
            1,
            &["cannot read dictionary 1", "checksum mismatch", "--repair"],
        )
        .stdout();
    let rows: Vec<&str> = listed.lines().collect();
    assert_eq!(rows.len(), 3, "{listed}");
    assert!(
        rows[1].starts_with(" 1  ?") && rows[1].contains("unreadable"),
        "{}",
        rows[1]
    );
    // Dictionary 2 (lz4) is newer than the damaged one, so still `--dict auto`'s pick for lz4;
    // no pick for pglz is shown while the damaged one is newer than any other.
    assert!(rows[2].contains("active, auto for lz4"), "{}", rows[2]);
    assert!(!listed.contains("auto for pglz"), "{listed}");
    let listed = dir
        .run(&["dict", "list", "--json"])
        .fails(1, &["cannot read dictionary 1"])
        .stdout();
    let first: serde_json::Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    assert_eq!(first["id"], 1);
    assert!(first["error"]
        .as_str()
        .unwrap()
        .contains("00000001.pgdict is damaged"));
    let shown = dir.run(&["dict", "show", "2"]).ok().stdout();
    assert!(
        shown.contains("status:     active, auto for lz4"),
        "{shown}"
    );

    // Without --repair, sync stops at the damaged file and writes nothing.
    dir.run(&["dict", "sync", "--from", "intact"])
        .fails(1, &["00000001.pgdict is damaged", "--repair"]);
    assert_eq!(fs::read(&dict).unwrap(), damaged);
    let out = dir
        .run(&["dict", "sync", "--from", "intact", "--repair"])
        .ok()
        .stdout();
    assert!(out.contains("already there:   2"), "{out}");
    assert!(out.contains("repaired:        1"), "{out}");
    assert_eq!(
        fs::read(&dict).unwrap(),
        fs::read(dir.path("intact/00000001.pgdict")).unwrap()
    );
    let kept: Vec<_> = fs::read_dir(dir.path("dicts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".damaged-00000001-")
        })
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let kept_name = kept[0].file_name().unwrap().to_string_lossy();
    assert!(
        out.contains(&format!("kept as dicts/{kept_name}\n")),
        "{out}"
    );
    assert_eq!(fs::read(&kept[0]).unwrap(), damaged);
    let listed = dir.run(&["dict", "list"]).ok().stdout();
    assert!(listed.contains("active, auto for pglz"), "{listed}");
}

#[test]
fn a_store_whose_dictionary_is_for_another_codec_is_not_the_one_the_datums_name() {
    // Datums of the demo's pglz dictionary 1, and another store whose dictionary 1 was built
    // for lz4: the store that made them gave the id to another dictionary.
    let dir = Dir::new();
    dir.demo_store();
    let events = corpus_arg("events.jsonl");
    dir.run(&["compress", &events, "--dict", "1", "-o", "e.datums", "-q"])
        .ok();
    let other = pgdict::dict::DirStore::create(dir.path("other")).unwrap();
    let lz4_only = pgdict::dict::Dictionary::new(
        1,
        pgdict::dict::CodecSet::only(pgdict::datum::Codec::Lz4),
        0,
        pgdict::dict::Metadata::new(),
        b"{\"id\": \"\", \"type\": \"page_viewed\"}",
    )
    .unwrap();
    other.insert(&lz4_only).unwrap();
    let foreign = "was built for lz4, not for pglz: this pglz datum was written with another \
                   dictionary 1";
    let hint = "hint: decode with the store the datums were written with";
    dir.run(&[
        "--store",
        "other",
        "decompress",
        "e.datums",
        "-o",
        "rows.txt",
    ])
    .fails(1, &[foreign, hint]);
    assert!(!dir.path("rows.txt").exists());
    // inspect --verify: the datums are not checked (nor called invalid).
    let run = dir
        .run(&["--store", "other", "inspect", "--verify", "e.datums"])
        .fails(
            1,
            &[
                "cannot check 2,000 datums of e.datums, which name dictionary 1",
                foreign,
                hint,
            ],
        );
    assert!(
        run.stdout().contains("2,000 not checked"),
        "{}",
        run.stdout()
    );
    // The store they were written with decodes them.
    dir.run(&["decompress", "e.datums", "-o", "rows.txt"]).ok();
}

#[test]
fn a_read_only_store_reads_and_refuses_every_write() {
    let Some(small) = SmallFs::mount(1024) else {
        return;
    };
    let dir = Dir::new();
    let store = small.join("dicts").display().to_string();
    dir.copy_demo_store(DemoStore::Events, &store);
    small.remount_read_only();
    let files = small.list("dicts");
    // Reading works.
    let rows = corpus_arg("app_logs.txt");
    dir.run(&["compress", &rows, "--store", &store, "-o", "l.datums", "-q"])
        .ok();
    dir.run(&["decompress", "l.datums", "--store", &store, "-o", "l.txt"])
        .ok();
    assert_eq!(
        fs::read(dir.path("l.txt")).unwrap(),
        fs::read(common::corpus("app_logs.txt")).unwrap()
    );
    dir.run(&["dict", "list", "--store", &store]).ok();
    // An output on it: the directory is named, not the temporary file made there first.
    let out = small.join("out.datums").display().to_string();
    let run = dir
        .run(&["compress", &rows, "--store", &store, "-o", &out])
        .fails(
            1,
            &[
                &format!("cannot create {out}"),
                "Read-only file system (os error 30)",
                "hint: the output is written to a new file in its directory",
            ],
        );
    assert!(!run.stderr.contains(".pgdict-"), "{}", run.stderr);
    // Writing fails, saying why.
    dir.run(&["dict", "retire", "1", "--store", &store])
        .fails(1, &["cannot retire dictionary 1", "Read-only file system"]);
    // A sync that would add dictionaries 3 and 4 (the first two are the same: both stores
    // were made by the same demo).
    let other = Dir::new();
    other.copy_demo_store(DemoStore::EventsThenAppLogs, "dicts");
    let more = other.path("dicts").display().to_string();
    dir.run(&["dict", "sync", "--from", &more, "--store", &store])
        .fails(1, &["Read-only file system"]);
    // The demo trains the dictionaries the store holds already, so it keeps them and needs
    // no write (which is why it does not refuse a read-only store up front, as the trainer
    // does).
    let run = dir.run(&["demo", "--rounds", "1", "--store", &store]).ok();
    assert!(
        run.stdout()
            .contains("kept dictionary 2 (lz4, 65,532 bytes): the dictionary store"),
        "{}",
        run.stdout()
    );
    assert_eq!(small.list("dicts"), files);
}

#[test]
fn a_full_disk_loses_nothing() {
    let Some(small) = SmallFs::mount(40) else {
        return;
    };
    let dir = Dir::new();
    // The store: the 4 KB pglz dictionary fits, the 64 KB lz4 one does not.
    let store = small.join("dicts").display().to_string();
    dir.run(&["demo", "--rounds", "1", "--store", &store])
        .fails(
            1,
            &["cannot add the lz4 dictionary", "No space left on device"],
        );
    assert_eq!(small.list("dicts"), ["00000001.pgdict"]);
    let listed = dir.run(&["dict", "list", "--store", &store]).ok().stdout();
    assert!(
        listed.contains("pglz") && !listed.contains("lz4 "),
        "{listed}"
    );
    // An output file on the full disk keeps its old content.
    let rows = corpus_arg("events.jsonl");
    let before = vec![b'x'; 8 * 1024];
    fs::write(small.join("out.datums"), &before).unwrap();
    let out = small.join("out.datums").display().to_string();
    dir.run(&["compress", &rows, "--store", &store, "-o", &out])
        .fails(1, &["No space left on device"]);
    assert_eq!(fs::read(small.join("out.datums")).unwrap(), before);
    assert!(
        !small.list(".").iter().any(|n| n.ends_with(".tmp")),
        "{:?}",
        small.list(".")
    );
    // Standard output on a full device.
    dir.run(&["compress", &rows, "--store", &store, "-o", "e.datums", "-q"])
        .ok();
    let run = Run::from(
        dir.command(&["decompress", "e.datums", "--store", &store])
            .stdout(File::create("/dev/full").unwrap())
            .stderr(Stdio::piped())
            .output()
            .unwrap(),
    );
    run.fails(
        1,
        &["cannot write to standard output", "No space left on device"],
    );
    // A report too says where it could not write (it said "No space left on device" alone).
    for args in [
        &["dict", "list", "--store", &store][..],
        &["demo", "--rounds", "1"],
    ] {
        let run = Run::from(
            dir.command(args)
                .stdout(File::create("/dev/full").unwrap())
                .stderr(Stdio::piped())
                .output()
                .unwrap(),
        );
        run.fails(
            1,
            &["error: cannot write to standard output\n  detail: No space left on device"],
        );
    }
}

/// A store and output files on exFAT, which has no hard links (a USB stick, a VirtualBox
/// shared folder): syncing into the store, repairing it, and compressing to and from it work
/// (adding a dictionary used to fail with `cannot link a new dictionary file ...: Operation
/// not permitted`, hinting at permissions).
#[test]
fn a_store_without_hard_links_works() {
    let Some(exfat) = SmallFs::mount_exfat(64) else {
        return;
    };
    let dir = Dir::new();
    dir.copy_demo_store(DemoStore::Events, "intact");
    let store = exfat.join("dicts").display().to_string();
    fs::create_dir(&store).unwrap();
    let synced = dir
        .run(&["dict", "sync", "--from", "intact", "--store", &store])
        .ok()
        .stdout();
    assert!(synced.contains("copied:          1, 2"), "{synced}");
    assert_eq!(exfat.list("dicts"), ["00000001.pgdict", "00000002.pgdict"]);

    let dict = exfat.join("dicts/00000001.pgdict");
    let mut damaged = fs::read(&dict).unwrap();
    damaged[100] ^= 0x04;
    fs::write(&dict, &damaged).unwrap();
    let repaired = dir
        .run(&[
            "dict", "sync", "--from", "intact", "--store", &store, "--repair",
        ])
        .ok()
        .stdout();
    assert!(repaired.contains("repaired:        1"), "{repaired}");
    let names = exfat.list("dicts");
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names[0].starts_with(".damaged-00000001-"), "{names:?}");
    assert_eq!(
        fs::read(exfat.join("dicts").join(&names[0])).unwrap(),
        damaged
    );
    assert_eq!(
        fs::read(&dict).unwrap(),
        fs::read(dir.path("intact/00000001.pgdict")).unwrap()
    );

    let rows = corpus_arg("events.jsonl");
    let out = exfat.join("out.datums").display().to_string();
    dir.run(&["compress", &rows, "--store", &store, "-o", &out, "-q"])
        .ok();
    let back = dir
        .run(&["decompress", &out, "--store", &store])
        .ok()
        .stdout();
    assert_eq!(back, fs::read_to_string(&rows).unwrap());
}

/// `-o` names what is there: a named pipe or a device is written in place, as a shell's `>`
/// writes it, never replaced by a file (`-o /dev/null` run as root once turned /dev/null into
/// a file); a symbolic link is followed and stays a link; a replaced file keeps its
/// permissions; a directory is refused.
#[test]
fn an_output_that_is_not_a_regular_file_is_written_in_place() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    use std::process::Command;

    let dir = Dir::new();
    let rows = corpus_arg("app_logs.txt");
    let compress = ["compress", &rows, "--dict", "none", "--hex", "-q"];
    let expected = dir.run(&compress).ok().stdout;
    let to = |name: &'static str| -> Vec<&str> { [&compress[..], &["-o", name]].concat() };

    // A named pipe, read on another thread.
    let pipe = dir.path("pipe");
    assert!(Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap()
        .success());
    let reader = {
        let pipe = pipe.clone();
        std::thread::spawn(move || fs::read(pipe).unwrap())
    };
    dir.run(&to("pipe")).ok();
    // Checked before waiting for the reader, which a replaced pipe would leave waiting.
    assert!(fs::symlink_metadata(&pipe).unwrap().file_type().is_fifo());
    assert_eq!(reader.join().unwrap(), expected);

    // A device: a twin of /dev/full made here (making one needs root).
    if small_fs::is_root() {
        let full = dir.path("full");
        assert!(Command::new("mknod")
            .arg(&full)
            .args(["c", "1", "7"])
            .status()
            .unwrap()
            .success());
        dir.run(&to("full"))
            .fails(1, &["cannot write to full", "No space left on device"]);
        assert!(fs::symlink_metadata(&full)
            .unwrap()
            .file_type()
            .is_char_device());
        // Another user's file, replaced by root, stays theirs.
        dir.write("theirs.hex", "old");
        std::os::unix::fs::chown(dir.path("theirs.hex"), Some(4242), Some(4243)).unwrap();
        dir.run(&to("theirs.hex")).ok();
        let theirs = fs::metadata(dir.path("theirs.hex")).unwrap();
        assert_eq!((theirs.uid(), theirs.gid()), (4242, 4243));
        assert_eq!(fs::read(dir.path("theirs.hex")).unwrap(), expected);
    } else {
        assert!(
            std::env::var_os("PGDICT_REQUIRE_ROOT_TESTS").is_none(),
            "PGDICT_REQUIRE_ROOT_TESTS is set, but making a device needs root"
        );
        eprintln!("skipped the device: making one needs root (CI runs these tests as root)");
    }

    // A symbolic link to a file only its owner may read.
    dir.write("real.hex", "old");
    fs::set_permissions(dir.path("real.hex"), fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("real.hex", dir.path("link.hex")).unwrap();
    dir.run(&to("link.hex")).ok();
    assert!(fs::symlink_metadata(dir.path("link.hex"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(dir.path("real.hex")).unwrap(), expected);
    let mode = fs::metadata(dir.path("real.hex"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_output_untouched(&dir, "real.hex", &expected);

    // A directory.
    fs::create_dir(dir.path("out")).unwrap();
    dir.run(&to("out")).fails(
        1,
        &[
            "out is a directory",
            "hint: give the path of a file to write",
        ],
    );
}

/// Starts `compress - -o out.datums` through `sh -c SCRIPT` (which runs it as `"$0" "$@"`),
/// its input left open, and waits until its temporary file exists.
fn compress_waiting_for_rows(dir: &Dir, script: &str) -> std::process::Child {
    let args = ["compress", "-", "--dict", "none", "-q", "-o", "out.datums"];
    let child = std::process::Command::new("sh")
        .args(["-c", script, env!("CARGO_BIN_EXE_pgdict")])
        .args(args)
        .current_dir(dir.path("."))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while temporary_files(dir).is_empty() {
        assert!(start.elapsed().as_secs() < 60, "no temporary file came");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child
}

fn send(signal: &str, child: &std::process::Child) {
    let sent = std::process::Command::new("kill")
        .args(["-s", signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// A signal that ends `compress` or `decompress` while they stream ends the stream with the
/// mark its reader refuses, as an error does: the output stops after a whole tuple or line,
/// which `COPY ... FROM` reading a pipe takes for the end of the data, and commits (`timeout 60
/// pgdict compress ... --copy | psql -c "COPY ..."` loaded the rows read so far).
#[test]
fn a_signal_breaks_the_end_of_a_stream() {
    let dir = Dir::new();
    // Ten raw datums of "a row" (a 1-byte header), as a binary COPY tuple and as a hex line.
    let tuple = b"\0\x01\0\0\0\x06\x0da row";
    let hex_line = b"\\x0d6120726f77\n";
    let cases: [(&str, usize, &[u8]); 2] = [
        ("--copy", 19 + 10 * tuple.len(), b"\0\0"),
        (
            "--hex",
            10 * hex_line.len(),
            b"\\x-- pgdict stopped on an error",
        ),
    ];
    for (flag, before, mark) in cases {
        let args = [
            "compress", "-", "--format", "lines", "--dict", "none", "-q", flag,
        ];
        let rows = b"a row\n".repeat(10);
        let (written, rest) = signalled_while_streaming(&dir, &args, &rows, before);
        match flag {
            "--copy" => assert!(written.ends_with(tuple), "{written:?}"),
            _ => assert!(written.ends_with(hex_line), "{written:?}"),
        }
        assert!(
            rest.starts_with(mark),
            "{flag}: after the rows: {:?}",
            String::from_utf8_lossy(&rest)
        );
    }
    // decompress to binary COPY: the rows of ten hex lines, each a tuple of 11 bytes.
    let args = ["decompress", "--format", "hex", "-", "--out-format", "copy"];
    let (written, rest) = signalled_while_streaming(&dir, &args, &hex_line.repeat(10), 19 + 110);
    assert!(written.ends_with(b"\0\x01\0\0\0\x05a row"), "{written:?}");
    assert_eq!(rest, b"\0\0");
}

/// Runs pgdict with `args`, writes `input` to it and keeps its input open; once `before`
/// bytes have come out, ends it with SIGTERM: those bytes, and what came after them.
fn signalled_while_streaming(
    dir: &Dir,
    args: &[&str],
    input: &[u8],
    before: usize,
) -> (Vec<u8>, Vec<u8>) {
    use std::io::{Read, Write};
    use std::os::unix::process::ExitStatusExt;

    let mut child = dir.spawn_piped(args);
    let mut rows = child.stdin.take().unwrap();
    rows.write_all(input).unwrap();
    // Kept open: pgdict writes what it has and waits for more.
    let mut stdout = child.stdout.take().unwrap();
    let mut written = vec![0; before];
    stdout.read_exact(&mut written).unwrap();
    send("TERM", &child);
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let status = child.wait().unwrap();
    drop(rows);
    assert_eq!(status.signal(), Some(15), "{args:?}: {status:?}");
    (written, rest)
}

/// A signal ends a stream whose reader has stopped reading, without its broken end if the
/// pipe has no room for it: the handler waits a second for room, not for ever (it held every
/// signal off while a full pipe blocked its write).
#[test]
fn a_signal_ends_a_stream_nobody_reads() {
    use std::os::unix::process::ExitStatusExt;

    let dir = Dir::new();
    dir.write("rows.txt", "a row that fills the pipe\n".repeat(200_000));
    let mut child = dir
        .command(&["compress", "rows.txt", "--dict", "none", "-q", "--copy"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its output is never read: once the pipe is full, every write waits.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let start = std::time::Instant::now();
    send("TERM", &child);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            send("KILL", &child);
            panic!("SIGTERM did not end it in 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.signal(), Some(15), "{status:?}");
}

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP end the command as they would, with the file it was to
/// replace as it was and no temporary file left beside it; a signal that it was started
/// ignoring (`nohup` ignores SIGHUP, a shell script's `cmd &` SIGINT) stays ignored.
#[test]
fn a_signal_leaves_the_output_as_it_was_and_nothing_beside_it() {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;

    let ignored =
        pgdict_trainer::interrupt::ignored_signals().expect("SigIgn in /proc/self/status");
    let dir = Dir::new();
    dir.write("out.datums", b"old");
    for (signal, number) in [("INT", 2), ("TERM", 15), ("HUP", 1)] {
        // A signal this process ignores, the child starts ignoring too: it would go on, and
        // the test would wait for it for ever.
        assert_eq!(
            ignored & 1 << (number - 1),
            0,
            "the tests run with SIG{signal} ignored (a shell script's `cmd &` ignores SIGINT): \
             run them with it at its default"
        );
        // `exec`: the signal goes to pgdict itself, not to the shell.
        let mut child = compress_waiting_for_rows(&dir, "exec \"$0\" \"$@\"");
        // Standard input stays open until the child has ended: `wait` would close it first,
        // and a child that sees the end of its rows before the signal ends it fails with "no
        // rows" (CI saw that, under load).
        let rows = child.stdin.take();
        send(signal, &child);
        let status = child.wait().unwrap();
        drop(rows);
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(
            status.signal(),
            Some(number),
            "SIG{signal}: {status:?}: {stderr}"
        );
        assert_output_untouched(&dir, "out.datums", b"old");
    }
    // Started with SIGHUP ignored (`nohup`), or SIGINT (a shell script's `cmd &`): it goes on,
    // and the rows that come are written.
    for (signal, row) in [("HUP", "a row"), ("INT", "b row")] {
        let script = format!("trap '' {signal}; exec \"$0\" \"$@\"");
        let mut child = compress_waiting_for_rows(&dir, &script);
        send(signal, &child);
        let mut rows = child.stdin.take().unwrap();
        writeln!(rows, "{row}").unwrap();
        drop(rows);
        let status = child.wait().unwrap();
        assert!(status.success(), "SIG{signal}: {status:?}");
        let written = fs::read(dir.path("out.datums")).unwrap();
        assert_eq!(written, [b"\x06\0\0\0\x0d", row.as_bytes()].concat());
        assert_eq!(temporary_files(&dir), Vec::<String>::new());
    }
}
