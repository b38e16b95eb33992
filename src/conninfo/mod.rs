//! PostgreSQL connection strings read as libpq reads them, connected to as libpq connects, and
//! named in messages.
//!
//! The `postgres` crate parses libpq's `key=value` strings and `postgresql://` URLs, but takes
//! nothing from the environment, has no default host (libpq's is its Unix socket directory:
//! `dbname=app`, which `psql` takes, fails there with "both host and hostaddr are missing"),
//! knows few of libpq's TLS settings and no service files, and reads an empty host, or a URL's
//! hosts without ports, otherwise than libpq. [`parse`] reads the string as libpq does
//! (`keywords.rs`), has the crate parse all but the servers (hosts, addresses, ports) and the
//! TLS settings, which it applies itself, and fills in what the string leaves unset as libpq
//! does, keyword by keyword: from the service, if the string (`service=`) or `PGSERVICE` names
//! one (`service_file.rs`: `~/.pg_service.conf`, then the system's file), else from the
//! environment, else by default:
//!
//! | setting           | from the environment | else                                         |
//! |-------------------|----------------------|----------------------------------------------|
//! | `hostaddr`        | `PGHOSTADDR` (a list; each an address in any form `getaddrinfo` reads, `127.1` too: [`numeric_address`]) | none |
//! | `host`            | `PGHOST` (a comma-separated list, each entry as given, white space too; a path is a Unix socket directory; an empty entry, in the string too, is the first of the default directories) | the Unix socket in `/var/run/postgresql` (where Debian's and Red Hat's PostgreSQL put it), or in `/tmp` (PostgreSQL's own default): those of the two that hold the port's socket, else both, tried in that order |
//! | `port`            | `PGPORT`             | 5432                                         |
//! | `user`            | `PGUSER`             | the operating-system user (the crate's default) |
//! | `dbname`          | `PGDATABASE`         | the user name (the server's default)          |
//! | `password`        | `PGPASSWORD`         | the password file (below), else none         |
//! | `passfile`        | `PGPASSFILE`         | `~/.pgpass`                                  |
//! | `connect_timeout` | `PGCONNECT_TIMEOUT`  | none                                         |
//! | `target_session_attrs` | `PGTARGETSESSIONATTRS` | `any`                                |
//! | `options`         | `PGOPTIONS`          | none                                         |
//! | `application_name` | `PGAPPNAME`         | the program's name (`pgdict`, `pgdict-trainer`), as `psql` names itself |
//! | `channel_binding` | `PGCHANNELBINDING`   | `prefer`                                     |
//! | `sslmode`         | `PGSSLMODE`          | `prefer`                                     |
//! | `sslrootcert`     | `PGSSLROOTCERT`      | `~/.postgresql/root.crt`                     |
//! | `sslcert`         | `PGSSLCERT`          | `~/.postgresql/postgresql.crt`               |
//! | `sslkey`          | `PGSSLKEY`           | `~/.postgresql/postgresql.key`               |
//! | `sslpassword`     |                      | none                                         |
//! | `sslcrl`          | `PGSSLCRL`           | `~/.postgresql/root.crl`, unless `sslcrldir` is given |
//! | `sslcrldir`       | `PGSSLCRLDIR`        | none                                         |
//! | `sslsni`          | `PGSSLSNI`           | `1`: the server's name is sent (for a value starting with `1`) |
//! | `ssl_min_protocol_version` | `PGSSLMINPROTOCOLVERSION` | `TLSv1.2`                    |
//! | `ssl_max_protocol_version` | `PGSSLMAXPROTOCOLVERSION` | none                         |
//!
//! A `hostaddr` counts as a host, and makes its host TCP: beside a socket directory
//! (`host=/tmp hostaddr=127.0.0.1`) the address is connected to, with TLS as `sslmode` says,
//! as libpq does. An abstract socket (`host=@name`, which libpq on Linux connects to) is
//! refused by name: the crate connects only to socket files. `target_session_attrs`
//! (`PGTARGETSESSIONATTRS`) takes libpq's six values; a host whose server is not of that kind
//! passes the turn on. `load_balance_hosts=random` (libpq 16) tries the hosts in a random
//! order. Also read as libpq reads them: `requiressl` (`sslmode=require` for `1`, else
//! `prefer`, where it stands in the string; `PGREQUIRESSL=1` when no `sslmode` is set),
//! `keepalives_count` (the crate's `keepalives_retries`), `fallback_application_name`;
//! `gssencmode` `disable` and `prefer` (pgdict, like a libpq built without GSSAPI, has no
//! GSS encryption: `require` is refused); `client_encoding` only as UTF8 (or `auto`), which
//! the crate always asks for; `sslcompression` is ignored, as libpq 14 and later ignore it.
//! `channel_binding` is read from `PGCHANNELBINDING` too. A keyword libpq does not know is
//! refused with libpq's message; two that it knows and pgdict cannot act on are refused with
//! the reason (`requirepeer`, and `PGREQUIREPEER`: the server process's user is not checked;
//! `replication`), as is a service that sets a keyword pgdict does not read, and a link-local
//! IPv6 address with a zone (`host=fe80::1%eth0`: the crate connects to the address without
//! it, which the kernel refuses). `krbsrvname` and `gsslib` (`PGKRBSRVNAME`, `PGGSSLIB`) are
//! read and unused, as by a libpq built without GSSAPI: they matter only to a server that
//! asks for GSSAPI authentication, which pgdict cannot give (the crate refuses it, naming it).
//! What the TLS settings do, and where pgdict differs from libpq there: [`tls`].
//!
//! An empty value is a value, as in libpq, wherever it is given (the string, the service, or
//! a variable set to ""): the sources after it are not read, and it means what libpq makes
//! of it. For `host`, the first of the default directories (one, as libpq tries one); for
//! `hostaddr`, `options` and `client_encoding`, none; `port`, 5432; `user`, the
//! operating-system user; `dbname`, the user; `password`, none (the password file is read);
//! `passfile` and the certificate files, their defaults; `application_name`, the fallback;
//! the protocol versions, no bound (OpenSSL's); `sslsni`, off; `service`, a service of that
//! name (found nowhere: an error). It is an error for `connect_timeout`, as in psql, and for
//! a keyword whose values libpq checks against a list (`sslmode`, `gssencmode`,
//! `target_session_attrs`, `channel_binding`), libpq's. The variables that are not settings
//! (`HOME`, `PGREQUIREPEER`) count as unset when empty.
//!
//! # The password file
//!
//! `passfile`, else `PGPASSFILE`, else `~/.pgpass`: lines
//! `hostname:port:database:username:password`, where `*`
//! matches anything, `\` escapes a `:` or a `\`, and lines starting with `#` are comments.
//! The first line that matches gives the password, as in libpq's `passwordFromFile`: a Unix
//! socket in a default directory matches `localhost` (whichever pgdict chose when no host is
//! named; named, `/var/run/postgresql`, Debian's libpq's, while a named `/tmp` matches
//! `/tmp`), a host, an address and a port match as given, the port defaults to 5432, the
//! user to the operating-system user and the database to the user. As in libpq, each host is
//! looked up on its own (and [`ConnInfo::connect`] tries the hosts one by one). A file that is
//! not a plain file, or that its group or others may read (permissions other than u=rw), is
//! ignored with a warning on standard error, as libpq ignores it.

mod keywords;
mod password_file;
mod service_file;
pub mod tls;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use postgres::config::Host;
use postgres::Config;

pub use keywords::{LATER_LIBPQ_KEYWORDS, LIBPQ_KEYWORDS, NOT_UTF8};
pub use tls::{SslMode, TlsSettings};

/// The Unix socket directories tried when neither the string nor `PGHOST` names a host.
pub const DEFAULT_SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// The keywords a service file may set (see [`parse`]): those pgdict applies itself
/// ([`keywords::TAKEN_KEYWORDS`], but `service`), and these, which it applies to the crate's
/// configuration when the string leaves them unset. A service that sets another is refused
/// rather than half applied.
const SERVICE_KEYWORDS_FOR_THE_CRATE: [&str; 5] =
    ["dbname", "user", "password", "options", "application_name"];

