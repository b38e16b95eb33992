//! The `pgdict-trainer` binary on bad and awkward input, run as a user runs it: each case
//! asserts the exit status, the message on standard error, and what the store holds after
//! (never an empty dictionary, nothing at all after an error or a refusal).
//!
//! | case | expected |
//! |---|---|
//! | empty file, blank lines only, missing file | 1, "no rows to train on" / "cannot read", no store |
//! | all rows identical | 0, stored; datums decode through the store |
//! | rows larger than pglz's window (9–15 KB) | 0, stored |
//! | binary rows (NUL, 0xFF, no line structure) in a datums file | 0, stored, round trip |
//! | random bytes | 3, "share no content", no store |
//! | one row, or two (one of them held out) | 3, "one row to train on", counts in the singular |
//! | one row, held out by the draw | 3, "the one sampled row was held out"; `--content` measures it |
//! | six rows for zstd's trainer | 3, "zstd's trainer needs 7 rows or more" |
//! | a dictionary that saves under 1 % | 3, refused, no store; `--force` stores it |
//! | random bytes as `--content`, on rows pglz's dictionary form saves on without content | 3, "the dictionary's content does not help", no store |
//! | invalid JSON on line 3 | 1, "bad.jsonl:3: not a JSON value" |
//! | binary COPY data read as lines (no `--format copy`, no `.copy` name) | 1, "starts with the signature of binary COPY data", no store |
//! | bad CSV on line 4 | 1, "bad.csv:4: bad CSV" |
//! | unreachable database (127.0.0.1, a closed port) | 1, "cannot connect to PostgreSQL at 127.0.0.1:PORT" |
//! | usage errors | 2 |
//! | a directory source with a file over 1 GiB - 1 | 1, "over PostgreSQL's limit", nothing read |
//! | a read-only store (tmpfs remounted ro) | 1, "Read-only file system", store unchanged |
//! | a full disk (40 KiB tmpfs) under the store | 1, "No space left on device", no file left in the store; the dictionary kept in `./pgdict-unstored-*.bin`, which `--content` stores |
//! | `--content` empty, over 1 MiB, missing, a whole `.pgdict` file, or zstd's magic number without a zstd dictionary | 1, named, before the rows are read, no store |
//! | `--content` with `--builder`, `--size` or `--holdout` | 2 |
//! | `--size` under 256 where zstd's trainer builds (`--codec zstd`, lz4 with `--builder zstd`) | 2, "256 bytes or more", before the rows are read |
//! | `--content` and a source with no rows | 1, "no rows to measure the given dictionary on", no store |
//! | rows longer than the sample may hold, among others | 0, "note: 2 rows left out, each longer than ..." |
//! | standard output closed early (`\| head -1`); on a full device | 0, every dictionary stored; 1, "cannot write to standard output" |
//! | the id measured under taken by another adder while building | 0, stored under the next, "note: measured as id 127, ..." |
//! | `--dry-run --store` naming a file | 1, "not a dictionary store: not a directory" |
//!
//! Plus `--json` (the report's fields), `--dry-run`, `PGDICT_STORE`, standard input, and
//! `--content` (a dictionary given, measured on every row, stored under a new id), and the gain
//! measured under the id the store gives next (2-byte ids from 128).

#[path = "../../tests/support/child.rs"]
mod child;
#[path = "../../tests/support/small_fs.rs"]
mod small_fs;

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use pgdict::datum::{self, Codec, DatumEncoder, Form};
use pgdict::dict::{CodecSet, Dictionary, DirStore, Metadata};
use pgdict_trainer::progress::thousands;
use serde_json::Value;
use small_fs::SmallFs;

const BIN: &str = env!("CARGO_BIN_EXE_pgdict-trainer");

/// A temporary working directory; the default store `dicts/` would land in it.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        Work {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(name);
        fs::write(&path, bytes).unwrap();
        path
    }

    fn store(&self) -> PathBuf {
        self.path("store")
    }

    /// Runs the trainer in the directory with the store at `store/`.
    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// [`Work::run`] with `stdin` on standard input.
    fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        child::output_with_stdin(&mut self.command(args), stdin)
    }

    /// [`Work::command`] started with standard output and error piped, to be read as it runs.
    fn spawn(&self, args: &[&str]) -> Child {
        let mut command = self.command(args);
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        command.spawn().unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("PGDICT_STORE", self.store())
            .env_remove("PGDICT_PG_STORE")
            .stdin(Stdio::null());
        command
    }

    /// The dictionary files in the store (none if it does not exist).
    fn stored(&self) -> Vec<PathBuf> {
        match fs::read_dir(self.store()) {
            Ok(entries) => {
                let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
                files.sort();
                files
            }
            Err(_) => Vec::new(),
        }
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[track_caller]
fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "exit status\n--- stdout\n{}\n--- stderr\n{}",
        stdout(output),
        stderr(output)
    );
}

/// JSON-ish rows with a shared schema and varying values: a dictionary helps them.
fn json_rows(n: usize) -> Vec<Vec<u8>> {
    let cities = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Accra", "Lima"];
    (0..n)
        .map(|i| {
            format!(
                "{{\"id\": {}, \"city\": \"{}\", \"status\": \"{}\", \"visits\": {}, \
                 \"agent\": \"Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/{}.0\"}}",
                i * 7919 % 100_003,
                cities[i % cities.len()],
                if i % 3 == 0 { "active" } else { "dormant" },
                i * 31 % 977,
                90 + i % 40
            )
            .into_bytes()
        })
        .collect()
}

fn lines(rows: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for row in rows {
        bytes.extend_from_slice(row);
        bytes.push(b'\n');
    }
    bytes
}

/// A deterministic byte stream (xorshift), for random-looking rows.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Opens the store and checks that every row encodes with dictionary `id` and decodes back
/// through the store; returns how many rows took the dictionary form.
fn round_trip(store: &Path, id: u32, codec: Codec, rows: &[Vec<u8>]) -> usize {
    let store = DirStore::open(store).unwrap();
    let dict = store.get(id).unwrap();
    assert!(!dict.content().is_empty(), "an empty dictionary was stored");
    assert!(dict.codecs().contains(codec));
    let prepared = store.prepared(id).unwrap();
    let mut encoder = DatumEncoder::new();
    let mut with_dict = 0;
    for row in rows {
        let stored = encoder.encode(row, codec, Some(&prepared)).unwrap();
        if matches!(
            datum::parse_header(&stored).unwrap().form,
            Form::Extended { .. }
        ) {
            with_dict += 1;
        }
        assert_eq!(&datum::decode(&stored, &store).unwrap(), row);
    }
    with_dict
}

