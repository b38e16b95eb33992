//! pgdict's reading of connection strings and URLs (`pgdict::conninfo::keyword_values`)
//! against libpq's own, `PQconninfoParse` from the system's PostgreSQL 15 `libpq.so`
//! (`pgdict_pgref::libpq`): the same settings for every string libpq takes, and libpq's
//! message, word for word, for every string it refuses.
//!
//! Two differences are allowed, and each is checked to be the only one where it shows: a
//! percent-encoded value that is not UTF-8 (libpq takes the bytes, pgdict refuses), and
//! `load_balance_hosts` (libpq 16's keyword, which PostgreSQL 15's libpq refuses).

#![cfg(feature = "pg-store")]

use pgdict::conninfo::{keyword_values, LATER_LIBPQ_KEYWORDS, LIBPQ_KEYWORDS, NOT_UTF8};
use pgdict_pgref::libpq;
use proptest::prelude::*;

/// The two differences allowed (see the module documentation).
const ALLOWED: libpq::Allowed = libpq::Allowed {
    not_utf8: NOT_UTF8,
    later_keywords: &LATER_LIBPQ_KEYWORDS,
};

/// Asserts that pgdict reads `conninfo` as libpq does (see the module documentation).
fn assert_read_as_libpq(conninfo: &str) {
    let reading = keyword_values(conninfo);
    if let Some(what) = libpq::disagreement(conninfo, &reading, ALLOWED) {
        panic!("{conninfo:?} read otherwise than libpq reads it: {what}");
    }
}

#[test]
fn the_oracle_is_postgresql_15s_libpq() {
    let version = libpq::version();
    assert_eq!(version / 10000, 15, "libpq version {version}");
    // pgdict's list of keywords is libpq's, in libpq's order.
    assert_eq!(libpq::keywords(), LIBPQ_KEYWORDS);
}

#[test]
fn strings_are_read_as_libpq_reads_them() {
    for conninfo in [
        "",
        "   ",
        "host=db port=5433 dbname=app user=me",
        "host = db\tport= 5433\ndbname =app",
        // C's isspace: vertical tab and form feed separate settings too.
        "host=db\x0bport=5433\x0cdbname=app",
        "password='a b\\'c\\\\' options='-c x=1' application_name=",
        "sslcert=/a\\ b.crt sslkey='c\\\\d' service=s",
        "host=a host=b",
        "user=é dbname='ü x'",
        "host=db sslmode",
        "sslrootcert='/x",
        "password=ab\\",
        "password='ab\\",
        "=x",
        "host=db foo=1",
        "keepalives_retries=3",
        "host=db krbsrvname=postgres requirepeer=postgres replication=database",
        // requiressl becomes sslmode where it stands: a later sslmode wins, an earlier loses.
        "requiressl=1",
        "requiressl=0",
        "requiressl=10",
        "requiressl=yes",
        "requiressl=1 sslmode=disable",
        "sslmode=disable requiressl=1",
        "postgresql://",
        "postgres://",
        "postgresql://db",
        "postgresql://u%40x:p:w@db:5433/app?sslmode=verify-ca&connect_timeout=5",
        "postgresql://me@db/app",
        "postgresql://me:@db/app",
        "postgresql://:secret@db/app",
        "postgresql://@db/app",
        "postgres://db1:5433,[::1],%2Ftmp:6000/app",
        "postgresql://db1/app",
        "postgresql://db1,db2/app",
        "postgresql://db1,,db2:6/app",
        "postgresql://:5433/app",
        "postgresql:///app?host=%2Fvar%2Frun%2Fpostgresql",
        "postgresql://db?ssl=true&user=me%40corp",
        "postgresql://db?ssl=false",
        "postgresql://db/app?application_name=a@b",
        "postgresql://db/a/b",
        "postgresql://db/app?",
        "postgresql://db/app?sslmode=require&",
        "postgresql://db/app?&sslmode=require",
        "postgresql://db/app?sslmode=require&&port=1",
        "postgresql://db/app?sslmode",
        "postgresql://db/app?sslmode=a=b",
        "postgresql://db/app?=x",
        "postgresql://db/app?foo=1",
        "postgresql://db/app?requiressl=1",
        "postgresql://db/app?sslmode=%zz",
        "postgresql://db/app?sslkey=a%00",
        "postgresql://db/app?sslkey=a%2",
        "postgresql://db/%61pp?%73slmode=require",
        "postgresql://[::1/app",
        "postgresql://[]/app",
        "postgresql://[::1]x/app",
        "postgresql://[::1]é/app",
        "postgresql://[::1]:5433,[fe80::1%25eth0]/app",
        "postgresql://db:/app",
        "postgresql://db:5433:5434/app",
        "postgresql://db?host=other&port=1",
        // libpq 15 stops at libpq 16's keyword: what pgdict finds after it is not compared.
        "postgresql://db/app?load_balance_hosts=random&x",
        // A value that is not UTF-8, replaced by a later one: libpq's is the later.
        "postgresql://db/app?options=%e1&options=x",
        "postgresql://a b/c d?options=-c%20x%3D1",
        // Not URLs: the prefixes are case-sensitive, and need both slashes.
        "Postgresql://db",
        "postgresql:/db",
    ] {
        assert_read_as_libpq(conninfo);
    }
}

