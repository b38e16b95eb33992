//! Connection strings and URLs (`pgdict::conninfo`) on arbitrary text.
//!
//! Layout: the string itself (inputs that are not UTF-8, or hold a NUL, which neither a
//! command line nor an environment variable can, are skipped).
//!
//! Checks: no panic, in the reading of the string (`keyword_values`) nor in the whole of
//! `parse_with_env` (with an empty environment and no password file: service files, defaults,
//! TLS settings, host lists); and, with the `pgref` feature, the same settings as libpq's own
//! `PQconninfoParse`, or libpq's message word for word (`pgdict_pgref::libpq::disagreement`,
//! with the two differences `tests/conninfo_libpq.rs` allows: a value that is not UTF-8, and
//! libpq 16's `load_balance_hosts`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgdict::conninfo::{keyword_values, parse_with_env, Passwords};

fuzz_target!(|data: &[u8]| {
    let Ok(conninfo) = std::str::from_utf8(data) else {
        return;
    };
    if conninfo.contains('\0') {
        return;
    }
    let reading = keyword_values(conninfo);
    #[cfg(feature = "pgref")]
    {
        use pgdict::conninfo::{LATER_LIBPQ_KEYWORDS, NOT_UTF8};
        use pgdict_pgref::libpq::{disagreement, Allowed};
        let allowed = Allowed {
            not_utf8: NOT_UTF8,
            later_keywords: &LATER_LIBPQ_KEYWORDS,
        };
        if let Some(what) = disagreement(conninfo, &reading, allowed) {
            panic!("{conninfo:?} read otherwise than libpq reads it: {what}");
        }
    }
    let whole = parse_with_env(conninfo, |_| None, Passwords::Skip);
    // What reads as libpq reads it may still be refused (a bad value, a keyword pgdict does
    // not act on), but what libpq refuses is never taken.
    if reading.is_err() {
        assert!(
            whole.is_err(),
            "{conninfo:?}: taken, though it does not read"
        );
    }
});
