//! Throwaway PostgreSQL clusters for integration tests: a primary, and streaming hot standbys
//! made from it.
//!
//! Each [`PgCluster`] lives in its own temporary directory under `/tmp`:
//!
//! ```text
//!   pgdict-pg-XXXXXX/     owned by the server's user (postgres when the tests run as root)
//!     data/               the data directory (initdb, or pg_basebackup for a standby)
//!     sock/               the Unix socket directory (-k), so clusters never share a socket
//!     server.log          the server log (pg_ctl -l); quoted in every start failure
//! ```
//!
//! The server listens on 127.0.0.1 only, on a port picked free just before starting (bind port
//! 0, read it, release it); if another process takes the port in between, the start is retried
//! on a new one. Authentication is `trust`; the superuser is `postgres`. The settings a later
//! replication test needs are on from the start (`wal_level=replica`, `max_wal_senders=4`,
//! `hot_standby=on`), plus `fsync=off`, because a test cluster need not survive a power cut.
//!
//! Server binaries come from `PGDICT_PG_BINDIR`, else `/usr/lib/postgresql/15/bin` (Debian's
//! PostgreSQL 15), else `pg_config --bindir`. A missing binary fails the test with a message
//! saying what to install: a test that needs a server never skips silently. initdb refuses to run as root, so when the tests run as root every
//! server binary runs as the `postgres` user through `runuser`.
//!
//! Dropping a cluster stops its server (`pg_ctl stop -m immediate`) and removes the directory.
//! Drop also runs while a panicking test unwinds, so a failed assertion does not leave a
//! server behind. A test process killed outright (SIGKILL, abort) skips Drop and leaves its
//! server and directory behind; `runuser -u postgres -- pg_ctl stop -D /tmp/pgdict-pg-*/data`
//! cleans up after it.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pgdict::dict::describe_pg_error;
use tempfile::TempDir;

/// How long a server may take to start or stop (pg_ctl's `-t`, in seconds).
const PG_CTL_TIMEOUT_SECS: u64 = 60;

/// How long [`PgCluster::wait_for_replay`] waits for a standby to catch up.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(60);

/// How many ports a start tries before giving up (each retry follows a lost port race).
const START_ATTEMPTS: usize = 5;

/// Settings passed to every server with `-c`, besides the port, socket directory and address.
const SERVER_SETTINGS: &[&str] = &[
    "listen_addresses=127.0.0.1",
    // For streaming standbys (start_standby) and later replication tests.
    "wal_level=replica",
    "max_wal_senders=4",
    "hot_standby=on",
    // Keep enough WAL that a standby made from a base backup can always catch up.
    "wal_keep_size=128MB",
    // A test cluster is thrown away; durability only costs time.
    "fsync=off",
];

/// A running PostgreSQL server in a temporary directory, stopped and removed on drop.
pub struct PgCluster {
    /// The server binaries, and how to run them.
    bin: Binaries,
    /// `data/`, `sock/` and `server.log` live here. Dropped (removed) after the server stops.
    root: TempDir,
    /// `root/data`.
    data_dir: PathBuf,
    /// 0 until the server has started.
    port: u16,
}

/// Where the server binaries are, and the user they run as.
#[derive(Clone)]
struct Binaries {
    dir: PathBuf,
    /// `Some` when the tests run as root: the binaries run as this user through `runuser`,
    /// and the cluster directories are chowned to its (uid, gid).
    run_as: Option<RunAs>,
}

#[derive(Clone)]
struct RunAs {
    user: String,
    uid: u32,
    gid: u32,
}

impl PgCluster {
    /// Creates a cluster with initdb (trust authentication, UTF8, C locale, superuser
    /// `postgres`), starts it on a free port and waits until it accepts connections.
    ///
    /// Panics, with the server log, if any step fails.
    pub fn start() -> PgCluster {
        PgCluster::start_with(&[])
    }

    /// [`PgCluster::start`], with `settings` (`name = value` lines) added to
    /// postgresql.conf first: for settings only a restart changes (`shared_buffers`).
    pub fn start_with(settings: &[&str]) -> PgCluster {
        let mut cluster = PgCluster::empty(Binaries::locate());
        // From here on, a panic drops `cluster`, which stops whatever was started.
        let data_dir = cluster.data_dir().to_path_buf();
        let initdb = cluster
            .bin
            .command("initdb")
            .arg("--pgdata")
            .arg(&data_dir)
            .args([
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--username=postgres",
            ])
            .args(["--no-sync", "--no-instructions"])
            .current_dir(cluster.root.path())
            .output();
        cluster.check_output("initdb", initdb);
        if !settings.is_empty() {
            let conf = data_dir.join("postgresql.conf");
            let mut text = fs::read_to_string(&conf).unwrap();
            for setting in settings {
                text.push_str(setting);
                text.push('\n');
            }
            fs::write(&conf, text)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", conf.display()));
        }
        cluster.launch();
        cluster
    }

