//! Taking the settings pgdict reads itself out of a connection string, for the `postgres` crate
//! cannot parse them: it knows `sslmode` only as `disable`, `prefer` or `require`, and refuses
//! `sslrootcert`, `sslcert`, `sslkey`, `sslpassword` and `service` as unknown options.
//!
//! Both of libpq's forms are read as libpq reads them (`conninfo_parse` and
//! `conninfo_uri_parse` in PostgreSQL's `fe-connect.c`):
//!
//! - `key=value` pairs separated by white space; white space may surround the `=`; a value is
//!   a single-quoted string (in which `\` makes the next character literal) or runs to the next
//!   white space (in which, too, `\` makes the next character literal).
//! - a URL, `postgresql://` or `postgres://`, whose query string (after the first `?`) holds
//!   `key=value` pairs separated by `&`, each percent-encoded.
//!
//! The rest of the string is given to the crate as it was, byte for byte, but for the pairs
//! taken out.

use std::ops::Range;

/// The keywords [`split`] takes out: the TLS settings and the service.
pub const TAKEN_KEYWORDS: [&str; 6] = [
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslpassword",
    "service",
];

/// A connection string without the settings pgdict reads itself, and those settings
/// (keyword, value), in the order the string gives them (a keyword given twice: the later one
/// wins, as in libpq).
#[derive(Debug, PartialEq, Eq)]
pub struct Split {
    /// The string without them.
    pub rest: String,
    /// The settings taken out: keyword, value (unquoted, unescaped, decoded).
    pub taken: Vec<(String, String)>,
}

/// Splits `conninfo` (see the module documentation). The error is libpq's message for a string
/// it cannot parse.
pub fn split(conninfo: &str) -> Result<Split, String> {
    if conninfo.starts_with("postgresql://") || conninfo.starts_with("postgres://") {
        split_url(conninfo)
    } else {
        split_pairs(conninfo)
    }
}

fn split_pairs(conninfo: &str) -> Result<Split, String> {
    let mut rest = String::new();
    let mut taken = Vec::new();
    let mut kept_up_to = 0;
    for pair in pairs(conninfo)? {
        if TAKEN_KEYWORDS.contains(&pair.key.as_str()) {
            rest.push_str(&conninfo[kept_up_to..pair.span.start]);
            kept_up_to = pair.span.end;
            taken.push((pair.key, pair.value));
        }
    }
    rest.push_str(&conninfo[kept_up_to..]);
    Ok(Split { rest, taken })
}

/// One `key=value` pair of a string in that form.
struct Pair {
    key: String,
    value: String,
    /// From the key's first byte to the value's last.
    span: Range<usize>,
}

fn pairs(conninfo: &str) -> Result<Vec<Pair>, String> {
    let bytes = conninfo.as_bytes();
    let mut pairs = Vec::new();
    let mut at = 0;
    let skip_space = |mut at: usize| {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
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
        while at < bytes.len() && bytes[at] != b'=' && !bytes[at].is_ascii_whitespace() {
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
            while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
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
        pairs.push(Pair {
            key,
            value,
            span: start..at,
        });
    }
}

fn split_url(conninfo: &str) -> Result<Split, String> {
    let Some((base, query)) = conninfo.split_once('?') else {
        return Ok(Split {
            rest: conninfo.to_string(),
            taken: Vec::new(),
        });
    };
    let mut kept = Vec::new();
    let mut taken = Vec::new();
    for parameter in query.split('&') {
        let Some((key, value)) = parameter.split_once('=') else {
            return Err(format!(
                "missing key/value separator \"=\" in URI query parameter: \"{parameter}\""
            ));
        };
        let key = decode(key)?;
        if TAKEN_KEYWORDS.contains(&key.as_str()) {
            taken.push((key, decode(value)?));
        } else {
            kept.push(parameter);
        }
    }
    let rest = match kept.is_empty() {
        true => base.to_string(),
        false => format!("{base}?{}", kept.join("&")),
    };
    Ok(Split { rest, taken })
}

/// A percent-encoded URL component, decoded; libpq refuses `%00` and a `%` not followed by two
/// hexadecimal digits.
fn decode(component: &str) -> Result<String, String> {
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
    percent_encoding::percent_decode_str(component)
        .decode_utf8()
        .map(|decoded| decoded.into_owned())
        .map_err(|_| format!("percent-encoded value is not UTF-8: \"{component}\""))
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
    fn pairs_are_taken_out_and_the_rest_kept_as_it_was() {
        let taken = split(
            "host=db  sslmode = verify-full port=5433 sslrootcert='/etc/my ca\\'s.crt'\tdbname=x",
        )
        .unwrap();
        assert_eq!(taken.rest, "host=db   port=5433 \tdbname=x");
        assert_eq!(
            taken.taken,
            pairs_of(&[
                ("sslmode", "verify-full"),
                ("sslrootcert", "/etc/my ca's.crt")
            ])
        );
        // An escaped space in an unquoted value; a quoted value with an escaped backslash.
        let taken = split("sslcert=/a\\ b.crt sslkey='c\\\\d' user=u service=s").unwrap();
        assert_eq!(taken.rest, "  user=u ");
        assert_eq!(
            taken.taken,
            pairs_of(&[
                ("sslcert", "/a b.crt"),
                ("sslkey", "c\\d"),
                ("service", "s")
            ])
        );
        // Other keywords, however they look, go on untouched.
        let taken = split("password='a b' options='-c x=1'").unwrap();
        assert_eq!(taken.rest, "password='a b' options='-c x=1'");
        assert!(taken.taken.is_empty());
        assert_eq!(split_pairs("").unwrap().rest, "");
    }

    #[test]
    fn a_url_query_loses_its_tls_parameters() {
        let taken = split(
            "postgresql://u@db:5433/app?sslmode=verify-ca&connect_timeout=5&sslrootcert=%2Fe%20c.crt",
        )
        .unwrap();
        assert_eq!(taken.rest, "postgresql://u@db:5433/app?connect_timeout=5");
        assert_eq!(
            taken.taken,
            pairs_of(&[("sslmode", "verify-ca"), ("sslrootcert", "/e c.crt")])
        );
        let taken = split("postgres://db/app?sslmode=require").unwrap();
        assert_eq!(taken.rest, "postgres://db/app");
        assert_eq!(taken.taken, pairs_of(&[("sslmode", "require")]));
        let taken = split("postgresql:///app").unwrap();
        assert_eq!(taken.rest, "postgresql:///app");
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
    }
}
