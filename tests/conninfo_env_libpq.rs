//! pgdict's whole reading of a connection string (`pgdict::conninfo::parse_with_env`: the
//! string, a service file, the `PG*` environment, the password file, libpq's defaults) against
//! libpq's, as `PQconnectStart` sets out to connect (`pgdict_pgref::libpq::connect_start`):
//! both take the same cases or both refuse them, and where both take them, the user, database,
//! each host's name, address and port, options, application name, connect timeout, sslmode,
//! certificate files, TLS versions, server name indication, channel binding and
//! target_session_attrs agree, and so does the password of the host libpq stopped at. A table
//! of cases, then generated ones (`PROPTEST_CASES`, 20,000 by default).
//!
//! Differences by design, each allowed where it shows: with no host named anywhere, pgdict
//! also tries the socket in `/tmp` (the cases name a host); a host list entry whose address
//! or port cannot be used is refused by pgdict, where libpq notes it and goes on to the next
//! host; a `connect_timeout` that is not a number is refused by pgdict as by psql, which
//! `PQconnectStart` does not check.
//!
//! libpq reads the process's environment, so the cases run one at a time (a lock), in a test
//! binary of their own (no other test changes the environment meanwhile). The hosts named
//! fail at once (Unix socket directories that do not exist, a closed local port): the
//! servers are never reached.

#![cfg(feature = "pg-store")]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use openssl::ssl::SslVersion;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use pgdict::conninfo::{numeric_address, parse_with_env, ConnInfo, Passwords, SessionTarget};
use pgdict_pgref::libpq::{self, Setting};
use postgres::config::Host;
use proptest::prelude::*;

/// libpq reads the process's environment: one case at a time sets it, in either test.
static ENVIRONMENT: Mutex<()> = Mutex::new(());

/// The settings libpq took, by keyword, as text.
type Settings = BTreeMap<String, Vec<u8>>;

fn text(settings: &Settings, keyword: &str) -> Option<String> {
    settings
        .get(keyword)
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

/// Sets the process's `PG*` environment to `vars`, every other `PG*` variable removed (the
/// other test's last case leaves its own), and holds it until the guard is dropped.
fn set_environment(vars: &[(&str, &str)]) -> std::sync::MutexGuard<'static, ()> {
    let environment = ENVIRONMENT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for (name, _) in std::env::vars() {
        if name.starts_with("PG") {
            std::env::remove_var(name);
        }
    }
    for (name, value) in vars {
        std::env::set_var(name, value);
    }
    environment
}

/// Sets the process's environment to `vars` ([`set_environment`]; `HOME` as libpq 15 finds
/// it, from the password database), then compares pgdict's reading of `conninfo` with
/// libpq's.
fn assert_read_as_libpq(conninfo: &str, vars: &[(&str, &str)]) {
    let _environment = set_environment(vars);
    let case = format!("{conninfo:?} with {vars:?}");
    let theirs = libpq::connect_start(conninfo);
    let home = std::env::home_dir().map(|dir| dir.display().to_string());
    let env = |name: &str| match name {
        "HOME" => home.clone(),
        _ => vars
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string()),
    };
    let ours = parse_with_env(conninfo, env, Passwords::Look);
    match (theirs, ours) {
        (Setting::Refused(_), Err(_)) => {}
        (Setting::Taken { settings, .. }, ours) if refused_once_waiting(&settings) => {
            assert!(ours.is_err(), "{case}: pgdict took it, psql refuses it")
        }
        (
            Setting::Taken {
                settings,
                host,
                port,
                password,
            },
            Ok(info),
        ) => {
            compare(&case, &settings, &info);
            compare_password(&case, (&host, &port), &password, &info);
        }
        (Setting::Taken { settings, .. }, Err(message))
            if skipped_by_libpq(&settings, &message) => {}
        (Setting::Refused(message), Ok(_)) => panic!("{case}: libpq refused it: {message}"),
        (Setting::Taken { settings, .. }, Err(message)) => {
            let settings: BTreeMap<&str, String> = settings
                .iter()
                .map(|(keyword, value)| (keyword.as_str(), String::from_utf8_lossy(value).into()))
                .collect();
            panic!("{case}: pgdict refused it ({message}), libpq took {settings:?}")
        }
    }
}