    /// Makes a streaming hot standby of this cluster (`pg_basebackup -R -X stream` into a new
    /// temporary directory), starts it on its own port and waits until it accepts read-only
    /// connections.
    pub fn start_standby(&self) -> PgCluster {
        let mut standby = PgCluster::empty(self.bin.clone());
        let data_dir = standby.data_dir().to_path_buf();
        let backup = standby
            .bin
            .command("pg_basebackup")
            .args(["--host=127.0.0.1", "--username=postgres"])
            .arg(format!("--port={}", self.port))
            .arg("--pgdata")
            .arg(&data_dir)
            // -R: write standby.signal and primary_conninfo; -X stream: WAL along the copy.
            .args(["--write-recovery-conf", "--wal-method=stream"])
            .args(["--checkpoint=fast", "--no-sync"])
            .current_dir(standby.root.path())
            .output();
        standby.check_output(&format!("pg_basebackup from port {}", self.port), backup);
        standby.launch();
        standby
    }

    /// Waits until `standby` has replayed all WAL this cluster had written when the call
    /// began (its `pg_last_wal_replay_lsn()` reaches this cluster's `pg_current_wal_lsn()`).
    ///
    /// Panics after a bounded wait, naming both positions and quoting the standby's log.
    pub fn wait_for_replay(&self, standby: &PgCluster) {
        let target: String = self
            .client()
            .query_one("SELECT pg_current_wal_lsn()::text", &[])
            .expect("reading the primary's WAL position")
            .get(0);
        let mut standby_client = standby.client();
        let deadline = Instant::now() + REPLAY_TIMEOUT;
        loop {
            let row = standby_client
                .query_one(
                    "SELECT pg_last_wal_replay_lsn()::text, \
                     pg_last_wal_replay_lsn() >= $1::text::pg_lsn",
                    &[&target],
                )
                .expect("reading the standby's replay position");
            let replayed: Option<String> = row.get(0);
            let caught_up: Option<bool> = row.get(1);
            match caught_up {
                Some(true) => return,
                None => panic!(
                    "the cluster on port {} is not a standby (pg_last_wal_replay_lsn() is \
                     NULL)",
                    standby.port
                ),
                Some(false) if Instant::now() >= deadline => panic!(
                    "standby on port {} did not replay up to the primary's WAL position {target} \
                     within {REPLAY_TIMEOUT:?} (replayed up to {}); standby log:\n{}",
                    standby.port,
                    replayed.as_deref().unwrap_or("?"),
                    standby.server_log()
                ),
                Some(false) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// A new connection as `postgres` to the `postgres` database, over TCP without TLS.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.connection_string(), postgres::NoTls).unwrap_or_else(|e| {
            panic!(
                "cannot connect to the test server on port {}: {}",
                self.port,
                describe_pg_error(&e)
            )
        })
    }

    /// A new connection to a new database `name` in SQL_ASCII (collation C), where any byte
    /// but NUL is a text value's byte.
    pub fn sql_ascii_client(&self, name: &str) -> postgres::Client {
        self.client()
            .batch_execute(&format!(
                "CREATE DATABASE {name} TEMPLATE template0 ENCODING 'SQL_ASCII' LC_COLLATE 'C' \
                 LC_CTYPE 'C'"
            ))
            .unwrap();
        let conninfo = format!("{} dbname={name}", self.connection_string());
        postgres::Client::connect(&conninfo, postgres::NoTls).unwrap()
    }

