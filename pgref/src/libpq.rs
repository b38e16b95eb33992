//! libpq's connection-string parser (`PQconninfoParse` in `fe-connect.c`), from the system's
//! `libpq.so` (Debian package `libpq-dev`, which `postgresql-server-dev-15` pulls in): the
//! oracle for pgdict's own reading of connection strings and URLs (`tests/conninfo_libpq.rs`).
//!
//! `PQconninfoParse` reads the string alone: no environment, no service file, no defaults.
//! It is reentrant (each call works on its own copy of the option table), so no lock is
//! needed.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};

/// libpq's `PQconninfoOption` (`libpq-fe.h`).
#[repr(C)]
struct ConninfoOption {
    keyword: *mut c_char,
    envvar: *mut c_char,
    compiled: *mut c_char,
    val: *mut c_char,
    label: *mut c_char,
    dispchar: *mut c_char,
    dispsize: c_int,
}

/// libpq's `PGconn`, only ever behind a pointer.
#[repr(C)]
struct PgConn {
    _private: [u8; 0],
}

/// `CONNECTION_BAD` of libpq's `ConnStatusType`.
const CONNECTION_BAD: c_int = 1;

#[link(name = "pq")]
unsafe extern "C" {
    fn PQconnectStart(conninfo: *const c_char) -> *mut PgConn;
    fn PQconninfo(conn: *mut PgConn) -> *mut ConninfoOption;
    fn PQpass(conn: *const PgConn) -> *mut c_char;
    fn PQhost(conn: *const PgConn) -> *mut c_char;
    fn PQport(conn: *const PgConn) -> *mut c_char;
    fn PQstatus(conn: *const PgConn) -> c_int;
    fn PQerrorMessage(conn: *const PgConn) -> *mut c_char;
    fn PQfinish(conn: *mut PgConn);
    fn PQconninfoParse(conninfo: *const c_char, errmsg: *mut *mut c_char) -> *mut ConninfoOption;
    fn PQconndefaults() -> *mut ConninfoOption;
    fn PQconninfoFree(options: *mut ConninfoOption);
    fn PQfreemem(ptr: *mut c_void);
    fn PQlibVersion() -> c_int;
}

/// The version of the libpq linked, as `PQlibVersion` gives it: 150020 for 15.20.
pub fn version() -> i32 {
    // SAFETY: takes nothing and reads a constant.
    unsafe { PQlibVersion() }
}

/// The settings libpq's `PQconninfoParse` reads from `conninfo`: each keyword that has a
/// value, in libpq's order of keywords, with the value's bytes. The error is libpq's message,
/// without its final line feed.
///
/// Panics if `conninfo` holds a NUL byte (C would see only the part before it) or if libpq
/// runs out of memory.
pub fn conninfo_parse(conninfo: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let conninfo = CString::new(conninfo).expect("a connection string without NUL bytes");
    let mut error: *mut c_char = std::ptr::null_mut();
    // SAFETY: `conninfo` is NUL-terminated and outlives the call; `error` is a valid place for
    // libpq to store a message pointer, which it allocates (freed below with PQfreemem).
    let options = unsafe { PQconninfoParse(conninfo.as_ptr(), &mut error) };
    if options.is_null() {
        assert!(!error.is_null(), "PQconninfoParse failed without a message");
        // SAFETY: libpq set `error` to a NUL-terminated string it allocated; it is read once,
        // then freed with libpq's own deallocator.
        let message = unsafe { CStr::from_ptr(error) }
            .to_string_lossy()
            .into_owned();
        unsafe { PQfreemem(error.cast()) };
        return Err(message.trim_end_matches('\n').to_string());
    }
    // SAFETY: a non-null result is an option array PQconninfoParse allocated, used only here.
    Ok(unsafe { take_settings(options) }.collect())
}

/// Where another reader of connection strings may differ from libpq (see [`disagreement`]).
#[derive(Clone, Copy, Debug)]
pub struct Allowed<'a> {
    /// A reader of text may refuse a value that is not UTF-8 (libpq takes any byte but NUL),
    /// with a message starting with this, where libpq took such a value.
    pub not_utf8: &'a str,
    /// Keywords of later libpq versions the reader takes, which this libpq refuses: a string
    /// libpq refuses for one of them is not compared.
    pub later_keywords: &'a [&'a str],
}

/// Whether `reading` (settings by keyword, or an error message), another parser's reading of
/// `conninfo`, is libpq's: the same settings, or libpq's message word for word, but where
/// `allowed` says. `None` if they agree, else what differs.
pub fn disagreement(
    conninfo: &str,
    reading: &Result<BTreeMap<String, String>, String>,
    allowed: Allowed,
) -> Option<String> {
    let theirs = conninfo_parse(conninfo);
    match (&theirs, reading) {
        // libpq stops at the keyword; what the other reader finds after it cannot be compared.
        (Err(theirs), _)
            if allowed.later_keywords.iter().any(|keyword| {
                *theirs == format!("invalid connection option \"{keyword}\"")
                    || *theirs == format!("invalid URI query parameter: \"{keyword}\"")
            }) =>
        {
            None
        }
        (Ok(theirs), Ok(ours)) => {
            let theirs: BTreeMap<&str, &[u8]> = theirs
                .iter()
                .map(|(keyword, value)| (keyword.as_str(), value.as_slice()))
                .collect();
            let ours: BTreeMap<&str, &[u8]> = ours
                .iter()
                .map(|(keyword, value)| (keyword.as_str(), value.as_bytes()))
                .collect();
            (ours != theirs).then(|| format!("settings: libpq {theirs:?}, other {ours:?}"))
        }
        (Err(theirs), Err(ours)) => {
            (ours != theirs).then(|| format!("message: libpq {theirs:?}, other {ours:?}"))
        }
        (Ok(settings), Err(ours))
            if ours.starts_with(allowed.not_utf8)
                && settings
                    .iter()
                    .any(|(_, value)| std::str::from_utf8(value).is_err()) =>
        {
            None
        }
        _ => Some(format!("libpq {theirs:?}, other {reading:?}")),
    }
}