/// The one difference by design: pgdict refuses an entry of a list of hosts that cannot be
/// connected to as given (an address that does not read, a port out of range), where libpq,
/// reaching it, notes the error and goes on to the next host. (With one host, both refuse.)
fn skipped_by_libpq(settings: &Settings, message: &str) -> bool {
    let entries = |keyword| text(settings, keyword).filter(|list| !list.is_empty());
    let hosts = entries("hostaddr")
        .or_else(|| entries("host"))
        .map_or(1, |list| list.split(',').count());
    let per_host = ["is not an IP address", "is not a port number"];
    hosts > 1 && per_host.iter().any(|words| message.contains(words))
}

/// Whether libpq refuses what it took once it waits for the connection, as psql does:
/// `connect_timeout` is read then, as an integer with white space around it allowed.
fn refused_once_waiting(settings: &Settings) -> bool {
    text(settings, "connect_timeout").is_some_and(|seconds| seconds.trim().parse::<i32>().is_err())
}

/// The host names of a configuration, as text (a socket directory as its path).
fn host_names(config: &postgres::Config) -> Vec<String> {
    let names = config.get_hosts().iter().map(|host| match host {
        Host::Tcp(name) => name.clone(),
        Host::Unix(path) => path.display().to_string(),
    });
    names.collect()
}

/// A port as libpq gives it (white space around it allowed; empty is 5432).
fn libpq_port(text: &str) -> u16 {
    match text.trim() {
        "" => 5432,
        port => port.parse().expect("a port libpq took"),
    }
}

/// The password of the host libpq had reached (`at`: its host, or address, and port) is
/// pgdict's for that host.
fn compare_password(case: &str, at: (&[u8], &[u8]), password: &[u8], info: &ConnInfo) {
    let host = String::from_utf8_lossy(at.0);
    let port = libpq_port(&String::from_utf8_lossy(at.1));
    let names = |(config, socket): (&postgres::Config, &Option<String>)| {
        let addresses = config.get_hostaddrs().iter().map(|a| a.to_string());
        [
            host_names(config),
            addresses.collect(),
            socket.iter().cloned().collect(),
        ]
        .concat()
    };
    // An address as pgdict prints it (`127.1` is 127.0.0.1).
    let host = match numeric_address(&host) {
        Some(address) => address.to_string(),
        None => host.to_string(),
    };
    let (reached, _) = info
        .hosts()
        .iter()
        .zip(info.socket_names())
        .find(|&(config, socket)| {
            config.get_ports() == [port] && names((config, socket)).contains(&host)
        })
        .unwrap_or_else(|| panic!("{case}: libpq stopped at {host}:{port}, which pgdict lacks"));
    assert_eq!(
        reached.get_password().unwrap_or_default(),
        password,
        "{case}: password of {host}:{port}"
    );
}

