//! TLS as libpq does it: its `sslmode` values, the root certificate a server's certificate is
//! checked against, a client certificate for `cert` authentication, and its host name check.
//!
//! Read from PostgreSQL's `fe-secure-openssl.c` (`initialize_SSL`,
//! `pgtls_verify_peer_name_matches_certificate_guts`) and `fe-secure-common.c`; like libpq,
//! pgdict uses OpenSSL, so a certificate OpenSSL takes for libpq (an X.509 v1 certificate, a
//! self-signed server certificate given as the root) it takes for pgdict.
//!
//! | `sslmode`     | TLS                          | the server's certificate                        |
//! |---------------|------------------------------|-------------------------------------------------|
//! | `disable`     | never                        |                                                 |
//! | `allow`       | first without; with it if the server refused the session without | as `require` |
//! | `prefer` (default) | if the server has it; without if TLS failed (its files, the check) or the server refused the session over TLS | as `require` |
//! | `require`     | always                       | not checked, unless the root certificate file exists: then as `verify-ca` (as libpq does, for compatibility with its older versions) |
//! | `verify-ca`   | always                       | signed by a root certificate in the file        |
//! | `verify-full` | always                       | that, and issued for the host name connected to |
//!
//! The root certificate file is `sslrootcert`, else `~/.postgresql/root.crt`; `verify-ca` and
//! `verify-full` fail without it. `sslrootcert=system` trusts the system's roots (OpenSSL's
//! default paths) as libpq 16 and later do: only with `verify-full`, which it makes the
//! default `sslmode` (libpq 15 reads it as a file named `system`, which pgdict does not). The client
//! certificate is `sslcert`, else `~/.postgresql/postgresql.crt`, sent if the file exists,
//! with its key `sslkey`, else `~/.postgresql/postgresql.key` (PEM; an encrypted key takes
//! its passphrase from `sslpassword`), which others may not read. Over a Unix socket there is
//! no TLS whatever `sslmode` says, as in libpq (the server offers none there).

//! Where the chain is checked against a root certificate file, revocation lists are read as
//! libpq reads them: `sslcrl` (else, without `sslcrldir`, `~/.postgresql/root.crl`) and
//! `sslcrldir`; if they load, every certificate of the chain must be absent from its issuer's
//! list (OpenSSL's `CRL_CHECK_ALL`), and a list that does not load (no such file) is ignored.
//!
//! The host name check (`verify-full`) is libpq's, not OpenSSL's: a host that is an IP
//! address matches the certificate's `iPAddress` names, any other its `dNSName` names, where
//! `*.` may start a name and stands for one label; the subject's common name counts only if
//! the certificate has no alternative name of the host's kind; case does not matter.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::ssl::{SslConnector, SslFiletype, SslMethod, SslVerifyMode, SslVersion};
use openssl::x509::store::{X509Lookup, X509StoreBuilder};
use openssl::x509::verify::X509VerifyFlags;
use openssl::x509::{X509Ref, X509VerifyResult, X509};
use postgres_openssl::MakeTlsConnector;

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS if the server has it (libpq tries without first; pgdict as `prefer`).
    Allow,
    /// TLS if the server has it, the certificate not checked (the default).
    Prefer,
    /// TLS, the certificate checked only if the root certificate file exists.
    Require,
    /// TLS, the certificate signed by a trusted root.
    VerifyCa,
    /// TLS, the certificate signed by a trusted root and issued for the host.
    VerifyFull,
}

impl std::str::FromStr for SslMode {
    type Err = String;

    fn from_str(value: &str) -> Result<SslMode, String> {
        SslMode::ALL
            .into_iter()
            .find(|mode| mode.name() == value)
            .ok_or_else(|| format!("invalid sslmode value: \"{value}\""))
    }
}

impl SslMode {
    const ALL: [SslMode; 6] = [
        SslMode::Disable,
        SslMode::Allow,
        SslMode::Prefer,
        SslMode::Require,
        SslMode::VerifyCa,
        SslMode::VerifyFull,
    ];