/// Whether a service file may set `keyword` (see [`SERVICE_KEYWORDS_FOR_THE_CRATE`]).
fn service_may_set(keyword: &str) -> bool {
    keyword != "service"
        && (keywords::TAKEN_KEYWORDS.contains(&keyword)
            || SERVICE_KEYWORDS_FOR_THE_CRATE.contains(&keyword))
}

/// A connection string read as libpq reads it: what the `postgres` crate connects with, and
/// the TLS settings it does not know.
#[derive(Clone, Debug)]
pub struct ConnInfo {
    /// All but the TLS settings, libpq's defaults filled in, every host in it; its `sslmode`
    /// is the nearest one the crate knows ([`SslMode::negotiation`]).
    pub config: Config,
    /// The TLS settings.
    pub tls: TlsSettings,
    /// The kind of server the session must reach (`target_session_attrs`).
    pub target: SessionTarget,
    /// One configuration a host, tried in turn as libpq tries them: each with its own
    /// password from the password file and its own TLS retries.
    per_host: Vec<Config>,
    /// For each of `per_host`, the socket directory named as its host beside a `hostaddr`
    /// (left out of the configuration: see [`Target::add_to`]).
    socket_names: Vec<Option<String>>,
}

/// Parses `conninfo` and fills in what it leaves unset from the environment and libpq's
/// defaults (see the module documentation), to connect with. The error says what is wrong,
/// for messages.
pub fn parse(conninfo: &str) -> Result<ConnInfo, String> {
    parse_with_env(conninfo, process_env, Passwords::Look)
}

/// The settings `conninfo` (a `key=value` string or a URL) gives, keyword and value, as libpq's
/// `PQconninfoParse` reports them: each keyword once, with the last value given; nothing from
/// the environment, a service or the defaults. The error is libpq's message for a string it
/// refuses. pgdict differs in two ways: it refuses a percent-encoded value that is not UTF-8,
/// and it takes `load_balance_hosts`, as libpq 16 does.
pub fn keyword_values(conninfo: &str) -> Result<BTreeMap<String, String>, String> {
    Ok(keywords::settings(conninfo)?.into_iter().collect())
}

/// [`parse`] for naming the server in messages: it does not look in the password file (nor
/// warn about it).
pub fn parse_for_messages(conninfo: &str) -> Result<ConnInfo, String> {
    parse_with_env(conninfo, process_env, Passwords::Skip)
}

/// The process's environment variable `name`; for `HOME`, the home directory: `HOME` if set,
/// else the user's entry in the password database, as recent libpq finds it (PostgreSQL 15's
/// reads only the password database; the two differ only when `HOME` was changed).
fn process_env(name: &str) -> Option<String> {
    match name {
        "HOME" => std::env::home_dir().map(|dir| dir.display().to_string()),
        _ => std::env::var(name).ok(),
    }
}

/// Whether [`parse_with_env`] looks a password up in the password file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passwords {
    /// As libpq does when it connects.
    Look,
    /// Never: the configuration only names the server.
    Skip,
}

/// [`parse`] with the environment given by `env` (a variable's value, if set).
pub fn parse_with_env(
    conninfo: &str,
    env: impl Fn(&str) -> Option<String>,
    passwords: Passwords,
) -> Result<ConnInfo, String> {
    let split = keywords::split(conninfo)?;
    let mut base: Config = split
        .rest
        .parse()
        .map_err(|e: postgres::Error| crate::dict::describe_pg_error(&e))?;
    // A variable set to "" gives the value "", as in libpq: what an empty value means is
    // each keyword's (the default for most, the first socket directory for `host`, an error
    // for those checked against a list), whether the string, a service or the environment
    // gave it. Only the variables that are not settings count empty as unset.
    let non_empty = |value: &String| !value.is_empty();
    let set_env = |name: &str| env(name).filter(non_empty);
    let taken = |keyword: &str| {
        let found = split.taken.iter().rev().find(|(key, _)| key == keyword);
        found.map(|(_, value)| value.clone())
    };
    // An empty service name is looked up too (and is found nowhere), as libpq does.
    let service_name = taken("service").or_else(|| env("PGSERVICE"));
    let service = match &service_name {
        Some(name) => service_file::settings(name, &env)?,
        None => Vec::new(),
    };
    if let Some((keyword, _)) = service
        .iter()
        .find(|(keyword, _)| !service_may_set(keyword))
    {
        return Err(format!(
            "service \"{}\" sets {keyword}, which pgdict does not support in a service",
            service_name.as_deref().unwrap_or_default(),
        ));
    }
    // A setting: the string's, else the service's, else the environment's; with where it
    // came from, for messages.
    let service_value = |keyword: &str| {
        let found = service.iter().find(|(key, _)| key == keyword);
        found.map(|(_, value)| value.clone())
    };
    let setting = |keyword: &str, variable: &str| {
        if let Some(value) = taken(keyword) {
            return Some((value, keyword.to_string()));
        }
        match service_value(keyword) {
            Some(value) => Some((
                value,
                format!(
                    "service \"{}\": {keyword}",
                    service_name.as_deref().unwrap_or_default()
                ),
            )),
            None => env(variable).map(|value| (value, variable.to_string())),
        }
    };
    keywords::refuse_unsupported_variables(&set_env)?;
    // (A keyword whose values libpq checks against a list, this one, `sslmode`, `gssencmode`
    // and `channel_binding`, refuses an empty value as any other it does not know: libpq's
    // `invalid ... value: ""`, from wherever it came.)
    let target = match setting("target_session_attrs", "PGTARGETSESSIONATTRS") {
        Some((value, _)) => value.parse()?,
        None => SessionTarget::Any,
    };
    // An empty hostaddr (from wherever it came) names none, as in libpq.
    let targets = targets(
        setting("host", "PGHOST"),
        setting("hostaddr", "PGHOSTADDR").filter(|(list, _)| non_empty(list)),
        setting("port", "PGPORT"),
    )?;
    if base.get_user().is_none() {
        if let Some((user, _)) = setting("user", "PGUSER") {
            base.user(&user);
        }
    }
    if base.get_dbname().is_none() {
        if let Some((dbname, _)) = setting("dbname", "PGDATABASE") {
            base.dbname(&dbname);
        }
    }
    // libpq: an empty user name found anywhere is the operating-system user's (the variable
    // is not consulted then), and an empty database name is the user's.
    let os_user = || {
        whoami::username().map_err(|e| format!("could not look up the operating-system user: {e}"))
    };
    if base.get_user() == Some("") {
        base.user(&os_user()?);
    }
    if base.get_dbname() == Some("") {
        let user = match base.get_user() {
            Some(user) => user.to_string(),
            None => os_user()?,
        };
        base.dbname(&user);
    }
    if base.get_password().is_none() {
        if let Some((password, _)) = setting("password", "PGPASSWORD") {
            base.password(password);
        }
    }
    // Read here, not by the crate: its `connect_timeout=0` (wait forever) reads as unset, which
    // would let PGCONNECT_TIMEOUT in.
    if let Some((seconds, origin)) = setting("connect_timeout", "PGCONNECT_TIMEOUT") {
        let seconds = keywords::integer(&seconds)
            .ok_or_else(|| format!("{origin}={seconds} is not a number of seconds"))?;
        // libpq: zero or less waits forever; under 2 s counts as 2.
        if seconds > 0 {
            base.connect_timeout(Duration::from_secs(seconds.max(2) as u64));
        }
    }
    if base.get_options().is_none() {
        if let Some((options, _)) = setting("options", "PGOPTIONS") {
            base.options(&options);
        }
    }
    // What pg_stat_activity shows a DBA: like psql's fallback_application_name, the program.
    // As libpq, an empty name (given so in the string, or by the service) names nothing, and
    // the fallback applies.
    let named = match base.get_application_name() {
        Some(name) => Some(name.to_string()),
        None => setting("application_name", "PGAPPNAME").map(|(name, _)| name),
    };
    let name = named
        .filter(non_empty)
        // (No variable: libpq reads fallback_application_name from the string only.)
        .or_else(|| setting("fallback_application_name", "").map(|(name, _)| name))
        .filter(non_empty)
        .or_else(program_name);
    if let Some(name) = name {
        base.application_name(&name);
    }
    if let Some((binding, _)) = setting("channel_binding", "PGCHANNELBINDING") {
        use postgres::config::ChannelBinding;
        base.channel_binding(match binding.as_str() {
            "disable" => ChannelBinding::Disable,
            "prefer" => ChannelBinding::Prefer,
            "require" => ChannelBinding::Require,
            _ => return Err(format!("invalid channel_binding value: \"{binding}\"")),
        });
    }
    // The crate always asks for UTF8, which is what pgdict reads text as. (Empty asks for
    // nothing in libpq: the server's default.)
    let encoding =
        setting("client_encoding", "PGCLIENTENCODING").filter(|(value, _)| non_empty(value));
    if let Some((encoding, origin)) = encoding {
        let utf8 = ["utf8", "utf-8", "unicode", "auto"];
        if !utf8.contains(&encoding.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "{origin}={encoding}: pgdict reads rows as PostgreSQL sends them in UTF8, and \
                 supports no other client_encoding"
            ));
        }
    }
    // pgdict has no GSSAPI, as a libpq built without it.
    if let Some((mode, _)) = setting("gssencmode", "PGGSSENCMODE") {
        match mode.as_str() {
            "disable" | "prefer" => {}
            "require" => {
                return Err(
                    "gssencmode value \"require\" invalid when GSSAPI support is not \
                            compiled in (pgdict has none)"
                        .into(),
                )
            }
            _ => return Err(format!("invalid gssencmode value: \"{mode}\"")),
        }
    }
    let tls_setting =
        |keyword: &str, variable: &str| setting(keyword, variable).map(|(value, _)| value);
    let home = set_env("HOME").map(std::path::PathBuf::from);
    let tls = TlsSettings::new(&tls_setting, home.as_deref())?;
    base.ssl_mode(tls.mode.negotiation());

    // Without a password given (an empty one counts as none there, as in libpq), each host's
    // from the password file, as libpq looks it up.
    let password_file = match (base.get_password().filter(|p| !p.is_empty()), passwords) {
        (None, Passwords::Look) => {
            let passfile = setting("passfile", "PGPASSFILE").map(|(path, _)| path);
            password_file::read(passfile, &set_env)
        }
        _ => None,
    };
    let per_host: Vec<Config> = targets
        .iter()
        .map(|target| {
            let mut config = base.clone();
            target.add_to(&mut config);
            if let Some(password) = password_file
                .as_deref()
                .and_then(|file| password_file::password_for(file, &config, target))
            {
                config.password(password);
            }
            config
        })
        .collect();
    let mut config = base;
    for target in &targets {
        target.add_to(&mut config);
    }
    if let Some(password) = per_host.first().and_then(Config::get_password) {
        config.password(password);
    }
    let socket_names = targets
        .iter()
        .map(|target| target.socket_dir_beside_address().map(str::to_string))
        .collect();
    Ok(ConnInfo {
        config,
        tls,
        target,
        per_host,
        socket_names,
    })
}