fn compare(case: &str, theirs: &Settings, info: &ConnInfo) {
    let config = &info.config;
    let user = text(theirs, "user").expect("libpq always has a user");
    if let Some(ours) = config.get_user() {
        assert_eq!(ours, user, "{case}: user");
    }
    // libpq's default database is the user name; pgdict leaves that to the server.
    let dbname = text(theirs, "dbname").expect("libpq always has a database");
    assert_eq!(
        config.get_dbname().unwrap_or(&user),
        dbname,
        "{case}: dbname"
    );
    // One host each entry of `hostaddr`, else of `host` (else one): its name as given (an
    // empty entry is the default socket directory, which pgdict chooses otherwise: not
    // compared; beside an address, none, and a socket directory beside an address is left
    // out), its address, and its port (one for all, or one each; empty is 5432).
    let entries = |keyword| {
        let list = text(theirs, keyword).unwrap_or_default();
        (!list.is_empty()).then(|| list.split(',').map(str::to_string).collect::<Vec<_>>())
    };
    let (names, addresses) = (entries("host"), entries("hostaddr"));
    let count = addresses.as_ref().or(names.as_ref()).map_or(1, Vec::len);
    let ports = entries("port").unwrap_or_else(|| vec![String::new()]);
    let hosts = info.hosts();
    assert_eq!(hosts.len(), count, "{case}: hosts {hosts:?}");
    for (i, host) in hosts.iter().enumerate() {
        let entry = |list: &Option<Vec<String>>| {
            let entry = list.as_ref().and_then(|list| list.get(i).cloned());
            entry.filter(|entry| !entry.is_empty())
        };
        let ours = host_names(host);
        match entry(&names) {
            // libpq connects to the address by TCP; pgdict leaves the directory out.
            Some(name) if name.starts_with('/') && entry(&addresses).is_some() => {
                assert!(ours.is_empty(), "{case}: host {i}");
                assert_eq!(info.socket_names()[i], Some(name), "{case}: host {i}");
            }
            Some(name) => assert_eq!(ours, [name], "{case}: host {i}"),
            None if entry(&addresses).is_some() => assert!(ours.is_empty(), "{case}: host {i}"),
            None => {}
        }
        let address = entry(&addresses).map(|text| numeric_address(&text).expect("an address"));
        assert_eq!(
            host.get_hostaddrs(),
            Vec::from_iter(address),
            "{case}: address {i}"
        );
        let port = match ports.len() {
            1 => &ports[0],
            _ => &ports[i],
        };
        assert_eq!(host.get_ports(), [libpq_port(port)], "{case}: port {i}");
    }
    // libpq's default is "" (none); it sends none when empty, the crate sends "", which the
    // server reads as none.
    assert_eq!(
        config
            .get_options()
            .filter(|options| !options.is_empty())
            .map(str::to_string),
        text(theirs, "options").filter(|options| !options.is_empty()),
        "{case}: options"
    );
    // libpq sends the name if it is not empty, else the fallback if that is not (else pgdict
    // names the program, as psql's fallback does).
    let named = |keyword| text(theirs, keyword).filter(|name| !name.is_empty());
    if let Some(name) = named("application_name").or_else(|| named("fallback_application_name")) {
        assert_eq!(
            config.get_application_name(),
            Some(name.as_str()),
            "{case}: application_name"
        );
    }
    // libpq: zero or less waits forever, under 2 s counts as 2.
    let timeout = text(theirs, "connect_timeout")
        .and_then(|seconds| seconds.trim().parse::<i64>().ok())
        .filter(|&seconds| seconds > 0)
        .map(|seconds| Duration::from_secs(seconds.max(2) as u64));
    assert_eq!(
        config.get_connect_timeout().copied(),
        timeout,
        "{case}: connect_timeout"
    );
    assert_eq!(
        Some(info.tls.mode.name().to_string()),
        text(theirs, "sslmode"),
        "{case}: sslmode"
    );
    let home = std::env::home_dir().expect("a home directory");
    for (keyword, ours, default) in [
        ("sslrootcert", &info.tls.root_cert, "root.crt"),
        ("sslcert", &info.tls.client_cert, "postgresql.crt"),
        ("sslkey", &info.tls.client_key, "postgresql.key"),
    ] {
        // An empty file name is libpq's default file, as an unset one.
        let expected = match text(theirs, keyword).filter(|name| !name.is_empty()) {
            Some(given) => PathBuf::from(given),
            None => home.join(".postgresql").join(default),
        };
        assert_eq!(
            ours.as_deref(),
            Some(expected.as_path()),
            "{case}: {keyword}"
        );
    }
    // TLS versions: empty is no bound (OpenSSL's), unset no maximum.
    let version = |keyword| match text(theirs, keyword).as_deref() {
        None | Some("") => None,
        Some(name) => Some(match name.to_ascii_lowercase().as_str() {
            "tlsv1" => SslVersion::TLS1,
            "tlsv1.1" => SslVersion::TLS1_1,
            "tlsv1.2" => SslVersion::TLS1_2,
            "tlsv1.3" => SslVersion::TLS1_3,
            _ => panic!("{case}: libpq took {keyword}={name}"),
        }),
    };
    let (min, max) = info.tls.protocols;
    assert_eq!(min, version("ssl_min_protocol_version"), "{case}: minimum");
    assert_eq!(max, version("ssl_max_protocol_version"), "{case}: maximum");
    // libpq sends the server's name when sslsni starts with `1`.
    let sni = text(theirs, "sslsni").is_some_and(|sni| sni.starts_with('1'));
    assert_eq!(info.tls.sni, sni, "{case}: sslsni");
    assert_eq!(
        Some(format!("{:?}", config.get_channel_binding()).to_lowercase()),
        text(theirs, "channel_binding"),
        "{case}: channel_binding"
    );
    let target: SessionTarget = text(theirs, "target_session_attrs")
        .unwrap_or_else(|| "any".into())
        .parse()
        .unwrap();
    assert_eq!(info.target, target, "{case}: target_session_attrs");
}

