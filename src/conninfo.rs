//! PostgreSQL connection strings read as libpq reads them, and named in messages.
//!
//! The `postgres` crate parses libpq's `key=value` strings and `postgresql://` URLs, but takes
//! nothing from the environment and has no default host, where libpq's is its Unix socket
//! directory: `dbname=app`, which `psql` takes, fails there with "both host and hostaddr are
//! missing". [`config`] parses the string, then fills in what it leaves unset as libpq does:
//!
//! | setting           | from the environment | else                                         |
//! |-------------------|----------------------|----------------------------------------------|
//! | `host`            | `PGHOST` (a comma-separated list; a path is a Unix socket directory) | the Unix socket in `/var/run/postgresql` (where Debian's and Red Hat's PostgreSQL put it), or in `/tmp` (PostgreSQL's own default): those of the two that hold the port's socket, else both, tried in that order |
//! | `port`            | `PGPORT`             | 5432                                         |
//! | `user`            | `PGUSER`             | the operating-system user (the crate's default) |
//! | `dbname`          | `PGDATABASE`         | the user name (the server's default)          |
//! | `password`        | `PGPASSWORD`         | the password file (below), else none         |
//! | `connect_timeout` | `PGCONNECT_TIMEOUT`  | none                                         |
//!
//! A `hostaddr` in the string counts as a host. Not read, unlike libpq: service files.
//!
//! # TLS
//!
//! [`connect`] offers TLS as libpq does for the `sslmode` values the `postgres` crate knows:
//! `prefer` (the default: TLS if the server has it, else plain), `require` (TLS or nothing)
//! and `disable`. As libpq's `prefer` and `require`, it encrypts without checking the
//! server's certificate: that is what `verify-ca` and `verify-full` are for, which the crate
//! does not parse (a connection string that names them is refused), so pgdict does not check
//! certificates. A Unix socket never uses TLS (the server offers none there).
//!
//! # The password file
//!
//! `PGPASSFILE`, else `~/.pgpass`: lines `hostname:port:database:username:password`, where `*`
//! matches anything, `\` escapes a `:` or a `\`, and lines starting with `#` are comments.
//! The first line that matches gives the password, as in libpq's `passwordFromFile`: a Unix
//! socket in a default directory (above) matches `localhost`, the port defaults to 5432, the
//! user to the operating-system user and the database to the user. libpq looks a password up
//! for each host it tries; the `postgres` crate takes one password for all of them, so it is
//! the first host's. A file that is not a plain file, or that its group or others may read
//! (permissions other than u=rw), is ignored with a warning on standard error, as libpq
//! ignores it.

use std::path::Path;
use std::time::Duration;

use postgres::config::Host;
use postgres::Config;

/// Connects as [`config`] says, offering TLS as its `sslmode` says (see "TLS" in the module
/// documentation).
pub fn connect(config: &Config) -> Result<postgres::Client, postgres::Error> {
    config.connect(tls::encrypt_only())
}

/// A TLS client that encrypts and does not check the server's certificate, as libpq's
/// `sslmode=prefer` and `require` do.
mod tls {
    use std::sync::Arc;

    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::crypto::{ring, CryptoProvider};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
    use tokio_postgres_rustls::MakeRustlsConnect;

