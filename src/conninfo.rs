//! PostgreSQL connection strings read as libpq reads them, and named in messages.
//!
//! The `postgres` crate parses libpq's `key=value` strings and `postgresql://` URLs, but takes
//! nothing from the environment and has no default host, where libpq's is its Unix socket
//! directory: `dbname=app`, which `psql` takes, fails there with "both host and hostaddr are
//! missing". [`config`] parses the string, then fills in what it leaves unset as libpq does:
//!
//! | setting           | from the environment | else                                         |
//! |-------------------|----------------------|----------------------------------------------|
//! | `host`            | `PGHOST` (a comma-separated list; a path is a Unix socket directory) | the Unix socket in `/var/run/postgresql` (where Debian's and Red Hat's PostgreSQL put it), then in `/tmp` (PostgreSQL's own default), tried in that order |
//! | `port`            | `PGPORT`             | 5432                                         |
//! | `user`            | `PGUSER`             | the operating-system user (the crate's default) |
//! | `dbname`          | `PGDATABASE`         | the user name (the server's default)          |
//! | `password`        | `PGPASSWORD`         | none                                         |
//! | `connect_timeout` | `PGCONNECT_TIMEOUT`  | none                                         |
//!
//! A `hostaddr` in the string counts as a host. Not read, unlike libpq: `~/.pgpass`, service
//! files, and the TLS settings (pgdict connects without TLS).

use std::time::Duration;

use postgres::config::Host;
use postgres::Config;

/// The Unix socket directories tried when neither the string nor `PGHOST` names a host.
pub const DEFAULT_SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// Parses `conninfo` and fills in what it leaves unset from the environment and libpq's
/// defaults (see the module documentation). The error says what is wrong, for messages.
pub fn config(conninfo: &str) -> Result<Config, String> {
    config_with_env(conninfo, |name| std::env::var(name).ok())
}

/// [`config`] with the environment given by `env` (a variable's value, if set).
pub fn config_with_env(
    conninfo: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Config, String> {
    let mut config: Config = conninfo
        .parse()
        .map_err(|e: postgres::Error| crate::dict::describe_pg_error(&e))?;
    // An empty variable counts as unset, as in libpq.
    let env = |name: &str| env(name).filter(|value| !value.is_empty());
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        match env("PGHOST") {
            Some(hosts) => {
                for host in hosts.split(',') {
                    config.host(host.trim());
                }
            }
            None => {
                for dir in DEFAULT_SOCKET_DIRS {
                    config.host(dir);
                }
            }
        }
    }
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
        if let Some(password) = env("PGPASSWORD") {
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
        config_with_env(conninfo, |name| vars.get(name).cloned())
    }

    #[test]
    fn a_string_without_host_uses_the_socket_directories() {
        let config = with_env("dbname=app", &[]).unwrap();
        assert_eq!(
            servers(&config),
            "/var/run/postgresql/.s.PGSQL.5432, /tmp/.s.PGSQL.5432"
        );
        assert_eq!(config.get_dbname(), Some("app"));
        // The URL form too, and an empty PGHOST counts as unset.
        let config = with_env("postgresql:///app", &[("PGHOST", "")]).unwrap();
        assert_eq!(config.get_hosts().len(), 2);
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
    fn bad_values_are_named() {
        let err = with_env("", &[("PGPORT", "54x")]).unwrap_err();
        assert_eq!(err, "PGPORT=54x is not a port number (or a list of them)");
        let err = with_env("", &[("PGCONNECT_TIMEOUT", "soon")]).unwrap_err();
        assert_eq!(err, "PGCONNECT_TIMEOUT=soon is not a number of seconds");
        assert!(with_env("port=x", &[]).is_err());
    }
}
