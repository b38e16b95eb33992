//! `target_session_attrs` (`pgdict::conninfo`) against a real PostgreSQL 15 primary and its
//! streaming hot standby, listed together as a high-availability connection string lists
//! them, compared with what `psql` does with the same strings:
//!
//! - each of libpq's six values reaches the server libpq reaches (`any`: the first listed;
//!   `read-write` and `primary`: the primary; `read-only`, `standby` and `prefer-standby`: the
//!   standby, wherever it is listed), also from `PGTARGETSESSIONATTRS`;
//! - a host of the wrong kind passes the turn on, and when none suits, the error gives libpq's
//!   words ("server is not in hot standby mode", "session is read-only") and a hint;
//!   `prefer-standby` without a standby takes the primary; `read-write` refuses a primary whose
//!   sessions are read-only (`default_transaction_read_only`);
//! - `load_balance_hosts=random` (libpq 16) reaches both servers over 30 tries;
//! - the PostgreSQL dictionary store opened through the string that lists the standby first,
//!   with `read-write`, opens on the primary and can be written.

#![cfg(feature = "pg-store")]

mod support;

use pgdict::conninfo::{parse_with_env, ConnectError, Passwords};
use pgdict::dict::PgStore;
use support::PgCluster;

/// The port of the server a connection reaches, or why it reached none.
fn port_reached(conninfo: &str, vars: &[(&str, &str)]) -> Result<i32, ConnectError> {
    let env = |name: &str| {
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
    };
    let info = parse_with_env(conninfo, env, Passwords::Skip)
        .unwrap_or_else(|e| panic!("{conninfo}: {e}"));
    let mut client = info.connect()?;
    Ok(client
        .query_one("SELECT pg_catalog.inet_server_port()", &[])
        .unwrap()
        .get(0))
}

#[test]
fn target_session_attrs_reaches_the_server_libpq_reaches() {
    let primary = PgCluster::start();
    let standby = primary.start_standby();
    let (p, s) = (i32::from(primary.port()), i32::from(standby.port()));
    let hosts = |ports: &str| {
        format!(
            "host=127.0.0.1,127.0.0.1 port={ports} user=postgres dbname=postgres sslmode=disable"
        )
    };
    let standby_first = hosts(&format!("{s},{p}"));
    let primary_first = hosts(&format!("{p},{s}"));
    for (target, expected) in [
        ("any", s),
        ("read-write", p),
        ("read-only", s),
        ("primary", p),
        ("standby", s),
        ("prefer-standby", s),
    ] {
        let conninfo = format!("{standby_first} target_session_attrs={target}");
        assert_eq!(port_reached(&conninfo, &[]).unwrap(), expected, "{target}");
    }
    for (target, expected) in [("any", p), ("standby", s), ("prefer-standby", s)] {
        let conninfo = format!("{primary_first} target_session_attrs={target}");
        assert_eq!(port_reached(&conninfo, &[]).unwrap(), expected, "{target}");
    }
    // load_balance_hosts=random: the hosts in a random order (both reached in 30 tries; the
    // chance of one only is 2^-29).
    let random = format!("{standby_first} load_balance_hosts=random");
    let reached: std::collections::BTreeSet<i32> = (0..30)
        .map(|_| port_reached(&random, &[]).unwrap())
        .collect();
    assert_eq!(reached, [p, s].into_iter().collect());
    let from_env = [("PGTARGETSESSIONATTRS", "read-write")];
    assert_eq!(port_reached(&standby_first, &from_env).unwrap(), p);

    // None suits: libpq's words, and a hint.
    let only = |port: i32, target: &str| {
        format!(
            "host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=disable \
             target_session_attrs={target}"
        )
    };
    let err = port_reached(&only(p, "standby"), &[]).unwrap_err();
    assert_eq!(err.describe(), "server is not in hot standby mode");
    assert!(
        err.hint().contains("target_session_attrs"),
        "{}",
        err.hint()
    );
    let err = port_reached(&only(s, "read-write"), &[]).unwrap_err();
    assert_eq!(err.describe(), "session is read-only");
    let err = port_reached(&only(s, "primary"), &[]).unwrap_err();
    assert_eq!(err.describe(), "server is in hot standby mode");
    assert_eq!(port_reached(&only(p, "prefer-standby"), &[]).unwrap(), p);
    let read_only_sessions = format!(
        "{} options='-c default_transaction_read_only=on'",
        only(p, "read-write")
    );
    let err = port_reached(&read_only_sessions, &[]).unwrap_err();
    assert_eq!(err.describe(), "session is read-only");
    assert_eq!(
        parse_with_env(
            &format!("{primary_first} target_session_attrs=nope"),
            |_| None,
            Passwords::Skip
        )
        .unwrap_err(),
        "invalid target_session_attrs value: \"nope\""
    );
    let both_wrong = format!("{standby_first} target_session_attrs=read-write")
        .replace(&format!(",{p}"), &format!(",{s}"));
    let err = port_reached(&both_wrong, &[]).unwrap_err();
    assert_eq!(
        err.describe(),
        format!("127.0.0.1:{s}: session is read-only; 127.0.0.1:{s}: session is read-only")
    );

    // The dictionary store through a high-availability string: on the primary, writable.
    let store = PgStore::connect(&format!("{standby_first} target_session_attrs=read-write"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!store.opened_on_standby());
    store.check_writable().unwrap();
}
