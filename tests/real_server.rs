//! Real-server tests: PostgreSQL 15 itself compresses values with pglz and with lz4 and stores
//! them in heap pages; pgdict must read those bytes and produce the same ones.
//!
//! The main test stores ~900 values of 2.1–7 KB (rows of the GSoC JSON set and slices of
//! Canterbury files) twice, once per method: in the `text` and `bytea` columns of `t_pglz`
//! (`COMPRESSION pglz`) and of `t_lz4` (`COMPRESSION lz4`), all with `STORAGE MAIN`. PostgreSQL
//! compresses each value (the row is over the ~2 KB TOAST threshold) and keeps it inline in the
//! heap page (MAIN, and it fits once compressed). pageinspect then hands back every stored
//! attribute byte for byte, varlena header included, and the test checks, for each method:
//!
//! - most values really were stored compressed (a minimum count, so the test cannot pass by
//!   checking nothing), with the method in the datum header (the top two bits of `va_tcinfo`)
//!   and the method PostgreSQL reports (`pg_column_compression`);
//! - pgdict decodes each payload to exactly the value SELECTed back, and decodes every tested
//!   prefix to the value's first bytes; so does `pgdict::datum`, given the whole stored
//!   attribute (raw or compressed, header included) as a datum;
//! - pgdict's compressor, called as PostgreSQL calls its own (pglz with the default strategy,
//!   lz4 as `LZ4_compress_default`), produces PostgreSQL's payload byte for byte; and, with
//!   PostgreSQL's rule for keeping a compressed datum, it keeps exactly the values PostgreSQL
//!   stored compressed.
//!
//! A server built without lz4 fails the test (it does not skip): Debian's PostgreSQL 15 has it.
//!
//! The remaining tests check the helpers and the cluster harness itself
//! (tests/support/cluster.rs).

// The cluster harness describes client errors with `pgdict::dict::describe_pg_error`.
#![cfg(feature = "pg-store")]

mod support;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use pgdict::datum::{self, NoDictionaries};
use pgdict::dict::describe_pg_error;
use pgdict::lz4;
use pgdict::pglz::{self, Compressor, Strategy};
use support::{corpus, PgCluster};

/// Values shorter than this may not push the row over PostgreSQL's TOAST threshold (~2032
/// bytes), and would then be stored raw without any compression attempt.
const MIN_VALUE_LEN: usize = 2100;

/// Values longer than this might not fit an 8 KB page even when compressed enough to pass
/// pglz's 25 % rule; MAIN would then move them out of line, beyond pageinspect's reach here.
const MAX_VALUE_LEN: usize = 7000;

/// Each method must have stored at least this many values compressed, and at least 90 % of
/// them: the sources were chosen so that nearly every value compresses (only the JPEG slices
/// should not).
const MIN_COMPRESSED: usize = 800;

const GSOC_ROWS: &str = "rows/json_gsoc2018_projects.jsonl";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Column {
    Text,
    Bytea,
}

/// A TOAST compression method, as PostgreSQL names and numbers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Pglz,
    Lz4,
}

impl Method {
    const ALL: [Method; 2] = [Method::Pglz, Method::Lz4];

    /// The SQL name: `COMPRESSION ...`, `default_toast_compression`, `pg_column_compression`.
    fn name(self) -> &'static str {
        match self {
            Method::Pglz => "pglz",
            Method::Lz4 => "lz4",
        }
    }

    /// `pg_attribute.attcompression` of a column with this method.
    fn attcompression(self) -> &'static str {
        match self {
            Method::Pglz => "p",
            Method::Lz4 => "l",
        }
    }

    /// The method id in the top two bits of a compressed datum's `va_tcinfo`.
    fn id(self) -> u32 {
        match self {
            Method::Pglz => 0,
            Method::Lz4 => 1,
        }
    }

    /// The table holding the values compressed with this method.
    fn table(self) -> String {
        format!("t_{}", self.name())
    }

    /// pgdict's decoder for a whole payload.
    fn decompress(self, payload: &[u8], raw_len: usize) -> Result<Vec<u8>, String> {
        match self {
            Method::Pglz => pglz::decompress(payload, raw_len).map_err(|e| e.to_string()),
            Method::Lz4 => lz4::decompress(payload, raw_len).map_err(|e| e.to_string()),
        }
    }

    /// pgdict's decoder for the first `k` bytes.
    fn decompress_prefix(
        self,
        payload: &[u8],
        raw_len: usize,
        k: usize,
    ) -> Result<Vec<u8>, String> {
        match self {
            Method::Pglz => pglz::decompress_prefix(payload, raw_len, k).map_err(|e| e.to_string()),
            Method::Lz4 => lz4::decompress_prefix(payload, raw_len, k).map_err(|e| e.to_string()),
        }
    }
}

