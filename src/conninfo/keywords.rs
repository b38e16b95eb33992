//! Reading a connection string as libpq reads it (`conninfo_parse` and `conninfo_uri_parse`
//! in PostgreSQL's `fe-connect.c`), for the `postgres` crate reads it differently: it knows
//! `sslmode` only as `disable`, `prefer` or `require`; refuses `sslrootcert`, `sslcert`,
//! `sslkey`, `sslpassword`, `passfile` and `service` as unknown options; knows
//! `target_session_attrs` only as `any` or `read-write`; takes an empty host as a TCP host
//! named ""; and gives every host of a URL a port, 5432 if the URL names none, where libpq
//! leaves it to `PGPORT`.
//!
//! Both of libpq's forms are read:
//!
//! - `key=value` pairs separated by white space; white space may surround the `=`; a value is
//!   a single-quoted string (in which `\` makes the next character literal) or runs to the next
//!   white space (in which, too, `\` makes the next character literal).
//! - a URL, `postgresql://` or `postgres://`, then `user:password@` (if an `@` comes before the
//!   first `/`), hosts separated by `,`, each with an optional `:port` (an IPv6 address in
//!   `[]`), `/dbname`, and after `?` parameters `key=value` separated by `&`; every part is
//!   percent-decoded, and `ssl=true` means `sslmode=require`.
//!
//! White space is C's `isspace` (vertical tab and form feed too). Each setting is stored as
//! libpq's `conninfo_storeval` stores it: a keyword libpq does not know is an error (`invalid
//! connection option "foo"`; in a URL's query, `invalid URI query parameter: "foo"`), and
//! `requiressl` becomes `sslmode` where it stands (`require` for a value starting with `1`,
//! else `prefer`), so a later `sslmode` overrides it and an earlier one does not. [`settings`]
//! gives what libpq's `PQconninfoParse` gives (the differential test
//! `tests/conninfo_libpq.rs` holds the two to the same settings and messages);
//! [`split`] returns the settings pgdict applies itself ([`TAKEN_KEYWORDS`]) and, for the
//! crate, the others as a `key='value'` string.

/// libpq's connection keywords: PostgreSQL 15's, as its `PQconndefaults` lists them (the
/// differential test checks the list against it). The string, a URL's query and a service
/// file may set these; `requiressl`, which libpq still reads in a string, is not among them
/// (it becomes `sslmode`, and a service file may not set it).
pub const LIBPQ_KEYWORDS: [&str; 36] = [
    "service",
    "user",
    "password",
    "passfile",
    "channel_binding",
    "connect_timeout",
    "dbname",
    "host",
    "hostaddr",
    "port",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "sslmode",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "gssencmode",
    "krbsrvname",
    "gsslib",
    "replication",
    "target_session_attrs",
];

/// Keywords of later libpq versions that pgdict reads too, in a string or URL:
/// `load_balance_hosts` (libpq 16).
pub const LATER_LIBPQ_KEYWORDS: [&str; 1] = ["load_balance_hosts"];

/// libpq keywords that pgdict does not act on where libpq would: the keyword, the environment
/// variable libpq also reads it from, and the reason given when either is set (ignoring them
/// would connect otherwise than psql).
const UNSUPPORTED_KEYWORDS: [(&str, Option<&str>, &str); 2] = [
    (
        "requirepeer",
        Some("PGREQUIREPEER"),
        "pgdict cannot check the operating-system user of the server's process",
    ),
    (
        "replication",
        None,
        "pgdict does not open replication connections",
    ),
];

/// Refuses the environment variables of [`UNSUPPORTED_KEYWORDS`] that `env` finds set.
pub fn refuse_unsupported_variables(env: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    for (_, variable, why) in UNSUPPORTED_KEYWORDS {
        if let Some(variable) = variable.filter(|variable| env(variable).is_some()) {
            return Err(format!("{variable} is set, and {why}"));
        }
    }
    Ok(())
}