/// The service and password files the cases name, in a directory that lasts as long as this.
struct Files {
    _dir: tempfile::TempDir,
    services: String,
    /// A directory holding a system service file (`PGSYSCONFDIR`).
    system: String,
    passwords: String,
    bad_services: String,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path.display().to_string()
    };
    Files {
        services: file(
            "services.conf",
            "[reports]\nhost=/nonexistent/svc\nport=7000\nuser=svc\ndbname=reports\n\
             options=-c work_mem=64MB\n[other]\nport=7001\n",
        ),
        passwords: file(
            "pgpass",
            "# comment\n/nonexistent/a:5433:app:alice:secret-a\n\
             /nonexistent/a:*:*:bob:secret\\:b\\\\\n*:*:reports:svc:from-wildcard\n\
             127.0.0.1:1:*:carol:tcp-carol\nlocalhost:5432:*:dave:socket-dave\n",
        ),
        bad_services: file("bad.conf", "[bad]\nrequiressl=1\n"),
        system: {
            std::fs::create_dir(dir.path().join("system")).unwrap();
            file(
                "system/pg_service.conf",
                "[system]\nport=7002\nuser=sys\n[reports]\nport=7003\n",
            );
            dir.path().join("system").display().to_string()
        },
        _dir: dir,
    }
}