    /// The mode's name in a connection string.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// The nearest mode the `postgres` crate knows, for it to negotiate TLS with.
    pub fn negotiation(self) -> postgres::config::SslMode {
        match self {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Allow | SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        }
    }
}

/// The TLS settings of a connection string (see the module documentation), files not read yet.
/// Their `Debug` form leaves the key's passphrase out.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// `sslmode`.
    pub mode: SslMode,
    /// `sslrootcert`, else `~/.postgresql/root.crt` (none without a home directory).
    pub root_cert: Option<PathBuf>,
    /// `sslcert`, else `~/.postgresql/postgresql.crt`.
    pub client_cert: Option<PathBuf>,
    /// `sslkey`, else `~/.postgresql/postgresql.key`.
    pub client_key: Option<PathBuf>,
    /// `sslpassword`: the passphrase of an encrypted client key.
    pub key_password: Option<String>,
    /// `sslcrl`, else (if `sslcrldir` is not given either) `~/.postgresql/root.crl`: the
    /// certificates the roots' issuers revoked.
    pub crl_file: Option<PathBuf>,
    /// `sslcrldir`: a directory of revocation lists, named by hash (`openssl rehash`).
    pub crl_dir: Option<PathBuf>,
    /// `sslsni`: whether the host name goes to the server in the handshake (SNI; never for an
    /// IP address).
    pub sni: bool,
    /// `ssl_min_protocol_version` (libpq's default: TLSv1.2) and `ssl_max_protocol_version`;
    /// none (given empty) leaves the bound to OpenSSL.
    pub protocols: (Option<SslVersion>, Option<SslVersion>),
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("mode", &self.mode)
            .field("root_cert", &self.root_cert)
            .field("client_cert", &self.client_cert)
            .field("client_key", &self.client_key)
            .field(
                "key_password",
                &self.key_password.as_ref().map(|_| "(hidden)"),
            )
            .field("crl_file", &self.crl_file)
            .field("crl_dir", &self.crl_dir)
            .field("sni", &self.sni)
            .field("protocols", &self.protocols)
            .finish()
    }
}

/// Where a connector's host name check leaves libpq's message when the server's certificate
/// was not issued for the host.
pub type NameMismatch = Arc<Mutex<Option<String>>>;

/// The TLS versions libpq names, oldest first.
const TLS_VERSIONS: [(&str, SslVersion); 4] = [
    ("TLSv1", SslVersion::TLS1),
    ("TLSv1.1", SslVersion::TLS1_1),
    ("TLSv1.2", SslVersion::TLS1_2),
    ("TLSv1.3", SslVersion::TLS1_3),
];

/// `sslrootcert`'s value for the system's root certificates.
const SYSTEM_ROOTS: &str = "system";

