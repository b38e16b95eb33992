//! TLS connections (`pgdict::conninfo`) against a real PostgreSQL 15 server with `ssl=on`,
//! compared with what libpq (`psql`) does with the same settings:
//!
//! - the certificates are made as PostgreSQL's documentation makes them, with the `openssl`
//!   command: a root, a server certificate it signs with `openssl x509 -req` (X.509 v1, common
//!   name `localhost`, no alternative names), a client certificate for `cert` authentication;
//!   a second root that signed nothing here;
//! - `verify-full` connects to `localhost` and refuses `127.0.0.1` with libpq's message;
//!   `verify-ca` takes both; a root that did not sign the certificate is refused; a missing
//!   root certificate file is named; `require` checks the chain once `~/.postgresql/root.crt`
//!   exists; `PGSSLMODE` and `PGSSLROOTCERT` count; URLs carry the settings too;
//! - a revocation list (`sslcrl`, `~/.postgresql/root.crl`, `sslcrldir`) that revokes the
//!   server's certificate refuses it; one from before does not; a missing one is ignored;
//! - `allow` retries with TLS when the server refuses a session without, `prefer` without
//!   when TLS fails or the server refuses the session over TLS (pg_hba.conf `hostnossl` and
//!   `hostssl` reject lines);
//! - a `hostaddr` alone connects over TLS (the `postgres` crate alone fails there with "no
//!   hostname provided"), and `verify-full` refuses it as libpq does; a Unix socket connects
//!   without TLS whatever `sslmode` says, but a socket directory beside a `hostaddr` connects
//!   to the address over TCP, with TLS as `sslmode` says;
//! - a role that must present a client certificate (`cert` in pg_hba.conf) connects with one
//!   (given, or found in `~/.postgresql`), is refused without; a key others may read is refused;
//! - sessions carry the program's name as their application_name; several hosts are tried
//!   in turn, and when none connects the error names each one's failure;
//! - a self-signed server certificate given as the root (the documentation's quick recipe,
//!   a CA certificate used as the server's own) passes `verify-full`.

#![cfg(feature = "pg-store")]

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pgdict::conninfo::{parse_with_env, ConnectError, Passwords};
use support::cluster::{openssl, self_signed};
use support::PgCluster;

/// A key and a certificate signing request for `subject`, then the certificate `ca` signs.
fn signed_certificate(dir: &Path, name: &str, subject: &str) {
    let (key, csr, crt) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.crt"),
    );
    openssl(
        dir,
        &[
            "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", &key,
            "-out", &csr,
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &crt,
        ],
    );
}

/// The outcome of connecting: whether the session uses TLS, or the error.
fn connect(conninfo: &str, vars: &[(&str, &str)]) -> Result<bool, ConnectError> {
    let info = parse_with_env(
        conninfo,
        |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        },
        Passwords::Look,
    )
    .unwrap_or_else(|e| panic!("{conninfo}: {e}"));
    let mut client = info.connect()?;
    let row = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap();
    Ok(row.get(0))
}

fn refused(conninfo: &str, vars: &[(&str, &str)]) -> ConnectError {
    match connect(conninfo, vars) {
        Ok(tls) => panic!("{conninfo} connected (TLS: {tls})"),
        Err(e) => e,
    }
}

