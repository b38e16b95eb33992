//! Builds the seed corpora of the fuzz targets from real rows: the shared corpus's row sets
//! (`../shared/corpus/rows`, or `$PGDICT_CORPUS/rows`) and the project's `corpus/` samples.
//!
//! Each target gets valid inputs in its own layout (see `src/lib.rs`): payloads that pgdict's
//! codecs made from the rows, with and without dictionaries, and whole datums; the fuzzer
//! mutates from there, so it starts deep in the decoders instead of at "not a header".
//!
//! ```text
//! cargo run --release --no-default-features --example seeds -- [OUT_DIR]
//! ```
//!
//! `OUT_DIR` defaults to `fuzz/corpus`; seeds are written to `OUT_DIR/<target>/`. Existing
//! files are kept (the fuzzer's own finds included); seeds are named `seed-<n>`, so running
//! this again overwrites only seeds.

use std::fs;
use std::path::{Path, PathBuf};

use pgdict::datum::{Codec, DatumEncoder};
use pgdict::dict::{CodecSet, Dictionary, Gain, Metadata};
use pgdict::lz4::{Lz4Compressor, Lz4Dictionary};
use pgdict::pglz::{self, Compressor, PglzDictionary, Strategy};
use pgdict::rows;
use pgdict::zstd::ZstdCompressor;
use pgdict_fuzz::{
    fixed_dictionaries, fixed_dictionary_bytes, Choice, DatumInput, Plain, RoundTrip,
    StreamedInput, WithDict, MAX_LZ4_DICT_LEN, MAX_PGLZ_DICT_LEN,
};
use pgdict_trainer::source::{copy, CsvSyntax};

/// Rows taken from each row file, spread over the file.
const ROWS_PER_FILE: usize = 24;

/// The targets, in the order their seeds are written.
const TARGETS: [&str; 12] = [
    "pglz_decode",
    "pglz_decode_dict",
    "pglz_prefix",
    "lz4_dict_decode",
    "zstd_dict_decode",
    "datum_header",
    "round_trip",
    "no_output_leak",
    "dict_file_parse",
    "conninfo_parse",
    "row_sources",
    "datum_input",
];

fn main() {
    let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| fuzz_dir.join("corpus"));
    let shared = std::env::var_os("PGDICT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| fuzz_dir.join("../../shared/corpus"));

    let mut files: Vec<PathBuf> = Vec::new();
    match fs::read_dir(shared.join("rows")) {
        Ok(entries) => files.extend(entries.map(|e| e.expect("a directory entry").path())),
        Err(e) => eprintln!(
            "seeds: no shared corpus at {} ({e}); using the project's samples only \
             (set PGDICT_CORPUS)",
            shared.display()
        ),
    }
    files.extend(
        ["events.jsonl", "orders_csv.txt", "app_logs.txt"]
            .map(|f| fuzz_dir.join("../corpus").join(f)),
    );
    files.sort();

    let mut seeds = Seeds::default();
    for file in &files {
        let rows = rows::read_row_file(file).unwrap_or_else(|e| panic!("seeds: {e}"));
        let step = (rows.len() / ROWS_PER_FILE).max(1);
        for (n, i) in (0..rows.len())
            .step_by(step)
            .take(ROWS_PER_FILE)
            .enumerate()
        {
            // A crude dictionary: the rows before this one, most recent last (where pglz
            // reaches), as a trainer's "common content" would be.
            let history: Vec<u8> = rows[i.saturating_sub(40)..i].concat();
            seeds.row(&rows[i], &history, n);
        }
        let sampled: Vec<&[u8]> = rows.iter().step_by(step).map(Vec::as_slice).collect();
        seeds.row_files(&sampled[..sampled.len().min(8)]);
        seeds.datum_inputs(&sampled[..sampled.len().min(4)]);
    }
    seeds.synthetic();

    for (target, inputs) in TARGETS.iter().zip(&seeds.by_target) {
        let dir = out_dir.join(target);
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("seeds: {}: {e}", dir.display()));
        for (n, input) in inputs.iter().enumerate() {
            let path = dir.join(format!("seed-{n:04}"));
            fs::write(&path, input).unwrap_or_else(|e| panic!("seeds: {}: {e}", path.display()));
        }
        println!("{target}: {} seeds", inputs.len());
    }
}

/// The seeds of every target, in [`TARGETS`] order, and the codecs' state.
struct Seeds {
    by_target: Vec<Vec<Vec<u8>>>,
    pglz: Compressor,
    lz4: Lz4Compressor,
    zstd: ZstdCompressor,
    datum: DatumEncoder,
}

