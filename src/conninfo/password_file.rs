//! The password file, read as libpq's `passwordFromFile` reads it (see "The password file" in
//! the module documentation of [`super`]).

use std::path::Path;

use postgres::Config;

use super::{Target, DEFAULT_SOCKET_DIRS};

/// The bytes of the password file (`passfile`, the connection's `passfile` setting, from its
/// string, service or `PGPASSFILE`; unset or empty, `~/.pgpass` in the home directory that
/// `env("HOME")` names; see "The password file" in the module documentation of [`super`]),
/// if there is a file libpq would read; a file others may read is ignored with a warning on
/// standard error, as libpq ignores it.
pub fn read(passfile: Option<String>, env: &dyn Fn(&str) -> Option<String>) -> Option<Vec<u8>> {
    use std::os::unix::fs::PermissionsExt;

    let path = match passfile.filter(|path| !path.is_empty()) {
        Some(path) => std::path::PathBuf::from(path),
        None => Path::new(&env("HOME")?).join(".pgpass"),
    };
    let metadata = std::fs::metadata(&path).ok()?;
    if !metadata.is_file() {
        eprintln!(
            "warning: password file \"{}\" is not a plain file",
            path.display()
        );
        return None;
    }
    if metadata.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "warning: password file \"{}\" has group or world access; permissions should be \
             u=rw (0600) or less",
            path.display()
        );
        return None;
    }
    std::fs::read(&path).ok()
}

/// The password `file` holds for the database and user of `config`, and for `target`'s host
/// (its address as given, when it names no host) and port (as given: libpq matches the text).
pub(super) fn password_for(file: &[u8], config: &Config, target: &Target) -> Option<Vec<u8>> {
    // A default socket directory is `localhost`: the one pgdict chose (none was named), or the
    // one Debian's libpq was built with, named as libpq spells it (`strcmp`: not
    // `/var/run/postgresql/`).
    let host = match target.host.as_deref() {
        Some(dir)
            if dir.starts_with('/') && (target.default_socket || dir == DEFAULT_SOCKET_DIRS[0]) =>
        {
            "localhost".into()
        }
        Some(name) => name.to_string(),
        None => target.hostaddr.as_ref()?.1.clone(),
    };
    let port = &target.port_text;
    let user = match config.get_user() {
        Some(user) => user.to_string(),
        None => whoami::username().ok()?,
    };
    let dbname = config.get_dbname().unwrap_or(&user).to_string();
    password_in(file, [&host, port, &dbname, &user])
}

/// The password of the first line of a password file whose fields match `wanted` (host, port,
/// database, user): bytes, as libpq sends them, UTF-8 or not.
fn password_in(file: &[u8], wanted: [&str; 4]) -> Option<Vec<u8>> {
    file.split(|&b| b == b'\n').find_map(|line| {
        // libpq's pg_strip_crlf: every carriage return at the end.
        let end = line
            .iter()
            .rposition(|&b| b != b'\r')
            .map_or(0, |last| last + 1);
        let line = &line[..end];
        if line.is_empty() || line.starts_with(b"#") {
            return None;
        }
        let rest = wanted
            .iter()
            .try_fold(line, |rest, value| field_matches(rest, value.as_bytes()))?;
        // The password: up to an unescaped `:`, escapes undone.
        let mut password = Vec::new();
        let mut bytes = rest.iter();
        while let Some(&b) = bytes.next() {
            match b {
                b':' => break,
                b'\\' => password.push(*bytes.next().unwrap_or(&b'\\')),
                b => password.push(b),
            }
        }
        Some(password)
    })
}

/// The rest of `line` after its first field, if that field is `*` or `value`; a `\` makes the
/// byte after it literal, and an unescaped `:` ends the field.
fn field_matches<'a>(line: &'a [u8], value: &[u8]) -> Option<&'a [u8]> {
    if let Some(rest) = line.strip_prefix(b"*:") {
        return Some(rest);
    }
    let mut want = value.iter();
    let mut at = 0;
    loop {
        let mut byte = *line.get(at)?;
        let escaped = byte == b'\\';
        if escaped {
            at += 1;
            byte = *line.get(at)?;
        }
        at += 1;
        match want.next() {
            None if byte == b':' && !escaped => return Some(&line[at..]),
            Some(&w) if w == byte => {}
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_file_gives_the_first_matching_line() {
        let file = b"# comment\r\n\
            db1:5432:app:alice:first\n\
            \n\
            *:*:app:bob:b\\:ob\\\\pw:ignored\n\
            localhost:6543:*:*:socket\r\n\
            ho\\:st:*:*:*:escaped host\n\
            *:*:*:*:anything";
        let find = |wanted: [&str; 4]| {
            password_in(file, wanted).map(|password| String::from_utf8(password).unwrap())
        };
        assert_eq!(
            find(["db1", "5432", "app", "alice"]).as_deref(),
            Some("first")
        );
        assert_eq!(
            find(["db2", "5432", "app", "bob"]).as_deref(),
            Some("b:ob\\pw")
        );
        assert_eq!(
            find(["localhost", "6543", "x", "y"]).as_deref(),
            Some("socket")
        );
        assert_eq!(
            find(["ho:st", "1", "d", "u"]).as_deref(),
            Some("escaped host")
        );
        assert_eq!(
            find(["db1", "5433", "app", "alice"]).as_deref(),
            Some("anything")
        );
        assert_eq!(
            password_in(b"db1:5432:app:alice:pw", ["db", "5432", "app", "alice"]),
            None
        );
        assert_eq!(
            password_in(b"db1:5432:app", ["db1", "5432", "app", "alice"]),
            None
        );
    }

    /// As libpq: every carriage return ends a line, and the first matching line gives the
    /// password, UTF-8 or not (it skipped one that was not, for a later line's).
    #[test]
    fn line_ends_and_passwords_that_are_not_utf8() {
        let wanted = ["db", "5432", "app", "alice"];
        assert_eq!(
            password_in(b"db:5432:app:alice:pw\r\r\n", wanted),
            Some(b"pw".to_vec())
        );
        assert_eq!(
            password_in(b"db:5432:app:alice:p\xe9\n*:*:*:*:second\n", wanted),
            Some(b"p\xe9".to_vec())
        );
    }
}