/// libpq's `target_session_attrs`: the kind of server a session must reach, checked once
/// connected (a host that does not suit passes the turn on to the next).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionTarget {
    /// Any server (the default).
    Any,
    /// A session that may write: a primary whose `default_transaction_read_only` is off.
    ReadWrite,
    /// A read-only session: a hot standby, or `default_transaction_read_only` on.
    ReadOnly,
    /// A server not in recovery.
    Primary,
    /// A hot standby.
    Standby,
    /// A hot standby if any host is one, else any server.
    PreferStandby,
}

impl std::str::FromStr for SessionTarget {
    type Err = String;

    fn from_str(value: &str) -> Result<SessionTarget, String> {
        Ok(match value {
            "any" => SessionTarget::Any,
            "read-write" => SessionTarget::ReadWrite,
            "read-only" => SessionTarget::ReadOnly,
            "primary" => SessionTarget::Primary,
            "standby" => SessionTarget::Standby,
            "prefer-standby" => SessionTarget::PreferStandby,
            _ => return Err(format!("invalid target_session_attrs value: \"{value}\"")),
        })
    }
}

impl SessionTarget {
    /// Why the session of `client` does not suit, in libpq's words; none if it does.
    fn mismatch(
        self,
        client: &mut postgres::Client,
    ) -> Result<Option<&'static str>, postgres::Error> {
        if matches!(self, SessionTarget::Any | SessionTarget::PreferStandby) {
            return Ok(None);
        }
        let row = client.query_one(
            "SELECT pg_catalog.current_setting('transaction_read_only') = 'on', \
             pg_catalog.pg_is_in_recovery()",
            &[],
        )?;
        let (read_only, standby): (bool, bool) = (row.get(0), row.get(1));
        Ok(match self {
            SessionTarget::ReadWrite if read_only => Some("session is read-only"),
            SessionTarget::ReadOnly if !read_only => Some("session is not read-only"),
            SessionTarget::Primary if standby => Some("server is in hot standby mode"),
            SessionTarget::Standby if !standby => Some("server is not in hot standby mode"),
            _ => None,
        })
    }
}

/// One server to try: a host name or Unix socket directory, or an address, or both (the
/// address to connect to, the name for TLS), and a port.
struct Target {
    host: Option<String>,
    /// Whether `host` is a default socket directory (none was named), which libpq looks up
    /// in the password file as `localhost`.
    default_socket: bool,
    /// The address, and the address as given (`127.1`), which libpq looks up in the password
    /// file when no host name comes with it.
    hostaddr: Option<(std::net::IpAddr, String)>,
    port: u16,
    /// The port as given (white space around the number kept), which libpq matches against
    /// the password file's as text; empty, 5432.
    port_text: String,
}

impl Target {
    /// The host, if it is a socket directory named beside an address: libpq then connects by
    /// TCP to the address, with TLS as `sslmode` says (checking a certificate against the
    /// directory's name, which none matches).
    fn socket_dir_beside_address(&self) -> Option<&str> {
        let host = self.host.as_deref()?;
        (self.hostaddr.is_some() && host.starts_with('/')).then_some(host)
    }

    /// The crate's settings for this server. A socket directory beside an address is left
    /// out: the crate would connect to the address, but with no name to give TLS.
    fn add_to(&self, config: &mut Config) {
        match &self.host {
            Some(_) if self.socket_dir_beside_address().is_some() => {}
            Some(host) => {
                config.host(host);
            }
            None => {}
        }
        if let Some((address, _)) = self.hostaddr {
            config.hostaddr(address);
        }
        config.port(self.port);
    }
}