impl Default for Seeds {
    fn default() -> Seeds {
        Seeds {
            by_target: vec![Vec::new(); TARGETS.len()],
            pglz: Compressor::new(),
            lz4: Lz4Compressor::new(),
            zstd: ZstdCompressor::new().expect("a zstd context"),
            datum: DatumEncoder::new(),
        }
    }
}

impl Seeds {
    fn add(&mut self, target: &str, input: Vec<u8>) {
        let index = TARGETS.iter().position(|t| *t == target).expect("a target");
        self.by_target[index].push(input);
    }

    /// A datum_input seed: `body` handed out as the next of a few read plans (whole reads of
    /// 64 KiB; 1, 127 and 3 bytes with an interrupted read; 4 KiB, 5 bytes, 64 KiB and
    /// interrupted), its bytes `repeat` (offset, length, count) repeated.
    fn add_datum_input(&mut self, body: &[u8], repeat: (usize, usize, usize)) {
        const PLANS: [[u8; 4]; 3] = [[0x90; 4], [1, 0x7f, 0, 3], [0x8c, 5, 0x90, 0]];
        let index = TARGETS.iter().position(|t| *t == "datum_input");
        let n = self.by_target[index.expect("a target")].len();
        let (repeat_at, repeat_len, repeat_count) = repeat;
        let input = StreamedInput {
            reads: PLANS[n % PLANS.len()],
            repeat_at,
            repeat_len,
            repeat_count,
            body,
        };
        self.add("datum_input", input.to_bytes());
    }

    /// row_sources seeds: `rows` in each file format, after the mode byte that picks it (see
    /// `fuzz_targets/row_sources.rs`).
    fn row_files(&mut self, rows: &[&[u8]]) {
        let mut lines = vec![0];
        let mut datums = vec![2];
        let mut csv = b"\x03a,b\n".to_vec();
        // Delimiter `a`, no header: the rows quoted (most hold an `a`).
        let mut csv_a = vec![9];
        // QUOTE ', ESCAPE \ with a header; QUOTE a, ESCAPE x, NULL 'N' without one (every third
        // row's id NULL).
        let single_quotes = CsvSyntax {
            quote: b'\'',
            escape: b'\\',
            ..CsvSyntax::default()
        };
        let mut csv_single_quotes = b"\x0aa,b\n".to_vec();
        let quote_a = CsvSyntax {
            quote: b'a',
            escape: b'x',
            null: b"N".to_vec(),
            ..CsvSyntax::default()
        };
        let mut csv_quote_a = vec![11];
        let mut copy_one = vec![5];
        let mut copy_two = vec![6];
        let mut copy_header = b"\x07a\tb\n".to_vec();
        // DELIMITER '|', NULL '': every third row's id NULL.
        let mut copy_pipe = vec![8];
        let mut binary = vec![6];
        copy::write_header(&mut binary).expect("a write to memory");
        for (n, row) in rows.iter().enumerate() {
            if !row.contains(&b'\n') {
                lines.extend_from_slice(row);
                lines.push(b'\n');
            }
            datums.extend_from_slice(&(row.len() as u32).to_le_bytes());
            datums.extend_from_slice(row);
            let quoted = String::from_utf8_lossy(row).replace('"', "\"\"");
            csv.extend_from_slice(format!("{n},\"{quoted}\"\n").as_bytes());
            csv_a.extend_from_slice(format!("{n}a\"{quoted}\"\n").as_bytes());
            csv_single_quotes.extend_from_slice(format!("{n},").as_bytes());
            single_quotes.write_field(row, false, &mut csv_single_quotes);
            csv_single_quotes.push(b'\n');
            if n % 3 != 0 {
                csv_quote_a.extend_from_slice(n.to_string().as_bytes());
            } else {
                csv_quote_a.push(b'N');
            }
            csv_quote_a.push(b',');
            quote_a.write_field(row, false, &mut csv_quote_a);
            csv_quote_a.push(b'\n');
            copy::escape_text(row, &mut copy_one);
            copy_one.push(b'\n');
            for text in [&mut copy_two, &mut copy_header] {
                text.extend_from_slice(format!("{n}\t").as_bytes());
                copy::escape_text(row, text);
                text.push(b'\n');
            }
            if n % 3 != 0 {
                copy_pipe.extend_from_slice(n.to_string().as_bytes());
            }
            copy_pipe.push(b'|');
            copy::escape_text_with(row, b'|', &mut copy_pipe);
            copy_pipe.push(b'\n');
            let id = n.to_string();
            copy::write_tuple(&mut binary, &[Some(id.as_bytes()), Some(row)])
                .expect("a tuple of small values");
        }
        copy::write_trailer(&mut binary).expect("a write to memory");
        let inputs = [
            lines,
            datums,
            csv,
            csv_a,
            csv_single_quotes,
            csv_quote_a,
            copy_one,
            copy_two,
            copy_header,
            copy_pipe,
            binary,
        ];
        for input in inputs {
            self.add("row_sources", input);
        }
    }