    /// Serves TLS with `certificate` and `key` (copied into the data directory as
    /// `server.crt` and `server.key`, owned by the server's user, readable by nobody else) and,
    /// if given, `client_root` as the root that client certificates must be signed by
    /// (`ssl_ca_file`); then reloads the configuration (pg_hba.conf too) and waits until a new
    /// session sees `ssl` on. Called again, it swaps the certificate: the reload takes a
    /// moment, which the caller waits out.
    pub fn serve_tls(&self, certificate: &Path, key: &Path, client_root: Option<&Path>) {
        use std::os::unix::fs::PermissionsExt;

        let owner = fs::metadata(self.data_dir()).unwrap();
        let mut files = vec![(certificate, "server.crt"), (key, "server.key")];
        files.extend(client_root.map(|root| (root, "ca.crt")));
        for (from, to) in files {
            let path = self.data_dir().join(to);
            fs::copy(from, &path).unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
            std::os::unix::fs::chown(&path, Some(owner.uid()), Some(owner.gid())).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        }
        let mut client = self.client();
        // One statement each: ALTER SYSTEM refuses to run in a multi-statement transaction.
        client.batch_execute("ALTER SYSTEM SET ssl = on").unwrap();
        if client_root.is_some() {
            client
                .batch_execute("ALTER SYSTEM SET ssl_ca_file = 'ca.crt'")
                .unwrap();
        }
        client.batch_execute("SELECT pg_reload_conf()").unwrap();
        // The reload is a signal: wait until a new session sees it.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ssl: String = self.client().query_one("SHOW ssl", &[]).unwrap().get(0);
            if ssl == "on" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "ssl stayed off: {}",
                self.server_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The TCP port the server listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// A libpq-style connection string for [`PgCluster::client`]'s connection (also usable by
    /// `psql` or a pgdict command under test).
    pub fn connection_string(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres connect_timeout=10",
            self.port
        )
    }

    /// What the owner of a PostgreSQL store can do behind its triggers: swap the ids of
    /// dictionaries 1 and 2 (their other triggers off too, for the retired table's foreign
    /// key), then put the triggers back as the store made them.
    pub const SWAP_DICTIONARIES_1_AND_2: &'static str = "BEGIN;
        ALTER TABLE pgdict.dictionaries DISABLE TRIGGER ALL;
        UPDATE pgdict.dictionaries SET id = 100 WHERE id = 1;
        UPDATE pgdict.dictionaries SET id = 1 WHERE id = 2;
        UPDATE pgdict.dictionaries SET id = 2 WHERE id = 100;
        ALTER TABLE pgdict.dictionaries ENABLE TRIGGER ALL;
        ALTER TABLE pgdict.dictionaries ENABLE ALWAYS TRIGGER refuse_change;
        ALTER TABLE pgdict.dictionaries ENABLE ALWAYS TRIGGER refuse_truncate;
        COMMIT";