impl TlsSettings {
    /// The settings that `setting` finds (a keyword's value and the environment variable that
    /// stands in for it: the string's, else the service's, else the environment's, as
    /// [`super::parse_with_env`] looks them up), else libpq's defaults in the home directory
    /// `home`. An empty value means what it means to libpq: a file's default, no protocol
    /// bound, no server name indication.
    pub fn new(
        setting: &dyn Fn(&str, &str) -> Option<String>,
        home: Option<&Path>,
    ) -> Result<TlsSettings, String> {
        let home_file = |name: &str| home.map(|home| home.join(".postgresql").join(name));
        let mode = match setting("sslmode", "PGSSLMODE") {
            Some(mode) => mode.parse()?,
            // The old way of asking for TLS, which libpq still reads: a value starting with
            // `1` (in a string, `requiressl` was read as `sslmode` already).
            None if setting("requiressl", "PGREQUIRESSL").is_some_and(|v| v.starts_with('1')) => {
                SslMode::Require
            }
            // libpq 16: the system's roots make the default verify-full.
            None if setting("sslrootcert", "PGSSLROOTCERT").as_deref() == Some(SYSTEM_ROOTS) => {
                SslMode::VerifyFull
            }
            None => SslMode::Prefer,
        };
        // A version's place in TLS_VERSIONS, which orders them; given empty, none.
        let version = |name: &str, variable: &str| -> Result<Option<Option<usize>>, String> {
            let Some(value) = setting(name, variable) else {
                return Ok(None);
            };
            if value.is_empty() {
                return Ok(Some(None));
            }
            match TLS_VERSIONS
                .iter()
                .position(|(known, _)| known.eq_ignore_ascii_case(&value))
            {
                Some(at) => Ok(Some(Some(at))),
                None => Err(format!("invalid {name} value: \"{value}\"")),
            }
        };
        let min = version("ssl_min_protocol_version", "PGSSLMINPROTOCOLVERSION")?;
        let max = version("ssl_max_protocol_version", "PGSSLMAXPROTOCOLVERSION")?.flatten();
        // libpq's default minimum: TLSv1.2.
        let min = min.unwrap_or(Some(2));
        if let (Some(min), Some(max)) = (min, max) {
            if min > max {
                return Err("invalid SSL protocol version range".into());
            }
        }
        let protocols = (
            min.map(|min| TLS_VERSIONS[min].1),
            max.map(|max| TLS_VERSIONS[max].1),
        );
        let given = |name: &str, variable: &str| setting(name, variable).filter(|v| !v.is_empty());
        let file = |name: &str, variable: &str, default: &str| {
            given(name, variable)
                .map(PathBuf::from)
                .or_else(|| home_file(default))
        };
        let settings = TlsSettings {
            mode,
            root_cert: file("sslrootcert", "PGSSLROOTCERT", "root.crt"),
            client_cert: file("sslcert", "PGSSLCERT", "postgresql.crt"),
            client_key: file("sslkey", "PGSSLKEY", "postgresql.key"),
            // (No variable: libpq reads sslpassword from the string only.)
            key_password: given("sslpassword", ""),
            crl_file: given("sslcrl", "PGSSLCRL").map(PathBuf::from),
            crl_dir: given("sslcrldir", "PGSSLCRLDIR").map(PathBuf::from),
            // libpq sends the name when the value starts with `1` (its default).
            sni: setting("sslsni", "PGSSLSNI").is_none_or(|sni| sni.starts_with('1')),
            protocols,
        };
        let settings = match settings.crl_file.is_none() && settings.crl_dir.is_none() {
            true => TlsSettings {
                crl_file: home_file("root.crl"),
                ..settings
            },
            false => settings,
        };
        if settings.system_roots() && mode != SslMode::VerifyFull {
            return Err(format!(
                "weak sslmode \"{}\" may not be used with sslrootcert=system (use \
                 \"verify-full\")",
                settings.mode.name()
            ));
        }
        Ok(settings)
    }

    fn system_roots(&self) -> bool {
        self.root_cert.as_deref() == Some(Path::new(SYSTEM_ROOTS))
    }