/// pgdict's compressor for one method, called as PostgreSQL calls its own.
enum Codec {
    /// `pglz_compress` with `PGLZ_strategy_default` (one compressor, reused).
    Pglz(Compressor),
    /// `LZ4_compress_default` into a buffer of `LZ4_compressBound` bytes.
    Lz4,
}

impl Codec {
    fn new(method: Method) -> Codec {
        match method {
            Method::Pglz => Codec::Pglz(Compressor::new()),
            Method::Lz4 => Codec::Lz4,
        }
    }

    /// The method's payload for `value`, or `None` where the method itself gives up (pglz's
    /// strategy). Whether PostgreSQL keeps the payload is [`postgres_keeps`]'s question.
    fn compress(&mut self, value: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match self {
            Codec::Pglz(compressor) => Ok(compressor
                .compress(value, &Strategy::DEFAULT)
                .map(<[u8]>::to_vec)),
            Codec::Lz4 => lz4::compress(value).map(Some).map_err(|e| e.to_string()),
        }
    }
}

/// Whether PostgreSQL stores a value of `raw_len` bytes compressed, given the method's
/// payload of `payload_len` bytes: `toast_compress_datum` keeps the compressed varlena (8
/// header bytes and the payload) only if it saves more than 2 bytes, `VARSIZE(tmp) < valsize
/// - 2`. (lz4's own refusal of a block longer than its input is implied.)
fn postgres_keeps(payload_len: usize, raw_len: usize) -> bool {
    payload_len + 8 + 2 < raw_len
}

/// One value to store.
struct Sample {
    id: i32,
    column: Column,
    /// Where the value comes from, for failure messages.
    origin: String,
    /// The corpus file, for the per-source summary.
    source: &'static str,
    value: Vec<u8>,
}

/// What PostgreSQL gives back for one stored sample.
struct Observed {
    /// The value SELECT returns.
    value: Vec<u8>,
    /// `pg_column_compression` of the value: the method's name, or `None` when stored raw.
    pg_method: Option<String>,
    /// The attribute's bytes in the heap page, varlena header included (pageinspect).
    datum: Vec<u8>,
}

/// How a value was found stored in the heap page.
#[derive(Debug)]
enum Stored<'a> {
    /// Inline compressed (4-byte header, `va_tcinfo`, payload).
    Compressed {
        raw_len: usize,
        method: u32,
        payload: &'a [u8],
    },
    /// Inline uncompressed, with a 1-byte ("short") or 4-byte header.
    Raw {
        header: &'static str,
        data: &'a [u8],
    },
}

/// The outcome of one method's comparison.
struct Report {
    method: Method,
    /// One line per problem, naming the value.
    failures: Vec<String>,
    /// Values checked, and how many of them PostgreSQL stored compressed.
    values: usize,
    compressed: usize,
    /// Per source: compressed/values, raw bytes -> stored bytes.
    summary: String,
}