/// What libpq made of a connection string once it set out to connect: the string, the
/// service, the process's environment and libpq's defaults, as [`connect_start`] reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setting {
    /// libpq took the settings: each keyword with a value (`PQconninfo`); the host and port
    /// it had reached when it stopped (`PQhost`, `PQport`: the last of the hosts when each
    /// failed at once), and that host's password (`PQpass`: the string's, the environment's,
    /// or the password file's).
    Taken {
        settings: BTreeMap<String, Vec<u8>>,
        host: Vec<u8>,
        port: Vec<u8>,
        password: Vec<u8>,
    },
    /// libpq refused them, with this message (`PQerrorMessage`, without its line feed).
    Refused(String),
}

/// What libpq makes of `conninfo` with the process's environment (its `PG*` variables, the
/// service and password files they and the string name) when it sets out to connect:
/// `PQconnectStart`, whose settings are read before the connection is abandoned with
/// `PQfinish`. A failure to reach the server is not a refusal: the string should name hosts
/// that fail at once (a Unix socket directory that does not exist, a closed local port).
///
/// libpq reads the environment with `getenv`: callers that change it must not run this on
/// several threads at once.
pub fn connect_start(conninfo: &str) -> Setting {
    let conninfo = CString::new(conninfo).expect("a connection string without NUL bytes");
    // SAFETY: `conninfo` is NUL-terminated and outlives the call; the connection it returns
    // (null only when out of memory) is finished below, once.
    let conn = unsafe { PQconnectStart(conninfo.as_ptr()) };
    assert!(!conn.is_null(), "PQconnectStart returned nothing");
    // SAFETY: `conn` is a live connection; the message it returns is NUL-terminated and
    // owned by it, copied out before PQfinish.
    let message = unsafe { CStr::from_ptr(PQerrorMessage(conn)) }
        .to_string_lossy()
        .trim_end_matches('\n')
        .to_string();
    let bad = unsafe { PQstatus(conn) } == CONNECTION_BAD;
    // Options libpq refused end it before any connection is tried; a connection that failed
    // says so in libpq's words (a host name that does not resolve, a server not reached).
    let tried = ["connection to server", "could not translate host name"]
        .iter()
        .any(|words| message.contains(words));
    let setting = if bad && !tried {
        Setting::Refused(message)
    } else {
        // A string the connection owns (null: none), copied out before PQfinish.
        let owned = |text: *mut c_char| match text.is_null() {
            true => Vec::new(),
            // SAFETY: a non-null string libpq returned for the live `conn`: NUL-terminated.
            false => unsafe { CStr::from_ptr(text) }.to_bytes().to_vec(),
        };
        // SAFETY (these three): `conn` is live.
        let password = owned(unsafe { PQpass(conn) });
        let host = owned(unsafe { PQhost(conn) });
        let port = owned(unsafe { PQport(conn) });
        // SAFETY: PQconninfo allocates an option array for the caller, used only here.
        let settings = unsafe { take_settings(PQconninfo(conn)) }.collect();
        Setting::Taken {
            settings,
            host,
            port,
            password,
        }
    };
    // SAFETY: `conn` came from PQconnectStart and is finished once.
    unsafe { PQfinish(conn) };
    setting
}

/// Every keyword libpq knows, in its order, as `PQconndefaults` lists them.
pub fn keywords() -> Vec<String> {
    // SAFETY: PQconndefaults takes nothing and allocates an option array (null when out of
    // memory, which `take_options` refuses), used only here.
    let all = unsafe { take_options(PQconndefaults()) };
    all.into_iter().map(|(keyword, _)| keyword).collect()
}

/// The keywords of an option array and their values, copied out; the array is freed.
///
/// # Safety
///
/// `options` must be an option array libpq allocated (`PQconninfoParse`, `PQconninfo`,
/// `PQconndefaults`), not freed yet, terminated by an entry whose keyword is null, whose
/// strings are NUL-terminated; it must not be used afterwards.
unsafe fn take_options(options: *mut ConninfoOption) -> Vec<(String, Option<Vec<u8>>)> {
    assert!(
        !options.is_null(),
        "libpq returned no option array (out of memory)"
    );
    let mut all = Vec::new();
    let mut entry = options.cast_const();
    loop {
        // SAFETY: the caller guarantees the array and its terminator; `entry` never moves
        // past the terminating entry.
        let option = unsafe { &*entry };
        if option.keyword.is_null() {
            break;
        }
        // SAFETY: non-null keywords and values are NUL-terminated strings (the caller).
        let keyword = unsafe { CStr::from_ptr(option.keyword) };
        let value = (!option.val.is_null())
            .then(|| unsafe { CStr::from_ptr(option.val) }.to_bytes().to_vec());
        all.push((keyword.to_string_lossy().into_owned(), value));
        // SAFETY: this entry was not the terminator, so the next one exists.
        entry = unsafe { entry.add(1) };
    }
    // SAFETY: libpq allocated the array (the caller); it is freed once, here.
    unsafe { PQconninfoFree(options) };
    all
}

/// The settings of an option array that have a value ([`take_options`], whose safety
/// requirements are the caller's).
unsafe fn take_settings(options: *mut ConninfoOption) -> impl Iterator<Item = (String, Vec<u8>)> {
    // SAFETY: passed on from the caller.
    unsafe { take_options(options) }
        .into_iter()
        .filter_map(|(keyword, value)| value.map(|value| (keyword, value)))
}