    /// An OpenSSL connector that does what the settings say, its files read; and the slot in
    /// which its host name check leaves libpq's message when a certificate is not for the host
    /// (OpenSSL's own error says only "hostname mismatch").
    pub fn connector(&self) -> Result<(MakeTlsConnector, NameMismatch), String> {
        let mut builder = SslConnector::builder(SslMethod::tls_client())
            .map_err(|e| format!("could not create SSL context: {e}"))?;
        let (min, max) = self.protocols;
        builder
            .set_min_proto_version(min)
            .and_then(|()| builder.set_max_proto_version(max))
            .map_err(|e| format!("could not set the SSL protocol versions: {e}"))?;
        let check = self.load_roots(&mut builder)?;
        self.load_client_certificate(&mut builder)?;
        builder.set_verify(match check {
            Check::Nothing => SslVerifyMode::NONE,
            Check::Chain | Check::ChainAndName => SslVerifyMode::PEER,
        });
        let mismatch = Arc::new(Mutex::new(None));
        let mut connector = MakeTlsConnector::new(builder.build());
        let slot = mismatch.clone();
        let sni = self.sni;
        connector.set_callback(move |connection, host| {
            // The host name is checked as libpq checks it, below, not by OpenSSL.
            connection.set_verify_hostname(false);
            // libpq sends no name that is only digits and dots, or has a colon (an address);
            // the crate's test (an address as Rust parses one) would send `127.1`.
            let address_like =
                host.bytes().all(|b| b.is_ascii_digit() || b == b'.') || host.contains(':');
            connection.set_use_server_name_indication(sni && !address_like);
            if check == Check::ChainAndName {
                let host = host.to_string();
                let slot = slot.clone();
                connection.set_verify_callback(SslVerifyMode::PEER, move |chain_ok, context| {
                    if !chain_ok || context.error_depth() > 0 {
                        return chain_ok;
                    }
                    let Some(certificate) = context.current_cert() else {
                        return false;
                    };
                    match certificate_matches_host(certificate, &host) {
                        Ok(()) => true,
                        Err(message) => {
                            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
                            context.set_error(X509VerifyResult::APPLICATION_VERIFICATION);
                            false
                        }
                    }
                });
            }
            Ok(())
        });
        Ok((connector, mismatch))
    }

    /// Makes the root certificates the only ones `builder` trusts, and says what to check.
    fn load_roots(&self, builder: &mut openssl::ssl::SslConnectorBuilder) -> Result<Check, String> {
        let verify = match self.mode {
            SslMode::Disable => return Ok(Check::Nothing),
            SslMode::Allow | SslMode::Prefer | SslMode::Require => None,
            SslMode::VerifyCa => Some(Check::Chain),
            SslMode::VerifyFull => Some(Check::ChainAndName),
        };
        if self.system_roots() {
            // SslConnector::builder has loaded OpenSSL's default paths already.
            return Ok(Check::ChainAndName);
        }
        let Some(path) = self.root_cert.as_deref() else {
            return match verify {
                None => Ok(Check::Nothing),
                Some(_) => Err(
                    "could not get home directory to locate root certificate file; \
                                either provide the file or change sslmode to disable server \
                                certificate verification"
                        .into(),
                ),
            };
        };
        if std::fs::metadata(path).is_err() {
            return match verify {
                None => Ok(Check::Nothing),
                Some(_) => Err(format!(
                    "root certificate file \"{}\" does not exist; either provide the file or \
                     change sslmode to disable server certificate verification",
                    path.display()
                )),
            };
        }
        let unreadable = |e: String| {
            format!(
                "could not read root certificate file \"{}\": {e}",
                path.display()
            )
        };
        let pem = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
        let certificates = X509::stack_from_pem(&pem).map_err(|e| unreadable(e.to_string()))?;
        if certificates.is_empty() {
            return Err(unreadable("no certificate in it".into()));
        }
        let mut store = X509StoreBuilder::new().map_err(|e| unreadable(e.to_string()))?;
        for certificate in certificates {
            store
                .add_cert(certificate)
                .map_err(|e| unreadable(e.to_string()))?;
        }
        self.load_revocation_lists(&mut store);
        builder.set_cert_store(store.build());
        // With a root certificate file, the weaker modes check the chain as `verify-ca` does.
        Ok(verify.unwrap_or(Check::Chain))
    }