#[test]
fn pglz_and_lz4_match_postgresql_on_stored_values() {
    let samples = samples();
    let cluster = PgCluster::start();
    let mut client = cluster.client();
    client
        .batch_execute("CREATE EXTENSION pageinspect")
        .unwrap_or_else(|e| {
            panic!(
                "creating the pageinspect extension (it is in contrib): {}",
                describe_pg_error(&e)
            )
        });
    require_lz4(&mut client);

    let reports: Vec<Report> = Method::ALL
        .into_iter()
        .map(|method| {
            let observed = store_and_read_back(&mut client, method, &samples);
            compare(method, &samples, &observed)
        })
        .collect();

    for report in &reports {
        println!("{}", report.summary);
    }
    let disagreements: Vec<String> = reports
        .iter()
        .filter(|report| !report.failures.is_empty())
        .map(|report| {
            format!(
                "{}: {} of {} values disagree with PostgreSQL; the first ones:\n{}\n{}",
                report.method.name(),
                report.failures.len(),
                report.values,
                report.failures[..report.failures.len().min(20)].join("\n"),
                report.summary
            )
        })
        .collect();
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    // The test must not pass by checking nothing.
    for report in &reports {
        let (compressed, values) = (report.compressed, report.values);
        assert!(
            compressed >= MIN_COMPRESSED && compressed * 10 >= values * 9,
            "{}: only {compressed} of {values} values were stored compressed\n{}",
            report.method.name(),
            report.summary
        );
    }
}

/// Fails, saying why, unless the server can compress with lz4 (it must be built
/// `--with-lz4`): without it the lz4 half of the test would have nothing to check.
fn require_lz4(client: &mut postgres::Client) {
    if let Err(e) = client.batch_execute("SET default_toast_compression = lz4") {
        panic!(
            "this PostgreSQL server cannot compress with lz4 (built without --with-lz4?), and \
             the test needs it: SET default_toast_compression = lz4 fails: {}",
            describe_pg_error(&e)
        );
    }
    let setting: String = client
        .query_one("SELECT current_setting('default_toast_compression')", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        setting, "lz4",
        "default_toast_compression after SET default_toast_compression = lz4"
    );
}