    /// datum_input seeds: datums made from `rows` (each cut to 200 bytes, every codec, with
    /// and without a dictionary) in each format the `pgdict` command reads (see
    /// `fuzz_targets/datum_input.rs`), as its writers and psql write them.
    fn datum_inputs(&mut self, rows: &[&[u8]]) {
        let fixed = fixed_dictionaries();
        let datums: Vec<Vec<u8>> = (rows.iter().enumerate())
            .map(|(n, row)| {
                let row = &row[..row.len().min(200)];
                let dict = (n % 2 == 1).then(|| &*fixed[n % fixed.len()]);
                (self.datum.encode(row, Codec::ALL[n % 3], dict)).expect("a datum")
            })
            .collect();
        let hex = |datum: &[u8]| {
            let digits: String = datum.iter().map(|b| format!("{b:02x}")).collect();
            format!("\\x{digits}")
        };
        let mut datums_file = Vec::new();
        let mut varlenas = Vec::new();
        let mut hex_lines = String::new();
        let mut aligned = String::from("   datum\n----------\n");
        let mut copy_text = String::new();
        let mut array = String::from("{");
        let mut escape = Vec::new();
        let mut binary = Vec::new();
        copy::write_header(&mut binary).expect("a write to memory");
        for (n, datum) in datums.iter().enumerate() {
            datums_file.extend_from_slice(&(datum.len() as u32).to_le_bytes());
            datums_file.extend_from_slice(datum);
            varlenas.extend_from_slice(datum);
            hex_lines += &format!("{}\n", hex(datum));
            aligned += &format!(" {}\n", hex(datum));
            // COPY's text format of two columns: the backslash doubled, a NULL between.
            copy_text += &format!("{n}\t\\{}\n{n}\t\\N\n", hex(datum));
            array += &format!("\"\\{}\",NULL,", hex(datum));
            // byteaout under bytea_output = escape.
            for &byte in datum {
                match byte {
                    b'\\' => escape.extend_from_slice(b"\\\\"),
                    0x20..=0x7e => escape.push(byte),
                    _ => escape.extend_from_slice(format!("\\{byte:03o}").as_bytes()),
                }
            }
            escape.push(b'\n');
            copy::write_tuple(&mut binary, &[Some(datum)]).expect("a small value");
            copy::write_tuple(&mut binary, &[None]).expect("a NULL");
        }
        aligned += &format!("({} rows)\n", datums.len());
        array.pop();
        array += "}\n";
        copy::write_trailer(&mut binary).expect("a write to memory");
        // Each as it is; and of the first rows, the datums file and the hex lines repeated
        // to past the 1 MiB the format is told from (a few: each such seed takes seconds).
        let index = TARGETS.iter().position(|t| *t == "datum_input");
        let first = self.by_target[index.expect("a target")].is_empty();
        let large = |body: &[u8]| (0, body.len(), (1 << 20) / body.len().max(1) + 2);
        let inputs = [
            (datums_file, first),
            (varlenas, false),
            (hex_lines.into_bytes(), first),
            (aligned.into_bytes(), false),
            (copy_text.into_bytes(), false),
            (array.into_bytes(), false),
            (escape, false),
        ];
        for (input, repeated) in inputs {
            self.add_datum_input(&input, (0, 0, 1));
            if repeated {
                self.add_datum_input(&input, large(&input));
            }
        }
        self.add_datum_input(&binary, (0, 0, 1));
    }