    /// Has `store` check every certificate of the chain against the revocation lists, if
    /// they load; as libpq, a list that does not (a file that does not exist) is no error.
    fn load_revocation_lists(&self, store: &mut X509StoreBuilder) {
        // The openssl crate panics on a path with a NUL byte (none of ours has one: they come
        // from UTF-8 strings that cannot hold NUL) or that is not UTF-8.
        fn usable(path: Option<&Path>) -> Option<&str> {
            path.and_then(Path::to_str).filter(|p| !p.contains('\0'))
        }
        let file = usable(self.crl_file.as_deref());
        let dir = usable(self.crl_dir.as_deref());
        if file.is_none() && dir.is_none() {
            return;
        }
        let file_loaded = file.is_none_or(|file| {
            store
                .add_lookup(X509Lookup::file())
                .and_then(|lookup| lookup.load_crl_file(file, SslFiletype::PEM))
                .is_ok()
        });
        let dir_added = dir.is_none_or(|dir| {
            store
                .add_lookup(X509Lookup::hash_dir())
                .and_then(|lookup| lookup.add_dir(dir, SslFiletype::PEM))
                .is_ok()
        });
        if file_loaded && dir_added {
            // As libpq: a failure here leaves the chain checked without revocation lists.
            let _ = store.set_flags(X509VerifyFlags::CRL_CHECK | X509VerifyFlags::CRL_CHECK_ALL);
        }
    }

    /// Gives `builder` the client certificate and its key, if the certificate file exists.
    fn load_client_certificate(
        &self,
        builder: &mut openssl::ssl::SslConnectorBuilder,
    ) -> Result<(), String> {
        let Some(cert) = self.client_cert.as_deref() else {
            return Ok(());
        };
        match std::fs::metadata(cert) {
            Ok(_) => {}
            // No certificate: connect without one; the server may not ask for it.
            // (ENOTDIR counts as ENOENT, as in libpq.)
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(())
            }
            Err(e) => {
                return Err(format!(
                    "could not open certificate file \"{}\": {e}",
                    cert.display()
                ))
            }
        }
        builder.set_certificate_chain_file(cert).map_err(|e| {
            format!(
                "could not read certificate file \"{}\": {e}",
                cert.display()
            )
        })?;
        let Some(key) = self.client_key.as_deref() else {
            return Err(format!(
                "certificate present, but not private key file (no home directory, and no \
                 sslkey) for \"{}\"",
                cert.display()
            ));
        };
        let pem = read_private_key(key)?;
        let password = self.key_password.clone().unwrap_or_default();
        let private_key = PKey::private_key_from_pem_callback(&pem, |buffer| {
            let password = password.as_bytes();
            if password.len() > buffer.len() {
                return Ok(0);
            }
            buffer[..password.len()].copy_from_slice(password);
            Ok(password.len())
        })
        .map_err(|e| {
            let hint = match self.key_password {
                None => " (an encrypted key needs its passphrase in sslpassword)",
                Some(_) => "",
            };
            format!(
                "could not load private key file \"{}\": {e}{hint}",
                key.display()
            )
        })?;
        builder
            .set_private_key(&private_key)
            .map_err(|e| format!("could not load private key file \"{}\": {e}", key.display()))?;
        builder.check_private_key().map_err(|e| {
            format!(
                "certificate does not match private key file \"{}\": {e}",
                key.display()
            )
        })
    }
}

/// What a connector checks of the server's certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    Nothing,
    /// Signed by a trusted root.
    Chain,
    /// That, and issued for the host name.
    ChainAndName,
}

/// A client key file's bytes, after libpq's checks: a plain file that only its owner may read
/// (or, owned by root, that its group may read too).
fn read_private_key(path: &Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::MetadataExt;

    let metadata = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "certificate present, but not private key file \"{}\"",
            path.display()
        ),
        _ => format!(
            "could not open private key file \"{}\": {e}",
            path.display()
        ),
    })?;
    if !metadata.is_file() {
        return Err(format!(
            "private key file \"{}\" is not a regular file",
            path.display()
        ));
    }
    let too_open = match metadata.uid() {
        0 => metadata.mode() & 0o037 != 0,
        _ => metadata.mode() & 0o077 != 0,
    };
    if too_open {
        return Err(format!(
            "private key file \"{}\" has group or world access; file must have permissions \
             u=rw (0600) or less if owned by the current user, or permissions u=rw,g=r (0640) \
             or less if owned by root",
            path.display()
        ));
    }
    std::fs::read(path).map_err(|e| {
        format!(
            "could not open private key file \"{}\": {e}",
            path.display()
        )
    })
}