#[test]
fn the_allowed_differences_show_only_where_expected() {
    // A percent-encoded value that is not UTF-8: libpq takes the byte, pgdict refuses.
    assert_eq!(
        libpq::conninfo_parse("postgresql://db/app%ff").unwrap(),
        [
            ("dbname".to_string(), b"app\xff".to_vec()),
            ("host".to_string(), b"db".to_vec())
        ]
    );
    assert_eq!(
        keyword_values("postgresql://db/app%ff").unwrap_err(),
        "percent-encoded value is not UTF-8: \"app%ff\""
    );
    // libpq 16's keyword: PostgreSQL 15's libpq refuses it, pgdict takes it.
    assert_eq!(LATER_LIBPQ_KEYWORDS, ["load_balance_hosts"]);
    assert_eq!(
        libpq::conninfo_parse("host=a,b load_balance_hosts=random").unwrap_err(),
        "invalid connection option \"load_balance_hosts\""
    );
    assert_eq!(
        keyword_values("host=a,b load_balance_hosts=random").unwrap()["load_balance_hosts"],
        "random"
    );
}

/// Pieces that connection strings and URLs are made of, the characters libpq's two parsers
/// treat specially among them; strings made of them mostly break a rule somewhere.
const PIECES: &[&str] = &[
    "postgresql://",
    "postgres://",
    "host",
    "port",
    "user",
    "dbname",
    "password",
    "sslmode",
    "requiressl",
    "options",
    "ssl",
    "true",
    "foo",
    "=",
    "=",
    " ",
    " ",
    "\t",
    "\n",
    "\x0b",
    "\x0c",
    "'",
    "'",
    "\\",
    "@",
    ":",
    "/",
    "?",
    "&",
    ",",
    "[",
    "]",
    "::1",
    "%",
    "%2",
    "%2F",
    "%41",
    "%00",
    "%zz",
    "%C3%A9",
    "a",
    "b",
    "1",
    "0",
    "é",
];

/// A connection string or URL made of [`PIECES`], a URL in half the cases.
fn pieced_string() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop::collection::vec(prop::sample::select(PIECES), 0..24),
    )
        .prop_map(|(url, pieces)| {
            let prefix = if url { "postgresql://" } else { "" };
            format!("{prefix}{}", pieces.concat())
        })
}

/// Pairs that libpq takes: known keywords with values quoted, escaped or bare.
fn well_formed_string() -> impl Strategy<Value = String> {
    let keyword = prop::sample::select(&LIBPQ_KEYWORDS[..]);
    let value = "[a-z0-9 '\\\\=é/]{0,8}";
    prop::collection::vec(
        (keyword, value, any::<bool>(), "[ \t\x0b\x0c\n]{1,3}"),
        0..6,
    )
    .prop_map(|settings| {
        settings
            .into_iter()
            .map(|(keyword, value, quoted, space)| {
                let value = if quoted {
                    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
                } else {
                    value
                        .replace('\\', "\\\\")
                        .replace(' ', "\\ ")
                        .replace('\'', "\\'")
                };
                format!("{keyword}={value}{space}")
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn pieced_strings_are_read_as_libpq_reads_them(conninfo in pieced_string()) {
        assert_read_as_libpq(&conninfo);
    }

    #[test]
    fn well_formed_strings_are_read_as_libpq_reads_them(conninfo in well_formed_string()) {
        assert_read_as_libpq(&conninfo);
    }
}