    /// Seeds from one row; `history` is the rows before it, `n` varies the choices.
    fn row(&mut self, row: &[u8], history: &[u8], n: usize) {
        let raw_len = row.len();
        let prefix_len = (n * 37) % (raw_len + 1);
        let tail = |max: usize| &history[history.len().saturating_sub(max)..];
        let pglz_dict = tail(if n.is_multiple_of(3) {
            MAX_PGLZ_DICT_LEN
        } else {
            4095
        });

        // pglz, no dictionary: PostgreSQL's strategies.
        if let Some(payload) = self
            .pglz
            .compress(row, &Strategy::ALWAYS)
            .map(<[u8]>::to_vec)
        {
            self.add(
                "pglz_decode",
                Plain {
                    raw_len,
                    payload: &payload,
                }
                .to_bytes(),
            );
            let with = WithDict {
                dict: &[],
                raw_len,
                prefix_len,
                payload: &payload,
            };
            self.add("pglz_prefix", with.to_bytes());
            self.add(
                "no_output_leak",
                Choice {
                    choice: 0,
                    input: with,
                }
                .to_bytes(),
            );
        }

        // pglz with a dictionary.
        let prepared = PglzDictionary::new(pglz_dict);
        if let Some(payload) = self
            .pglz
            .compress_with_dict(row, &prepared, &Strategy::DICTIONARY)
            .map(<[u8]>::to_vec)
        {
            let with = WithDict {
                dict: pglz_dict,
                raw_len,
                prefix_len,
                payload: &payload,
            };
            self.add("pglz_decode_dict", with.to_bytes());
            self.add("pglz_prefix", with.to_bytes());
        }

        // lz4 with a dictionary (sometimes over its 64 KiB reach).
        let lz4_dict = tail(if n.is_multiple_of(4) {
            MAX_LZ4_DICT_LEN
        } else {
            8000
        });
        let payload = self
            .lz4
            .compress_with_dict(row, &Lz4Dictionary::new(lz4_dict))
            .expect("lz4 compresses");
        let with = WithDict {
            dict: lz4_dict,
            raw_len,
            prefix_len,
            payload: &payload,
        };
        self.add("lz4_dict_decode", with.to_bytes());
        self.add(
            "no_output_leak",
            Choice {
                choice: 1,
                input: with,
            }
            .to_bytes(),
        );

        // zstd with one of the fixed dictionaries, or with the row's history.
        let fixed = fixed_dictionaries();
        let k = n % (fixed.len() + 1);
        let own;
        let (zstd_dict, dict_bytes): (_, &[u8]) = match fixed.get(k) {
            Some(d) => (d.zstd().expect("prepared for every codec"), &[]),
            None => {
                let bytes = tail(MAX_PGLZ_DICT_LEN);
                own = pgdict::zstd::ZstdDictionary::new(bytes).expect("a raw-content dictionary");
                (&own, bytes)
            }
        };
        let payload = self
            .zstd
            .compress_with_dict(row, zstd_dict)
            .expect("zstd compresses");
        self.add(
            "zstd_dict_decode",
            Choice {
                choice: k as u8,
                input: WithDict {
                    dict: dict_bytes,
                    raw_len,
                    prefix_len,
                    payload: &payload,
                },
            }
            .to_bytes(),
        );
        if k < fixed.len() && raw_len < 96 * 1024 {
            self.add(
                "no_output_leak",
                Choice {
                    choice: (2 + 3 * k) as u8,
                    input: WithDict {
                        dict: &[],
                        raw_len,
                        prefix_len,
                        payload: &payload,
                    },
                }
                .to_bytes(),
            );
        }

        // Whole datums: every codec, with no dictionary and with each fixed one.
        let codec = Codec::ALL[n % 3];
        let dict = (n % 6 != 5).then(|| &*fixed[n % fixed.len()]);
        let datum = self
            .datum
            .encode(row, codec, dict)
            .expect("the datum encoder takes a row");
        self.add(
            "datum_header",
            DatumInput {
                prefix_len,
                datum: &datum,
            }
            .to_bytes(),
        );

        // Round trips: every codec and dictionary kind, in turn.
        self.add(
            "round_trip",
            RoundTrip {
                flags: (n % 16) as u8,
                dict_id: 1 + (n as u32 % 5) * 1000,
                dict: pglz_dict,
                prefix_len,
                input: row,
            }
            .to_bytes(),
        );
    }