/// Stores every sample in a new table compressed with `method` (`STORAGE MAIN`, one value per
/// row) and reads back, per sample id, what SELECT returns and the bytes in the heap page.
fn store_and_read_back(
    client: &mut postgres::Client,
    method: Method,
    samples: &[Sample],
) -> HashMap<i32, Observed> {
    let (table, name) = (method.table(), method.name());
    client
        .batch_execute(&format!(
            "SET default_toast_compression = {name};
             CREATE TABLE {table} (id int4 NOT NULL, body text COMPRESSION {name},
                                   bin bytea COMPRESSION {name});
             ALTER TABLE {table} ALTER COLUMN body SET STORAGE MAIN,
                                 ALTER COLUMN bin SET STORAGE MAIN;"
        ))
        .unwrap_or_else(|e| panic!("creating {table}: {}", describe_pg_error(&e)));
    let settings: Vec<(String, String, String)> = client
        .query(
            "SELECT attname::text, attstorage::text, attcompression::text FROM pg_attribute \
             WHERE attrelid = $1::text::regclass AND attname IN ('body', 'bin') ORDER BY attnum",
            &[&table],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let expected = ["body", "bin"].map(|column| {
        (
            column.to_string(),
            "m".to_string(),
            method.attcompression().to_string(),
        )
    });
    assert_eq!(
        settings, expected,
        "{table}: columns must be STORAGE MAIN, COMPRESSION {name}"
    );

    // One value per row (the other column NULL): with two MAIN values in one row PostgreSQL
    // compresses only the bigger one if that brings the row under the threshold.
    let mut transaction = client.transaction().unwrap();
    let insert = transaction
        .prepare(&format!(
            "INSERT INTO {table} (id, body, bin) VALUES ($1, $2, $3)"
        ))
        .unwrap();
    for sample in samples {
        let (text, bytes) = match sample.column {
            Column::Text => (Some(std::str::from_utf8(&sample.value).unwrap()), None),
            Column::Bytea => (None, Some(&sample.value[..])),
        };
        transaction
            .execute(&insert, &[&sample.id, &text, &bytes])
            .unwrap_or_else(|e| {
                panic!(
                    "inserting {} into {table}: {}",
                    sample.origin,
                    describe_pg_error(&e)
                )
            });
    }
    transaction.commit().unwrap();

    let toast_bytes: i64 = client
        .query_one(
            "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = $1::text::regclass",
            &[&table],
        )
        .unwrap()
        .get(0);
    assert_eq!(
        toast_bytes, 0,
        "{table}: some values went out of line into the TOAST table"
    );

    // What SELECT returns, and what PostgreSQL says about each value's compression.
    let mut selected: HashMap<i32, (Vec<u8>, Option<String>)> = HashMap::new();
    for row in client
        .query(
            &format!(
                "SELECT id, body, bin, pg_column_compression(body), pg_column_compression(bin) \
                 FROM {table}"
            ),
            &[],
        )
        .unwrap()
    {
        let id: i32 = row.get(0);
        let body: Option<String> = row.get(1);
        let bin: Option<Vec<u8>> = row.get(2);
        let (value, pg_method) = match (body, bin) {
            (Some(body), None) => (body.into_bytes(), row.get(3)),
            (None, Some(bin)) => (bin, row.get(4)),
            _ => panic!("{table} row {id}: expected exactly one non-NULL value"),
        };
        assert!(
            selected.insert(id, (value, pg_method)).is_none(),
            "{table}: id {id} SELECTed twice"
        );
    }
    assert_eq!(selected.len(), samples.len(), "{table}: rows SELECTed back");

    // The stored bytes of every live tuple, attribute by attribute, headers included.
    let mut observed: HashMap<i32, Observed> = HashMap::new();
    for row in client
        .query(
            "SELECT tuple_data_split($1::text::regclass, h.t_data, h.t_infomask, \
                                     h.t_infomask2, h.t_bits) \
             FROM generate_series(0, pg_relation_size($1::text::regclass) \
                                     / current_setting('block_size')::int8 - 1) AS blkno, \
                  LATERAL heap_page_items(get_raw_page($1, blkno)) AS h \
             WHERE h.lp_flags = 1",
            &[&table],
        )
        .unwrap_or_else(|e| {
            panic!(
                "reading the heap pages of {table} with pageinspect: {}",
                describe_pg_error(&e)
            )
        })
    {
        let attributes: Vec<Option<Vec<u8>>> = row.get(0);
        assert_eq!(attributes.len(), 3, "{table}: attributes per tuple");
        let id_bytes = attributes[0].as_deref().expect("id is NOT NULL");
        let id = i32::from_le_bytes(id_bytes.try_into().expect("int4 is 4 bytes"));
        let datum = match (&attributes[1], &attributes[2]) {
            (Some(datum), None) | (None, Some(datum)) => datum.clone(),
            _ => panic!("{table} tuple {id}: expected exactly one non-NULL value"),
        };
        let (value, pg_method) = selected
            .remove(&id)
            .unwrap_or_else(|| panic!("{table}: tuple {id} seen twice, or not SELECTed"));
        observed.insert(
            id,
            Observed {
                value,
                pg_method,
                datum,
            },
        );
    }
    assert_eq!(
        observed.len(),
        samples.len(),
        "{table}: tuples found in the heap pages"
    );
    observed
}

/// Compares what PostgreSQL stored for every sample with what pgdict makes of it.
fn compare(method: Method, samples: &[Sample], observed: &HashMap<i32, Observed>) -> Report {
    let mut codec = Codec::new(method);
    let mut failures: Vec<String> = Vec::new();
    let mut stats: Vec<(&str, Stats)> = Vec::new();
    for sample in samples {
        let what = format!("{}: {}", method.name(), sample.origin);
        let Observed {
            value,
            pg_method,
            datum,
        } = &observed[&sample.id];
        if value != &sample.value {
            failures.push(format!(
                "{what}: SELECT returned a different value than inserted"
            ));
            continue;
        }
        let entry = match stats
            .iter()
            .position(|(source, _)| *source == sample.source)
        {
            Some(index) => index,
            None => {
                stats.push((sample.source, Stats::default()));
                stats.len() - 1
            }
        };
        let stats = &mut stats[entry].1;
        stats.values += 1;
        stats.raw_bytes += value.len();
        let ours = codec.compress(value);
        // The stored attribute, header and all, is a pgdict datum (DESIGN.md: plain pglz and
        // lz4 datums are byte-compatible with PostgreSQL's), whole and by prefix.
        match datum::decode(datum, &NoDictionaries) {
            Ok(decoded) if decoded == *value => {}
            Ok(decoded) => failures.push(format!(
                "{what}: datum::decode of the stored attribute: {}",
                describe_difference("decoded", &decoded, "value", value)
            )),
            Err(e) => failures.push(format!(
                "{what}: datum::decode of the stored attribute: {e}"
            )),
        }
        for k in [1, 100, value.len() / 2, value.len()] {
            match datum::decode_prefix(datum, k, &NoDictionaries) {
                Ok(prefix) if prefix == value[..k] => {}
                Ok(prefix) => failures.push(format!(
                    "{what}: datum::decode_prefix(k = {k}): {}",
                    describe_difference("prefix", &prefix, "value", &value[..k])
                )),
                Err(e) => failures.push(format!("{what}: datum::decode_prefix(k = {k}): {e}")),
            }
        }
        match parse_varlena(datum) {
            Err(e) => failures.push(format!("{what}: stored datum: {e}")),
            Ok(Stored::Raw { header, data }) => {
                stats.stored_bytes += value.len();
                if data != &value[..] {
                    failures.push(format!("{what}: raw datum ({header} header) != value"));
                }
                if pg_method.is_some() {
                    failures.push(format!(
                        "{what}: raw datum ({header} header) but PostgreSQL says {pg_method:?}"
                    ));
                }
                match ours {
                    Err(e) => failures.push(format!("{what}: pgdict cannot compress it: {e}")),
                    Ok(Some(ours)) if postgres_keeps(ours.len(), value.len()) => {
                        failures.push(format!(
                            "{what}: PostgreSQL stored the {} bytes raw, but pgdict compresses \
                             them to {} bytes, which PostgreSQL would keep",
                            value.len(),
                            ours.len()
                        ))
                    }
                    Ok(_) => {}
                }
            }
            Ok(Stored::Compressed {
                raw_len,
                method: header_method,
                payload,
            }) => {
                stats.compressed += 1;
                stats.stored_bytes += payload.len();
                let problems = check_compressed(
                    method,
                    value,
                    raw_len,
                    header_method,
                    payload,
                    ours,
                    pg_method.as_deref(),
                );
                failures.extend(problems.into_iter().map(|p| format!("{what}: {p}")));
            }
        }
    }

    let mut summary = format!(
        "{}, per source: compressed/values, raw bytes -> stored bytes\n",
        method.name()
    );
    let (mut values, mut compressed) = (0, 0);
    for (source, s) in &stats {
        values += s.values;
        compressed += s.compressed;
        writeln!(
            summary,
            "  {source}: {}/{}, {} -> {} ({:.2}x)",
            s.compressed,
            s.values,
            s.raw_bytes,
            s.stored_bytes,
            s.raw_bytes as f64 / s.stored_bytes as f64
        )
        .unwrap();
    }
    Report {
        method,
        failures,
        values,
        compressed,
        summary,
    }
}

#[derive(Default)]
struct Stats {
    values: usize,
    compressed: usize,
    raw_bytes: usize,
    stored_bytes: usize,
}

/// Everything wrong with one datum that PostgreSQL stored compressed (`header_method`,
/// `raw_len` and `payload` from its header), compared with the value it stands for, pgdict's
/// compression of that value (`ours`) and `pg_column_compression` (`pg_method`).
fn check_compressed(
    method: Method,
    value: &[u8],
    raw_len: usize,
    header_method: u32,
    payload: &[u8],
    ours: Result<Option<Vec<u8>>, String>,
    pg_method: Option<&str>,
) -> Vec<String> {
    let mut problems = Vec::new();
    if pg_method != Some(method.name()) {
        problems.push(format!(
            "compressed datum, but PostgreSQL says {pg_method:?}"
        ));
    }
    if header_method != method.id() {
        problems.push(format!(
            "compression method {header_method} in the header, expected {} ({})",
            method.id(),
            method.name()
        ));
        return problems;
    }
    if raw_len != value.len() {
        problems.push(format!(
            "header raw_len {raw_len}, value is {} bytes",
            value.len()
        ));
        return problems;
    }
    match method.decompress(payload, raw_len) {
        Ok(decoded) if decoded == value => {}
        Ok(decoded) => problems.push(format!(
            "pgdict decodes PostgreSQL's payload wrongly: {}",
            describe_difference("decoded", &decoded, "value", value)
        )),
        Err(e) => problems.push(format!("pgdict rejects PostgreSQL's payload: {e}")),
    }
    for k in [1, 2, 8, 100, 1000, raw_len / 2, raw_len - 1, raw_len] {
        match method.decompress_prefix(payload, raw_len, k) {
            Ok(prefix) if prefix == value[..k] => {}
            Ok(prefix) => problems.push(format!(
                "decompress_prefix(k = {k}): {}",
                describe_difference("prefix", &prefix, "value", &value[..k])
            )),
            Err(e) => problems.push(format!("decompress_prefix(k = {k}) fails: {e}")),
        }
    }
    match ours {
        Ok(Some(ours)) if ours == payload => {}
        Ok(Some(ours)) => problems.push(format!(
            "pgdict's compressed bytes differ from PostgreSQL's: {}",
            describe_difference("pgdict", &ours, "PostgreSQL", payload)
        )),
        Ok(None) => problems.push(format!(
            "PostgreSQL compressed the {} bytes to {}, but pgdict refuses to compress them",
            value.len(),
            payload.len()
        )),
        Err(e) => problems.push(format!(
            "PostgreSQL compressed the {} bytes to {}, but pgdict fails: {e}",
            value.len(),
            payload.len()
        )),
    }
    problems
}

/// Lengths, the first differing offset, and the bytes around it.
fn describe_difference(a_name: &str, a: &[u8], b_name: &str, b: &[u8]) -> String {
    let first = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let window = |bytes: &[u8]| {
        let start = first.saturating_sub(8);
        let end = (first + 8).min(bytes.len());
        bytes[start.min(end)..end]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!(
        "{a_name} {} bytes, {b_name} {} bytes, first difference at byte {first}; bytes from {}: \
         {a_name} [{}], {b_name} [{}]",
        a.len(),
        b.len(),
        first.saturating_sub(8),
        window(a),
        window(b)
    )
}

/// Parses an inline varlena as PostgreSQL stores it on x86_64 (little-endian):
///
/// ```text
///   first byte xxxxxxx1, not 0x01   1-byte header: total length (header included) in the
///                                   upper 7 bits, then the raw bytes
///   first byte 0x01                 external TOAST pointer (not inline: an error here)
///   u32 low bits 00                 4-byte header: total length << 2, then the raw bytes
///   u32 low bits 10                 compressed: total length << 2 | 0b10, then va_tcinfo:
///                                   raw length in the low 30 bits, method in the top 2
///                                   (0 = pglz, 1 = lz4), then the payload
/// ```
fn parse_varlena(bytes: &[u8]) -> Result<Stored<'_>, String> {
    let first = *bytes.first().ok_or("empty attribute")?;
    if first == 0x01 {
        return Err(format!(
            "external TOAST pointer (vartag {:?}), not inline",
            bytes.get(1)
        ));
    }
    if first & 1 == 1 {
        let total = usize::from(first >> 1);
        if total != bytes.len() {
            return Err(format!(
                "1-byte header says {total} bytes, attribute is {}",
                bytes.len()
            ));
        }
        return Ok(Stored::Raw {
            header: "1-byte",
            data: &bytes[1..],
        });
    }
    let word = |at: usize| -> Result<u32, String> {
        let field = bytes
            .get(at..at + 4)
            .ok_or_else(|| format!("attribute of {} bytes ends inside its header", bytes.len()))?;
        Ok(u32::from_le_bytes(field.try_into().unwrap()))
    };
    let header = word(0)?;
    let total = (header >> 2) as usize;
    if total != bytes.len() {
        return Err(format!(
            "4-byte header says {total} bytes, attribute is {}",
            bytes.len()
        ));
    }
    if header & 0b11 == 0 {
        return Ok(Stored::Raw {
            header: "4-byte",
            data: &bytes[4..],
        });
    }
    // Low bits 10: compressed inline (11 cannot occur: bit 0 is clear here).
    let tcinfo = word(4)?;
    Ok(Stored::Compressed {
        raw_len: (tcinfo & 0x3fff_ffff) as usize,
        method: tcinfo >> 30,
        payload: &bytes[8..],
    })
}

/// The values to store: every GSoC row in range, and random slices of Canterbury files (text
/// and binary, including JPEG slices that pglz should refuse).
fn samples() -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut push = |column, source, origin: String, value: Vec<u8>| {
        let id = samples.len() as i32 + 1;
        samples.push(Sample {
            id,
            column,
            origin,
            source,
            value,
        });
    };
    for (index, row) in corpus::rows(GSOC_ROWS).into_iter().enumerate() {
        let text_ok = !row.contains(&0) && std::str::from_utf8(&row).is_ok();
        if (MIN_VALUE_LEN..=MAX_VALUE_LEN).contains(&row.len()) && text_ok {
            push(
                Column::Text,
                GSOC_ROWS,
                format!("{GSOC_ROWS} row {}", index + 1),
                row,
            );
        }
    }
    let mut rng = XorShift(0x5eed_f00d_cafe_0001);
    let slices: [(&str, Column, usize); 5] = [
        ("payloads/canterbury/alice29.txt", Column::Text, 60),
        ("payloads/canterbury/alice29.txt", Column::Bytea, 20),
        ("payloads/canterbury/kennedy.xls", Column::Bytea, 30),
        ("payloads/canterbury/ptt5", Column::Bytea, 15),
        ("payloads/snappy_testdata/fireworks.jpeg", Column::Bytea, 10),
    ];
    for (file, column, count) in slices {
        let bytes = corpus::read(file);
        for _ in 0..count {
            let len = MIN_VALUE_LEN + rng.below(MAX_VALUE_LEN - MIN_VALUE_LEN + 1);
            let start = rng.below(bytes.len() - len + 1);
            let value = bytes[start..start + len].to_vec();
            if column == Column::Text {
                assert!(std::str::from_utf8(&value).is_ok() && !value.contains(&0));
            }
            push(
                column,
                file,
                format!("{file}[{start}..{}] as {column:?}", start + len),
                value,
            );
        }
    }
    assert!(samples.len() >= 900, "only {} samples", samples.len());
    samples
}