/// The servers a connection names, as libpq pairs its lists up (`connectOptions2`): hosts
/// and addresses one to one, ports one to one or one for all; an empty host is the default
/// Unix socket, an empty port 5432. `hostaddr` and `port` come with where they were set, for
/// messages.
fn targets(
    hosts: Option<(String, String)>,
    hostaddrs: Option<(String, String)>,
    ports: Option<(String, String)>,
) -> Result<Vec<Target>, String> {
    // Each port as a number and as given; an empty entry is 5432.
    let default_port = || (5432, "5432".to_string());
    let ports: Vec<(u16, String)> = match &ports {
        None => vec![default_port()],
        Some((list, origin)) => list
            .split(',')
            .map(|text| match text {
                "" => Ok(default_port()),
                _ => keywords::integer(text)
                    .and_then(|port| u16::try_from(port).ok())
                    .filter(|&port| port != 0)
                    .map(|port| (port, text.to_string()))
                    .ok_or_else(|| {
                        format!("{origin}={list} is not a port number (or a list of them)")
                    }),
            })
            .collect::<Result<_, _>>()?,
    };
    // An empty entry: no address for that host (its name is looked up), as in libpq.
    let addresses: Vec<Option<(std::net::IpAddr, String)>> = match &hostaddrs {
        None => Vec::new(),
        Some((list, origin)) => list
            .split(',')
            .map(|text| match text {
                "" => Ok(None),
                _ => {
                    refuse_zone(text, origin, list)?;
                    match numeric_address(text) {
                        Some(address) => Ok(Some((address, text.to_string()))),
                        None => Err(format!(
                            "{origin}={list} is not an IP address (or a list of them)"
                        )),
                    }
                }
            })
            .collect::<Result<_, _>>()?,
    };
    // An empty host (`host=''`) names none, as in libpq; it still keeps the environment and
    // a service from naming one.
    let names: Vec<&str> = match &hosts {
        Some((list, origin)) if !list.is_empty() => {
            let names: Vec<&str> = list.split(',').collect();
            for name in &names {
                refuse_zone(name, origin, list)?;
                if name.starts_with('@') {
                    // libpq (on Linux) connects to the abstract socket; the crate cannot.
                    return Err(format!(
                        "{origin}={list}: {name} names an abstract Unix socket, which pgdict \
                         cannot connect to (the postgres crate connects to socket files): \
                         give the server's socket directory or its TCP address"
                    ));
                }
            }
            names
        }
        _ => Vec::new(),
    };
    if !names.is_empty() && !addresses.is_empty() && names.len() != addresses.len() {
        return Err(format!(
            "could not match {} host names to {} hostaddr values",
            names.len(),
            addresses.len()
        ));
    }
    let count = names.len().max(addresses.len()).max(1);
    if ports.len() > 1 && ports.len() != count {
        return Err(format!(
            "could not match {} port numbers to {count} hosts",
            ports.len()
        ));
    }
    let port = |i: usize| ports.get(i).unwrap_or(&ports[0]);
    // The default socket directories: those that hold the port's socket (so that messages
    // name the server connected to), else both (so that the error says where it looked).
    let default_dirs = |port: u16| {
        let socket = |dir: &&str| Path::new(dir).join(format!(".s.PGSQL.{port}")).exists();
        let found: Vec<&str> = DEFAULT_SOCKET_DIRS.into_iter().filter(socket).collect();
        match found.is_empty() {
            true => DEFAULT_SOCKET_DIRS.to_vec(),
            false => found,
        }
    };
    if names.is_empty() && addresses.is_empty() {
        // Given empty: the first of them, as the one libpq tries.
        let dirs = match hosts {
            Some(_) => default_dirs(port(0).0)[..1].to_vec(),
            None => default_dirs(port(0).0),
        };
        return Ok(dirs
            .into_iter()
            .map(|dir| Target {
                host: Some(dir.to_string()),
                default_socket: true,
                hostaddr: None,
                port: port(0).0,
                port_text: port(0).1.clone(),
            })
            .collect());
    }
    Ok((0..count)
        .map(|i| {
            let hostaddr = addresses.get(i).cloned().flatten();
            // Neither a name nor an address: the default socket directory.
            let (host, default_socket) = match names.get(i).copied() {
                Some("") | None if hostaddr.is_none() => {
                    (Some(default_dirs(port(i).0)[0].into()), true)
                }
                Some("") | None => (None, false),
                Some(name) => (Some(name.to_string()), false),
            };
            Target {
                host,
                default_socket,
                hostaddr,
                port: port(i).0,
                port_text: port(i).1.clone(),
            }
        })
        .collect())
}

/// Refuses a link-local IPv6 address with a zone (`fe80::1%eth0`), given as a host or an
/// address (`origin`, its list `list`, for the message): libpq connects to it through
/// `getaddrinfo`, but the `postgres` crate connects to the address without its zone, which the
/// kernel refuses for a link-local address ("Invalid argument", while psql connects). Any
/// other address with a zone is left to the lookup, which refuses it, as it refuses psql's
/// (glibc's `getaddrinfo` takes a zone only on a link-local address).
fn refuse_zone(text: &str, origin: &str, list: &str) -> Result<(), String> {
    let link_local = |address: &str| {
        address
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|address| address.is_unicast_link_local())
    };
    match text.split_once('%') {
        Some((address, zone)) if link_local(address) => Err(format!(
            "{origin}={list}: {text} is a link-local IPv6 address with a zone (%{zone}), \
             which pgdict cannot connect through (the postgres crate leaves the zone out); \
             give the server's global address or a host name"
        )),
        _ => Ok(()),
    }
}

/// A `hostaddr` entry as libpq reads it, through `getaddrinfo` with `AI_NUMERICHOST`: an IPv6
/// address, or an IPv4 address in any form C's `inet_aton` takes (`127.0.0.1`, `127.1`,
/// `0x7f000001`, `0177.0.0.1`: one to four numbers separated by dots, each decimal, octal
/// after a `0` or hexadecimal after `0x`, the last filling the bytes that remain), nothing
/// after it. (An IPv6 address with a zone, `fe80::1%eth0`, is not taken: the crate has no
/// place for the zone, and `parse` refuses a link-local one with that reason.)
pub fn numeric_address(text: &str) -> Option<std::net::IpAddr> {
    if text.contains(':') {
        return text.parse().ok();
    }
    // A number as C's strtoul reads it with base 0, each digit checked (from_str_radix would
    // also take a sign).
    let number = |part: &str| -> Option<u32> {
        let (digits, radix) = match part.strip_prefix("0x").or(part.strip_prefix("0X")) {
            Some(hex) => (hex, 16),
            None if part.len() > 1 && part.starts_with('0') => (&part[1..], 8),
            None => (part, 10),
        };
        let valid = !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
        valid.then(|| u32::from_str_radix(digits, radix).ok())?
    };
    let numbers: Vec<u32> = text.split('.').map(number).collect::<Option<_>>()?;
    let (last, leading) = numbers.split_last()?;
    if leading.len() > 3 || leading.iter().any(|&byte| byte > 0xff) {
        return None;
    }
    let last_bits = 32 - 8 * leading.len() as u32;
    if last_bits < 32 && *last >> last_bits != 0 {
        return None;
    }
    let leading = leading
        .iter()
        .enumerate()
        .fold(0, |value, (i, &byte)| value | byte << (24 - 8 * i));
    Some(std::net::Ipv4Addr::from(leading | last).into())
}

/// The running program's file name (`pgdict`, `pgdict-trainer`).
fn program_name() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.file_name()?.to_string_lossy().into_owned())
}

impl ConnInfo {
    /// One configuration a host (a host name or socket directory, or an address, and its
    /// port), in the order they are tried, each with its own password.
    pub fn hosts(&self) -> &[Config] {
        &self.per_host
    }

    /// For each of [`ConnInfo::hosts`], the socket directory named as its host beside its
    /// address (`host=/tmp hostaddr=127.0.0.1`), which libpq reports as the host while it
    /// connects to the address by TCP; the configuration leaves it out.
    pub fn socket_names(&self) -> &[Option<String>] {
        &self.socket_names
    }

    /// The servers connected to, for messages (see [`servers`]), host by host (the combined
    /// configuration cannot pair a host named empty, or a socket directory beside an address,
    /// with its address).
    pub fn servers(&self) -> String {
        let each: Vec<String> = self.per_host.iter().map(servers).collect();
        each.join(", ")
    }