    /// Hand-made seeds for corners the rows do not reach.
    fn synthetic(&mut self) {
        // Connection strings and URLs, each form with the parts libpq reads specially.
        for conninfo in [
            "host=db port=5433 dbname=app user=pgdict sslmode=verify-full",
            "host = db1,/tmp hostaddr=,127.0.0.1 password='a b\\'c' options=-c\\ x=1",
            "service=reports requiressl=1 sslrootcert=system target_session_attrs=standby",
            "postgresql://me:p%40ss@db1:5433,[::1],%2Ftmp/app?sslmode=require&connect_timeout=5",
            "postgres://db/app?ssl=true&application_name=a@b&load_balance_hosts=random",
            "postgresql:///app?host=%2Fvar%2Frun%2Fpostgresql&port=",
        ] {
            self.add("conninfo_parse", conninfo.as_bytes().to_vec());
        }
        // Dictionary files: each fixed dictionary, with no metadata and with all of it (known
        // keys, gains, parameters, a key this version does not know). Mode 0: as written.
        for (n, bytes) in fixed_dictionary_bytes().iter().enumerate() {
            // The empty one decodes datums, but is no dictionary file: a file needs content.
            if bytes.is_empty() {
                continue;
            }
            let mut metadata = Metadata::new();
            if n % 2 == 0 {
                metadata.source = Some("corpus/events.jsonl".into());
                metadata.trainer = Some("pgdict-trainer 0.1 (fuzz seed)".into());
                metadata.sample_rows = Some(1000 + n as u64);
                metadata.sample_bytes = Some(400_000);
                metadata.parameters.insert("seed".into(), 1.into());
                metadata.parameters.insert("size".into(), 4095.into());
                metadata
                    .other
                    .insert("note".into(), "kept as is \u{e9}".into());
                metadata.gains.push(Gain {
                    codec: Codec::ALL[n % 3],
                    rows: 500,
                    raw_bytes: 200_000,
                    plain_bytes: 180_000,
                    dict_bytes: 70_000,
                });
            }
            let codecs = CodecSet::from_bits(1 + (n as u16 % 7)).expect("codec bits");
            let dict = Dictionary::new(
                1 + n as u32 * 77,
                codecs,
                1_700_000_000_000_000,
                metadata,
                bytes,
            )
            .expect("a dictionary");
            let mut input = vec![0u8];
            input.extend_from_slice(&dict.to_bytes());
            self.add("dict_file_parse", input);
        }

        // datum_input: what the rows do not give: nothing, psql's expanded output, COPY's text
        // format with HEADER, CSV (told in the hint), `\\x` in escape text, escape text told by
        // its first four lines with no text after them, binary COPY with a header extension.
        let binary_with_extension = [
            &copy::SIGNATURE[..],
            b"\0\0\0\0\0\0\0\x02\xab\xcd",
            b"\0\x01\0\0\0\x04\x09abc\xff\xff",
        ]
        .concat();
        for input in [
            &b""[..],
            b"-[ RECORD 1 ]-\npayload | \\x0b616263\n",
            b"id\tpayload\n1\t\\\\x0b616263\n2\t\\N\n",
            b"id,body\n1,\\x0b616263\n",
            b"\\037C:\\\\xfiles\\\\data\n\\005a\n",
            b"\\005a\n\\005a\n\\005a\n\\005a\n\xff\n",
            &binary_with_extension,
        ] {
            self.add_datum_input(input, (0, 0, 1));
        }
        // Text of 1 MiB (lines of 16 bytes) before a hex line: the window ends on a line end,
        // with no `\x` in it; and one byte later, inside the next line.
        let text = b"not a datum....\n\\x0b616263\n";
        self.add_datum_input(text, (0, 16, 1 << 16));
        self.add_datum_input(&[b"!", &text[..]].concat(), (1, 16, 1 << 16));
        // A hex line of over 1 MiB: the window ends inside its `\x` literal.
        self.add_datum_input(b"\\x0b616263" as &[u8], (4, 2, 600_000));

        // Long overlapping matches (offset 1, and 4 bytes repeating).
        for value in [b"a".repeat(5000), b"abcd".repeat(2000)] {
            let payload = pglz::compress(&value, &Strategy::ALWAYS).expect("compresses");
            let plain = Plain {
                raw_len: value.len(),
                payload: &payload,
            };
            self.add("pglz_decode", plain.to_bytes());
        }
        // Empty: a zero-length payload for raw_len 0, and empty datums and rows.
        self.add(
            "pglz_decode",
            Plain {
                raw_len: 0,
                payload: &[],
            }
            .to_bytes(),
        );
        for codec in Codec::ALL {
            let datum = self.datum.encode(&[], codec, None).expect("encodes");
            self.add(
                "datum_header",
                DatumInput {
                    prefix_len: 0,
                    datum: &datum,
                }
                .to_bytes(),
            );
        }
        // The zstd-format dictionary as an arbitrary dictionary, to mutate its tables.
        let trained = &fixed_dictionary_bytes()[3];
        let payload = self
            .zstd
            .compress_with_dict(
                b"{\"type\":\"page_viewed\"}",
                fixed_dictionaries()[3]
                    .zstd()
                    .expect("prepared for every codec"),
            )
            .expect("zstd compresses");
        self.add(
            "zstd_dict_decode",
            Choice {
                choice: 5,
                input: WithDict {
                    dict: trained,
                    raw_len: 22,
                    prefix_len: 10,
                    payload: &payload,
                },
            }
            .to_bytes(),
        );
    }
}