#[test]
fn the_environment_service_and_password_files_are_read_as_libpq_reads_them() {
    let files = files();
    let (services, passwords) = (files.services.as_str(), files.passwords.as_str());
    let bad_services = files.bad_services.as_str();
    let none: &[(&str, &str)] = &[];
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("host=/nonexistent/a dbname=app user=u", none),
        (
            "host=/nonexistent/a",
            &[
                ("PGUSER", "u2"),
                ("PGDATABASE", "d2"),
                ("PGPORT", "5433"),
                ("PGOPTIONS", "-c x=1"),
                ("PGAPPNAME", "app"),
                ("PGCONNECT_TIMEOUT", "1"),
                ("PGSSLMODE", "disable"),
                ("PGTARGETSESSIONATTRS", "read-write"),
            ],
        ),
        (
            "host=/nonexistent/a user=s port=6000 connect_timeout=0",
            &[("PGUSER", "e"), ("PGPORT", "1"), ("PGCONNECT_TIMEOUT", "9")],
        ),
        ("dbname=x", &[("PGHOST", "/nonexistent/a,/nonexistent/b")]),
        ("host=/nonexistent/a,/nonexistent/b port=5433,5434", none),
        ("host=/nonexistent/a,/nonexistent/b port=5433", none),
        (
            "postgresql://u@%2Fnonexistent%2Fa:5433/db?application_name=x&sslmode=require",
            none,
        ),
        ("postgresql://%2Fnonexistent%2Fa/db", &[("PGPORT", "5999")]),
        (
            "hostaddr=127.0.0.1 port=1 user=carol",
            &[("PGPASSFILE", passwords)],
        ),
        (
            "host=127.0.0.1 port=1 user=carol fallback_application_name=fb",
            &[("PGPASSFILE", passwords)],
        ),
        // A service: under the string, over the environment.
        (
            "service=reports user=x",
            &[("PGSERVICEFILE", services), ("PGPORT", "1")],
        ),
        (
            "host=/nonexistent/a",
            &[("PGSERVICEFILE", services), ("PGSERVICE", "other")],
        ),
        (
            "service=missing host=/nonexistent/a",
            &[("PGSERVICEFILE", services)],
        ),
        // The password file: per user, database and port, `*`, escapes, a comment.
        (
            "host=/nonexistent/a port=5433 dbname=app user=alice",
            &[("PGPASSFILE", passwords)],
        ),
        (
            "host=/nonexistent/a port=5433 dbname=other user=alice",
            &[("PGPASSFILE", passwords)],
        ),
        (
            "host=/nonexistent/a dbname=x user=bob",
            &[("PGPASSFILE", passwords)],
        ),
        (
            "service=reports",
            &[("PGSERVICEFILE", services), ("PGPASSFILE", passwords)],
        ),
        (
            "host=/nonexistent/a user=bob password=given",
            &[("PGPASSFILE", passwords)],
        ),
        (
            "host=/nonexistent/a user=bob",
            &[("PGPASSFILE", passwords), ("PGPASSWORD", "from-env")],
        ),
        // sslmode, from requiressl in the string, PGREQUIRESSL, PGSSLMODE; certificate files.
        (
            "host=/nonexistent/a requiressl=0",
            &[("PGSSLMODE", "require")],
        ),
        ("host=/nonexistent/a", &[("PGREQUIRESSL", "1")]),
        (
            "host=/nonexistent/a",
            &[("PGREQUIRESSL", "1"), ("PGSSLMODE", "allow")],
        ),
        (
            "host=/nonexistent/a sslmode=verify-ca sslcert=/c.crt",
            &[("PGSSLROOTCERT", "/r.crt"), ("PGSSLKEY", "/k.key")],
        ),
        // Empty values in the string: set, or not?
        (
            "host=/nonexistent/a user= dbname= options= application_name=",
            &[
                ("PGUSER", "e"),
                ("PGDATABASE", "ed"),
                ("PGOPTIONS", "-c y=2"),
                ("PGAPPNAME", "ea"),
            ],
        ),
        (
            "host=/nonexistent/a user=bob password=",
            &[("PGPASSFILE", passwords), ("PGPASSWORD", "from-env")],
        ),
        // An empty connect_timeout is libpq's error only once it waits for the connection,
        // which PQconnectStart does not: pgdict refuses it, as psql does.
        ("host=/nonexistent/a connect_timeout=''", none),
        ("host=/nonexistent/a", &[("PGCONNECT_TIMEOUT", "")]),
        ("host=/nonexistent/a port=''", &[("PGPORT", "5433")]),
        // White space after `=` is skipped: this port is "connect_timeout=", refused by both.
        ("host=/nonexistent/a port= connect_timeout=", none),
        ("host='' port=5433", &[("PGHOST", "/nonexistent/a")]),
        ("host=/nonexistent/a,'' port=5433", none),
        ("host=/nonexistent/a sslmode=", &[("PGSSLMODE", "require")]),
        ("host=/nonexistent/a", &[("PGSSLMODE", "")]),
        (
            "host=/nonexistent/a",
            &[
                ("PGUSER", ""),
                ("PGDATABASE", ""),
                ("PGPORT", ""),
                ("PGOPTIONS", ""),
                ("PGAPPNAME", ""),
                ("PGPASSWORD", ""),
                ("PGSSLROOTCERT", ""),
            ],
        ),
        ("host=/nonexistent/a", &[("PGTARGETSESSIONATTRS", "")]),
        ("host=/nonexistent/a", &[("PGGSSENCMODE", "")]),
        ("host=/nonexistent/a", &[("PGSSLMINPROTOCOLVERSION", "")]),
        ("host=/nonexistent/a target_session_attrs=", none),
        (
            "host=/nonexistent/a connect_timeout=-5 keepalives=0",
            &[("PGCONNECT_TIMEOUT", "9")],
        ),
        // Channel binding, from the string or PGCHANNELBINDING; GSSAPI's settings, unused.
        ("host=/nonexistent/a", &[("PGCHANNELBINDING", "require")]),
        (
            "host=/nonexistent/a channel_binding=disable",
            &[("PGCHANNELBINDING", "require")],
        ),
        (
            "host=/nonexistent/a krbsrvname=pg gsslib=gssapi",
            &[("PGKRBSRVNAME", "x"), ("PGGSSLIB", "gssapi")],
        ),
        ("host=/nonexistent/a", &[("PGCHANNELBINDING", "")]),
        ("host=/nonexistent/a channel_binding=maybe", none),
        // Host names beside addresses; an address from the environment.
        ("host=localhost hostaddr=127.0.0.1 port=1", none),
        ("host=localhost port=1", &[("PGHOSTADDR", "127.0.0.1")]),
        (
            "host=localhost,/nonexistent/a hostaddr=127.0.0.1, port=1,5432",
            none,
        ),
        // Addresses in the forms getaddrinfo takes (inet_aton's), and some it refuses.
        (
            "hostaddr=127.1 port=1 user=carol",
            &[("PGPASSFILE", passwords)],
        ),
        (
            "hostaddr=0x7f000001,0177.0.0.01,0,10.1.2,4294967295 port=1",
            none,
        ),
        ("hostaddr=::ffff:1.2.3.4 port=1", none),
        ("hostaddr=4294967296 port=1", none),
        ("hostaddr=256.1 port=1", none),
        ("hostaddr=1.2.65536 port=1", none),
        ("hostaddr=08 port=1", none),
        ("hostaddr=0x port=1", none),
        ("hostaddr=0x+1 port=1", none),
        ("hostaddr=1..2 port=1", none),
        ("hostaddr='1 ' port=1", none),
        // Refused by both.
        ("service=bad", &[("PGSERVICEFILE", bad_services)]),
        ("host=a,b hostaddr=127.0.0.1", none),
        ("host=/nonexistent/a", &[("PGPORT", "x")]),
        ("host=/nonexistent/a sslmode=bogus", none),
        ("host=/nonexistent/a target_session_attrs=bogus", none),
        ("host=/nonexistent/a,/nonexistent/b port=1,2,3", none),
    ];
    for (conninfo, vars) in cases {
        assert_read_as_libpq(conninfo, vars);
    }
    // The files were read: libpq found these passwords (and pgdict the same, above).
    for (conninfo, vars, expected) in [
        (
            "host=/nonexistent/a port=5433 dbname=app user=alice",
            [("PGPASSFILE", passwords)],
            &b"secret-a"[..],
        ),
        (
            "host=/nonexistent/a dbname=x user=bob",
            [("PGPASSFILE", passwords)],
            b"secret:b\\",
        ),
        ("service=reports", [("PGSERVICEFILE", services)], b""),
    ] {
        let _environment = set_environment(&vars);
        match libpq::connect_start(conninfo) {
            Setting::Taken {
                password, settings, ..
            } => {
                assert_eq!(password, expected, "{conninfo}");
                if conninfo.starts_with("service") {
                    assert_eq!(text(&settings, "port").as_deref(), Some("7000"));
                }
            }
            refused => panic!("{conninfo}: {refused:?}"),
        }
    }
}