    /// Connects as libpq would with these settings: each host in turn until one takes the
    /// session (see [`tls`] for TLS), stopping, as libpq does, at a host that refused the
    /// session (authentication, a missing database) or whose TLS failed: only a host that
    /// could not be reached, or that `target_session_attrs` rules out, passes the turn on.
    /// The error names each host's failure.
    pub fn connect(&self) -> Result<postgres::Client, ConnectError> {
        // prefer-standby: every host for a standby first, then every host for any server.
        let passes = match self.target {
            SessionTarget::PreferStandby => vec![SessionTarget::Standby, SessionTarget::Any],
            target => vec![target],
        };
        // load_balance_hosts=random (libpq 16): the hosts in a random order.
        let mut hosts: Vec<usize> = (0..self.per_host.len()).collect();
        if self.config.get_load_balance_hosts() == postgres::config::LoadBalanceHosts::Random {
            use rand::seq::SliceRandom;
            hosts.shuffle(&mut rand::rng());
        }
        let mut failures = Vec::new();
        'passes: for target in passes {
            for &host in &hosts {
                let config = &self.per_host[host];
                let socket_name = self.socket_names[host].as_deref();
                let failure = match self.connect_to(config.clone(), socket_name) {
                    Ok(mut client) => match target.mismatch(&mut client) {
                        Ok(None) => return Ok(client),
                        Ok(Some(why)) => ConnectError::Unsuitable(why.into()),
                        Err(error) => ConnectError::Postgres {
                            error,
                            certificate: None,
                        },
                    },
                    Err(e) if e.from_server() || e.is_tls() => {
                        failures.push((servers(config), e));
                        break 'passes;
                    }
                    Err(e) => e,
                };
                failures.push((servers(config), failure));
            }
        }
        match failures.len() {
            0 => Err(ConnectError::Setup("no host to connect to".into())),
            1 => Err(failures.pop().expect("one failure").1),
            _ => Err(ConnectError::EachHost(failures)),
        }
    }

    /// Connects to the one host `config` names; `socket_name`, the socket directory named
    /// as its host beside its address, if one was.
    fn connect_to(
        &self,
        mut config: Config,
        socket_name: Option<&str>,
    ) -> Result<postgres::Client, ConnectError> {
        use postgres::config::SslMode as Negotiation;

        let hosts = config.get_hosts();
        // An address makes it TCP, even beside a socket directory (libpq's CHT_HOST_ADDRESS).
        let over_tcp = hosts.iter().any(|host| matches!(host, Host::Tcp(_)))
            || !config.get_hostaddrs().is_empty();
        if !over_tcp || self.tls.mode == SslMode::Disable {
            // libpq never asks for TLS over a Unix socket, whatever sslmode says.
            return connect_plain(config);
        }
        if hosts.is_empty() {
            // The TLS handshake needs a name, which libpq takes from `host`: the address
            // serves (`verify-full` needs the name it checks the certificate against).
            if self.tls.mode == SslMode::VerifyFull {
                return Err(ConnectError::Setup(match socket_name {
                    // libpq connects, then finds that the certificate is not for that name.
                    Some(dir) => format!(
                        "a server certificate cannot match host name \"{dir}\", a socket \
                         directory (hostaddr connects over TCP): a verified SSL connection \
                         needs the server's name as host"
                    ),
                    None => "host name must be specified for a verified SSL connection (a \
                             hostaddr alone gives none)"
                        .into(),
                }));
            }
            for address in config.get_hostaddrs().to_vec() {
                config.host(&address.to_string());
            }
        }
        match self.tls.mode {
            // libpq's `allow`: without TLS first, then, if the server refused that, with it.
            SslMode::Allow => match connect_plain(config.clone()) {
                Err(e) if e.from_server() => self.connect_tls(config, Negotiation::Require),
                attempt => attempt,
            },
            // libpq's `prefer`: with TLS if the server has it, and without if TLS failed (its
            // files, the certificate check) or the server refused the session over TLS.
            SslMode::Prefer => match self.connect_tls(config.clone(), Negotiation::Prefer) {
                Err(e) if e.is_tls() || e.from_server() => connect_plain(config),
                attempt => attempt,
            },
            mode => self.connect_tls(config, mode.negotiation()),
        }
    }

    /// Connects with TLS as the settings say, negotiated as `negotiation` says.
    fn connect_tls(
        &self,
        mut config: Config,
        negotiation: postgres::config::SslMode,
    ) -> Result<postgres::Client, ConnectError> {
        let (connector, mismatch) = self.tls.connector().map_err(ConnectError::Setup)?;
        config.ssl_mode(negotiation);
        config.connect(connector).map_err(|error| {
            let certificate = mismatch.lock().unwrap_or_else(|e| e.into_inner()).take();
            ConnectError::Postgres { error, certificate }
        })
    }
}

/// Asks the server to cancel the query running in the session `token` came from, as libpq's
/// `PQcancel` does: over a new connection to the same server, without TLS where the server
/// takes that, else with TLS as `tls` says (the session's settings).
pub fn cancel_query(token: &postgres::CancelToken, tls: &TlsSettings) -> Result<(), String> {
    match token.cancel_query(postgres::NoTls) {
        Ok(()) => Ok(()),
        Err(plain) => {
            let (connector, _) = tls.connector()?;
            token
                .cancel_query(connector)
                .map_err(|e| format!("{plain}; with TLS: {e}"))
        }
    }
}

/// Connects without TLS.
fn connect_plain(mut config: Config) -> Result<postgres::Client, ConnectError> {
    config.ssl_mode(postgres::config::SslMode::Disable);
    config
        .connect(postgres::NoTls)
        .map_err(|error| ConnectError::Postgres {
            error,
            certificate: None,
        })
}

/// Why [`ConnInfo::connect`] did not connect.
#[derive(Debug)]
pub enum ConnectError {
    /// Before connecting: a TLS file missing or unreadable, or settings libpq refuses.
    Setup(String),
    /// The server took the session, but is not of the kind `target_session_attrs` asks for
    /// (libpq's words: "server is in hot standby mode", ...).
    Unsuitable(String),
    /// Every host failed, each for its reason (server, error), in the order tried.
    EachHost(Vec<(String, ConnectError)>),
    /// Connecting failed. `certificate` is libpq's message when the server's certificate was
    /// not issued for the host (OpenSSL's error, in `error`, says only that it was refused).
    Postgres {
        /// The crate's error.
        error: postgres::Error,
        /// libpq's message for a certificate not issued for the host.
        certificate: Option<String>,
    },
}

impl ConnectError {
    /// Everything known about the failure, for messages (see
    /// [`crate::dict::describe_pg_error`]).
    pub fn describe(&self) -> String {
        match self {
            ConnectError::Setup(message) | ConnectError::Unsuitable(message) => message.clone(),
            ConnectError::EachHost(failures) => failures
                .iter()
                .map(|(server, e)| format!("{server}: {}", e.describe()))
                .collect::<Vec<_>>()
                .join("; "),
            ConnectError::Postgres {
                error,
                certificate: Some(mismatch),
            } => format!("the server's certificate was refused: {mismatch} ({error})"),
            ConnectError::Postgres { error, .. } => crate::dict::describe_pg_error(error),
        }
    }

    /// The failure the others are judged by: for several hosts, the last one's (the host
    /// tried last, whose failure ended the attempt).
    fn last(&self) -> &ConnectError {
        match self {
            ConnectError::EachHost(failures) => match failures.last() {
                Some((_, e)) => e.last(),
                None => self,
            },
            _ => self,
        }
    }

    /// Whether the server answered with an error (it refused the session).
    pub fn from_server(&self) -> bool {
        matches!(self.last(), ConnectError::Postgres { error, .. } if error.as_db_error().is_some())
    }

    /// The SQLSTATE of an error the server sent.
    pub fn sqlstate(&self) -> Option<String> {
        match self.last() {
            ConnectError::Postgres { error, .. } => error.code().map(|c| c.code().to_string()),
            _ => None,
        }
    }

    /// Whether TLS failed: a file or setting before connecting, the handshake, or the
    /// server's certificate.
    pub fn is_tls(&self) -> bool {
        match self.last() {
            ConnectError::Setup(_) => true,
            ConnectError::EachHost(_) | ConnectError::Unsuitable(_) => false,
            ConnectError::Postgres { error, certificate } => {
                // The crate's error for a failed handshake: "error performing TLS handshake".
                certificate.is_some() || error.to_string().contains("TLS handshake")
            }
        }
    }