#[test]
fn tls_connections_check_certificates_as_libpq_does() {
    let cluster = PgCluster::start();
    let certs = tempfile::tempdir().unwrap();
    let certs = certs.path();
    self_signed(certs, "ca", "/CN=pgdict test root");
    self_signed(certs, "other", "/CN=pgdict other root");
    signed_certificate(certs, "server", "/CN=localhost");
    signed_certificate(certs, "client", "/CN=cert_user");
    fs::set_permissions(certs.join("client.key"), fs::Permissions::from_mode(0o600)).unwrap();
    let version = Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(certs.join("server.crt"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&version.stdout).contains("Version: 1 (0x0)"),
        "the server certificate should be X.509 v1, as `openssl x509 -req` makes it here"
    );
    let hba = cluster.data_dir().join("pg_hba.conf");
    let rules = fs::read_to_string(&hba).unwrap();
    fs::write(
        &hba,
        format!(
            "hostssl all cert_user 127.0.0.1/32 cert\n\
             hostnossl all tls_only 127.0.0.1/32 reject\n\
             hostssl all plain_only 127.0.0.1/32 reject\n{rules}"
        ),
    )
    .unwrap();
    let mut client = cluster.client();
    for statement in [
        "CREATE ROLE cert_user LOGIN",
        "CREATE ROLE tls_only LOGIN",
        "CREATE ROLE plain_only LOGIN",
    ] {
        client.batch_execute(statement).unwrap();
    }
    cluster.serve_tls(
        &certs.join("server.crt"),
        &certs.join("server.key"),
        Some(&certs.join("ca.crt")),
    );

    // Several hosts are tried in turn, as libpq tries them; when none takes the session, the
    // error names each host's failure.
    let closed = support::cluster::free_port();
    let port = cluster.port();
    let two = format!("host=127.0.0.1,127.0.0.1 port={closed},{port} user=postgres");
    assert!(!connect(&format!("{two} sslmode=disable"), &[]).unwrap());
    let closed_too = support::cluster::free_port();
    let err = refused(
        &format!("host=127.0.0.1,localhost port={closed},{closed_too} user=postgres"),
        &[],
    );
    let text = err.describe();
    assert!(
        text.starts_with(&format!("127.0.0.1:{closed}: error connecting to server: "))
            && text.contains(&format!(
                "; localhost:{closed_too}: error connecting to server: "
            )),
        "{text}"
    );
    assert!(err.hint().starts_with("is the server running"));
    // A host that refuses the session ends the attempt, as in libpq: the next is not tried.
    let err = refused(
        &format!("host=127.0.0.1,localhost port={closed},{port} user=nobody sslmode=disable"),
        &[],
    );
    assert_eq!(
        err.sqlstate().as_deref(),
        Some("28000"),
        "{}",
        err.describe()
    );
    assert!(err.describe().starts_with(&format!("127.0.0.1:{closed}: ")));

    // Sessions name the program in pg_stat_activity (here, the test binary), as psql's do.
    let info = parse_with_env(&cluster.connection_string(), |_| None, Passwords::Look).unwrap();
    let name: String = info
        .connect()
        .unwrap_or_else(|e| panic!("{}", e.describe()))
        .query_one(
            "SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    let program = std::env::current_exe().unwrap();
    assert_eq!(Some(name.as_str()), program.file_name().unwrap().to_str());

    let path = |name: &str| certs.join(name).display().to_string();
    let (ca, other) = (path("ca.crt"), path("other.crt"));
    let home = tempfile::tempdir().unwrap();
    let home_dir = home.path().display().to_string();
    let no_files = [("HOME", home_dir.as_str())];
    let to = |host: &str, rest: &str| {
        format!("host={host} port={port} user=postgres dbname=postgres {rest}")
    };

    // verify-full: the certificate names localhost, not 127.0.0.1 (psql: "server certificate
    // for "localhost" does not match host name "127.0.0.1"").
    let full = format!("sslmode=verify-full sslrootcert={ca}");
    assert!(connect(&to("localhost", &full), &no_files).unwrap());
    let err = refused(&to("127.0.0.1", &full), &no_files);
    assert!(
        err.describe().contains(
            "server certificate for \"localhost\" does not match host name \"127.0.0.1\""
        ),
        "{}",
        err.describe()
    );
    assert!(err.is_tls() && err.hint().contains("sslrootcert"));
    // A host whose certificate is refused ends the attempt, as in libpq (psql does not go on
    // to localhost here, which would pass).
    let err = refused(
        &format!("host=127.0.0.1,localhost port={port} user=postgres {full}"),
        &no_files,
    );
    assert!(err
        .describe()
        .contains("does not match host name \"127.0.0.1\""));
    // verify-ca checks the chain only.
    let ca_only = format!("sslmode=verify-ca sslrootcert={ca}");
    assert!(connect(&to("127.0.0.1", &ca_only), &no_files).unwrap());
    let err = refused(
        &to(
            "localhost",
            &format!("sslmode=verify-ca sslrootcert={other}"),
        ),
        &no_files,
    );
    assert!(
        err.describe().contains("certificate verify failed") && err.is_tls(),
        "{}",
        err.describe()
    );
    // Revocation lists, from `openssl ca`: one from before the server's certificate was
    // revoked, one from after (psql: "certificate verify failed" with the second).
    fs::write(
        certs.join("ca.conf"),
        "[ca]\ndefault_ca=test\n[test]\ndatabase=index.txt\ncrlnumber=crlnumber\n\
         default_md=sha256\ndefault_crl_days=2\n",
    )
    .unwrap();
    fs::write(certs.join("index.txt"), "").unwrap();
    fs::write(certs.join("crlnumber"), "01\n").unwrap();
    let ca_command = [
        "ca", "-config", "ca.conf", "-keyfile", "ca.key", "-cert", "ca.crt",
    ];
    openssl(
        certs,
        &[&ca_command[..], &["-gencrl", "-out", "clean.crl"]].concat(),
    );
    openssl(
        certs,
        &[&ca_command[..], &["-revoke", "server.crt"]].concat(),
    );
    openssl(
        certs,
        &[&ca_command[..], &["-gencrl", "-out", "revoked.crl"]].concat(),
    );
    let with_crl = |crl: &str| format!("{ca_only} sslcrl={}", path(crl));
    assert!(connect(&to("localhost", &with_crl("clean.crl")), &no_files).unwrap());
    let err = refused(&to("localhost", &with_crl("revoked.crl")), &no_files);
    assert!(
        err.describe().contains("certificate revoked"),
        "{}",
        err.describe()
    );
    // A list that does not load is ignored, as libpq ignores it.
    assert!(connect(&to("localhost", &with_crl("missing.crl")), &no_files).unwrap());
    // ~/.postgresql/root.crl by default; sslcrldir, a directory named by hash.
    fs::create_dir(home.path().join(".postgresql")).unwrap();
    fs::copy(
        certs.join("revoked.crl"),
        home.path().join(".postgresql/root.crl"),
    )
    .unwrap();
    assert!(refused(&to("localhost", &ca_only), &no_files).is_tls());
    fs::remove_file(home.path().join(".postgresql/root.crl")).unwrap();
    let crl_dir = certs.join("crls");
    fs::create_dir(&crl_dir).unwrap();
    fs::copy(certs.join("revoked.crl"), crl_dir.join("revoked.crl")).unwrap();
    openssl(certs, &["rehash", "crls"]);
    let in_dir = format!("{ca_only} sslcrldir={}", crl_dir.display());
    let err = refused(&to("localhost", &in_dir), &no_files);
    assert!(
        err.describe().contains("certificate revoked"),
        "{}",
        err.describe()
    );
    // No root certificate file: named, as libpq names it.
    let err = refused(&to("localhost", "sslmode=verify-ca"), &no_files);
    assert!(matches!(err, ConnectError::Setup(_)));
    assert_eq!(
        err.describe(),
        format!(
            "root certificate file \"{home_dir}/.postgresql/root.crt\" does not exist; either \
             provide the file or change sslmode to disable server certificate verification"
        )
    );
    // require: encrypted, unchecked; checked as verify-ca once ~/.postgresql/root.crt exists.
    assert!(connect(&to("127.0.0.1", "sslmode=require"), &no_files).unwrap());
    fs::copy(&other, home.path().join(".postgresql/root.crt")).unwrap();
    let err = refused(&to("127.0.0.1", "sslmode=require"), &no_files);
    assert!(err.describe().contains("certificate verify failed"));
    fs::copy(&ca, home.path().join(".postgresql/root.crt")).unwrap();
    assert!(connect(&to("127.0.0.1", "sslmode=require"), &no_files).unwrap());
    fs::remove_file(home.path().join(".postgresql/root.crt")).unwrap();
    // The environment, and a URL.
    let env = [
        ("HOME", home_dir.as_str()),
        ("PGSSLMODE", "verify-full"),
        ("PGSSLROOTCERT", ca.as_str()),
    ];
    assert!(connect(&to("localhost", ""), &env).unwrap());
    assert!(refused(&to("127.0.0.1", ""), &env).is_tls());
    assert!(!connect(&to("localhost", "sslmode=disable"), &env).unwrap());
    let url = format!(
        "postgresql://postgres@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={}",
        ca.replace('/', "%2F")
    );
    assert!(connect(&url, &no_files).unwrap());
    // sslrootcert=system trusts the system's roots, which did not sign this certificate.
    let err = refused(
        &to("localhost", "sslmode=verify-full sslrootcert=system"),
        &no_files,
    );
    assert!(err.describe().contains("certificate verify failed"));

    // hostaddr alone: TLS with the address as the name; verify-full needs a host name.
    let by_address = format!("hostaddr=127.0.0.1 port={port} user=postgres dbname=postgres");
    assert!(connect(&by_address, &no_files).unwrap());
    assert!(connect(&format!("{by_address} {ca_only}"), &no_files).unwrap());
    let err = refused(&format!("{by_address} {full}"), &no_files);
    assert!(
        err.describe()
            .starts_with("host name must be specified for a verified SSL connection"),
        "{}",
        err.describe()
    );
    // allow: without TLS first, with it if the server refuses that; prefer: with TLS first,
    // without if TLS fails or the server refuses it (psql does the same with each).
    let as_role = |role: &str, rest: &str| {
        format!("host=localhost port={port} user={role} dbname=postgres {rest}")
    };
    assert!(!connect(&as_role("postgres", "sslmode=allow"), &no_files).unwrap());
    assert!(connect(&as_role("tls_only", "sslmode=allow"), &no_files).unwrap());
    assert!(connect(&as_role("tls_only", "sslmode=prefer"), &no_files).unwrap());
    assert!(!connect(&as_role("plain_only", "sslmode=prefer"), &no_files).unwrap());
    let untrusted = format!("sslmode=prefer sslrootcert={other}");
    assert!(!connect(&as_role("postgres", &untrusted), &no_files).unwrap());
    assert!(refused(&as_role("tls_only", &untrusted), &no_files).from_server());
    assert!(refused(&as_role("plain_only", "sslmode=require"), &no_files).from_server());
    // The protocol versions, as asked for (libpq's keywords; the default minimum is TLSv1.2).
    let version = |rest: &str| -> String {
        let info = parse_with_env(&as_role("postgres", rest), |_| None, Passwords::Look).unwrap();
        let mut client = info
            .connect()
            .unwrap_or_else(|e| panic!("{}", e.describe()));
        let row = client
            .query_one(
                "SELECT version FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap();
        row.get(0)
    };
    assert_eq!(version("ssl_max_protocol_version=TLSv1.2"), "TLSv1.2");
    assert_eq!(
        version("ssl_min_protocol_version=TLSv1.3 sslsni=0"),
        "TLSv1.3"
    );
    // A Unix socket: no TLS, whatever sslmode says (psql connects there too).
    let socket = cluster.sock_dir().display().to_string();
    assert!(!connect(&to(&socket, "sslmode=verify-full"), &no_files).unwrap());
    // A socket directory beside a hostaddr: TCP to the address, with TLS as sslmode says
    // (psql: TLS with require and verify-ca; verify-full fails, the certificate being for
    // no directory). It went without TLS whatever sslmode said.
    let beside = to(&socket, "hostaddr=127.0.0.1");
    assert!(connect(&format!("{beside} sslmode=require"), &no_files).unwrap());
    assert!(connect(&format!("{beside} {ca_only}"), &no_files).unwrap());
    assert!(!connect(&format!("{beside} sslmode=disable"), &no_files).unwrap());
    let err = refused(&format!("{beside} {full}"), &no_files);
    assert!(
        err.describe()
            .contains(&format!("cannot match host name \"{socket}\"")),
        "{}",
        err.describe()
    );

    // A client certificate for `cert` authentication.
    let as_cert_user = |rest: &str| {
        format!("host=localhost port={port} user=cert_user dbname=postgres {full} {rest}")
    };
    let client_files = format!(
        "sslcert={} sslkey={}",
        path("client.crt"),
        path("client.key")
    );
    assert!(connect(&as_cert_user(&client_files), &no_files).unwrap());
    let err = refused(&as_cert_user(""), &no_files);
    assert_eq!(
        err.sqlstate().as_deref(),
        Some("28000"),
        "{}",
        err.describe()
    );
    fs::set_permissions(certs.join("client.key"), fs::Permissions::from_mode(0o644)).unwrap();
    let err = refused(&as_cert_user(&client_files), &no_files);
    assert!(
        err.describe().contains("has group or world access"),
        "{}",
        err.describe()
    );
    fs::set_permissions(certs.join("client.key"), fs::Permissions::from_mode(0o600)).unwrap();
    // An encrypted key: its passphrase in sslpassword (never asked for on a terminal).
    openssl(
        certs,
        &[
            "pkey",
            "-in",
            "client.key",
            "-aes256",
            "-passout",
            "pass:s3cret",
            "-out",
            "encrypted.key",
        ],
    );
    fs::set_permissions(
        certs.join("encrypted.key"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let encrypted = format!(
        "sslcert={} sslkey={}",
        path("client.crt"),
        path("encrypted.key")
    );
    assert!(connect(
        &as_cert_user(&format!("{encrypted} sslpassword=s3cret")),
        &no_files
    )
    .unwrap());
    let err = refused(&as_cert_user(&encrypted), &no_files);
    assert!(
        err.describe().contains("could not load private key file")
            && err.describe().contains("sslpassword"),
        "{}",
        err.describe()
    );
    // The default files in ~/.postgresql.
    for (from, to) in [
        ("client.crt", "postgresql.crt"),
        ("client.key", "postgresql.key"),
    ] {
        let target = home.path().join(".postgresql").join(to);
        fs::copy(certs.join(from), &target).unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
    }
    assert!(connect(&as_cert_user(""), &no_files).unwrap());
    // A certificate whose key is missing.
    fs::remove_file(home.path().join(".postgresql/postgresql.key")).unwrap();
    let err = refused(&as_cert_user(""), &no_files);
    assert!(
        err.describe()
            .starts_with("certificate present, but not private key file"),
        "{}",
        err.describe()
    );
    fs::remove_file(home.path().join(".postgresql/postgresql.crt")).unwrap();

    // A self-signed server certificate, given as the root: OpenSSL (and so libpq) takes it,
    // though it is a CA certificate used as a server's.
    self_signed(certs, "selfsigned", "/CN=localhost");
    cluster.serve_tls(
        &certs.join("selfsigned.crt"),
        &certs.join("selfsigned.key"),
        Some(&certs.join("ca.crt")),
    );
    let pinned = format!("sslmode=verify-full sslrootcert={}", path("selfsigned.crt"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match connect(&to("localhost", &pinned), &no_files) {
            Ok(tls) => {
                assert!(tls);
                break;
            }
            // Until the server has reloaded its certificate.
            Err(e) if Instant::now() < deadline => {
                assert!(
                    e.describe().contains("certificate verify failed"),
                    "{}",
                    e.describe()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("{}", e.describe()),
        }
    }
}