    /// The connector for [`super::connect`].
    pub fn encrypt_only() -> MakeRustlsConnect {
        let provider = Arc::new(ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth();
        MakeRustlsConnect::new(config)
    }

    /// Takes any certificate, but checks that the server holds its key: the handshake's
    /// signatures are verified, so the session is encrypted to whoever answered.
    #[derive(Debug)]
    struct AnyCertificate(Arc<CryptoProvider>);

    impl ServerCertVerifier for AnyCertificate {
        fn verify_server_cert(
            &self,
            _end_entity: &CertificateDer<'_>,
            _intermediates: &[CertificateDer<'_>],
            _server_name: &ServerName<'_>,
            _ocsp_response: &[u8],
            _now: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            signature: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(
                message,
                cert,
                signature,
                &self.0.signature_verification_algorithms,
            )
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            signature: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(
                message,
                cert,
                signature,
                &self.0.signature_verification_algorithms,
            )
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
}

/// The Unix socket directories tried when neither the string nor `PGHOST` names a host.
pub const DEFAULT_SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// Parses `conninfo` and fills in what it leaves unset from the environment and libpq's
/// defaults (see the module documentation), to connect with. The error says what is wrong,
/// for messages.
pub fn config(conninfo: &str) -> Result<Config, String> {
    config_with_env(conninfo, |name| std::env::var(name).ok(), Passwords::Look)
}

/// [`config`] for naming the server in messages: it does not look in the password file (nor
/// warn about it).
pub fn config_for_messages(conninfo: &str) -> Result<Config, String> {
    config_with_env(conninfo, |name| std::env::var(name).ok(), Passwords::Skip)
}

/// Whether [`config_with_env`] looks a password up in the password file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passwords {
    /// As libpq does when it connects.
    Look,
    /// Never: the configuration only names the server.
    Skip,
}

/// [`config`] with the environment given by `env` (a variable's value, if set).
pub fn config_with_env(
    conninfo: &str,
    env: impl Fn(&str) -> Option<String>,
    passwords: Passwords,
) -> Result<Config, String> {
    let mut config: Config = conninfo
        .parse()
        .map_err(|e: postgres::Error| crate::dict::describe_pg_error(&e))?;
    // An empty variable counts as unset, as in libpq.
    let env = |name: &str| env(name).filter(|value| !value.is_empty());
    if config.get_ports().is_empty() {
        if let Some(ports) = env("PGPORT") {
            for port in ports.split(',') {
                let number = port.trim().parse::<u16>().ok().filter(|&p| p != 0);
                config.port(number.ok_or_else(|| {
                    format!("PGPORT={ports} is not a port number (or a list of them)")
                })?);
            }
        }
    }
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        match env("PGHOST") {
            Some(hosts) => {
                for host in hosts.split(',') {
                    config.host(host.trim());
                }
            }
            None => {
                // The directories that hold the port's socket (so that messages name the
                // server connected to), else both (so that the error says where it looked).
                let port = config.get_ports().first().copied().unwrap_or(5432);
                let socket = |dir: &&str| Path::new(dir).join(format!(".s.PGSQL.{port}")).exists();
                let found: Vec<&str> = DEFAULT_SOCKET_DIRS.into_iter().filter(socket).collect();
                let dirs = if found.is_empty() {
                    &DEFAULT_SOCKET_DIRS[..]
                } else {
                    &found[..]
                };
                for &dir in dirs {
                    config.host(dir);
                }
            }
        }
    }
    if config.get_user().is_none() {
        if let Some(user) = env("PGUSER") {
            config.user(&user);
        }
    }
    if config.get_dbname().is_none() {
        if let Some(dbname) = env("PGDATABASE") {
            config.dbname(&dbname);
        }
    }
    if config.get_password().is_none() {
        let from_file = || match passwords {
            Passwords::Look => password_from_file(&config, &env),
            Passwords::Skip => None,
        };
        if let Some(password) = env("PGPASSWORD").or_else(from_file) {
            config.password(password);
        }
    }
    if config.get_connect_timeout().is_none() {
        if let Some(seconds) = env("PGCONNECT_TIMEOUT") {
            let seconds = seconds
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("PGCONNECT_TIMEOUT={seconds} is not a number of seconds"))?;
            // libpq: zero (or less) waits forever; under 2 s counts as 2.
            if seconds > 0 {
                config.connect_timeout(Duration::from_secs(seconds.max(2)));
            }
        }
    }
    Ok(config)
}

/// The password the password file holds for `config`'s first host (see "The password file"
/// in the module documentation), if there is one.
fn password_from_file(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;

    let path = match env("PGPASSFILE") {
        Some(path) => std::path::PathBuf::from(path),
        None => std::path::Path::new(&env("HOME")?).join(".pgpass"),
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
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        Some(Host::Unix(dir)) if DEFAULT_SOCKET_DIRS.iter().any(|d| dir == Path::new(d)) => {
            "localhost".into()
        }
        Some(Host::Unix(dir)) => dir.to_str()?.to_string(),
        None => config.get_hostaddrs().first()?.to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = match config.get_user() {
        Some(user) => user.to_string(),
        None => whoami::username().ok()?,
    };
    let dbname = config.get_dbname().unwrap_or(&user).to_string();
    let file = std::fs::read(&path).ok()?;
    password_in(&file, [&host, &port, &dbname, &user])
}

/// The password of the first line of a password file whose fields match `wanted` (host, port,
/// database, user).
fn password_in(file: &[u8], wanted: [&str; 4]) -> Option<String> {
    file.split(|&b| b == b'\n').find_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
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
        String::from_utf8(password).ok()
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

/// The servers `config` connects to, for messages: `host:port` for each TCP host (IPv6
/// addresses in brackets), the socket's path for a Unix socket directory; never the password.
pub fn servers(config: &Config) -> String {
    let ports = config.get_ports();
    let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    let tcp = |name: &str, i: usize| match name.contains(':') {
        true => format!("[{name}]:{}", port(i)),
        false => format!("{name}:{}", port(i)),
    };
    let names: Vec<String> = if config.get_hosts().is_empty() {
        let addrs = config.get_hostaddrs();
        addrs
            .iter()
            .enumerate()
            .map(|(i, addr)| tcp(&addr.to_string(), i))
            .collect()
    } else {
        config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, host)| match host {
                Host::Tcp(name) => tcp(name, i),
                Host::Unix(dir) => format!("{}/.s.PGSQL.{}", dir.display(), port(i)),
            })
            .collect()
    };
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with_env(conninfo: &str, vars: &[(&str, &str)]) -> Result<Config, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        config_with_env(conninfo, |name| vars.get(name).cloned(), Passwords::Look)
    }