    /// What to do next, for messages.
    pub fn hint(&self) -> &'static str {
        if let ConnectError::Unsuitable(_) = self.last() {
            return "no host listed is the kind of server target_session_attrs asks for (a \
                    primary for read-write and primary, a hot standby for read-only and \
                    standby): list one that is, or change target_session_attrs";
        }
        if self.is_tls() {
            return "check the TLS settings: sslmode, sslrootcert (the root certificate the \
                    server's certificate must be signed by), sslcert and sslkey (a client \
                    certificate), or their PGSSL* variables; `psql` takes the same";
        }
        if let ConnectError::Postgres { error, .. } = self.last() {
            // The client's own words when the server asks for a password it was not given.
            if error.code().is_none() && self.last().describe().contains("password missing") {
                return "the server asks for a password: give it with password= in the \
                        connection string, PGPASSWORD, or a line of the password file \
                        (~/.pgpass, or PGPASSFILE)";
            }
        }
        match self.sqlstate().as_deref() {
            None => {
                "is the server running and listening on that host and port? check the \
                 connection string"
            }
            // invalid_authorization_specification, invalid_password
            Some("28000" | "28P01") => {
                "the server refused the user: check user and password in the connection \
                 string (or PGUSER, PGPASSWORD) and the server's pg_hba.conf"
            }
            // invalid_catalog_name
            Some("3D000") => {
                "the server has no such database: check dbname in the connection string (or \
                 PGDATABASE); `psql -l` lists the databases"
            }
            // too_many_connections, cannot_connect_now
            Some("53300" | "57P03") => {
                "the server takes no connections now (starting up, shutting down or full): run \
                 the command again later"
            }
            Some(_) => "check the connection string",
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
        read_with_env(conninfo, vars).map(|info| info.config)
    }