/// libpq's host name check (`verify-full`; see the module documentation): `Ok` if
/// `certificate` was issued for `host`, else libpq's message.
pub fn certificate_matches_host(certificate: &X509Ref, host: &str) -> Result<(), String> {
    // An address as libpq tells one (`inet_aton`, `inet_pton`): `127.1` is 127.0.0.1.
    let host_ip = super::numeric_address(host);
    let mut examined = 0;
    let mut first_name: Option<String> = None;
    let mut check_common_name = true;
    let mut note = |name: String, examined: &mut usize| {
        *examined += 1;
        first_name.get_or_insert(name);
    };
    for name in certificate.subject_alt_names().iter().flatten() {
        if let Some(dns) = name.dnsname() {
            if host_ip.is_none() {
                check_common_name = false;
            }
            let matched = name_matches_host(dns.as_bytes(), host)?;
            note(dns.to_string(), &mut examined);
            if matched {
                return Ok(());
            }
        } else if let Some(bytes) = name.ipaddress() {
            if host_ip.is_some() {
                check_common_name = false;
            }
            let address = match *bytes {
                [a, b, c, d] => IpAddr::from([a, b, c, d]),
                _ => match <[u8; 16]>::try_from(bytes) {
                    Ok(octets) => IpAddr::from(octets),
                    Err(_) => {
                        return Err(format!(
                            "certificate contains IP address with invalid length {}",
                            bytes.len()
                        ))
                    }
                },
            };
            note(address.to_string(), &mut examined);
            if host_ip == Some(address) {
                return Ok(());
            }
        }
    }
    if check_common_name {
        let common_name = certificate
            .subject_name()
            .entries_by_nid(Nid::COMMONNAME)
            .next();
        if let Some(entry) = common_name {
            let name = entry.data().as_slice();
            let matched = name_matches_host(name, host)?;
            note(String::from_utf8_lossy(name).into_owned(), &mut examined);
            if matched {
                return Ok(());
            }
        }
    }
    Err(match (examined, first_name) {
        (0, _) | (_, None) => "could not get server's host name from server certificate".into(),
        (1, Some(name)) => {
            format!("server certificate for \"{name}\" does not match host name \"{host}\"")
        }
        (n, Some(name)) => format!(
            "server certificate for \"{name}\" (and {} other name{}) does not match host name \
             \"{host}\"",
            n - 1,
            if n == 2 { "" } else { "s" }
        ),
    })
}