/// The keywords [`split`] takes out, which the crate does not know or knows otherwise than
/// libpq: the servers (libpq pairs up its lists of hosts, addresses and ports otherwise) and the
/// time to wait for one (the crate reads `connect_timeout=0` as unset), channel binding (which
/// libpq also reads from the environment), the password file, the kind of server sought, names
/// and encodings, GSSAPI (read and unused, as by a libpq without it), the TLS settings and the
/// service.
pub const TAKEN_KEYWORDS: [&str; 24] = [
    "host",
    "hostaddr",
    "port",
    "connect_timeout",
    "channel_binding",
    "krbsrvname",
    "gsslib",
    "passfile",
    "target_session_attrs",
    "fallback_application_name",
    "client_encoding",
    "gssencmode",
    "sslcompression",
    "sslsni",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcrl",
    "sslcrldir",
    "service",
];

/// A connection string without the settings pgdict reads itself, and those settings
/// (keyword, value), in the order the string gives them (a keyword given twice: the later one
/// wins, as in libpq).
#[derive(Debug, PartialEq, Eq)]
pub struct Split {
    /// The other settings, as a `key='value'` string.
    pub rest: String,
    /// The settings taken out: keyword, value (unquoted, unescaped, decoded).
    pub taken: Vec<(String, String)>,
}

/// The settings of `conninfo`, keyword and value (unquoted, unescaped, decoded), in the
/// string's order, a keyword given twice appearing twice (the later wins; a URL's appear once,
/// with the last value): what libpq's
/// `PQconninfoParse` stores (see the module documentation). The error is libpq's message for
/// a string it cannot parse.
pub fn settings(conninfo: &str) -> Result<Vec<(String, String)>, String> {
    if conninfo.starts_with("postgresql://") || conninfo.starts_with("postgres://") {
        url_pairs(conninfo)
    } else {
        pairs(conninfo)
    }
}