/// Settings for generated strings, each with values libpq reads specially (empty, out of
/// range, lists, the other forms of a number), unquoted (the test quotes them). `@services`, `@passwords` and `@system` stand
/// for the files of [`files`]. Left out, as differences by design: `gssencmode=require`
/// (pgdict has no GSSAPI), `client_encoding` other than UTF-8 (pgdict reads text as UTF-8)
/// and `requirepeer`; a host named nowhere (see the test).
const KEYWORDS: &[(&str, &[&str])] = &[
    (
        "host",
        &[
            "/nonexistent/a",
            "",
            "/nonexistent/a,/nonexistent/b",
            "127.0.0.1",
            "localhost",
            "/nonexistent/a,",
            "/tmp",
            "/var/run/postgresql",
            "/nonexistent/a, /nonexistent/b",
            " 127.0.0.1",
        ],
    ),
    (
        "hostaddr",
        &["", "127.0.0.1", "127.0.0.1,", "::1", " 127.0.0.1"],
    ),
    ("port", &["5433", "", "1", "5433,5434", "x", " 5433"]),
    ("user", &["", "alice", "bob", "carol", "dave", "svc"]),
    ("dbname", &["", "app", "reports"]),
    ("password", &["", "given"]),
    ("passfile", &["@passwords", "", "/nonexistent/pgpass"]),
    ("service", &["reports", "other", "system", "", "missing"]),
    ("options", &["", "-c y=2"]),
    ("application_name", &["", "named"]),
    ("fallback_application_name", &["", "fb"]),
    ("connect_timeout", &["0", "3", "-1", " 4", "", "x", "4x"]),
    (
        "sslmode",
        &[
            "",
            "disable",
            "allow",
            "prefer",
            "require",
            "verify-ca",
            "x",
        ],
    ),
    ("requiressl", &["0", "1", "", "x"]),
    (
        "target_session_attrs",
        &["", "any", "read-write", "standby", "prefer-standby", "x"],
    ),
    ("channel_binding", &["", "disable", "require", "x"]),
    ("gssencmode", &["", "disable", "prefer"]),
    ("sslrootcert", &["", "/s.crt"]),
    ("sslkey", &["", "/s.key"]),
    ("ssl_min_protocol_version", &["", "TLSv1.3", "tlsv1", "x"]),
    ("ssl_max_protocol_version", &["", "TLSv1.2", "TLSv1.1"]),
    ("sslsni", &["", "0", "1", "x", "10"]),
    ("client_encoding", &["", "UTF8", "auto"]),
];