/// Whether a name from a certificate matches `host`: equal but for case, or `*.rest` where
/// `host` is one label (no dot) followed by `.rest`. A name with a NUL byte in it is refused
/// (CVE-2009-4034).
fn name_matches_host(name: &[u8], host: &str) -> Result<bool, String> {
    if name.contains(&0) {
        return Err("SSL certificate's name contains embedded null".into());
    }
    let host = host.as_bytes();
    if name.eq_ignore_ascii_case(host) {
        return Ok(true);
    }
    let Some(suffix) = name.strip_prefix(b"*") else {
        return Ok(false);
    };
    if name.len() < 3 || !suffix.starts_with(b".") || suffix.len() >= host.len() {
        return Ok(false);
    }
    let (label, host_suffix) = host.split_at(host.len() - suffix.len());
    Ok(host_suffix.eq_ignore_ascii_case(suffix) && !label.contains(&b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::asn1::Asn1Time;
    use openssl::x509::extension::SubjectAlternativeName;
    use openssl::x509::X509NameBuilder;

    /// A self-signed certificate with common name `cn` and alternative names `dns` and `ips`.
    fn certificate(cn: Option<&str>, dns: &[&str], ips: &[&str]) -> X509 {
        let key = PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        if let Some(cn) = cn {
            name.append_entry_by_nid(Nid::COMMONNAME, cn).unwrap();
        }
        let name = name.build();
        let mut builder = X509::builder().unwrap();
        builder.set_version(2).unwrap();
        builder.set_subject_name(&name).unwrap();
        builder.set_issuer_name(&name).unwrap();
        builder.set_pubkey(&key).unwrap();
        builder
            .set_not_before(&Asn1Time::days_from_now(0).unwrap())
            .unwrap();
        builder
            .set_not_after(&Asn1Time::days_from_now(1).unwrap())
            .unwrap();
        if !dns.is_empty() || !ips.is_empty() {
            let mut san = SubjectAlternativeName::new();
            for name in dns {
                san.dns(name);
            }
            for ip in ips {
                san.ip(ip);
            }
            let extension = san.build(&builder.x509v3_context(None, None)).unwrap();
            builder.append_extension(extension).unwrap();
        }
        builder
            .sign(&key, openssl::hash::MessageDigest::sha256())
            .unwrap();
        builder.build()
    }

    #[test]
    fn names_match_as_in_libpq() {
        let matches = |name: &str, host: &str| name_matches_host(name.as_bytes(), host).unwrap();
        assert!(matches("db.example.com", "DB.Example.COM"));
        assert!(matches("*.example.com", "db.example.com"));
        assert!(matches("*.Example.com", "db.example.COM"));
        // One label only, and not the bare domain.
        assert!(!matches("*.example.com", "a.db.example.com"));
        assert!(!matches("*.example.com", "example.com"));
        assert!(!matches("*.example.com", ".example.com"));
        // A wildcard only as the whole first label.
        assert!(!matches("db*.example.com", "db1.example.com"));
        assert!(!matches("*", "db"));
        assert!(!matches("*.", "db."));
        assert!(!matches("db.example.com", "db.example.org"));
        assert_eq!(
            name_matches_host(b"db\0.evil.com", "db").unwrap_err(),
            "SSL certificate's name contains embedded null"
        );
    }

    #[test]
    fn alternative_names_and_the_common_name_count_as_in_libpq() {
        // Only a common name: it counts.
        let cn_only = certificate(Some("localhost"), &[], &[]);
        assert_eq!(certificate_matches_host(&cn_only, "localhost"), Ok(()));
        assert_eq!(
            certificate_matches_host(&cn_only, "127.0.0.1").unwrap_err(),
            "server certificate for \"localhost\" does not match host name \"127.0.0.1\""
        );
        // A DNS name in the alternative names: the common name no longer counts for DNS hosts.
        let both = certificate(Some("old.example.com"), &["db.example.com", "*.db.io"], &[]);
        assert_eq!(certificate_matches_host(&both, "db.example.com"), Ok(()));
        assert_eq!(certificate_matches_host(&both, "a.db.io"), Ok(()));
        assert_eq!(
            certificate_matches_host(&both, "old.example.com").unwrap_err(),
            "server certificate for \"db.example.com\" (and 1 other name) does not match host \
             name \"old.example.com\""
        );
        // ... but does for an IP address, when no iPAddress name is there (libpq departs from
        // RFC 6125 there, as NSS did).
        let ip_in_cn = certificate(Some("10.0.0.7"), &["db.example.com"], &[]);
        assert_eq!(certificate_matches_host(&ip_in_cn, "10.0.0.7"), Ok(()));
        // IP addresses, v4 and v6, compared as addresses.
        let ips = certificate(Some("10.0.0.7"), &["db"], &["10.0.0.8", "::1"]);
        assert_eq!(certificate_matches_host(&ips, "10.0.0.8"), Ok(()));
        assert_eq!(certificate_matches_host(&ips, "0:0::1"), Ok(()));
        assert_eq!(
            certificate_matches_host(&ips, "10.0.0.7").unwrap_err(),
            "server certificate for \"db\" (and 2 other names) does not match host name \
             \"10.0.0.7\""
        );
        // A dNSName is compared as text, whatever the host is (as libpq does).
        let dns_ip = certificate(None, &["10.0.0.9"], &["10.0.0.10"]);
        assert_eq!(certificate_matches_host(&dns_ip, "10.0.0.9"), Ok(()));
        assert!(certificate_matches_host(&dns_ip, "10.0.0.11").is_err());
        // A host that is an address in a short form (libpq's inet_aton): the alternative
        // address names count, not the common name.
        let short = certificate(Some("127.1"), &[], &["10.0.0.1"]);
        assert!(certificate_matches_host(&short, "127.1").is_err());
        let loopback = certificate(None, &[], &["127.0.0.1"]);
        assert_eq!(certificate_matches_host(&loopback, "127.1"), Ok(()));
        assert_eq!(certificate_matches_host(&loopback, "0x7f000001"), Ok(()));
        // No names at all.
        assert_eq!(
            certificate_matches_host(&certificate(None, &[], &[]), "db").unwrap_err(),
            "could not get server's host name from server certificate"
        );
    }

    #[test]
    fn settings_come_from_the_string_then_the_environment_then_home() {
        let vars = [
            ("HOME", "/home/u"),
            ("PGSSLMODE", "require"),
            ("PGSSLCERT", "/env/client.crt"),
        ];
        let settings = |conninfo: &str, vars: &[(&str, &str)]| {
            let env = |name: &str| {
                vars.iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.to_string())
            };
            super::super::parse_with_env(conninfo, env, super::super::Passwords::Skip)
                .map(|info| info.tls)
        };
        let tls = settings("host=db", &vars).unwrap();
        assert_eq!(tls.mode, SslMode::Require);
        assert_eq!(
            tls.root_cert.as_deref(),
            Some(Path::new("/home/u/.postgresql/root.crt"))
        );
        assert_eq!(
            tls.client_cert.as_deref(),
            Some(Path::new("/env/client.crt"))
        );
        assert_eq!(
            tls.client_key.as_deref(),
            Some(Path::new("/home/u/.postgresql/postgresql.key"))
        );
        let given = "host=db sslmode=verify-ca sslmode=verify-full sslrootcert=/etc/ca.crt \
                     sslpassword=p";
        let tls = settings(given, &vars).unwrap();
        assert_eq!(tls.mode, SslMode::VerifyFull);
        assert_eq!(tls.root_cert.as_deref(), Some(Path::new("/etc/ca.crt")));
        assert_eq!(tls.key_password.as_deref(), Some("p"));
        assert_eq!(
            tls.crl_file.as_deref(),
            Some(Path::new("/home/u/.postgresql/root.crl"))
        );
        // A directory of revocation lists replaces the default file.
        let tls = settings("host=db sslcrldir=/etc/crls", &vars).unwrap();
        assert_eq!(tls.crl_file, None);
        assert_eq!(tls.crl_dir.as_deref(), Some(Path::new("/etc/crls")));
        // No home: no default files.
        let tls = settings("host=db", &[]).unwrap();
        assert_eq!(tls.mode, SslMode::Prefer);
        assert_eq!(tls.root_cert, None);
        assert_eq!(
            settings("host=db sslmode=verify", &vars).unwrap_err(),
            "invalid sslmode value: \"verify\""
        );
        assert_eq!(
            settings("host=db sslrootcert=system", &vars).unwrap_err(),
            "weak sslmode \"require\" may not be used with sslrootcert=system (use \
             \"verify-full\")"
        );
        // With no sslmode anywhere, the system's roots make it verify-full (libpq 16).
        let tls = settings("host=db sslrootcert=system", &[]).unwrap();
        assert_eq!(tls.mode, SslMode::VerifyFull);
        // The key's passphrase is not in the settings' Debug form.
        let tls = settings("host=db sslpassword=key-passphrase", &[]).unwrap();
        let debug = format!("{tls:?}");
        assert!(
            debug.contains("key_password: Some(\"(hidden)\")") && !debug.contains("key-passphrase"),
            "{debug}"
        );
    }
}