/// Splits `conninfo` (see the module documentation). The error is libpq's message for a string
/// it cannot parse, or names a keyword libpq knows and pgdict does not act on.
pub fn split(conninfo: &str) -> Result<Split, String> {
    let all = settings(conninfo)?;
    if let Some((keyword, _, why)) = UNSUPPORTED_KEYWORDS
        .iter()
        .find(|(keyword, _, _)| all.iter().any(|(key, _)| key == keyword))
    {
        return Err(format!(
            "connection option \"{keyword}\" is not supported: {why}"
        ));
    }
    let (taken, kept): (Vec<_>, Vec<_>) = all
        .into_iter()
        // libpq's name for what the crate calls keepalives_retries.
        .map(|(key, value)| match key.as_str() {
            "keepalives_count" => ("keepalives_retries".to_string(), value),
            _ => (key, value),
        })
        .partition(|(key, _)| TAKEN_KEYWORDS.contains(&key.as_str()));
    let rest = kept
        .iter()
        .map(|(key, value)| {
            format!(
                "{key}='{}'",
                value.replace('\\', "\\\\").replace('\'', "\\'")
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Split { rest, taken })
}

/// An integer setting (`port`, `connect_timeout`) as libpq's `parse_int_param` reads it: an
/// `int`, white space around it allowed (`strtol` skips it before, libpq after).
pub(super) fn integer(text: &str) -> Option<i32> {
    text.trim_matches(|c: char| c.is_ascii() && is_space(c as u8))
        .parse()
        .ok()
}

/// White space as C's `isspace` sees it in the C locale: Rust's `is_ascii_whitespace` leaves
/// out the vertical tab.
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// Adds a setting to `settings` as libpq's `conninfo_storeval` stores it: `requiressl` as
/// `sslmode`, and an unknown keyword refused with the message `unknown` makes of it.
fn store<V: AsRef<[u8]> + From<&'static str>>(
    settings: &mut Vec<(String, V)>,
    keyword: String,
    value: V,
    unknown: fn(&str) -> String,
) -> Result<(), String> {
    if keyword == "requiressl" {
        let require = value.as_ref().first() == Some(&b'1');
        let mode = if require { "require" } else { "prefer" };
        settings.push(("sslmode".into(), mode.into()));
    } else if LIBPQ_KEYWORDS.contains(&keyword.as_str())
        || LATER_LIBPQ_KEYWORDS.contains(&keyword.as_str())
    {
        settings.push((keyword, value));
    } else {
        return Err(unknown(&keyword));
    }
    Ok(())
}

/// The `key=value` pairs of a string in that form, values unquoted and unescaped.
fn pairs(conninfo: &str) -> Result<Vec<(String, String)>, String> {
    let bytes = conninfo.as_bytes();
    let mut pairs = Vec::new();
    let mut at = 0;
    let skip_space = |mut at: usize| {
        while at < bytes.len() && is_space(bytes[at]) {
            at += 1;
        }
        at
    };
    loop {
        at = skip_space(at);
        if at == bytes.len() {
            return Ok(pairs);
        }
        let start = at;
        while at < bytes.len() && bytes[at] != b'=' && !is_space(bytes[at]) {
            at += 1;
        }
        let key = conninfo[start..at].to_string();
        at = skip_space(at);
        if bytes.get(at) != Some(&b'=') {
            return Err(format!(
                "missing \"=\" after \"{key}\" in connection info string"
            ));
        }
        at = skip_space(at + 1);
        // Bytes, not chars: `\` may escape the first byte of a multi-byte character, whose
        // other bytes then follow as they are.
        let mut value = Vec::new();
        if bytes.get(at) == Some(&b'\'') {
            at += 1;
            loop {
                match bytes.get(at) {
                    None => {
                        return Err("unterminated quoted string in connection info string".into())
                    }
                    Some(b'\'') => {
                        at += 1;
                        break;
                    }
                    Some(b'\\') if at + 1 < bytes.len() => {
                        value.push(bytes[at + 1]);
                        at += 2;
                    }
                    Some(b'\\') => at += 1,
                    Some(&b) => {
                        value.push(b);
                        at += 1;
                    }
                }
            }
        } else {
            while at < bytes.len() && !is_space(bytes[at]) {
                if bytes[at] == b'\\' {
                    at += 1;
                    if at == bytes.len() {
                        break;
                    }
                }
                value.push(bytes[at]);
                at += 1;
            }
        }
        let value = String::from_utf8(value).expect("bytes of a str, split at ASCII bytes");
        store(&mut pairs, key, value, |key| {
            format!("invalid connection option \"{key}\"")
        })?;
    }
}

/// The settings of a URL, as libpq's `conninfo_uri_parse_options` reads them, each keyword
/// once (its last value). A value that is not UTF-8 once decoded is refused only after the
/// whole URL has been read, so that a URL libpq refuses gets libpq's message, and only if no
/// later value replaced it.
fn url_pairs(url: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = decoded_url_pairs(url)?;
    // A keyword given again replaces its value, in libpq too: only the last value counts.
    let mut seen = std::collections::HashSet::new();
    pairs.reverse();
    pairs.retain(|(keyword, _)| seen.insert(keyword.clone()));
    pairs.reverse();
    pairs
        .into_iter()
        .map(|(keyword, value)| match String::from_utf8(value.bytes) {
            Ok(text) => Ok((keyword, text)),
            // A secret is named, not shown: messages reach logs.
            Err(_) if SECRETS.contains(&keyword.as_str()) => {
                Err(format!("{NOT_UTF8}: the {keyword} (not shown)"))
            }
            Err(_) => Err(format!("{NOT_UTF8}: \"{}\"", value.source)),
        })
        .collect()
}

/// The keywords whose values messages never show.
const SECRETS: [&str; 2] = ["password", "sslpassword"];

/// How the message starts when a URL's percent-encoded value is not UTF-8 (libpq takes any
/// byte but NUL; pgdict reads settings as text).
pub const NOT_UTF8: &str = "percent-encoded value is not UTF-8";

/// A URL component, percent-decoded, and the component as written (for messages).
struct Decoded {
    bytes: Vec<u8>,
    source: String,
}

impl From<&'static str> for Decoded {
    fn from(text: &'static str) -> Decoded {
        Decoded {
            bytes: text.as_bytes().to_vec(),
            source: text.to_string(),
        }
    }
}