/// The `PG*` variables of generated environments, as [`KEYWORDS`] (an empty variable is set,
/// to "", which libpq reads as the value "").
const VARIABLES: &[(&str, &[&str])] = &[
    (
        "PGHOST",
        &[
            "",
            "/nonexistent/b",
            "/nonexistent/a,/nonexistent/b",
            "127.0.0.1",
        ],
    ),
    ("PGHOSTADDR", &["", "127.0.0.1", "x"]),
    ("PGPORT", &["", "5433", "1", " 5433", "5433,5434", "x", "0"]),
    ("PGUSER", &["", "alice", "bob", "carol"]),
    ("PGDATABASE", &["", "app", "reports"]),
    ("PGPASSWORD", &["", "from-env"]),
    ("PGPASSFILE", &["@passwords", "", "/nonexistent/pgpass"]),
    ("PGSERVICE", &["", "reports", "other", "system", "missing"]),
    ("PGSYSCONFDIR", &["@system", "", "/nonexistent"]),
    ("PGSERVICEFILE", &["@services", "", "/nonexistent/services"]),
    ("PGOPTIONS", &["", "-c x=1"]),
    ("PGAPPNAME", &["", "app"]),
    ("PGCONNECT_TIMEOUT", &["", "0", "1", "9", "-3", " 5", "x"]),
    (
        "PGSSLMODE",
        &[
            "",
            "disable",
            "allow",
            "prefer",
            "require",
            "verify-full",
            "x",
        ],
    ),
    ("PGREQUIRESSL", &["", "0", "1", "10", "x"]),
    (
        "PGTARGETSESSIONATTRS",
        &["", "any", "read-only", "primary", "standby", "x"],
    ),
    (
        "PGCHANNELBINDING",
        &["", "disable", "prefer", "require", "x"],
    ),
    ("PGGSSENCMODE", &["", "disable", "prefer", "x"]),
    ("PGSSLROOTCERT", &["", "/r.crt"]),
    ("PGSSLCERT", &["", "/c.crt"]),
    ("PGSSLKEY", &["", "/k.key"]),
    ("PGSSLMINPROTOCOLVERSION", &["", "TLSv1.2", "x"]),
    ("PGSSLMAXPROTOCOLVERSION", &["", "TLSv1.2", "TLSv1"]),
    ("PGSSLSNI", &["", "0", "1"]),
    ("PGKRBSRVNAME", &["", "pg"]),
    ("PGCLIENTENCODING", &["", "UTF8", "auto"]),
    ("PGREQUIREPEER", &[""]),
];

/// Settings and variables whose values are generated (by these patterns), besides those of
/// [`KEYWORDS`] and [`VARIABLES`].
const GENERATED: &[(&str, &str)] = &[
    ("port", "[0-9 ,x]{0,8}"),
    ("connect_timeout", "[0-9 +x-]{0,4}"),
    ("requiressl", "[01x ]{0,2}"),
    ("sslsni", "[01x ]{0,2}"),
    ("user", "[a-z '\\\\=]{0,5}"),
    ("application_name", "[a-z '=]{0,5}"),
    ("hostaddr", "[0-9.,:]{0,10}"),
    ("options", "[a-z =\\-]{0,6}"),
    ("PGPORT", "[0-9 ,x]{0,8}"),
    ("PGCONNECT_TIMEOUT", "[0-9 +x-]{0,4}"),
    ("PGREQUIRESSL", "[01x ]{0,2}"),
    ("PGSSLSNI", "[01x ]{0,2}"),
    ("PGUSER", "[a-z ']{0,4}"),
];