#[test]
fn empty_sources_make_no_dictionary() {
    let work = Work::new();
    work.file("empty.txt", b"");
    work.file("blank.jsonl", b"\n\n\r\n");
    work.file("empty.datums", b"");
    fs::create_dir(work.path("emptydir")).unwrap();
    for source in ["empty.txt", "blank.jsonl", "empty.datums", "emptydir"] {
        let output = work.run(&[source]);
        assert_exit(&output, 1);
        let err = stderr(&output);
        assert!(
            err.contains("pgdict-trainer: error: no rows to train on:")
                && err.contains("no dictionary was created")
                && err.contains("\n  hint: check that the source holds rows and that --format"),
            "{source}: {err}"
        );
        assert!(work.stored().is_empty(), "{source}: {:?}", work.stored());
        assert!(!work.store().exists(), "{source}: the store was created");
    }
    // Rows that exist but all exceed --max-bytes: no sample, the same refusal.
    work.file("rows.txt", &lines(&json_rows(50)));
    let output = work.run(&["--max-bytes", "10", "rows.txt"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("(of 50 rows, none fit the sample bounds)"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn rows_longer_than_the_sample_holds_are_left_out_with_a_note() {
    let work = Work::new();
    // 600 rows, and two too long for either side of the sample (64 KiB for training, a
    // quarter of that for the held-out rows at --holdout 0.2).
    let mut rows = json_rows(600);
    rows.insert(100, b"a long row ".repeat(7000));
    rows.insert(400, b"another long row ".repeat(5000));
    work.file("rows.txt", &lines(&rows));
    let output = work.run(&["--dry-run", "--max-bytes", "64K", "rows.txt"]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(
        out.contains(
            "\nnote: 2 rows left out, each longer than the sample may hold in all \
             (--max-bytes 65,536; 16,384 for the held-out rows)\n"
        ),
        "{out}"
    );
    assert!(out.contains(": 602 rows, "), "{out}");
}

/// Standard output closed early (`pgdict-trainer ... | head -1`) ends the report quietly, and
/// the work goes on: every dictionary is stored. A write that fails otherwise is an error.
#[test]
fn a_closed_pipe_ends_the_report_but_not_the_work() {
    let work = Work::new();
    work.file("rows.txt", &lines(&json_rows(1500)));
    let mut child = work.spawn(&["--codec", "both", "rows.txt"]);
    // The first write (the source and sample lines) comes before either dictionary is built;
    // the reports come after the close.
    let mut report = child.stdout.take().unwrap();
    let n = report.read(&mut [0; 64]).unwrap();
    assert!(n > 0);
    drop(report);
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 0);
    assert_eq!(stderr(&output), "");
    assert_eq!(work.stored().len(), 2, "{:?}", work.stored());

    let output = work
        .command(&["--dry-run", "rows.txt"])
        .stdout(fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("pgdict-trainer: error: cannot write to standard output: "),
        "{}",
        stderr(&output)
    );
}

/// Another adder takes the id a dictionary was measured under while it is built: it is stored
/// under the next, and where that id's header is longer (from 128: 2 bytes), the report says
/// each datum may be larger than measured.
#[test]
fn an_id_taken_while_building_is_noted() {
    let work = Work::new();
    let store = DirStore::create(work.store()).unwrap();
    let other = |id| Dictionary::new(id, CodecSet::ALL, 0, Metadata::new(), b"GET /x 200").unwrap();
    store.insert(&other(126)).unwrap();
    work.file("rows.txt", &lines(&json_rows(1500)));
    let mut child = work.spawn(&["rows.txt"]);
    // The first line comes once the rows are sampled: by then the id to measure under (127)
    // is chosen, and the dictionary is not yet built.
    let mut report = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    report.read_line(&mut first).unwrap();
    assert!(first.starts_with("source: "), "{first}");
    store.insert(&other(127)).unwrap();
    let mut rest = String::new();
    report.read_to_string(&mut rest).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 0);
    assert!(
        rest.contains("\nstored as dictionary 128 in the directory store")
            && rest.contains(
                "\nnote: measured as id 127, so each datum stored with it is up to 1 byte(s) \
                 larger than measured\n"
            ),
        "{rest}"
    );
}

#[test]
fn missing_file_is_named() {
    let work = Work::new();
    let output = work.run(&["nope.txt"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).starts_with("pgdict-trainer: error: cannot read nope.txt: "),
        "{}",
        stderr(&output)
    );
}

/// Progress is drawn on standard error when it is a terminal, a bar (or a spinner) for each
/// step, left on screen with its count when the step ends; `--quiet` draws none.
#[test]
fn progress_is_drawn_on_a_terminal_unless_quiet() {
    let work = Work::new();
    work.file("rows.jsonl", &lines(&json_rows(2000)));
    let shown = |args: &[&str]| {
        let output = child::output_on_terminal(&work.command(args));
        assert_exit(&output, 0);
        stdout(&output)
    };
    let dry_run = shown(&["--dry-run", "rows.jsonl"]);
    assert!(dry_run.contains("dry run: not stored"), "{dry_run}");
    let phases = ["reading", "sampling", "building", "evaluating"];
    let bars = child::bars_drawn(&dry_run, &phases);
    assert_eq!(bars, ["sampling", "building", "evaluating"], "{dry_run}");
    // The id alone.
    assert_eq!(shown(&["--quiet", "rows.jsonl"]), "1\r\n");
}

#[test]
fn identical_rows_train_a_dictionary_that_holds_the_row() {
    let work = Work::new();
    let row = b"{\"event\": \"login\", \"user\": \"alice@example.com\", \"ok\": true}".to_vec();
    let rows = vec![row.clone(); 400];
    work.file("same.txt", &lines(&rows));
    let output = work.run(&["--quiet", "same.txt"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "1\n", "--quiet prints the id alone");
    assert_eq!(stderr(&output), "");
    assert_eq!(round_trip(&work.store(), 1, Codec::Pglz, &rows[..1]), 1);
    // The report says the held-out rows were seen in training, in text and in JSON; distinct
    // rows are not said to be.
    let text = stdout(&work.run(&["--dry-run", "same.txt"]));
    let held_out: u64 = text
        .lines()
        .find_map(|line| {
            line.split(" held out")
                .next()?
                .rsplit(", ")
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no held-out count in:\n{text}"));
    let note =
        format!("note: {held_out} of the {held_out} held-out rows are identical to a training row");
    assert!(text.contains(&note), "{text}");
    let json = stdout(&work.run(&["--json", "--dry-run", "same.txt"]));
    let report: Value = serde_json::from_str(json.trim()).unwrap();
    let repeats = &report["sample"]["holdout_rows_identical_to_training_rows"];
    assert_eq!(repeats.as_u64(), Some(held_out), "{json}");
    work.file("distinct.txt", &lines(&json_rows(400)));
    let text = stdout(&work.run(&["--dry-run", "distinct.txt"]));
    assert!(!text.contains("identical to a training row"), "{text}");
}

#[test]
fn rows_larger_than_the_window() {
    let work = Work::new();
    // 9-15 KB rows: a shared preamble, then varying text.
    let rows: Vec<Vec<u8>> = (0..120)
        .map(|i| {
            let mut row = b"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
                <link rel=\"stylesheet\" href=\"/static/site.css\"></head><body>"
                .to_vec();
            let body = noise(i, 6000 + (i as usize % 5) * 1000);
            for chunk in body.chunks(40) {
                row.extend_from_slice(b"<p class=\"para\">");
                row.extend(chunk.iter().map(|b| b'a' + b % 26));
                row.extend_from_slice(b"</p>\n");
            }
            row
        })
        .collect();
    assert!(rows.iter().all(|r| r.len() > 8000));
    work.file("big.datums", &{
        let mut bytes = Vec::new();
        for row in &rows {
            bytes.extend_from_slice(&(row.len() as u32).to_le_bytes());
            bytes.extend_from_slice(row);
        }
        bytes
    });
    let output = work.run(&["--json", "--codec", "both", "big.datums"]);
    assert_exit(&output, 0);
    let reports: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), 2);
    for (report, codec) in reports.iter().zip([Codec::Pglz, Codec::Lz4]) {
        assert_eq!(report["codec"], codec.name());
        assert_eq!(
            report["eval"]["buckets"][">=4K"]["datums"],
            report["eval"]["datums"]
        );
        let id = report["dict_id"].as_u64().unwrap() as u32;
        round_trip(&work.store(), id, codec, &rows[..5]);
    }
    // The second is measured under the id it is stored under: the one after the first's.
    for (report, id) in reports.iter().zip([1, 2]) {
        assert_eq!(report["dict_id"], id);
        assert_eq!(report["measured_as_id"], id);
    }
}

#[test]
fn binary_rows_from_a_datums_file() {
    let work = Work::new();
    let rows: Vec<Vec<u8>> = (0..300u64)
        .map(|i| {
            let mut row = b"\x00\x01\xff\xfe\x89BINHDR\r\n\x1a\n".to_vec();
            row.extend_from_slice(&(i as u32).to_le_bytes());
            row.extend_from_slice(&[0; 24]);
            row.extend_from_slice(&noise(i, 12));
            row.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef].repeat(8));
            row.extend_from_slice(b"\n\x00trailer: checksum follows\x00");
            row.extend_from_slice(&noise(i + 1000, 4));
            row
        })
        .collect();
    let path = work.path("bin.datums");
    pgdict_trainer::source::datums_file::write(&path, &rows).unwrap();
    let output = work.run(&["--quiet", "bin.datums"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "1\n");
    assert!(round_trip(&work.store(), 1, Codec::Pglz, &rows) > 250);
}

#[test]
fn random_rows_share_nothing() {
    let work = Work::new();
    let rows: Vec<Vec<u8>> = (0..300).map(|i| noise(i, 200)).collect();
    pgdict_trainer::source::datums_file::write(work.path("rand.datums"), &rows).unwrap();
    let output = work.run(&["rand.datums"]);
    assert_exit(&output, 3);
    let err = stderr(&output);
    assert!(err.contains("share no content worth a dictionary"), "{err}");
    assert!(
        err.contains("\n  hint: the rows may share too little (random or already compressed"),
        "{err}"
    );
    assert!(work.stored().is_empty());
}

#[test]
fn one_row_is_too_few_to_train_on() {
    let work = Work::new();
    fs::write(work.path("one.txt"), "GET /index.html 200 1532\n").unwrap();
    let output = work.run(&["one.txt"]);
    assert_exit(&output, 3);
    let err = stderr(&output);
    assert!(err.contains("there is one row to train on"), "{err}");
    assert!(err.contains("hint: give more rows"), "{err}");
    let out = stdout(&output);
    assert!(out.contains(": 1 row, 24 bytes read"), "{out}");
    assert!(
        out.contains("sample: 1 training row (24 bytes), 0 held out"),
        "{out}"
    );
    // Two rows: the draw holds one out, and the other is alone again.
    fs::write(
        work.path("two.txt"),
        "GET /index.html 200 1532\nGET /index.html 200 1533\n",
    )
    .unwrap();
    let output = work.run(&["two.txt"]);
    assert_exit(&output, 3);
    assert!(stdout(&output).contains("sample: 1 training row (24 bytes), 1 held out"));
    assert!(stderr(&output).contains("there is one row to train on"));
    assert!(work.stored().is_empty());
    // One row that the draw holds out (seed 3): said so (it said none fit the sample bounds);
    // given content is measured on it.
    let output = work.run(&["--seed", "3", "one.txt"]);
    assert_exit(&output, 3);
    assert!(
        stderr(&output).contains(
            "the one sampled row was held out to measure the dictionary on, and none is left to \
             train on"
        ),
        "{}",
        stderr(&output)
    );
    work.file("content.bin", b"GET /index.html 200 ");
    let output = work.run(&[
        "--seed",
        "3",
        "--dry-run",
        "--content",
        "content.bin",
        "one.txt",
    ]);
    assert_exit(&output, 0);
    assert!(stdout(&output).contains("sample: 1 row (24 bytes), all held out"));
    // zstd's trainer needs seven (it failed with its own "Src size is incorrect").
    work.file("six.txt", &lines(&json_rows(6)));
    let output = work.run(&["--codec", "zstd", "--holdout", "0", "six.txt"]);
    assert_exit(&output, 3);
    assert!(
        stderr(&output).contains(
            "zstd's trainer needs 7 rows or more (it tries its choices on a quarter of them), \
             and there are 6"
        ),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("hint: give more rows"));
    assert!(work.stored().is_empty());
}

#[test]
fn a_dictionary_that_does_not_help_is_refused_unless_forced() {
    let work = Work::new();
    // Rows pglz already compresses 60x on their own (each repeats itself): a dictionary adds
    // next to nothing.
    let rows: Vec<Vec<u8>> = (0..150)
        .map(|i| {
            let unit = noise(i, 40);
            let mut row: Vec<u8> = unit.iter().map(|b| b'a' + b % 26).collect::<Vec<u8>>();
            row = row.repeat(300);
            row
        })
        .collect();
    work.file("self.txt", &lines(&rows));
    let output = work.run(&["self.txt"]);
    assert_exit(&output, 3);
    let err = stderr(&output);
    assert!(
        err.contains("pgdict-trainer: refused: the dictionary does not help: on ")
            && err.contains("--force stores it anyway"),
        "{err}"
    );
    assert!(stdout(&output).contains("refused: the dictionary does not help"));
    assert!(work.stored().is_empty());

    // Random bytes as the dictionary, on rows PostgreSQL's default leaves raw (300 random
    // letters and a phrase five times: about 20 % to save, under its 25 %): pglz's dictionary
    // form saves on them, with any content or none, and the content adds nothing.
    let rows: Vec<Vec<u8>> = (0..600)
        .map(|i| {
            let letters: Vec<u8> = noise(i, 300).iter().map(|b| b'a' + b % 26).collect();
            [
                letters,
                format!("<row {i:05} says hi> ").repeat(5).into_bytes(),
            ]
            .concat()
        })
        .collect();
    work.file("unshared.txt", &lines(&rows));
    work.file("random.bin", &noise(9999, 4095));
    let output = work.run(&["--json", "--content", "random.bin", "unshared.txt"]);
    assert_exit(&output, 3);
    let err = stderr(&output);
    assert!(
        err.contains("refused: the dictionary's content does not help: on 600 held-out rows")
            && err.contains("with an empty dictionary"),
        "{err}"
    );
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let eval = &report["eval"];
    assert!(
        eval["pglz_dict"]["stored_bytes"].as_u64() < eval["pglz"]["stored_bytes"].as_u64(),
        "{eval}"
    );
    assert_eq!(
        eval["pglz_dict"]["stored_bytes"],
        eval["empty_dict_stored_bytes"]
    );
    assert!(work.stored().is_empty());

    // Nothing held out: nothing to judge by, refused the same way.
    let output = work.run(&["--holdout", "0", "self.txt"]);
    assert_exit(&output, 3);
    assert!(
        stderr(&output).contains("refused: no rows were held out to measure the dictionary on"),
        "{}",
        stderr(&output)
    );
    // No table of zeros for what was not measured.
    let out = stdout(&output);
    assert!(
        out.contains("held-out rows: none, so nothing was measured") && !out.contains("MB/s"),
        "{out}"
    );
    assert!(work.stored().is_empty());

    let output = work.run(&["--force", "--json", "self.txt"]);
    assert_exit(&output, 0);
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["dict_id"], 1);
    assert_eq!(report["helps"], false);
    let store = DirStore::open(work.store()).unwrap();
    let metadata = store.get(1).unwrap().metadata();
    assert_eq!(metadata.parameters["forced"], true);
    assert_eq!(metadata.gains.len(), 1);

    // Forced with nothing held out: stored with no gain (it was recorded as 0 over 0 bytes,
    // which `pgdict dict list` showed as NaNx).
    let output = work.run(&["--force", "--holdout", "0", "self.txt"]);
    assert_exit(&output, 0);
    let metadata = DirStore::open(work.store())
        .unwrap()
        .get(2)
        .unwrap()
        .metadata();
    assert_eq!(metadata.parameters["forced"], true);
    assert!(metadata.gains.is_empty(), "{:?}", metadata.gains);
}

#[test]
fn invalid_json_names_the_line() {
    let work = Work::new();
    work.file("bad.jsonl", b"\"one\"\n{\"two\": 2}\n{three\n\"four\"\n");
    let output = work.run(&["bad.jsonl"]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(
        err.starts_with("pgdict-trainer: error: bad.jsonl:3: not a JSON value: "),
        "{err}"
    );
    assert!(work.stored().is_empty());
}

/// Binary COPY data where lines are expected is refused by its signature (it was read as its
/// bytes cut at line feeds, and trained on); with `--format copy` it trains.
#[test]
fn binary_copy_is_not_read_as_lines() {
    use pgdict_trainer::source::copy;
    let work = Work::new();
    let mut data = Vec::new();
    copy::write_header(&mut data).unwrap();
    for row in json_rows(300) {
        copy::write_tuple(&mut data, &[Some(&row)]).unwrap();
    }
    copy::write_trailer(&mut data).unwrap();
    work.file("rows.bin", &data);
    let output = work.run(&["rows.bin"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains(
            "pgdict-trainer: error: rows.bin starts with the signature of binary COPY data"
        ),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("--format copy"),
        "{}",
        stderr(&output)
    );
    assert!(work.stored().is_empty());
    let output = work.run(&["--quiet", "--format", "copy", "rows.bin"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "1\n");
}

#[test]
fn bad_csv_names_the_line_and_a_good_column_trains() {
    let work = Work::new();
    let mut csv = b"id,payload\n".to_vec();
    for (i, row) in json_rows(300).iter().enumerate() {
        let quoted = String::from_utf8_lossy(row).replace('"', "\"\"");
        csv.extend_from_slice(format!("{i},\"{quoted}\"\n").as_bytes());
    }
    work.file("rows.csv", &csv);
    let output = work.run(&["--quiet", "--csv-column", "payload", "rows.csv"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "1\n");

    work.file("bad.csv", b"id,payload\n1,a\n2,b\n3,c,extra\n");
    let output = work.run(&["--csv-column", "payload", "bad.csv"]);
    assert_exit(&output, 1);
    assert_eq!(
        stderr(&output).lines().next().unwrap(),
        "pgdict-trainer: error: bad.csv:4: bad CSV: 3 fields, where the records before have 2"
    );
    let output = work.run(&["--csv-column", "body", "rows.csv"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("rows.csv: no CSV column \"body\": the header has id, payload"),
        "{}",
        stderr(&output)
    );
}

/// COPY's text format, as `COPY t (id, payload) TO STDOUT` writes it: a tab between fields,
/// a tab, line feed or backslash in a value escaped.
fn copy_text(rows: &[Vec<u8>]) -> Vec<u8> {
    let mut copy = b"id\tpayload\n".to_vec();
    for (i, row) in rows.iter().enumerate() {
        copy.extend_from_slice(format!("{i}\t").as_bytes());
        pgdict_trainer::source::copy::escape_text(row, &mut copy);
        copy.push(b'\n');
    }
    copy
}

#[test]
fn copy_data_trains_by_column_and_bad_copy_names_the_line() {
    let work = Work::new();
    work.file("rows.copy", &copy_text(&json_rows(300)));
    // The first line is the HEADER when a column is named.
    let output = work.run(&["--quiet", "--copy-column", "payload", "rows.copy"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "1\n");
    // Two columns, and none named: which one?
    let output = work.run(&["--dry-run", "rows.copy"]);
    assert_exit(&output, 1);
    assert_eq!(
        stderr(&output).lines().next().unwrap(),
        "pgdict-trainer: error: rows.copy:1: bad COPY data: 2 fields (tab-separated), where one \
         is read (say which)"
    );
    assert!(
        stderr(&output).contains("--copy-column picks one"),
        "{}",
        stderr(&output)
    );
    work.file("bad.copy", b"1\ta\n2\tb\tc\n");
    let output = work.run(&["--dry-run", "--copy-column", "1", "bad.copy"]);
    assert_exit(&output, 1);
    assert_eq!(
        stderr(&output).lines().next().unwrap(),
        "pgdict-trainer: error: bad.copy:2: bad COPY data: 3 fields, where the lines before have 2"
    );
    // --copy-column is for COPY data only, --csv-column for CSV (the words are pgdict's:
    // source::FormatFlags serves both).
    for (flags, message, hint) in [
        (
            &["--copy-column", "1", "--format", "lines"][..],
            "--copy-column reads COPY data, but --format says lines",
            "drop --format (or say --format copy)",
        ),
        (
            &["--csv-column", "1", "--format", "copy"],
            "--csv-column reads CSV, but --format says copy",
            "drop --format (or say --format csv)",
        ),
        (
            &["--csv-column", "1", "--copy-column", "1"],
            "--csv-column reads CSV, but --copy-column reads COPY data",
            "give the flags of the input's format",
        ),
    ] {
        let output = work.run(&[flags, &["rows.copy"]].concat());
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains(message) && stderr(&output).contains(hint),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn unreachable_database_names_host_and_port() {
    let work = Work::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conninfo = format!("host=127.0.0.1 port={port} user=postgres connect_timeout=5");
    let output = work.run(&["--pg-source", &conninfo, "--table", "t", "--column", "c"]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(
        err.starts_with(&format!(
            "pgdict-trainer: error: cannot connect to PostgreSQL at 127.0.0.1:{port}: "
        )) && err.contains("hint: is the server running and listening on that host and port?"),
        "{err}"
    );
    // And as a store.
    work.file("rows.txt", &lines(&json_rows(300)));
    let output = work.run(&["--pg-store", &conninfo, "rows.txt"]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    // Before any work: not a row was read, no report begun.
    assert_eq!(stdout(&output), "");
    // A dry run leaves a PostgreSQL store alone: it stores nothing there.
    let output = work.run(&["--dry-run", "--pg-store", &conninfo, "rows.txt"]);
    assert_exit(&output, 0);
    assert!(stdout(&output).contains("dry run: not stored"));
}

#[test]
fn usage_errors_exit_2() {
    let work = Work::new();
    work.file("rows.txt", b"a\n");
    for args in [
        &[][..],
        &["--holdout", "1.5", "rows.txt"],
        &["--codec", "gzip", "rows.txt"],
        &["--size", "0", "rows.txt"],
        &["--max-rows", "0", "rows.txt"],
        &["--size", "1025K", "--codec", "zstd", "rows.txt"],
        &["--pg-source", "host=x"],
        &["--format", "csv", "rows.txt"],
        &["--store", "a", "--pg-store", "host=x", "rows.txt"],
    ] {
        let output = work.run(args);
        assert_exit(&output, 2);
        assert!(!stderr(&output).is_empty());
    }
    let help = work.run(&["--help"]);
    assert_exit(&help, 0);
    let text = stdout(&help);
    for needle in ["EXIT STATUS", "--holdout", "PGDICT_STORE", "TABLESAMPLE"] {
        assert!(text.contains(needle), "--help lacks {needle}");
    }
}

#[test]
fn json_report_fields_and_dry_run() {
    let work = Work::new();
    let rows = json_rows(2000);
    work.file("rows.jsonl", &{
        let mut bytes = Vec::new();
        for row in &rows {
            bytes.extend_from_slice(
                serde_json::to_string(&String::from_utf8_lossy(row))
                    .unwrap()
                    .as_bytes(),
            );
            bytes.push(b'\n');
        }
        bytes
    });
    let output = work.run(&["--json", "--dry-run", "--seed", "7", "rows.jsonl"]);
    assert_exit(&output, 0);
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["dict_id"], Value::Null);
    assert_eq!(report["codec"], "pglz");
    assert_eq!(report["builder"], "pgdict");
    assert!(report["dict_bytes"].as_u64().unwrap() > 0);
    assert!(report["dict_bytes"].as_u64().unwrap() <= 4095);
    assert!(report["train_seconds"].as_f64().unwrap() >= 0.0);
    let eval = &report["eval"];
    let datums = eval["datums"].as_u64().unwrap();
    assert!((300..500).contains(&datums), "{datums}");
    assert_eq!(report["sample"]["holdout_rows"].as_u64(), Some(datums));
    assert_eq!(
        report["sample"]["train_rows"].as_u64().unwrap() + datums,
        2000
    );
    let raw = eval["raw_bytes"].as_u64().unwrap();
    for method in ["pglz", "pglz_dict", "lz4", "lz4_dict"] {
        let stored = eval[method]["stored_bytes"].as_u64().unwrap();
        assert!(
            stored > 0 && stored <= raw + 4 * datums,
            "{method}: {stored}"
        );
    }
    assert!(eval["pglz_dict"]["stored_bytes"].as_u64() < eval["pglz"]["stored_bytes"].as_u64());
    assert!(!work.store().exists(), "--dry-run wrote a store");
    // A store not made yet is measured as dictionary 1; a --store that names a file is no
    // store, dry run or not.
    assert_eq!(report["measured_as_id"], 1);
    let output = work.run(&["--dry-run", "--store", "rows.jsonl", "rows.jsonl"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("rows.jsonl is not a dictionary store: not a directory"),
        "{}",
        stderr(&output)
    );

    // The same seed gives the same dictionary; the builder and codec can be chosen.
    let again = work.run(&["--json", "--dry-run", "--seed", "7", "rows.jsonl"]);
    let again: Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(
        again["eval"]["pglz_dict"]["stored_bytes"],
        eval["pglz_dict"]["stored_bytes"]
    );
    let zstd = work.run(&[
        "--json",
        "--dry-run",
        "--builder",
        "zstd",
        "--codec",
        "lz4",
        "rows.jsonl",
    ]);
    assert_exit(&zstd, 0);
    let zstd: Value = serde_json::from_str(stdout(&zstd).trim()).unwrap();
    assert_eq!(zstd["builder"], "zstd");
    assert_eq!(zstd["codec"], "lz4");
    assert!(
        zstd["eval"].get("zstd_dict").is_none(),
        "zstd measured for lz4"
    );
}

/// Datum headers hold the dictionary id (LEB128: 2 bytes from 128), so the gain is measured
/// under the id the store gives next, and the gain stored with the dictionary is the one
/// its datums get.
#[test]
fn the_gain_is_measured_under_the_id_the_store_gives_next() {
    let work = Work::new();
    let rows = json_rows(2000);
    work.file("rows.txt", &lines(&rows));
    let train = |work: &Work| -> Value {
        let output = work.run(&["--json", "--seed", "7", "rows.txt"]);
        assert_exit(&output, 0);
        serde_json::from_str(stdout(&output).trim()).unwrap()
    };
    let dict_bytes = |report: &Value| {
        report["eval"]["pglz_dict"]["stored_bytes"]
            .as_u64()
            .unwrap()
    };

    let first = train(&work);
    assert_eq!(first["dict_id"], 1);
    assert_eq!(first["measured_as_id"], 1);

    // A dictionary synced in under id 199: the next one added is 200.
    let store = DirStore::open(work.store()).unwrap();
    let content = store.get(1).unwrap().content().to_vec();
    let synced = Dictionary::new(
        199,
        CodecSet::only(Codec::Pglz),
        1,
        Metadata::new(),
        &content,
    )
    .unwrap();
    store.insert(&synced).unwrap();
    let second = train(&work);
    assert_eq!(second["dict_id"], 200);
    assert_eq!(second["measured_as_id"], 200);
    let with_dict = round_trip(&work.store(), 200, Codec::Pglz, &rows);
    assert!(with_dict > 0);
    // The same rows and seed, so the same dictionary: each dictionary datum is one byte longer.
    let datums = first["eval"]["datums"].as_u64().unwrap();
    let longer = dict_bytes(&second) - dict_bytes(&first);
    assert!(
        (1..=datums).contains(&longer),
        "{longer} more bytes over {datums} datums"
    );
    let gain = &DirStore::open(work.store())
        .unwrap()
        .get(200)
        .unwrap()
        .metadata()
        .gains[0];
    assert_eq!(gain.dict_bytes, dict_bytes(&second));
}

#[test]
fn given_content_is_measured_on_every_row_and_stored_under_a_new_id() {
    let work = Work::new();
    let rows = json_rows(600);
    work.file("rows.txt", &lines(&rows));
    let first = work.path("first");
    let output = work.run(&["-q", "--store", first.to_str().unwrap(), "rows.txt"]);
    assert_exit(&output, 0);
    let built = DirStore::open(&first).unwrap().get(1).unwrap();
    // What `pgdict dict show 1 --content d1.bin` writes.
    work.file("d1.bin", built.content());

    // Into the same store: a second dictionary with the same bytes, under the next id.
    let output = work.run(&[
        "--json",
        "--store",
        first.to_str().unwrap(),
        "--content",
        "d1.bin",
        "rows.txt",
    ]);
    assert_exit(&output, 0);
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["dict_id"], 2);
    assert_eq!(report["builder"], Value::Null);
    assert_eq!(report["content_file"], "d1.bin");
    assert_eq!(report["dict_bytes"], built.content().len());
    assert_eq!(report["sample"]["train_rows"], 0);
    assert_eq!(
        report["sample"]["holdout_rows"], 600,
        "every row measures it"
    );
    assert_eq!(report["eval"]["datums"], 600);
    let store = DirStore::open(&first).unwrap();
    let given = store.get(2).unwrap();
    assert_eq!(given.content(), built.content());
    let metadata = given.metadata();
    assert!(
        metadata
            .trainer
            .as_deref()
            .unwrap()
            .ends_with("content given, not built"),
        "{:?}",
        metadata.trainer
    );
    assert_eq!(metadata.parameters["content_file"], "d1.bin");
    assert!(!metadata.parameters.contains_key("holdout"));
    assert_eq!(metadata.sample_rows, None);
    assert!(round_trip(&first, 2, Codec::Pglz, &rows) > 500);

    // Into the default store, for lz4, in text: the report says where the content came from.
    let output = work.run(&["--codec", "lz4", "--content", "d1.bin", "rows.txt"]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(
        out.contains("sample: 600 rows (")
            && out.contains("all held out: the dictionary is given")
            && out.contains(&format!(
                "lz4 dictionary: {} bytes given in d1.bin, not built",
                built.content().len()
            ))
            && out.contains("stored as dictionary 1 in the directory store"),
        "{out}"
    );
    assert!(round_trip(&work.store(), 1, Codec::Lz4, &rows) > 500);

    // More than pglz reaches is stored whole, with a note.
    let mut long = noise(5, 1000);
    long.extend_from_slice(built.content());
    work.file("long.bin", &long);
    let output = work.run(&["--dry-run", "--content", "long.bin", "rows.txt"]);
    assert_exit(&output, 0);
    let expected = format!(
        "pgdict-trainer: note: pglz reaches only the last 4,095 bytes of the {}-byte content: \
         the first {} are stored but never used",
        thousands(long.len() as u64),
        long.len() - 4095
    );
    assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
    // All of it within reach: no note.
    work.file("reach.bin", &long[long.len() - 4095..]);
    let output = work.run(&["--dry-run", "--content", "reach.bin", "rows.txt"]);
    assert_exit(&output, 0);
    assert!(!stderr(&output).contains("note:"), "{}", stderr(&output));

    // `--content -` reads standard input, with the rows in a file; not both on it.
    let output = work.run_with_stdin(
        &["--dry-run", "--json", "--content", "-", "rows.txt"],
        built.content(),
    );
    assert_exit(&output, 0);
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["content_file"], "standard input");
    assert_eq!(report["dict_bytes"], built.content().len());
    let output = work.run(&["--content", "-", "-"]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("standard input cannot hold both the rows"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn content_that_cannot_be_a_dictionary_is_refused_before_the_rows_are_read() {
    let work = Work::new();
    work.file("empty.bin", b"");
    work.file("huge.bin", &vec![b'x'; (1 << 20) + 1]);
    work.file("limit.bin", &noise(9, 1 << 20));
    // zstd's dictionary magic number, then what is no zstd dictionary.
    work.file(
        "magic.bin",
        &[&[0x37, 0xa4, 0x30, 0xec][..], &noise(3, 100)].concat(),
    );
    // A whole dictionary file, as `--store` holds it: its header, metadata and checksums would
    // be stored as the content of a new dictionary.
    let stored = Dictionary::new(
        7,
        CodecSet::ALL,
        0,
        Metadata::new(),
        b"GET /index.html 200 ",
    )
    .unwrap();
    work.file("00000007.pgdict", &stored.to_bytes());
    // An unreadable source would fail later: the content is refused first.
    for (file, message) in [
        (
            "empty.bin",
            "the dictionary content empty.bin is empty: a dictionary needs content",
        ),
        (
            "huge.bin",
            "the dictionary content huge.bin holds more than 1,048,576 bytes, a dictionary's limit",
        ),
        (
            "missing.bin",
            "cannot read the dictionary content missing.bin: No such file",
        ),
        (
            "00000007.pgdict",
            "the dictionary content 00000007.pgdict is a pgdict dictionary file (header, \
             metadata and checksums), not a dictionary's content\n  hint: give its content: \
             `pgdict dict show ID --content FILE` writes a stored dictionary's content to FILE",
        ),
    ] {
        let output = work.run(&["--content", file, "no-such-rows.txt"]);
        assert_exit(&output, 1);
        assert!(
            stderr(&output).contains(&format!("pgdict-trainer: error: {message}")),
            "{file}: {}",
            stderr(&output)
        );
        assert!(!work.store().exists(), "{file}: the store was created");
    }
    let output = work.run_with_stdin(&["--content", "-", "no-such-rows.txt"], b"");
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("error: the dictionary content on standard input is empty"),
        "{}",
        stderr(&output)
    );
    let output = work.run(&["--content", "00000007.pgdict", "no-such-rows.txt"]);
    assert!(
        stderr(&output).contains("`pgdict dict sync --from DIR`"),
        "{}",
        stderr(&output)
    );
    // For zstd, which reads it as a zstd dictionary; pglz and lz4 take any bytes.
    let output = work.run(&[
        "--codec",
        "zstd",
        "--content",
        "magic.bin",
        "no-such-rows.txt",
    ]);
    assert_exit(&output, 1);
    let message =
        "the dictionary content magic.bin cannot be read as a dictionary: zstd: cannot load";
    assert!(stderr(&output).contains(message), "{}", stderr(&output));
    assert!(!work.store().exists());
    // A dictionary's limit itself is content, and so is zstd's magic for pglz and lz4: they get
    // as far as the rows.
    for args in [
        &["--content", "limit.bin"][..],
        &["--content", "magic.bin"],
        &["--codec", "lz4", "--content", "magic.bin"],
    ] {
        let output = work.run(&[args, &["no-such-rows.txt"]].concat());
        assert_exit(&output, 1);
        assert!(
            stderr(&output).contains("no-such-rows.txt"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    // Nothing to build: the builder's settings do not go with it.
    work.file("rows.txt", &lines(&json_rows(50)));
    for flag in [
        ["--builder", "zstd"],
        ["--size", "1K"],
        ["--holdout", "0.5"],
    ] {
        let output = work.run(&[flag[0], flag[1], "--content", "limit.bin", "rows.txt"]);
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains("cannot be used with"),
            "{flag:?}: {}",
            stderr(&output)
        );
    }
    // Good content but no rows: nothing to measure it on, said as such.
    work.file("blank.txt", b"\n\n");
    let output = work.run(&["--content", "limit.bin", "blank.txt"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains(
            "pgdict-trainer: error: no rows to measure the given dictionary on: file blank.txt \
             (lines) gave no datums; nothing was stored\n  hint: check that the source holds rows"
        ),
        "{}",
        stderr(&output)
    );
    assert!(!work.store().exists());
}

#[test]
fn zstd_dictionary_is_judged_against_plain_pglz_and_stored_for_zstd() {
    let work = Work::new();
    work.file("rows.txt", &lines(&json_rows(2000)));
    let output = work.run(&["--json", "--codec", "zstd", "rows.txt"]);
    assert_exit(&output, 0);
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["codec"], "zstd");
    assert_eq!(report["stored"], true);
    // Not asked for, but a zstd dictionary is zstd's trainer's, and the report says so.
    assert_eq!(report["builder"], "zstd");
    let eval = &report["eval"];
    let pglz = eval["pglz"]["stored_bytes"].as_u64().unwrap();
    let zstd = eval["zstd_dict"]["stored_bytes"].as_u64().unwrap();
    assert!(zstd < pglz, "zstd_dict {zstd} against pglz {pglz}");
    let gain = report["gain_vs_pglz"].as_f64().unwrap();
    assert!((gain - pglz as f64 / zstd as f64).abs() < 0.001, "{gain}");
    // The store holds it for zstd only.
    let id = report["dict_id"].as_u64().unwrap() as u32;
    let store = pgdict::dict::DirStore::open(work.store()).unwrap();
    let codecs = store.get(id).unwrap().codecs();
    assert!(codecs.contains(Codec::Zstd) && !codecs.contains(Codec::Pglz));

    let text = work.run(&["--dry-run", "--codec", "zstd", "rows.txt"]);
    assert_exit(&text, 0);
    let text = stdout(&text);
    assert!(text.contains("zstd+d"), "no zstd column:\n{text}");
    assert!(text.contains("zstd_dict "), "no zstd speed:\n{text}");
}

/// zstd's trainer makes nothing under 256 bytes; a smaller `--size` where it builds is a usage
/// error said in pgdict's words, before any row is read, not zstd's "Destination buffer is too
/// small" after sampling. The pglz baseline trains at 64 KiB whatever the size, so it has no
/// such floor.
#[test]
fn a_size_under_what_zstds_trainer_makes_is_a_usage_error() {
    let work = Work::new();
    work.file("rows.txt", &lines(&json_rows(2000)));
    for args in [
        &["--codec", "zstd", "--size", "255"][..],
        &["--codec", "lz4", "--builder", "zstd", "--size", "100"],
        &["--codec", "both", "--builder", "zstd", "--size", "100"],
    ] {
        let output = work.run(&[args, &["--dry-run", "rows.txt"]].concat());
        assert_exit(&output, 2);
        let message = stderr(&output);
        assert!(message.contains("256 bytes or more"), "{args:?}: {message}");
        assert!(
            !message.contains("sample"),
            "{args:?} read the rows: {message}"
        );
    }
    for args in [
        &["--codec", "zstd", "--size", "256"][..],
        &["--codec", "lz4", "--builder", "zstd", "--size", "256"],
        &["--codec", "pglz", "--builder", "zstd", "--size", "100"],
        &["--codec", "lz4", "--size", "100"],
    ] {
        let output = work.run(&[args, &["--dry-run", "--json", "rows.txt"]].concat());
        let report: Value = serde_json::from_str(stdout(&output).trim())
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stderr(&output)));
        let size = report["dict_bytes"].as_u64().unwrap();
        assert!(size > 0 && size <= 256, "{args:?}: {size}");
    }
}

/// The trainer chooses the store as `pgdict` does: `PGDICT_PG_STORE` when no store flag is
/// given (it used to be ignored: the dictionary went into ./dicts, and `pgdict`, reading the
/// database's store, decoded its datums with another dictionary under the same id), a
/// `--store` flag over it, and never both flags.
#[test]
fn pgdict_pg_store_is_the_store_unless_a_flag_says_otherwise() {
    let work = Work::new();
    work.file("rows.txt", &lines(&json_rows(1500)));
    // No server listens on a socket in a directory that does not exist.
    let nowhere = format!("host={}", work.path("no-server").display());
    let output = work
        .command(&["-q", "rows.txt"])
        .env("PGDICT_PG_STORE", &nowhere)
        .output()
        .unwrap();
    assert_exit(&output, 1);
    assert!(stderr(&output).contains("no-server"), "{}", stderr(&output));
    assert!(work.stored().is_empty());

    let output = work
        .command(&["-q", "--store", "flagged", "rows.txt"])
        .env("PGDICT_PG_STORE", &nowhere)
        .output()
        .unwrap();
    assert_exit(&output, 0);
    assert_eq!(stdout(&output).trim(), "1");
    assert!(work.path("flagged/00000001.pgdict").exists());

    let output = work.run(&["--store", "a", "--pg-store", &nowhere, "rows.txt"]);
    assert_exit(&output, 2);
    assert!(stderr(&output).contains("cannot be used with"));

    // Exported empty, it names no store: the directory store is used.
    let output = work
        .command(&["-q", "rows.txt"])
        .env("PGDICT_PG_STORE", "")
        .output()
        .unwrap();
    assert_exit(&output, 0);
    assert!(!work.stored().is_empty());
}

#[test]
fn text_report_and_store_from_stdin_and_flag() {
    let work = Work::new();
    let rows = json_rows(1500);
    let output = work.run_with_stdin(&["--store", "elsewhere", "-"], &lines(&rows));
    assert_exit(&output, 0);
    let text = stdout(&output);
    for needle in [
        "source: standard input (lines): 1,500 rows",
        "pglz dictionary: ",
        "  all ",
        "vs pglz",
        "pglz_dict ",
        "stored as dictionary 1 in the directory store elsewhere",
    ] {
        assert!(text.contains(needle), "report lacks {needle:?}:\n{text}");
    }
    // A line for each size bucket that holds rows (these rows are all 64-256 bytes), and none
    // for the empty ones.
    assert!(rows.iter().all(|row| (64..256).contains(&row.len())));
    assert!(text.contains("\n  64-256 "), "{text}");
    for empty in ["<64", "256-1K", "1K-4K", ">=4K"] {
        assert!(!text.contains(&format!("\n  {empty} ")), "{empty}: {text}");
    }
    // Every row fit the sample: no note of rows left out; the id measured under is the one
    // stored under: no note of a longer id.
    assert!(!text.contains("left out"), "{text}");
    assert!(!text.contains("note: measured as id"), "{text}");
    // The flag wins over PGDICT_STORE; the progress bars stay off (stderr is not a terminal).
    assert!(!work.store().exists());
    assert_eq!(stderr(&output), "");
    let store = work.path("elsewhere");
    let dict = DirStore::open(&store).unwrap().get(1).unwrap();
    let metadata = dict.metadata();
    assert_eq!(metadata.source.as_deref(), Some("standard input (lines)"));
    assert!(metadata.trainer.unwrap().contains("builder=pgdict"));
    assert_eq!(metadata.gains.len(), 1);
    assert!(
        metadata.gains[0].gain().unwrap() > 1.5,
        "{:?}",
        metadata.gains[0]
    );
    assert_eq!(metadata.parameters["seed"], 0);
    assert!(
        metadata.other["eval"]["buckets"]["64-256"]["datums"]
            .as_u64()
            .unwrap()
            > 0
    );
    round_trip(&store, 1, Codec::Pglz, &rows[..50]);
    assert_eq!(metadata.parameters["forced"], false);
    // --force where the dictionary helps: stored, and not marked forced (it was not needed).
    let output = work.run_with_stdin(&["--force", "--store", "elsewhere", "-"], &lines(&rows));
    assert_exit(&output, 0);
    let dict = DirStore::open(&store).unwrap().get(2).unwrap();
    assert_eq!(dict.metadata().parameters["forced"], false);
}

#[test]
fn a_file_over_the_value_limit_is_refused_unread() {
    let work = Work::new();
    fs::create_dir(work.path("values")).unwrap();
    work.file("values/a", &json_rows(1)[0]);
    // Sparse: refused by its size, before any of it is read.
    let huge = fs::File::create(work.path("values/b")).unwrap();
    huge.set_len(1 << 31).unwrap();
    drop(huge);
    let output = work.run(&["values"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output)
            .contains("values/b: the file (2147483648 bytes) is over PostgreSQL's limit"),
        "{}",
        stderr(&output)
    );
    assert!(work.stored().is_empty());
}

#[test]
fn a_read_only_store_is_left_as_it_was() {
    let Some(small) = SmallFs::mount(256) else {
        return;
    };
    let work = Work::new();
    work.file("rows.txt", &lines(&json_rows(300)));
    let store = small.join("dicts");
    let store_arg = store.display().to_string();
    assert_exit(&work.run(&["rows.txt", "--store", &store_arg, "-q"]), 0);
    small.remount_read_only();
    let before = small.list("dicts");
    let output = work.run(&["rows.txt", "--store", &store_arg, "--codec", "lz4"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("Read-only file system"),
        "{}",
        stderr(&output)
    );
    // Said before a row was read (the report's first line says what was), and so before
    // training: it used to train, then fail.
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    assert_eq!(small.list("dicts"), before);
    assert_eq!(round_trip(&store, 1, Codec::Pglz, &json_rows(20)), 20);
}

#[test]
fn a_full_disk_leaves_no_partial_dictionary() {
    let Some(small) = SmallFs::mount(40) else {
        return;
    };
    let work = Work::new();
    work.file("rows.txt", &lines(&json_rows(3000)));
    let store = small.join("dicts");
    let store_arg = store.display().to_string();
    // A 4 KB pglz dictionary fits; a 64 KB lz4 one cannot.
    assert_exit(&work.run(&["rows.txt", "--store", &store_arg, "-q"]), 0);
    let output = work.run(&["rows.txt", "--store", &store_arg, "--codec", "lz4", "-q"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("No space left on device"),
        "{}",
        stderr(&output)
    );
    assert_eq!(small.list("dicts"), ["00000001.pgdict"]);
    assert_eq!(round_trip(&store, 1, Codec::Pglz, &json_rows(20)), 20);
    // The dictionary it could not store is kept, and stores elsewhere without building.
    let kept: Vec<PathBuf> = fs::read_dir(work.dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().contains("pgdict-unstored-lz4-"))
        .collect();
    assert_eq!(kept.len(), 1, "{}", stderr(&output));
    let kept_name = kept[0].file_name().unwrap().to_str().unwrap();
    assert!(
        stderr(&output).contains(&format!("is kept in ./{kept_name}")),
        "{}",
        stderr(&output)
    );
    let content = fs::read(&kept[0]).unwrap();
    assert!(content.len() > 40 * 1024, "{} bytes kept", content.len());
    let elsewhere = work.path("elsewhere").display().to_string();
    let output = work.run(&[
        "rows.txt",
        "--content",
        kept_name,
        "--codec",
        "lz4",
        "--store",
        &elsewhere,
        "-q",
    ]);
    assert_exit(&output, 0);
    let store = DirStore::open(&elsewhere).unwrap();
    assert_eq!(store.get(1).unwrap().content(), content.as_slice());
}