    /// Runs `command` (a pgdict binary, its arguments but the source's given) on a view whose
    /// rows take 5 s each, interrupts it (SIGINT) once its query of the view is under way, and
    /// asserts that the server's query ends with the process: cancelled, not left running
    /// until it next writes to the closed socket (the rest of the 5 s).
    pub fn assert_interrupt_cancels_read(&self, mut command: Command) {
        let mut client = self.client();
        client
            .batch_execute(
                "CREATE VIEW slow_rows AS SELECT 'row ' || g || pg_sleep(5)::text AS v \
                 FROM generate_series(1, 100) g",
            )
            .unwrap();
        let reading = |client: &mut postgres::Client| -> i64 {
            client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' \
                     AND query LIKE 'SELECT % FROM slow_rows %' AND pid <> pg_backend_pid()",
                    &[],
                )
                .unwrap()
                .get(0)
        };
        let conninfo = self.connection_string();
        let mut child = command
            .args([
                "--pg-source",
                &conninfo,
                "--table",
                "slow_rows",
                "--column",
                "v",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while reading(&mut client) == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no query of the view began"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let interrupted = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(interrupted.success());
        let status = child.wait().unwrap();
        assert!(!status.success(), "{status}");
        // The 5 s row is cancelled at once; give the server a moment to say so.
        let ended = Instant::now();
        while reading(&mut client) > 0 {
            assert!(
                ended.elapsed() < Duration::from_millis(2500),
                "the query went on after the process ended"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        client.batch_execute("DROP VIEW slow_rows").unwrap();
    }

    /// The server log so far (its last 16 KB), for failure messages.
    pub fn server_log(&self) -> String {
        read_tail(&self.log_file(), 16 * 1024)
    }

    /// The postmaster's process id, while the server runs.
    pub fn postmaster_pid(&self) -> Option<u32> {
        let pid_file = fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        pid_file.lines().next()?.trim().parse().ok()
    }

    /// A cluster directory with nothing in it yet, owned by the server's user.
    fn empty(bin: Binaries) -> PgCluster {
        // Under /tmp (not $TMPDIR, which may sit in a directory the postgres user cannot
        // traverse), and only names without spaces or quotes: pg_ctl passes -o to a shell.
        let base = Path::new("/tmp");
        let root = tempfile::Builder::new()
            .prefix("pgdict-pg-")
            .tempdir_in(base)
            .unwrap_or_else(|e| panic!("cannot create a cluster directory in /tmp: {e}"));
        let data_dir = root.path().join("data");
        let cluster = PgCluster {
            bin,
            root,
            data_dir,
            port: 0,
        };
        let sock_dir = cluster.sock_dir();
        fs::create_dir(&sock_dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", sock_dir.display()));
        if let Some(run_as) = &cluster.bin.run_as {
            for dir in [cluster.root.path(), &sock_dir] {
                std::os::unix::fs::chown(dir, Some(run_as.uid), Some(run_as.gid)).unwrap_or_else(
                    |e| panic!("cannot chown {} to {}: {e}", dir.display(), run_as.user),
                );
            }
        }
        cluster
    }

    /// The directory of the server's Unix socket (`.s.PGSQL.<port>`).
    pub fn sock_dir(&self) -> PathBuf {
        self.root.path().join("sock")
    }

    fn log_file(&self) -> PathBuf {
        self.root.path().join("server.log")
    }

    /// Starts the server on a free port (retrying on a lost port race) and waits until it
    /// accepts connections.
    fn launch(&mut self) {
        let sock_dir = self.sock_dir();
        let sock = sock_dir
            .to_str()
            .expect("temporary directory path is UTF-8");
        assert!(
            sock.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c)),
            "socket directory {sock} would need shell quoting"
        );
        for attempt in 1..=START_ATTEMPTS {
            let port = free_port();
            let mut options = format!("-p {port} -k {sock}");
            for setting in SERVER_SETTINGS {
                options.push_str(" -c ");
                options.push_str(setting);
            }
            let log_len_before = fs::metadata(self.log_file()).map_or(0, |m| m.len());
            let output = self
                .bin
                .command("pg_ctl")
                .arg("start")
                .arg("--pgdata")
                .arg(self.data_dir())
                .arg("--log")
                .arg(self.log_file())
                .arg("--options")
                .arg(&options)
                .arg("--wait")
                .arg(format!("--timeout={PG_CTL_TIMEOUT_SECS}"))
                .current_dir(self.root.path())
                .output();
            let output = output.unwrap_or_else(|e| panic!("cannot run pg_ctl start: {e}"));
            if output.status.success() {
                self.port = port;
                self.wait_accepting();
                return;
            }
            let log = fs::read(self.log_file()).unwrap_or_default();
            let new_log = String::from_utf8_lossy(&log[(log_len_before as usize).min(log.len())..]);
            let lost_port_race = new_log.contains("Address already in use")
                || new_log.contains("could not create any TCP/IP sockets");
            if !lost_port_race || attempt == START_ATTEMPTS {
                panic!(
                    "PostgreSQL failed to start (attempt {attempt}, port {port}, data directory \
                     {}):\n{}\n--- server log ---\n{}",
                    self.data_dir().display(),
                    describe_output(&output),
                    self.server_log()
                );
            }
        }
    }

    /// pg_ctl -w returns once the server reports itself ready; connect to make sure.
    fn wait_accepting(&self) {
        let deadline = Instant::now() + Duration::from_secs(PG_CTL_TIMEOUT_SECS);
        loop {
            match postgres::Client::connect(&self.connection_string(), postgres::NoTls) {
                Ok(_) => return,
                Err(e) if Instant::now() >= deadline => panic!(
                    "the server on port {} started but does not accept connections: {}\n\
                     --- server log ---\n{}",
                    self.port,
                    describe_pg_error(&e),
                    self.server_log()
                ),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Panics, with the command's output and the server log, unless `output` is a success.
    fn check_output(&self, what: &str, output: std::io::Result<Output>) {
        let output = output.unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
        if !output.status.success() {
            panic!(
                "{what} failed:\n{}\n--- server log ---\n{}",
                describe_output(&output),
                self.server_log()
            );
        }
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        // No panics here: Drop also runs while a failed test unwinds, and a second panic
        // would abort the whole test binary.
        if self.data_dir().join("postmaster.pid").exists() {
            let stop = self
                .bin
                .command("pg_ctl")
                .arg("stop")
                .arg("--pgdata")
                .arg(self.data_dir())
                .args(["--mode=immediate", "--wait"])
                .arg(format!("--timeout={PG_CTL_TIMEOUT_SECS}"))
                .current_dir(self.root.path())
                .output();
            match stop {
                Ok(output) if output.status.success() => {}
                Ok(output) => eprintln!(
                    "warning: pg_ctl stop failed for {}:\n{}",
                    self.data_dir().display(),
                    describe_output(&output)
                ),
                Err(e) => eprintln!("warning: cannot run pg_ctl stop: {e}"),
            }
        }
        // `root` is removed when its TempDir drops, after this.
    }
}

impl Binaries {
    /// Finds the server binaries and decides whether they must run as `postgres`.
    fn locate() -> Binaries {
        // PostgreSQL 15's own directory before `pg_config` on PATH: Debian's /usr/bin/pg_config
        // answers for the newest version installed, which may not be 15 (pgref/build.rs links
        // 15's C pglz the same way).
        let debian_15 = Path::new("/usr/lib/postgresql/15/bin");
        let dir = match std::env::var_os("PGDICT_PG_BINDIR") {
            Some(dir) => PathBuf::from(dir),
            None if debian_15.join("initdb").exists() => debian_15.to_path_buf(),
            None => {
                let output = Command::new("pg_config").arg("--bindir").output();
                match output {
                    Ok(output) if output.status.success() => {
                        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
                    }
                    Ok(output) => panic!(
                        "pg_config --bindir failed ({}); set PGDICT_PG_BINDIR to the directory \
                         of PostgreSQL 15's server binaries",
                        output.status
                    ),
                    Err(e) => panic!(
                        "PostgreSQL server binaries not found: pg_config cannot run ({e}). \
                         Install PostgreSQL 15's server (Debian: postgresql-15) or set \
                         PGDICT_PG_BINDIR to the directory holding initdb and pg_ctl"
                    ),
                }
            }
        };
        let run_as = if running_as_root() {
            Some(RunAs::lookup("postgres"))
        } else {
            None
        };
        Binaries { dir, run_as }
    }

    /// A command running the server binary `name`, as the right user, with a clean
    /// environment: no PG* variables (PGDATA, PGPORT, ...) and C messages, so the log says
    /// "Address already in use" whatever the caller's locale.
    fn command(&self, name: &str) -> Command {
        let program = self.dir.join(name);
        assert!(
            program.is_file(),
            "PostgreSQL server binary {name} not found at {} (install PostgreSQL 15's server, \
             Debian: postgresql-15, or set PGDICT_PG_BINDIR)",
            program.display()
        );
        let mut command = match &self.run_as {
            Some(run_as) => {
                let mut command = Command::new("runuser");
                command.args(["-u", &run_as.user, "--"]).arg(program);
                command
            }
            None => Command::new(program),
        };
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("PG") {
                command.env_remove(key);
            }
        }
        command.env("LC_ALL", "C");
        command
    }
}

impl RunAs {
    fn lookup(user: &str) -> RunAs {
        let id = |flag: &str| -> u32 {
            let output = Command::new("id")
                .args([flag, user])
                .output()
                .unwrap_or_else(|e| panic!("cannot run id: {e}"));
            assert!(
                output.status.success(),
                "running as root, so the server must run as the `{user}` user, which does not \
                 exist: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
            String::from_utf8_lossy(&output.stdout)
                .trim()
                .parse()
                .expect("id prints a number")
        };
        RunAs {
            user: user.to_string(),
            uid: id("-u"),
            gid: id("-g"),
        }
    }
}

/// Whether this process runs as root: /proc/self belongs to the process's effective user.
fn running_as_root() -> bool {
    match fs::metadata("/proc/self") {
        Ok(meta) => meta.uid() == 0,
        Err(_) => {
            let output = Command::new("id").arg("-u").output();
            output.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        }
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    let listener =
        TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("cannot bind a port: {e}"));
    listener
        .local_addr()
        .expect("bound listener has an address")
        .port()
}

fn describe_output(output: &Output) -> String {
    format!(
        "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout).trim_end(),
        String::from_utf8_lossy(&output.stderr).trim_end()
    )
}

fn read_tail(path: &Path, max: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let start = bytes.len().saturating_sub(max);
            let mut text = String::from_utf8_lossy(&bytes[start..]).into_owned();
            if start > 0 {
                text.insert_str(0, "[...]\n");
            }
            text
        }
        Err(e) => format!("(no server log at {}: {e})", path.display()),
    }
}

/// Makes a self-signed certificate for `subject` in `dir`, `{name}.crt` with its key
/// `{name}.key` (with `-x509`, OpenSSL makes it a CA certificate, v3), valid for two days.
pub fn self_signed(dir: &Path, name: &str, subject: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            subject,
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
        ],
    );
}

/// Runs the `openssl` command in `dir` (it makes the certificates of the TLS tests), failing
/// the test with its error output.
pub fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl (Debian: apt-get install openssl)");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