/// `value` as a connection string's value: bare when it can be, else quoted, `\` escaping
/// `'` and `\`.
fn quoted(value: &str) -> String {
    let bare = !value.is_empty()
        && !value
            .chars()
            .any(|c| c.is_ascii_whitespace() || c == '\'' || c == '\\');
    match bare {
        true => value.to_string(),
        false => format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'")),
    }
}

#[test]
fn generated_strings_and_environments_are_read_as_libpq_reads_them() {
    use proptest::test_runner::{Config, TestRunner};
    let files = files();
    let resolve = |value: &str| match value {
        "@services" => files.services.clone(),
        "@passwords" => files.passwords.clone(),
        "@system" => files.system.clone(),
        value => value.to_string(),
    };
    let pairs = |table: &'static [(&'static str, &'static [&'static str])]| {
        let all: Vec<(&str, &str)> = table
            .iter()
            .flat_map(|(name, values)| values.iter().map(move |value| (*name, *value)))
            .collect();
        all
    };
    // A setting or variable from the pools, else one whose value is generated.
    let generated = |variables: bool| {
        let patterns = GENERATED
            .iter()
            .filter(move |(name, _)| name.starts_with("PG") == variables)
            .map(|(name, pattern)| (Just(*name), *pattern).boxed());
        prop::strategy::Union::new(patterns)
    };
    let any_of = |pools: &'static [(&'static str, &'static [&'static str])], variables: bool| {
        let pooled =
            prop::sample::select(pairs(pools)).prop_map(|(name, value)| (name, value.to_string()));
        prop_oneof![3 => pooled, 1 => generated(variables)]
    };
    let settings = prop::collection::vec(any_of(KEYWORDS, false), 0..7);
    let variables = prop::collection::vec(any_of(VARIABLES, true), 0..7);
    let cases = std::env::var("PROPTEST_CASES").map_or(20_000, |n| n.parse().unwrap());
    let mut runner = TestRunner::new(Config {
        failure_persistence: None,
        ..Config::with_cases(cases)
    });
    runner
        .run(
            &(settings, variables, any::<bool>()),
            |(settings, variables, url)| {
                let mut settings: Vec<(&str, String)> = settings
                    .iter()
                    .map(|(keyword, value)| (*keyword, resolve(value)))
                    .collect();
                let variables = variables
                    .iter()
                    .map(|(name, value)| (*name, value.as_str()));
                let mut vars: Vec<(&str, String)> = Vec::new();
                for (name, value) in variables {
                    // One value per variable: the last one generated.
                    vars.retain(|(set, _)| *set != name);
                    vars.push((name, resolve(value)));
                }
                // A host given, in the string (empty too) or the environment: with none at all,
                // pgdict also tries `/tmp`, by design.
                let host_in_string = settings.iter().any(|(keyword, _)| *keyword == "host");
                let host_in_env = vars
                    .iter()
                    .any(|(name, value)| *name == "PGHOST" && !value.is_empty());
                if !host_in_string && !host_in_env {
                    settings.insert(0, ("host", "/nonexistent/a".into()));
                }
                let conninfo = match url {
                    false => settings
                        .iter()
                        .map(|(keyword, value)| format!("{keyword}={}", quoted(value)))
                        .collect::<Vec<_>>()
                        .join(" "),
                    // The same settings in a URL's query, every byte but letters and digits
                    // encoded.
                    true => {
                        let query: Vec<String> = settings
                            .iter()
                            .map(|(keyword, value)| {
                                let value = utf8_percent_encode(value, NON_ALPHANUMERIC);
                                format!("{keyword}={value}")
                            })
                            .collect();
                        format!("postgresql://?{}", query.join("&"))
                    }
                };
                let vars: Vec<(&str, &str)> = vars
                    .iter()
                    .map(|(name, value)| (*name, value.as_str()))
                    .collect();
                assert_read_as_libpq(&conninfo, &vars);
                Ok(())
            },
        )
        .unwrap();
}