/// A small seeded generator (xorshift64), so the slices are the same on every run.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound as u64) as usize
    }
}

#[test]
fn parse_varlena_reads_each_inline_layout() {
    // 1-byte header: total 4 = header + "abc".
    assert!(matches!(
        parse_varlena(&[4 << 1 | 1, b'a', b'b', b'c']),
        Ok(Stored::Raw {
            header: "1-byte",
            data: b"abc"
        })
    ));
    // 4-byte header: total 6 = header + "hi".
    assert!(matches!(
        parse_varlena(&[6 << 2, 0, 0, 0, b'h', b'i']),
        Ok(Stored::Raw {
            header: "4-byte",
            data: b"hi"
        })
    ));
    // Compressed: total 11, raw_len 300, method 0, a 3-byte payload.
    let raw_len = 300u32.to_le_bytes();
    let datum = [
        11 << 2 | 0b10,
        0,
        0,
        0,
        raw_len[0],
        raw_len[1],
        0,
        0,
        7,
        8,
        9,
    ];
    assert!(matches!(
        parse_varlena(&datum),
        Ok(Stored::Compressed {
            raw_len: 300,
            method: 0,
            payload: [7, 8, 9]
        })
    ));
    // Compressed with lz4 (method 1 in the top two bits of va_tcinfo).
    let datum = [10 << 2 | 0b10, 0, 0, 0, 5, 0, 0, 0x40, 1, 2];
    assert!(matches!(
        parse_varlena(&datum),
        Ok(Stored::Compressed {
            raw_len: 5,
            method: 1,
            ..
        })
    ));
    // Errors: external pointer, lengths that disagree, a cut-off header, nothing at all.
    assert!(parse_varlena(&[0x01, 18, 0, 0]).is_err());
    assert!(parse_varlena(&[5 << 1 | 1, b'a']).is_err());
    assert!(parse_varlena(&[7 << 2, 0, 0, 0, b'h', b'i']).is_err());
    assert!(parse_varlena(&[6 << 2 | 0b10, 0, 0]).is_err());
    assert!(parse_varlena(&[6 << 2 | 0b10, 0, 0, 0, 1, 0]).is_err());
    assert!(parse_varlena(&[]).is_err());
}

