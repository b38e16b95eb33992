//! The library API the `pgdict` CLI trains with: `train` → `store` → a datum encodes with the
//! stored dictionary and decodes through the store; `evaluate` with and without a dictionary;
//! `measure_content` for a dictionary given, not built;
//! a 4 KB pglz dictionary from 10,000 sampled rows (whose build time the `builders` example
//! measures: see there).
//!
//! The rows come from the shared corpus (`$PGDICT_CORPUS`, else `../shared/corpus` beside the
//! repository); a missing corpus fails the test.

mod corpus;

use corpus::corpus_rows;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

use pgdict::datum::{self, Codec, DatumEncoder, Form, PreparedDictionary};
use pgdict::dict::{CodecSet, Dictionary, DirStore, Metadata};
use pgdict_trainer::progress::{NoProgress, Phase, Progress};
use pgdict_trainer::source::{self, SourceSpec};
use pgdict_trainer::{
    check_content, evaluate, measure_content, sample_source, split, store, train, train_split,
    Builder, Method, SampleOptions, SizeBucket, StoreTarget, TrainError, TrainOptions,
};

/// Every datum of a corpus row file, through the trainer's own source.
fn read_rows(name: &str) -> Vec<Vec<u8>> {
    source::open(&SourceSpec::from_arg(&corpus_rows(name), None))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn train_store_encode_decode() {
    let rows = read_rows("json_user_agents.jsonl");
    let options = TrainOptions {
        seed: 3,
        ..TrainOptions::default()
    };
    let trained = train(&rows, &options).unwrap();
    assert_eq!(trained.codec, Codec::Pglz);
    assert_eq!(trained.builder, Some(Builder::Pgdict));
    assert!(!trained.content.is_empty() && trained.content.len() <= 4095);
    assert!(trained.helps());
    // User-agent rows: plain pglz stores them raw; the dictionary makes them several times
    // smaller (DESIGN.md measures about 9x over the whole set).
    assert!(trained.gain_vs_pglz() > 4.0, "{}", trained.gain_vs_pglz());
    let all = &trained.evaluation.all;
    let holdout = all.datums as usize;
    assert!((1000..1800).contains(&holdout), "{holdout}");
    assert_eq!(trained.train_rows as usize + holdout, rows.len());
    let buckets: u64 = trained.evaluation.buckets.iter().map(|b| b.datums).sum();
    assert_eq!(buckets, all.datums);
    assert_eq!(trained.evaluation.buckets.len(), SizeBucket::ALL.len());

    let dir = tempfile::tempdir().unwrap();
    let target = StoreTarget::Dir(dir.path().join("dicts"));
    let metadata = trained.metadata("corpus json_user_agents", Default::default());
    let dict = store(&target, &trained, metadata).unwrap();
    assert_eq!(dict.id(), 1);
    assert_eq!(dict.content(), &trained.content[..]);

    let store = DirStore::open(dir.path().join("dicts")).unwrap();
    let prepared = store.prepared(1).unwrap();
    let mut encoder = DatumEncoder::new();
    let mut dict_form = 0;
    for row in &rows {
        let stored = encoder.encode(row, Codec::Pglz, Some(&prepared)).unwrap();
        if datum::parse_header(&stored).unwrap().form
            == (Form::Extended {
                codec: Codec::Pglz,
                dict_id: 1,
            })
        {
            dict_form += 1;
        }
        assert_eq!(&datum::decode(&stored, &store).unwrap(), row);
    }
    assert!(dict_form > rows.len() * 9 / 10, "{dict_form}");

    // The stored metadata holds the gain measured on the held-out rows.
    let metadata = store.get(1).unwrap().metadata();
    let gain = &metadata.gains[0];
    assert_eq!(gain.codec, Codec::Pglz);
    assert_eq!(gain.rows, all.datums);
    assert_eq!(gain.dict_bytes, all.pglz_dict.unwrap().stored_bytes);
    assert_eq!(gain.plain_bytes, all.pglz.stored_bytes);
    assert_eq!(metadata.sample_rows, Some(trained.train_rows));
}

#[test]
fn evaluate_with_and_without_a_dictionary() {
    let rows = read_rows("csv_airports.txt");
    let (train_rows, holdout) = pgdict_trainer::split(&rows[..4000], 0.5, 1);
    let plain = evaluate(&holdout, None, Codec::Lz4, &NoProgress).unwrap();
    assert_eq!(plain.all.datums as usize, holdout.len());
    assert!(plain.all.pglz_dict.is_none() && plain.all.lz4_dict.is_none());
    assert!(plain.all.zstd_dict.is_none());
    assert!(plain.all.pglz.compress_seconds > 0.0);

    let content = Builder::Pgdict
        .build(&train_rows, Codec::Lz4, 16 * 1024)
        .unwrap();
    let dict = Arc::new(PreparedDictionary::new(200, &content).unwrap());
    let with = evaluate(&holdout, Some(&dict), Codec::Lz4, &NoProgress).unwrap();
    // zstd is measured only for a zstd dictionary.
    assert!(with.all.zstd_dict.is_none());
    let lz4_dict = with.all.lz4_dict.unwrap();
    assert!(lz4_dict.stored_bytes < with.all.lz4.stored_bytes);
    assert!(lz4_dict.dict_datums > 0);
    assert!(with.helps(Codec::Lz4, 0.05));
    // Plain numbers do not depend on the dictionary.
    assert_eq!(with.all.lz4.stored_bytes, plain.all.lz4.stored_bytes);
    assert_eq!(with.all.pglz.stored_bytes, plain.all.pglz.stored_bytes);
    let gain = with.all.gain(Method::Lz4Dict, Method::Lz4).unwrap();
    assert!(gain > 1.2, "{gain}");
}

/// A zstd dictionary: zstd's trainer's, in zstd's format; judged by zstd with it against plain
/// pglz (zstd has no plain form); stored for zstd, and its datums decode through the store.
#[test]
fn train_store_zstd() {
    let rows = read_rows("text_fortunes.jsonl");
    let options = TrainOptions {
        codec: Codec::Zstd,
        seed: 5,
        ..TrainOptions::default()
    };
    let trained = train(&rows, &options).unwrap();
    assert_eq!(trained.codec, Codec::Zstd);
    // Asked of pgdict's builder (the default), it is zstd's trainer's, and says so.
    assert_eq!(trained.builder, Some(Builder::Zstd));
    // zstd's dictionary magic number: the entropy tables come with it.
    assert_eq!(trained.content[..4], 0xEC30_A437u32.to_le_bytes());
    assert!(trained.content.len() <= 64 * 1024);
    let all = &trained.evaluation.all;
    let zstd_dict = all.zstd_dict.expect("zstd measured for a zstd dictionary");
    assert!(zstd_dict.dict_datums > all.datums / 2, "{zstd_dict:?}");
    assert!(trained.helps());
    // Its gain is against plain pglz, and fortunes barely compress with plain pglz.
    let expected = all.pglz.stored_bytes as f64 / zstd_dict.stored_bytes as f64;
    assert_eq!(trained.gain_vs_pglz(), expected);
    assert!(expected > 1.2, "{expected}");

    let dir = tempfile::tempdir().unwrap();
    let target = StoreTarget::Dir(dir.path().join("dicts"));
    let metadata = trained.metadata("corpus text_fortunes", Default::default());
    let trainer = metadata.trainer.as_deref().unwrap_or_default();
    assert!(trainer.ends_with("builder=zstd"), "{trainer}");
    let gain = &metadata.gains[0];
    assert_eq!((gain.codec, gain.baseline()), (Codec::Zstd, Codec::Pglz));
    assert_eq!(gain.plain_bytes, all.pglz.stored_bytes);
    assert_eq!(gain.dict_bytes, zstd_dict.stored_bytes);
    let dict = store(&target, &trained, metadata).unwrap();
    assert!(dict.codecs().contains(Codec::Zstd) && !dict.codecs().contains(Codec::Pglz));
    let store = DirStore::open(dir.path().join("dicts")).unwrap();
    let prepared = store.prepared(dict.id()).unwrap();
    let mut encoder = DatumEncoder::new();
    for row in rows.iter().take(500) {
        let stored = encoder.encode(row, Codec::Zstd, Some(&prepared)).unwrap();
        assert_eq!(&datum::decode(&stored, &store).unwrap(), row);
    }
}

/// What a training reports, as `begin LABEL`, `note WHAT` and `end` lines.
#[derive(Default)]
struct Recorder {
    events: RefCell<Vec<String>>,
}

impl Progress for Recorder {
    fn begin(&self, phase: Phase, _total: Option<u64>) {
        self.events
            .borrow_mut()
            .push(format!("begin {}", phase.label()));
    }

    fn note(&self, what: &str) {
        self.events.borrow_mut().push(format!("note {what}"));
    }

    fn end(&self, _message: &str) {
        self.events.borrow_mut().push("end".into());
    }
}

#[test]
fn given_content_measures_as_the_built_dictionary_did() {
    let rows = read_rows("csv_airports.txt");
    let (train_rows, holdout) = split(&rows[..3000], 0.2, 5);
    let recorder = Recorder::default();
    let built = train_split(&train_rows, &holdout, &TrainOptions::default(), &recorder).unwrap();
    // The build's spinner is told each stage as it begins, in order, before the build ends.
    let events = recorder.events.take();
    let building = events.iter().position(|e| e == "begin building").unwrap();
    let built_at = building + events[building..].iter().position(|e| e == "end").unwrap();
    let stages: Vec<&str> = events[building + 1..built_at]
        .iter()
        .map(|e| e.strip_prefix("note ").expect("only notes while building"))
        .collect();
    for (stage, first_words) in stages.iter().zip([
        "counting the 4-byte strings of",
        "seeding",
        "rating",
        "refining",
        "refining with other rows in the roles, round 1 of",
    ]) {
        assert!(stage.starts_with(first_words), "{stages:#?}");
    }
    assert!(
        stages.last().unwrap().starts_with("choosing"),
        "{stages:#?}"
    );
    let given =
        measure_content(built.content.clone(), 1, &holdout, Codec::Pglz, &NoProgress).unwrap();
    assert_eq!(given.builder, None);
    assert_eq!(given.builder_name(), "given");
    assert_eq!((given.train_rows, given.train_bytes), (0, 0));
    assert_eq!(given.size, built.content.len());
    // The same bytes on the same rows store the same, and are judged alike.
    let stored = |t: &pgdict_trainer::Trained, m| t.evaluation.all.get(m).unwrap().stored_bytes;
    for method in [Method::Pglz, Method::PglzDict, Method::Lz4, Method::Lz4Dict] {
        assert_eq!(stored(&given, method), stored(&built, method), "{method:?}");
    }
    assert_eq!(given.evaluation.all.datums, holdout.len() as u64);
    assert!(given.helps() && built.helps());
    let metadata = given.metadata("airports", Default::default());
    assert_eq!(metadata.sample_rows, None);
    assert!(!metadata.parameters.contains_key("train_seconds"));
    assert_eq!(metadata.parameters["size"], built.content.len() as u64);

    let whole_file = Dictionary::new(3, CodecSet::ALL, 0, Metadata::new(), b"GET /")
        .unwrap()
        .to_bytes();
    for (content, why) in [
        (Vec::new(), "is empty: a dictionary needs content"),
        (
            whole_file,
            "is a pgdict dictionary file (header, metadata and checksums), not a dictionary's \
             content",
        ),
        (
            vec![0; (1 << 20) + 1],
            "holds more than 1,048,576 bytes, a dictionary's limit",
        ),
    ] {
        assert_eq!(check_content(&content, CodecSet::ALL).unwrap_err(), why);
        let err = measure_content(content, 1, &holdout, Codec::Pglz, &NoProgress).unwrap_err();
        assert_eq!(err.to_string(), format!("the dictionary content {why}"));
    }
    assert_eq!(check_content(&[0; 1 << 20], CodecSet::ALL), Ok(()));
    // zstd's dictionary magic number, then 60 bytes that are no zstd dictionary's header:
    // refused for zstd, any bytes for pglz and lz4.
    let magic = [&[0x37, 0xa4, 0x30, 0xec][..], &[0x5a; 60]].concat();
    assert!(check_content(&magic, CodecSet::only(Codec::Zstd))
        .unwrap_err()
        .starts_with("cannot be read as a dictionary: zstd: "));
    let pglz_lz4 = CodecSet::of(&[Codec::Pglz, Codec::Lz4]);
    assert_eq!(check_content(&magic, pglz_lz4), Ok(()));
    let measured = measure_content(magic, 1, &holdout, Codec::Lz4, &NoProgress).unwrap();
    assert_eq!(measured.evaluation.all.datums, holdout.len() as u64);
}

#[test]
fn nothing_to_train_on() {
    let err = train(&[], &TrainOptions::default()).unwrap_err();
    assert!(matches!(err, TrainError::NoRows { .. }), "{err}");
    let err = train(&[vec![], vec![]], &TrainOptions::default()).unwrap_err();
    assert!(matches!(err, TrainError::NoRows { .. }), "{err}");
    let err = sample_source(
        &mut source::Rows::from_rows(Vec::new()),
        &SampleOptions::default(),
        "nothing",
        &NoProgress,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no rows to train on: nothing gave no datums; no dictionary was created"
    );
}

/// DESIGN/issue 5: a 4 KB pglz dictionary from 10,000 sampled rows. The limit on its
/// build time (30 s on the project's 2-core machine) is measured by the `builders` example,
/// a bench command, not asserted here: a timed test fails with whatever else the machine
/// runs. This test took 29-30 s alone on the machine of 2026-12-01 (an AMD EPYC; the same
/// code took 9-12 s on the machine before) and 37.7 s in a CI run beside other work; the
/// session-start code of that day took as long.
#[test]
fn builds_4k_pglz_from_10000_rows() {
    let mut rows = source::open(&SourceSpec::from_arg(
        &corpus_rows("json_geonames_cities.jsonl"),
        None,
    ))
    .unwrap();
    let options = SampleOptions {
        seed: 1,
        max_rows: 10_000,
        holdout: 0.1,
        ..SampleOptions::default()
    };
    let sample = sample_source(&mut rows, &options, "geonames", &NoProgress).unwrap();
    assert_eq!(sample.train.len(), 10_000);
    let start = Instant::now();
    let content = Builder::Pgdict
        .build(&sample.train, Codec::Pglz, 4096)
        .unwrap();
    let seconds = start.elapsed().as_secs_f64();
    eprintln!("4 KB pglz dictionary from 10,000 rows: {seconds:.2} s");
    // Within pglz's window, nearly full: a refined dictionary may end a few bytes short when
    // the last candidates do not fit the space left exactly (4093 bytes here since the
    // repeated swapped stage).
    assert!((4000..=4095).contains(&content.len()), "{}", content.len());
}