    fn read_with_env(conninfo: &str, vars: &[(&str, &str)]) -> Result<ConnInfo, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse_with_env(conninfo, |name| vars.get(name).cloned(), Passwords::Look)
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
        // The URL form too; an empty PGHOST, as `host=''`, is the first of them only (as
        // libpq tries its one).
        let config = with_env("postgresql:///app?port=9", &[]).unwrap();
        assert_eq!(config.get_hosts().len(), 2);
        let config = with_env("postgresql:///app?port=9", &[("PGHOST", "")]).unwrap();
        assert_eq!(servers(&config), "/var/run/postgresql/.s.PGSQL.9");
        // An empty host in a list, in either form, is the default socket.
        let config = with_env("host=,db2 port=9", &[]).unwrap();
        assert_eq!(servers(&config), "/var/run/postgresql/.s.PGSQL.9, db2:9");
        let config = with_env("postgresql://:9,db2:10/app", &[]).unwrap();
        assert_eq!(servers(&config), "/var/run/postgresql/.s.PGSQL.9, db2:10");
        // A URL's host without a port takes PGPORT, as in libpq; hosts without ports do not
        // (libpq reads them as a list of empty ports: 5432 each).
        let config = with_env("postgresql://db1/app", &[("PGPORT", "6543")]).unwrap();
        assert_eq!(servers(&config), "db1:6543");
        let config = with_env("postgresql://db1,db2/app", &[("PGPORT", "6543")]).unwrap();
        assert_eq!(servers(&config), "db1:5432, db2:5432");
        assert_eq!(
            with_env("host=db1 port=1,2", &[]).unwrap_err(),
            "could not match 2 port numbers to 1 hosts"
        );
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
            ("PGOPTIONS", "-c work_mem=64MB"),
            ("PGAPPNAME", "nightly-train"),
        ];
        let config = with_env("", &vars).unwrap();
        assert_eq!(servers(&config), "db1:6543, /run/pg/.s.PGSQL.6543");
        assert_eq!(config.get_user(), Some("app"));
        assert_eq!(config.get_dbname(), Some("events"));
        assert_eq!(config.get_password(), Some(&b"secret"[..]));
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(2)));
        assert_eq!(config.get_options(), Some("-c work_mem=64MB"));
        assert_eq!(config.get_application_name(), Some("nightly-train"));
        // What the string says wins.
        let config = with_env(
            "host=10.0.0.1 port=5433 user=u dbname=d password=p connect_timeout=9 \
             options='-c jit=off' application_name=app",
            &vars,
        )
        .unwrap();
        assert_eq!(servers(&config), "10.0.0.1:5433");
        assert_eq!(config.get_options(), Some("-c jit=off"));
        assert_eq!(config.get_application_name(), Some("app"));
        assert_eq!(config.get_user(), Some("u"));
        assert_eq!(config.get_dbname(), Some("d"));
        assert_eq!(config.get_password(), Some(&b"p"[..]));
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(9)));
        // Without PGAPPNAME, the program names itself (here, the test binary).
        let config = with_env("", &[]).unwrap();
        let program = std::env::current_exe().unwrap();
        let program = program.file_name().unwrap().to_str().unwrap();
        assert_eq!(config.get_application_name(), Some(program));
        // A hostaddr is a host; PGHOST still counts beside it, as in libpq (the name for TLS
        // and the password file), and the two lists must pair up.
        let config = with_env("hostaddr=::1", &[("PGPORT", "6543")]).unwrap();
        assert_eq!(servers(&config), "[::1]:6543");
        assert_eq!(
            with_env("hostaddr=::1", &vars).unwrap_err(),
            "could not match 2 host names to 1 hostaddr values"
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
        // Named, only Debian's libpq's (`/tmp` is `/tmp`).
        let named = |host: &str| {
            let config = with_env(&format!("host={host} dbname=app"), &vars).unwrap();
            config.get_password().map(<[u8]>::to_vec)
        };
        assert_eq!(named("/var/run/postgresql"), Some(b"secret".to_vec()));
        assert_eq!(named("/tmp"), None);
        // The port as given: ' 5432' is no line's 5432 (libpq compares the text).
        assert_eq!(named("'' port=' 5432'"), None);
        assert_eq!(named("'' port=5432"), Some(b"secret".to_vec()));
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
    fn tls_settings_are_read_and_the_rest_goes_to_the_crate() {
        use postgres::config::SslMode as CrateMode;

        let info = read_with_env(
            "host=db sslmode=verify-full sslrootcert=/etc/ca.crt dbname=app",
            &[("HOME", "/home/u")],
        )
        .unwrap();
        assert_eq!(info.tls.mode, SslMode::VerifyFull);
        assert_eq!(info.config.get_ssl_mode(), CrateMode::Require);
        assert_eq!(info.config.get_dbname(), Some("app"));
        assert_eq!(
            info.tls.root_cert.as_deref(),
            Some(Path::new("/etc/ca.crt"))
        );
        // PGSSLMODE, in a URL too; allow negotiates as prefer.
        let info = read_with_env("postgresql://db/app", &[("PGSSLMODE", "allow")]).unwrap();
        assert_eq!(info.tls.mode, SslMode::Allow);
        assert_eq!(info.config.get_ssl_mode(), CrateMode::Prefer);
        let info = read_with_env("postgresql://db/app?sslmode=disable", &[]).unwrap();
        assert_eq!(info.config.get_ssl_mode(), CrateMode::Disable);
        assert_eq!(
            read_with_env("host=db sslmode=verify", &[]).unwrap_err(),
            "invalid sslmode value: \"verify\""
        );
    }

    #[test]
    fn a_service_fills_in_before_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("services");
        std::fs::write(
            &file,
            "[reports]\nhost=db1\nport=6000\ndbname=reports\nsslmode=verify-full\n\
             [bad]\nport=x\n[peer]\nrequirepeer=postgres\n",
        )
        .unwrap();
        let file = file.display().to_string();
        let vars = [
            ("PGSERVICEFILE", file.as_str()),
            ("PGHOST", "env-host"),
            ("PGUSER", "env-user"),
            ("PGDATABASE", "env-db"),
        ];
        let info = read_with_env("service=reports", &vars).unwrap();
        assert_eq!(info.servers(), "db1:6000");
        assert_eq!(info.config.get_dbname(), Some("reports"));
        assert_eq!(info.config.get_user(), Some("env-user"));
        assert_eq!(info.tls.mode, SslMode::VerifyFull);
        // The string wins over the service; PGSERVICE names one too, in a URL as well.
        let with_service = [vars[0], vars[1], ("PGSERVICE", "reports")];
        let info = read_with_env("port=7000 dbname=app sslmode=disable", &with_service).unwrap();
        assert_eq!(info.servers(), "db1:7000");
        assert_eq!(info.config.get_dbname(), Some("app"));
        assert_eq!(info.tls.mode, SslMode::Disable);
        let info = read_with_env("postgresql:///app?service=reports", &vars).unwrap();
        assert_eq!(info.servers(), "db1:6000");
        // Errors name the service, the file, the keyword.
        assert_eq!(
            read_with_env("service=bad", &vars).unwrap_err(),
            "service \"bad\": port=x is not a port number (or a list of them)"
        );
        assert!(read_with_env("service=peer", &vars)
            .unwrap_err()
            .starts_with("service \"peer\" sets requirepeer, which pgdict does not"));
        assert_eq!(
            read_with_env("service=nowhere", &vars).unwrap_err(),
            "definition of service \"nowhere\" not found"
        );
    }

    #[test]
    fn each_host_gets_its_own_password_from_the_file() {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "db1:*:*:*:one\ndb2:6000:*:*:two\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let file = path.display().to_string();
        let info = read_with_env(
            "host=db1,db2,db3 port=5432,6000,5432 user=u",
            &[("PGPASSFILE", file.as_str())],
        )
        .unwrap();
        let passwords: Vec<Option<&[u8]>> =
            info.per_host.iter().map(Config::get_password).collect();
        assert_eq!(passwords, [Some(&b"one"[..]), Some(&b"two"[..]), None]);
        // passfile= in the string names the file too (before PGPASSFILE).
        let info = read_with_env(
            &format!("host=db1 user=u passfile='{file}'"),
            &[("PGPASSFILE", "/nonexistent")],
        )
        .unwrap();
        assert_eq!(info.per_host[0].get_password(), Some(&b"one"[..]));
        // One given in the string serves every host.
        let info =
            read_with_env("host=db1,db2 password=x", &[("PGPASSFILE", file.as_str())]).unwrap();
        assert!(info
            .per_host
            .iter()
            .all(|config| config.get_password() == Some(&b"x"[..])));
    }

    /// A socket directory is `localhost` in the password file only as libpq spells the
    /// default (`strcmp`), and a host beside an address is still the host looked up.
    #[test]
    fn socket_directories_in_the_password_file_are_matched_as_spelled() {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(
            &path,
            "localhost:*:*:*:local\n/var/run/postgresql/:*:*:*:slashed\n/tmp:*:*:*:tmp\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let vars = [("PGPASSFILE", path.to_str().unwrap())];
        let password = |conninfo: &str| {
            let info = read_with_env(conninfo, &vars).unwrap();
            info.per_host[0].get_password().map(<[u8]>::to_vec)
        };
        assert_eq!(
            password("host=/var/run/postgresql user=u"),
            Some(b"local".to_vec())
        );
        assert_eq!(
            password("host=/var/run/postgresql/ user=u"),
            Some(b"slashed".to_vec())
        );
        assert_eq!(
            password("host=/tmp hostaddr=127.0.0.1 user=u"),
            Some(b"tmp".to_vec())
        );
    }

    /// A socket directory beside an address: the address is connected to (by TCP), the
    /// directory kept for messages; an abstract socket (`@name`) is refused by name.
    #[test]
    fn a_socket_directory_beside_an_address_and_abstract_sockets() {
        let info = read_with_env("host=/tmp,db hostaddr=127.0.0.1,::1 port=5433", &[]).unwrap();
        assert!(info.per_host[0].get_hosts().is_empty());
        assert_eq!(info.socket_names, [Some("/tmp".to_string()), None]);
        assert_eq!(info.servers(), "127.0.0.1:5433, db:5433");
        let info = read_with_env("host=,db2 hostaddr=127.0.0.1,127.0.0.2 port=1", &[]).unwrap();
        assert_eq!(info.servers(), "127.0.0.1:1, db2:1");
        assert_eq!(
            info.per_host[0].get_hostaddrs(),
            ["127.0.0.1".parse::<std::net::IpAddr>().unwrap()]
        );
        let err = read_with_env("host=@pg", &[]).unwrap_err();
        assert!(
            err.starts_with("host=@pg: @pg names an abstract Unix socket"),
            "{err}"
        );
    }

    #[test]
    fn libpq_keywords_the_crate_lacks_are_read() {
        let info = read_with_env(
            "host=db requiressl=1 sslsni=0 ssl_min_protocol_version=tlsv1.3 \
             keepalives_count=4 fallback_application_name=nightly gssencmode=disable \
             client_encoding=UTF8 sslcompression=0",
            &[],
        )
        .unwrap();
        assert_eq!(info.tls.mode, SslMode::Require);
        assert!(!info.tls.sni);
        assert_eq!(
            info.tls.protocols,
            (Some(openssl::ssl::SslVersion::TLS1_3), None)
        );
        assert_eq!(info.config.get_keepalives_retries(), Some(4));
        assert_eq!(info.config.get_application_name(), Some("nightly"));
        // requiressl in the string is an sslmode there, over PGSSLMODE; PGREQUIRESSL counts
        // (a value starting with 1) only when no sslmode is set.
        let mode =
            |conninfo: &str, vars: &[(&str, &str)]| read_with_env(conninfo, vars).unwrap().tls.mode;
        assert_eq!(
            mode("host=db requiressl=0", &[("PGSSLMODE", "require")]),
            SslMode::Prefer
        );
        assert_eq!(mode("host=db", &[("PGREQUIRESSL", "1x")]), SslMode::Require);
        assert_eq!(
            mode(
                "host=db",
                &[("PGREQUIRESSL", "1"), ("PGSSLMODE", "disable")]
            ),
            SslMode::Disable
        );
        // The defaults: TLSv1.2 at least, SNI on.
        let info = read_with_env("host=db", &[]).unwrap();
        assert!(info.tls.sni);
        assert_eq!(
            info.tls.protocols,
            (Some(openssl::ssl::SslVersion::TLS1_2), None)
        );
        for (conninfo, error) in [
            (
                "gssencmode=require",
                "gssencmode value \"require\" invalid when GSSAPI support is not compiled in \
                 (pgdict has none)",
            ),
            ("gssencmode=maybe", "invalid gssencmode value: \"maybe\""),
            (
                "ssl_max_protocol_version=TLSv2",
                "invalid ssl_max_protocol_version value: \"TLSv2\"",
            ),
            (
                "ssl_min_protocol_version=TLSv1.3 ssl_max_protocol_version=TLSv1.2",
                "invalid SSL protocol version range",
            ),
            (
                "client_encoding=LATIN1",
                "client_encoding=LATIN1: pgdict reads rows as PostgreSQL sends them in UTF8, \
                 and supports no other client_encoding",
            ),
        ] {
            assert_eq!(read_with_env(conninfo, &[]).unwrap_err(), error);
        }
    }

    #[test]
    fn channel_binding_and_requirepeer_from_the_environment() {
        use postgres::config::ChannelBinding;
        let binding = |conninfo: &str, vars: &[(&str, &str)]| {
            read_with_env(conninfo, vars)
                .unwrap()
                .config
                .get_channel_binding()
        };
        assert_eq!(binding("host=db", &[]), ChannelBinding::Prefer);
        let require = [("PGCHANNELBINDING", "require")];
        assert_eq!(binding("host=db", &require), ChannelBinding::Require);
        assert_eq!(
            binding("host=db channel_binding=disable", &require),
            ChannelBinding::Disable
        );
        assert_eq!(
            with_env("host=db", &[("PGCHANNELBINDING", "maybe")]).unwrap_err(),
            "invalid channel_binding value: \"maybe\""
        );
        assert_eq!(
            with_env("host=db", &[("PGCHANNELBINDING", "")]).unwrap_err(),
            "invalid channel_binding value: \"\""
        );
        let err = with_env("host=db", &[("PGREQUIREPEER", "postgres")]).unwrap_err();
        assert!(err.starts_with("PGREQUIREPEER is set"), "{err}");
        // GSSAPI's settings are read and unused, as by a libpq without GSSAPI.
        assert!(read_with_env("host=db krbsrvname=pg gsslib=gssapi", &[]).is_ok());
    }

    #[test]
    fn an_empty_value_means_what_it_means_to_libpq() {
        let os_user = whoami::username().unwrap();
        // The string's empty value is a value: the variable is not read, and the user is the
        // operating system's, the database the user's.
        let config = with_env("host=db user='' dbname=''", &[("PGUSER", "e")]).unwrap();
        assert_eq!(config.get_user(), Some(os_user.as_str()));
        assert_eq!(config.get_dbname(), Some(os_user.as_str()));
        let config = with_env("host=db user=u dbname=''", &[("PGDATABASE", "d")]).unwrap();
        assert_eq!(config.get_dbname(), Some("u"));
        // No address; no service (found nowhere); no client encoding (the server's).
        let config = with_env("host=a,b hostaddr=''", &[]).unwrap();
        assert_eq!(servers(&config), "a:5432, b:5432");
        assert_eq!(
            with_env("host=db", &[("PGSERVICE", "")]).unwrap_err(),
            "definition of service \"\" not found"
        );
        assert!(with_env("host=db client_encoding=''", &[]).is_ok());
        // A keyword whose values libpq checks against a list refuses an empty one.
        for (keyword, variable) in [
            ("sslmode", "PGSSLMODE"),
            ("gssencmode", "PGGSSENCMODE"),
            ("target_session_attrs", "PGTARGETSESSIONATTRS"),
            ("channel_binding", "PGCHANNELBINDING"),
        ] {
            let refused = format!("invalid {keyword} value: \"\"");
            assert_eq!(
                with_env(&format!("host=db {keyword}=''"), &[]).unwrap_err(),
                refused
            );
            assert_eq!(with_env("host=db", &[(variable, "")]).unwrap_err(), refused);
        }
        // An empty connect_timeout is psql's error, as any that is not a number.
        assert_eq!(
            with_env("host=db", &[("PGCONNECT_TIMEOUT", "")]).unwrap_err(),
            "PGCONNECT_TIMEOUT= is not a number of seconds"
        );
        // TLS: a file's default, over the variable; no protocol bound; no server name.
        let tls =
            |conninfo: &str, vars: &[(&str, &str)]| read_with_env(conninfo, vars).unwrap().tls;
        let vars = [("PGSSLROOTCERT", "/r.crt"), ("HOME", "/home/u")];
        let settings = tls("host=db sslrootcert=''", &vars);
        let default = std::path::PathBuf::from("/home/u/.postgresql/root.crt");
        assert_eq!(settings.root_cert, Some(default));
        let settings = tls("host=db", &[("PGSSLMINPROTOCOLVERSION", "")]);
        assert_eq!(settings.protocols, (None, None));
        assert!(tls("host=db", &[]).sni);
        for sni in ["", "0", "x"] {
            assert!(!tls("host=db", &[("PGSSLSNI", sni)]).sni, "{sni:?}");
        }
        assert!(tls("host=db sslsni=10", &[]).sni);
    }

    #[test]
    fn addresses_are_read_as_inet_aton_reads_them() {
        for (text, address) in [
            ("127.0.0.1", Some("127.0.0.1")),
            ("127.1", Some("127.0.0.1")),
            ("10.1.2", Some("10.1.0.2")),
            ("0", Some("0.0.0.0")),
            ("0x7f000001", Some("127.0.0.1")),
            ("0177.0.0.01", Some("127.0.0.1")),
            ("4294967295", Some("255.255.255.255")),
            ("::1", Some("::1")),
            ("::ffff:1.2.3.4", Some("::ffff:1.2.3.4")),
            ("4294967296", None),
            ("256.1", None),
            ("1.2.3.4.5", None),
            ("1.2.65536", None),
            ("08", None),
            ("0x", None),
            ("0x+1", None),
            ("+1", None),
            ("1..2", None),
            ("1.", None),
            (" 1", None),
            ("1 ", None),
            ("fe80::1%eth0", None),
        ] {
            let read = numeric_address(text).map(|address| address.to_string());
            assert_eq!(read.as_deref(), address, "{text:?}");
        }
    }

    #[test]
    fn hosts_and_addresses_are_taken_as_given() {
        // libpq trims neither: " db2" is a name to look up (and " /tmp" no directory).
        let config = with_env("host='db1, db2, /tmp'", &[]).unwrap();
        assert_eq!(servers(&config), "db1:5432,  db2:5432,  /tmp:5432");
        assert_eq!(
            with_env("host=db hostaddr=' 127.0.0.1'", &[]).unwrap_err(),
            "hostaddr= 127.0.0.1 is not an IP address (or a list of them)"
        );
    }

    #[test]
    fn a_link_local_ipv6_address_with_a_zone_is_refused_with_the_reason() {
        let refused = |origin: &str, list: &str, text: &str| {
            format!(
                "{origin}={list}: {text} is a link-local IPv6 address with a zone (%eth0), \
                 which pgdict cannot connect through (the postgres crate leaves the zone out); \
                 give the server's global address or a host name"
            )
        };
        assert_eq!(
            with_env("host=db1,fe80::1%eth0", &[]).unwrap_err(),
            refused("host", "db1,fe80::1%eth0", "fe80::1%eth0")
        );
        assert_eq!(
            with_env("host=db hostaddr=fe80::1%eth0", &[]).unwrap_err(),
            refused("hostaddr", "fe80::1%eth0", "fe80::1%eth0")
        );
        assert_eq!(
            with_env("postgresql://[fe80::1%25eth0]:5433/app", &[]).unwrap_err(),
            refused("host", "fe80::1%eth0", "fe80::1%eth0")
        );
        assert_eq!(
            with_env("", &[("PGHOST", "fe80::2%eth0")]).unwrap_err(),
            refused("PGHOST", "fe80::2%eth0", "fe80::2%eth0")
        );
        // Without a zone; another address with one (left to the lookup, which refuses it as
        // it refuses psql's); a name with a % in it (looked up as it stands, as libpq does).
        assert_eq!(
            servers(&with_env("host=fe80::1", &[]).unwrap()),
            "[fe80::1]:5432"
        );
        assert!(with_env("host=fd00::2%eth0", &[]).is_ok());
        assert!(
            with_env("host=db hostaddr=::1%lo", &[]).is_err(),
            "not an IP address"
        );
        assert_eq!(servers(&with_env("host=db%1", &[]).unwrap()), "db%1:5432");
    }

    #[test]
    fn bad_values_are_named() {
        let err = with_env("", &[("PGPORT", "54x")]).unwrap_err();
        assert_eq!(err, "PGPORT=54x is not a port number (or a list of them)");
        // An integer as libpq reads one: white space around it, but not only white space.
        assert_eq!(
            with_env("port=' 5433 '", &[]).unwrap().get_ports(),
            [5433, 5433]
        );
        let err = with_env("", &[("PGPORT", " ")]).unwrap_err();
        assert_eq!(err, "PGPORT=  is not a port number (or a list of them)");
        let err = with_env("", &[("PGCONNECT_TIMEOUT", "soon")]).unwrap_err();
        assert_eq!(err, "PGCONNECT_TIMEOUT=soon is not a number of seconds");
        assert!(with_env("port=x", &[]).is_err());
    }
}