impl AsRef<[u8]> for Decoded {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// [`url_pairs`], the values as decoded bytes.
fn decoded_url_pairs(url: &str) -> Result<Vec<(String, Decoded)>, String> {
    let rest = url
        .strip_prefix("postgresql://")
        .or_else(|| url.strip_prefix("postgres://"))
        .expect("a URL prefix");
    let mut pairs = Vec::new();
    // Credentials, if an `@` comes before the first `/` (libpq looks no further).
    let rest = match rest
        .find(['@', '/'])
        .filter(|&at| rest.as_bytes()[at] == b'@')
    {
        Some(at) => {
            let (user, password) = match rest[..at].split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (&rest[..at], None),
            };
            if !user.is_empty() {
                pairs.push(("user".to_string(), decode(user)?));
            }
            if let Some(password) = password.filter(|p| !p.is_empty()) {
                pairs.push(("password".to_string(), decode(password)?));
            }
            &rest[at + 1..]
        }
        None => rest,
    };
    // Hosts and ports, each list as libpq keeps it: empty entries where one was left out.
    let (mut hosts, mut ports) = (Vec::new(), Vec::new());
    let mut rest = rest;
    loop {
        let (host, after) = if let Some(inside) = rest.strip_prefix('[') {
            let end = inside.find(']').ok_or_else(|| {
                format!(
                    "end of string reached when looking for matching \"]\" in IPv6 host \
                     address in URI: \"{url}\""
                )
            })?;
            if end == 0 {
                return Err(format!(
                    "IPv6 host address may not be empty in URI: \"{url}\""
                ));
            }
            let after = &inside[end + 1..];
            if !(after.is_empty() || after.starts_with([':', '/', '?', ','])) {
                // libpq prints the byte: a character of several bytes shows as its first,
                // which is not text (U+FFFD here, as a UTF-8 terminal shows it).
                let byte = after.as_bytes()[0];
                let shown = if byte.is_ascii() {
                    byte as char
                } else {
                    '\u{FFFD}'
                };
                return Err(format!(
                    "unexpected character \"{shown}\" at position {} in URI (expected \":\" \
                     or \"/\"): \"{url}\"",
                    url.len() - after.len() + 1
                ));
            }
            (&inside[..end], after)
        } else {
            let end = rest.find([':', '/', '?', ',']).unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        };
        hosts.push(host);
        rest = after;
        let mut port = "";
        if let Some(after) = rest.strip_prefix(':') {
            let end = after.find(['/', '?', ',']).unwrap_or(after.len());
            port = &after[..end];
            rest = &after[end..];
        }
        ports.push(port);
        match rest.strip_prefix(',') {
            Some(after) => rest = after,
            None => break,
        }
    }
    let hosts = hosts.join(",");
    if !hosts.is_empty() {
        pairs.push(("host".to_string(), decode(&hosts)?));
    }
    // As libpq: stored when any host names a port, or when there are several hosts, so that
    // `postgresql://db1,db2/app` means port "," (5432 for each) and PGPORT counts only with
    // one host.
    let ports = ports.join(",");
    if !ports.is_empty() {
        pairs.push(("port".to_string(), decode(&ports)?));
    }
    let query = match rest.strip_prefix('/') {
        Some(path) => {
            let (dbname, query) = match path.split_once('?') {
                Some((dbname, query)) => (dbname, Some(query)),
                None => (path, None),
            };
            if !dbname.is_empty() {
                pairs.push(("dbname".to_string(), decode(dbname)?));
            }
            query
        }
        None => rest.strip_prefix('?'),
    };
    // As libpq's `conninfo_uri_parse_params`: parameters up to each `&`, where an empty query
    // or a last `&` ends the list, and an empty parameter has no `=`.
    let mut query = query.unwrap_or_default();
    while !query.is_empty() {
        let (parameter, after) = query.split_once('&').unwrap_or((query, ""));
        query = after;
        let Some((key, value)) = parameter.split_once('=') else {
            return Err(format!(
                "missing key/value separator \"=\" in URI query parameter: \"{parameter}\""
            ));
        };
        if value.contains('=') {
            return Err(format!(
                "extra key/value separator \"=\" in URI query parameter: \"{key}\""
            ));
        }
        let (key, value) = (decode(key)?, decode(value)?);
        // A keyword that is not UTF-8 is none of libpq's, and refused by name.
        let key = String::from_utf8_lossy(&key.bytes).into_owned();
        // libpq's nod to JDBC.
        let (key, value) = if key == "ssl" && value.bytes == b"true" {
            ("sslmode".to_string(), Decoded::from("require"))
        } else {
            (key, value)
        };
        store(&mut pairs, key, value, |key| {
            format!("invalid URI query parameter: \"{key}\"")
        })?;
    }
    Ok(pairs)
}

