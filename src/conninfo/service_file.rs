//! Connection service files, read as libpq's `parseServiceInfo` and `parseServiceFile` (in
//! PostgreSQL's `fe-connect.c`) read them.
//!
//! A service is named by `service=` in the connection string, else by `PGSERVICE`. It is
//! looked for in the user's file (`PGSERVICEFILE`, which must open: else libpq's error
//! `service file "..." not found`; unset, `~/.pg_service.conf` if it exists), then in the
//! system's (`PGSYSCONFDIR/pg_service.conf`, else Debian's
//! `/etc/postgresql-common/pg_service.conf`, if it exists). A file holds groups:
//!
//! ```text
//! # a comment
//! [reports]
//! host=db1.example.com
//! dbname=reports
//! ```
//!
//! A line that does not fit libpq's buffer (1,022 bytes and its newline) is an error anywhere in
//! the file. Lines are trimmed of C's white space (not Unicode's); blank lines and `#` comments are skipped; `[name]` starts a group; in
//! the group sought, each line is `keyword=value`, split at the first `=` and taken as it is
//! (no quotes), the first of a keyword given twice counting. The group ends at the next `[`.
//! A line without `=`, or a keyword libpq does not know (`requiressl` among them: libpq reads
//! it in a string only), is a syntax error; `service` is refused there.
//! What the connection string sets wins over the service, and the service over the
//! environment.

use std::path::{Path, PathBuf};

/// Debian's libpq looks for the system's service file here (`pg_config --sysconfdir`).
const SYSTEM_CONFIG_DIR: &str = "/etc/postgresql-common";

/// The settings of service `name` (keyword, value, in the file's order), from the first file
/// that defines it (see the module documentation); an error if none does, or if the group
/// has a line libpq would refuse.
pub fn settings(
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    // The file PGSERVICEFILE names must open (even when it is empty, as libpq's fopen of "");
    // the default files are skipped when they do not exist.
    let user_file = match env("PGSERVICEFILE") {
        Some(file) => Some((PathBuf::from(file), true)),
        None => env("HOME").map(|home| (Path::new(&home).join(".pg_service.conf"), false)),
    };
    let system_file = (system_file(env), false);
    for (file, must_open) in user_file.iter().chain([&system_file]) {
        if !must_open && !file.exists() {
            continue;
        }
        let text = match std::fs::read(file) {
            Ok(text) => text,
            // A directory opens in C, and reads as no lines.
            Err(_) if file.is_dir() => Vec::new(),
            Err(_) => return Err(format!("service file \"{}\" not found", file.display())),
        };
        if let Some(settings) = group(&text, name, file)? {
            return Ok(settings);
        }
    }
    Err(format!("definition of service \"{name}\" not found"))
}

/// libpq reads a service file line into 1024 bytes, and refuses one that fills 1023 of them,
/// its newline counted.
const MAX_LINE_LEN: usize = 1022;

/// C's `isspace` in the C locale, which libpq trims lines of (not Unicode's white space).
fn is_c_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// The system's service file: libpq's "%s/pg_service.conf" of PGSYSCONFDIR (empty, the root
/// directory's, not the current one's), else of Debian's directory.
fn system_file(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let dir = env("PGSYSCONFDIR").unwrap_or_else(|| SYSTEM_CONFIG_DIR.into());
    PathBuf::from(format!("{dir}/pg_service.conf"))
}