#[test]
fn describe_difference_names_the_first_differing_byte() {
    let text = describe_difference("pgdict", &[1, 2, 3, 4], "PostgreSQL", &[1, 2, 9]);
    assert!(
        text.starts_with(
            "pgdict 4 bytes, PostgreSQL 3 bytes, first difference at byte 2; bytes from 0: \
             pgdict [01 02 03 04], PostgreSQL [01 02 09]"
        ),
        "{text}"
    );
    // One a prefix of the other: the difference is where the shorter ends.
    let text = describe_difference("a", &[1, 2], "b", &[1, 2, 3]);
    assert!(text.contains("first difference at byte 2"), "{text}");
}

#[test]
fn postgres_keeps_only_savings_of_more_than_two_bytes() {
    // 100 raw bytes: a compressed varlena of 8 + 89 = 97 bytes saves 3, of 8 + 90 only 2.
    assert!(postgres_keeps(89, 100));
    assert!(!postgres_keeps(90, 100));
    // A block as long as its input, or longer (lz4 on incompressible data), is never kept.
    assert!(!postgres_keeps(100, 100));
    assert!(!postgres_keeps(101, 100));
    assert!(!postgres_keeps(0, 10));
}

#[test]
fn harness_standby_replays_the_primary() {
    let primary = PgCluster::start();
    let standby = primary.start_standby();
    assert_ne!(primary.port(), standby.port());
    assert_ne!(primary.data_dir(), standby.data_dir());
    let mut client = primary.client();
    client
        .batch_execute(
            "CREATE TABLE replicated (id int4 PRIMARY KEY, note text);
             INSERT INTO replicated SELECT g, 'row ' || g FROM generate_series(1, 100) g;",
        )
        .unwrap();
    primary.wait_for_replay(&standby);
    let mut standby_client = standby.client();
    let row = standby_client
        .query_one(
            "SELECT pg_is_in_recovery(), count(*), max(note) FROM replicated",
            &[],
        )
        .unwrap();
    let (in_recovery, count, max): (bool, i64, String) = (row.get(0), row.get(1), row.get(2));
    assert!(in_recovery, "the standby must be in recovery");
    assert_eq!((count, max.as_str()), (100, "row 99"));
    // A standby is read-only.
    let error = standby_client
        .batch_execute("INSERT INTO replicated VALUES (101, 'no')")
        .unwrap_err();
    assert_eq!(
        error.code(),
        Some(&postgres::error::SqlState::READ_ONLY_SQL_TRANSACTION),
        "unexpected error on the standby: {}",
        describe_pg_error(&error)
    );
}

#[test]
fn harness_stops_the_server_when_a_test_panics() {
    let mut seen = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let cluster = PgCluster::start();
        let pid = cluster
            .postmaster_pid()
            .expect("a running server has a postmaster.pid");
        seen = Some((pid, cluster.data_dir().to_path_buf()));
        panic!("deliberate panic while a PgCluster is alive");
    }));
    assert!(result.is_err());
    let (pid, data_dir) = seen.expect("the cluster started");
    assert!(!data_dir.exists(), "{} was not removed", data_dir.display());
    assert!(!process_alive(pid), "postmaster {pid} still runs");
}

/// Whether a process runs (a zombie, exited but not yet reaped, does not count).
fn process_alive(pid: u32) -> bool {
    let stat = Path::new("/proc").join(pid.to_string()).join("stat");
    match std::fs::read_to_string(stat) {
        // The state follows the parenthesised command name: "pid (comm) S ...".
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}