/// A percent-encoded URL component, decoded; libpq refuses `%00` and a `%` not followed by two
/// hexadecimal digits.
fn decode(component: &str) -> Result<Decoded, String> {
    let bytes = component.as_bytes();
    for (at, _) in component.match_indices('%') {
        let digits = bytes.get(at + 1..at + 3);
        if !digits.is_some_and(|d| d.iter().all(u8::is_ascii_hexdigit)) {
            return Err(format!("invalid percent-encoded token: \"{component}\""));
        }
        if digits == Some(b"00") {
            return Err(format!(
                "forbidden value %00 in percent-encoded value: \"{component}\""
            ));
        }
    }
    Ok(Decoded {
        bytes: percent_encoding::percent_decode_str(component).collect(),
        source: component.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs_of(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn pairs_are_read_as_libpq_reads_them() {
        let taken = split(
            "host=db  sslmode = verify-full port=5433 sslrootcert='/etc/my ca\\'s.crt'\tdbname=x",
        )
        .unwrap();
        assert_eq!(taken.rest, "dbname='x'");
        assert_eq!(
            taken.taken,
            pairs_of(&[
                ("host", "db"),
                ("sslmode", "verify-full"),
                ("port", "5433"),
                ("sslrootcert", "/etc/my ca's.crt")
            ])
        );
        // An escaped space in an unquoted value; a quoted value with an escaped backslash.
        let taken = split("sslcert=/a\\ b.crt sslkey='c\\\\d' user=u service=s").unwrap();
        assert_eq!(taken.rest, "user='u'");
        assert_eq!(
            taken.taken,
            pairs_of(&[
                ("sslcert", "/a b.crt"),
                ("sslkey", "c\\d"),
                ("service", "s")
            ])
        );
        // What goes on to the crate is quoted and escaped, so that it reads the same values.
        let taken = split("password='a b\\'c\\\\' options='-c x=1' application_name=").unwrap();
        assert_eq!(
            taken.rest,
            "password='a b\\'c\\\\' options='-c x=1' application_name=''"
        );
        let config: postgres::Config = taken.rest.parse().unwrap();
        assert_eq!(config.get_password(), Some(&b"a b'c\\"[..]));
        assert_eq!(config.get_options(), Some("-c x=1"));
        assert!(taken.taken.is_empty());
        assert_eq!(split("").unwrap().rest, "");
    }

    #[test]
    fn urls_are_read_as_libpq_reads_them() {
        let taken = split(
            "postgresql://u%40x:p:w@db:5433/app?sslmode=verify-ca&connect_timeout=5&sslrootcert=%2Fe%20c.crt",
        )
        .unwrap();
        assert_eq!(taken.rest, "user='u@x' password='p:w' dbname='app'");
        assert_eq!(
            taken.taken,
            pairs_of(&[
                ("host", "db"),
                ("port", "5433"),
                ("sslmode", "verify-ca"),
                ("connect_timeout", "5"),
                ("sslrootcert", "/e c.crt")
            ])
        );
        // Several hosts, an IPv6 address, a port left out (empty: the default), a socket.
        let taken = split("postgres://db1:5433,[::1],%2Ftmp:6000/app").unwrap();
        assert_eq!(
            taken.taken,
            pairs_of(&[("host", "db1,::1,/tmp"), ("port", "5433,,6000")])
        );
        assert_eq!(taken.rest, "dbname='app'");
        // One host without a port: none given, so PGPORT can apply (the crate alone says
        // 5432); several: an empty port each (5432), as libpq reads it.
        assert_eq!(
            split("postgresql://db1/app").unwrap().taken,
            pairs_of(&[("host", "db1")])
        );
        let taken = split("postgresql://db1,db2/app").unwrap();
        assert_eq!(taken.taken, pairs_of(&[("host", "db1,db2"), ("port", ",")]));
        // An empty host: none given (PGHOST, else the default socket).
        assert_eq!(
            split("postgresql://:5433/app").unwrap(),
            Split {
                rest: "dbname='app'".into(),
                taken: pairs_of(&[("port", "5433")]),
            }
        );
        let taken = split("postgresql:///app?host=%2Fvar%2Frun%2Fpostgresql").unwrap();
        assert_eq!(taken.taken, pairs_of(&[("host", "/var/run/postgresql")]));
        assert_eq!(
            split("postgresql://db?ssl=true&user=me%40corp").unwrap(),
            Split {
                rest: "user='me@corp'".into(),
                taken: pairs_of(&[("host", "db"), ("sslmode", "require")]),
            }
        );
        // An `@` after the first `/` is not a credentials separator.
        let taken = split("postgresql://db/app?application_name=a@b").unwrap();
        assert_eq!(taken.rest, "dbname='app' application_name='a@b'");
    }

    #[test]
    fn settings_are_stored_as_libpq_stores_them() {
        // requiressl is sslmode where it stands: the later of the two wins.
        assert_eq!(
            split("requiressl=1 sslmode=disable").unwrap().taken,
            pairs_of(&[("sslmode", "require"), ("sslmode", "disable")])
        );
        assert_eq!(
            settings("sslmode=disable requiressl=1 requiressl=yes").unwrap(),
            pairs_of(&[
                ("sslmode", "disable"),
                ("sslmode", "require"),
                ("sslmode", "prefer")
            ])
        );
        // C's white space: a vertical tab separates.
        assert_eq!(
            settings("host=db\x0bport=5433").unwrap(),
            pairs_of(&[("host", "db"), ("port", "5433")])
        );
        // An empty query, or one ending in `&`, is no parameter.
        for url in ["postgresql://db/app?", "postgresql://db/app?port=1&"] {
            assert!(settings(url).is_ok(), "{url}");
        }
        // libpq 16's keyword is taken; libpq's crate-only synonym is not.
        assert!(settings("load_balance_hosts=random").is_ok());
        assert_eq!(
            split("keepalives_retries=3").unwrap_err(),
            "invalid connection option \"keepalives_retries\""
        );
        // Keywords libpq knows and pgdict does not act on: refused with the reason.
        assert_eq!(
            split("host=db requirepeer=postgres").unwrap_err(),
            "connection option \"requirepeer\" is not supported: pgdict cannot check the \
             operating-system user of the server's process"
        );
        assert!(settings("host=db requirepeer=postgres").is_ok());
    }

    #[test]
    fn malformed_strings_get_libpq_messages() {
        assert_eq!(
            split("host=db sslmode").unwrap_err(),
            "missing \"=\" after \"sslmode\" in connection info string"
        );
        assert_eq!(
            split("sslrootcert='/x").unwrap_err(),
            "unterminated quoted string in connection info string"
        );
        assert_eq!(
            split("postgresql://db/app?sslmode").unwrap_err(),
            "missing key/value separator \"=\" in URI query parameter: \"sslmode\""
        );
        assert_eq!(
            split("postgresql://db/app?sslmode=%zz").unwrap_err(),
            "invalid percent-encoded token: \"%zz\""
        );
        assert_eq!(
            split("postgresql://db/app?sslkey=a%00").unwrap_err(),
            "forbidden value %00 in percent-encoded value: \"a%00\""
        );
        assert_eq!(
            split("postgresql://[::1/app").unwrap_err(),
            "end of string reached when looking for matching \"]\" in IPv6 host address in \
             URI: \"postgresql://[::1/app\""
        );
        assert_eq!(
            split("host=db sslmode=require foo=1").unwrap_err(),
            "invalid connection option \"foo\""
        );
        assert_eq!(
            split("postgresql://db/app?foo=1").unwrap_err(),
            "invalid URI query parameter: \"foo\""
        );
        assert_eq!(
            split("postgresql://db/app?sslmode=a=b").unwrap_err(),
            "extra key/value separator \"=\" in URI query parameter: \"sslmode\""
        );
        // A value that is not UTF-8 is refused after the rest was read: libpq's message first.
        assert_eq!(
            split("postgresql://db/app%ff?x").unwrap_err(),
            "missing key/value separator \"=\" in URI query parameter: \"x\""
        );
        assert_eq!(
            split("postgresql://db/app%ff").unwrap_err(),
            "percent-encoded value is not UTF-8: \"app%ff\""
        );
        // A password is named, not shown.
        for url in [
            "postgresql://u:s%ffcret@db/app",
            "postgresql://db/app?sslpassword=s%ffcret",
        ] {
            let message = split(url).unwrap_err();
            assert!(message.ends_with("password (not shown)"), "{message}");
            assert!(!message.contains("cret"), "{message}");
        }
        assert_eq!(
            split("postgresql://[]/app").unwrap_err(),
            "IPv6 host address may not be empty in URI: \"postgresql://[]/app\""
        );
        assert_eq!(
            split("postgresql://[::1]x/app").unwrap_err(),
            "unexpected character \"x\" at position 19 in URI (expected \":\" or \"/\"): \
             \"postgresql://[::1]x/app\""
        );
    }
}