/// The settings of group `name` in a service file's `text`, if it has the group.
fn group(text: &[u8], name: &str, file: &Path) -> Result<Option<Vec<(String, String)>>, String> {
    let mut settings: Option<Vec<(String, String)>> = None;
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    for (number, &line) in lines.iter().enumerate() {
        let has_newline = number + 1 < lines.len();
        if line.len() + usize::from(has_newline) > MAX_LINE_LEN {
            return Err(format!(
                "line {} too long in service file \"{}\"",
                number + 1,
                file.display()
            ));
        }
        let start = line
            .iter()
            .position(|&b| !is_c_space(b))
            .unwrap_or(line.len());
        let end = line
            .iter()
            .rposition(|&b| !is_c_space(b))
            .map_or(start, |last| last + 1);
        let line = String::from_utf8_lossy(&line[start..end]);
        let line = line.as_ref();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            if settings.is_some() {
                break;
            }
            // libpq compares the name, then wants `]` right after it.
            if header
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(']'))
            {
                settings = Some(Vec::new());
            }
            continue;
        }
        let Some(settings) = settings.as_mut() else {
            continue;
        };
        let error = |what: &str| {
            format!(
                "{what} in service file \"{}\", line {}",
                file.display(),
                number + 1
            )
        };
        let Some((keyword, value)) = line.split_once('=') else {
            return Err(error("syntax error"));
        };
        if keyword == "service" {
            return Err(error("nested service specifications not supported"));
        }
        if !super::keywords::LIBPQ_KEYWORDS.contains(&keyword) {
            return Err(error("syntax error"));
        }
        if !settings.iter().any(|(known, _)| known == keyword) {
            settings.push((keyword.to_string(), value.to_string()));
        }
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_read_as_libpq_reads_it() {
        let file = b"# services\n\
            [other]\n\
            host=elsewhere\n\
            not a setting line, outside the group sought\n\
            \n\
            [reports]  \n\
            \thost=db1,db2\n\
            dbname=my reports\n\
            options=-c search_path=r\n\
            host=ignored, the first counts\n\
            [later]\n\
            user=x\n";
        let settings = group(file, "reports", Path::new("f")).unwrap().unwrap();
        let expected = [
            ("host", "db1,db2"),
            ("dbname", "my reports"),
            ("options", "-c search_path=r"),
        ];
        assert_eq!(
            settings,
            expected.map(|(k, v)| (k.to_string(), v.to_string()))
        );
        assert_eq!(group(file, "report", Path::new("f")).unwrap(), None);
        assert_eq!(group(file, "missing", Path::new("f")).unwrap(), None);
    }

    #[test]
    fn bad_lines_in_the_group_are_named() {
        let error = |text: &[u8]| group(text, "s", Path::new("/etc/x")).unwrap_err();
        assert_eq!(
            error(b"[s]\nhost db1\n"),
            "syntax error in service file \"/etc/x\", line 2"
        );
        assert_eq!(
            error(b"[s]\n\nhots=db1\n"),
            "syntax error in service file \"/etc/x\", line 3"
        );
        // libpq reads requiressl in a string, not in a service file (psql: a syntax error).
        assert_eq!(
            error(b"[s]\nrequiressl=1\n"),
            "syntax error in service file \"/etc/x\", line 2"
        );
        assert_eq!(
            error(b"[s]\nservice=t\n"),
            "nested service specifications not supported in service file \"/etc/x\", line 2"
        );
        // Trimmed of C's white space only (psql: a syntax error; U+00A0 kept in a value).
        assert_eq!(
            error("[s]\n\u{a0}user=x\n".as_bytes()),
            "syntax error in service file \"/etc/x\", line 2"
        );
        let settings = group(
            "[s]\n\x0buser=bob\u{a0}\x0b\n".as_bytes(),
            "s",
            Path::new("f"),
        );
        assert_eq!(
            settings.unwrap().unwrap(),
            [("user".to_string(), "bob\u{a0}".to_string())]
        );
        // A line of 1022 bytes and its newline is too long for libpq's buffer, anywhere in
        // the file (psql: 1021 bytes read, 1022 refused); the last line has no newline.
        let line = |len: usize| format!("#{}", "x".repeat(len - 1));
        let file = |last: &str| format!("[t]\n{}\n[s]\nport=1\n{last}", line(1021));
        assert!(group(file("").as_bytes(), "s", Path::new("f")).is_ok());
        assert!(group(file(&line(1022)).as_bytes(), "s", Path::new("f")).is_ok());
        assert_eq!(
            error(file(&line(1023)).as_bytes()),
            "line 5 too long in service file \"/etc/x\""
        );
        assert_eq!(
            error(format!("{}\n", line(1022)).as_bytes()),
            "line 1 too long in service file \"/etc/x\""
        );
    }

    #[test]
    fn the_user_file_comes_before_the_system_file() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.conf");
        let system = dir.path().join("etc");
        std::fs::create_dir(&system).unwrap();
        std::fs::write(&user, "[a]\nport=1\n").unwrap();
        std::fs::write(system.join("pg_service.conf"), "[a]\nport=2\n[b]\nport=3\n").unwrap();
        let (user, system) = (user.display().to_string(), system.display().to_string());
        let env = |name: &str| match name {
            "PGSERVICEFILE" => Some(user.clone()),
            "PGSYSCONFDIR" => Some(system.clone()),
            _ => None,
        };
        let port = |name: &str| settings(name, &env).map(|s| s[0].1.clone());
        assert_eq!(port("a").as_deref(), Ok("1"));
        assert_eq!(port("b").as_deref(), Ok("3"));
        assert_eq!(
            port("c").unwrap_err(),
            "definition of service \"c\" not found"
        );
        // A PGSERVICEFILE that does not open is libpq's error, even when empty; a system
        // directory without the file is passed over.
        let missing = dir.path().join("missing.conf").display().to_string();
        for named in [missing.as_str(), ""] {
            let env = |name: &str| match name {
                "PGSERVICEFILE" => Some(named.to_string()),
                "PGSYSCONFDIR" => Some(system.clone()),
                _ => None,
            };
            assert_eq!(
                settings("b", &env).unwrap_err(),
                format!("service file \"{named}\" not found")
            );
        }
        let env = |name: &str| match name {
            "PGSERVICEFILE" => Some(user.clone()),
            "PGSYSCONFDIR" => Some(String::new()),
            _ => None,
        };
        assert_eq!(
            settings("b", &env).unwrap_err(),
            "definition of service \"b\" not found"
        );
        assert_eq!(system_file(&env), Path::new("/pg_service.conf"));
        assert_eq!(
            system_file(&|_| None),
            Path::new("/etc/postgresql-common/pg_service.conf")
        );
    }
}