    #[test]
    fn a_string_without_host_uses_the_socket_directories() {
        // A port no server listens on here: both directories.
        let config = with_env("dbname=app port=9", &[]).unwrap();
        assert_eq!(
            servers(&config),
            "/var/run/postgresql/.s.PGSQL.9, /tmp/.s.PGSQL.9"
        );
        assert_eq!(config.get_dbname(), Some("app"));
        // The URL form too, and an empty PGHOST counts as unset.
        let config = with_env("postgresql:///app?port=9", &[("PGHOST", "")]).unwrap();
        assert_eq!(config.get_hosts().len(), 2);
        // Only the directory that holds the port's socket (a file stands in for it).
        let port = 20_000 + std::process::id() % 10_000;
        let socket = std::path::PathBuf::from(format!("/tmp/.s.PGSQL.{port}"));
        std::fs::write(&socket, b"").unwrap();
        let config = with_env(&format!("port={port}"), &[]);
        std::fs::remove_file(&socket).unwrap();
        assert_eq!(servers(&config.unwrap()), format!("/tmp/.s.PGSQL.{port}"));
    }

    #[test]
    fn the_environment_fills_in_what_the_string_leaves_unset() {
        let vars = [
            ("PGHOST", "db1,/run/pg"),
            ("PGPORT", "6543"),
            ("PGUSER", "app"),
            ("PGDATABASE", "events"),
            ("PGPASSWORD", "secret"),
            ("PGCONNECT_TIMEOUT", "1"),
        ];
        let config = with_env("", &vars).unwrap();
        assert_eq!(servers(&config), "db1:6543, /run/pg/.s.PGSQL.6543");
        assert_eq!(config.get_user(), Some("app"));
        assert_eq!(config.get_dbname(), Some("events"));
        assert_eq!(config.get_password(), Some(&b"secret"[..]));
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(2)));
        // What the string says wins.
        let config = with_env(
            "host=10.0.0.1 port=5433 user=u dbname=d password=p connect_timeout=9",
            &vars,
        )
        .unwrap();
        assert_eq!(servers(&config), "10.0.0.1:5433");
        assert_eq!(config.get_user(), Some("u"));
        assert_eq!(config.get_dbname(), Some("d"));
        assert_eq!(config.get_password(), Some(&b"p"[..]));
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(9)));
        // A hostaddr is a host.
        let config = with_env("hostaddr=::1", &vars).unwrap();
        assert_eq!(servers(&config), "[::1]:6543");
    }

    #[test]
    fn the_password_file_gives_the_first_matching_line() {
        let file = b"# comment\r\n\
            db1:5432:app:alice:first\n\
            \n\
            *:*:app:bob:b\\:ob\\\\pw:ignored\n\
            localhost:6543:*:*:socket\r\n\
            ho\\:st:*:*:*:escaped host\n\
            *:*:*:*:anything";
        let find = |wanted: [&str; 4]| password_in(file, wanted);
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

    #[test]
    fn the_password_file_is_found_and_checked() {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "localhost:5432:app:alice:secret\n").unwrap();
        let file = path.display().to_string();
        let vars = [("PGPASSFILE", file.as_str()), ("PGUSER", "alice")];
        let password = |vars: &[(&str, &str)]| {
            with_env("dbname=app", vars)
                .unwrap()
                .get_password()
                .map(<[u8]>::to_vec)
        };
        // The default socket directories are `localhost` to the file.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(password(&vars), Some(b"secret".to_vec()));
        // PGPASSWORD and the string come first.
        let with_password = [vars[0], vars[1], ("PGPASSWORD", "env")];
        assert_eq!(password(&with_password), Some(b"env".to_vec()));
        // Another host, or a file others may read: none.
        assert_eq!(
            with_env("host=db9 dbname=app", &vars)
                .unwrap()
                .get_password(),
            None
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(password(&vars), None);
        // ~/.pgpass when PGPASSFILE is not set.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::rename(&path, dir.path().join(".pgpass")).unwrap();
        let home = dir.path().display().to_string();
        assert_eq!(
            password(&[("HOME", home.as_str()), ("PGUSER", "alice")]),
            Some(b"secret".to_vec())
        );
    }

    #[test]
    fn bad_values_are_named() {
        let err = with_env("", &[("PGPORT", "54x")]).unwrap_err();
        assert_eq!(err, "PGPORT=54x is not a port number (or a list of them)");
        let err = with_env("", &[("PGCONNECT_TIMEOUT", "soon")]).unwrap_err();
        assert_eq!(err, "PGCONNECT_TIMEOUT=soon is not a number of seconds");
        assert!(with_env("port=x", &[]).is_err());
    }
}
