//! What keeps the bearer token and the service off the open network: TLS for TCP listeners
//! (tonic over rustls, mutual when a client CA is given), the refusal of a plaintext listener
//! that other machines can reach, a status listener on loopback unless the operator opts in,
//! and secret files that only their owner may read.
//!
//! The rules, each checked when the configuration is resolved (so `cuzk daemon --check-config`
//! reports them too):
//! - a non-loopback gRPC listener needs TLS (`tls_cert`, `tls_key`) unless
//!   `insecure_plaintext = true` says the network is trusted, and a token in any case;
//! - TLS is for TCP listeners: a unix socket's peers are this machine's users, checked by
//!   the file's mode;
//! - a non-loopback `status_listen` (the page and `/metrics` have no token) needs
//!   `status_listen_public = true`;
//! - the token file and the TLS key must not be readable by group or others (mode & 0o077).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tonic::transport::{Certificate, Identity, ServerTlsConfig};

use crate::DaemonError;

/// A secret read from a file: its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `secret`.
    pub fn new(secret: String) -> Self {
        Self(secret)
    }

    /// The secret.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The server's TLS files, read and checked.
#[derive(Clone)]
pub struct Tls {
    /// The certificate chain's file (PEM).
    pub cert: PathBuf,
    /// The private key's file (PEM), readable by its owner only.
    pub key: PathBuf,
    /// The CA whose certificates clients must present (mutual TLS), if any.
    pub client_ca: Option<PathBuf>,
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
    client_ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("client_ca", &self.client_ca)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Reads `cert` and `key` (and `client_ca`), refusing a key others may read or files
    /// rustls cannot use.
    pub fn read(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<Self, DaemonError> {
        let read = |what: &str, path: &Path| {
            std::fs::read(path)
                .map_err(|e| DaemonError::Config(format!("{what} {}: {e}", path.display())))
        };
        let key_pem = read_private("tls_key", key)?;
        let tls = Self {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            client_ca: client_ca.map(Path::to_path_buf),
            cert_pem: read("tls_cert", cert)?,
            key_pem,
            client_ca_pem: client_ca.map(|p| read("tls_client_ca", p)).transpose()?,
        };
        // rustls parses the files when the acceptor is built: build one now, so a bad file is
        // a configuration error and not a server that fails at its first connection.
        tonic::transport::Server::builder()
            .tls_config(tls.server_config())
            .map_err(|e| {
                DaemonError::Config(format!(
                    "tls_cert {} / tls_key {}{}: {}",
                    tls.cert.display(),
                    tls.key.display(),
                    tls.client_ca
                        .as_ref()
                        .map(|p| format!(" / tls_client_ca {}", p.display()))
                        .unwrap_or_default(),
                    crate::error_text(&e)
                ))
            })?;
        Ok(tls)
    }

    /// tonic's server configuration: this identity, and client certificates required when a
    /// client CA is set.
    pub fn server_config(&self) -> ServerTlsConfig {
        let config =
            ServerTlsConfig::new().identity(Identity::from_pem(&self.cert_pem, &self.key_pem));
        match &self.client_ca_pem {
            Some(ca) => config.client_ca_root(Certificate::from_pem(ca)),
            None => config,
        }
    }
}

/// Reads a file that holds a secret, refusing it when group or others may read it.
pub fn read_private(what: &str, path: &Path) -> Result<Vec<u8>, DaemonError> {
    let bad =
        |e: &dyn std::fmt::Display| DaemonError::Config(format!("{what} {}: {e}", path.display()));
    let mode = std::fs::metadata(path)
        .map_err(|e| bad(&e))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(bad(&format!(
            "mode {:o} lets group or others read it: chmod 600 {}",
            mode & 0o777,
            path.display()
        )));
    }
    std::fs::read(path).map_err(|e| bad(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn secrets_readable_by_others_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o644, 0o640, 0o604, 0o660] {
            let path = write(dir.path(), "token", "0123456789abcdef", mode);
            let err = read_private("auth_token_file", &path)
                .unwrap_err()
                .to_string();
            assert!(err.contains("chmod 600"), "{mode:o}: {err}");
        }
        let path = write(dir.path(), "token", "0123456789abcdef", 0o600);
        assert_eq!(
            read_private("auth_token_file", &path).unwrap(),
            b"0123456789abcdef"
        );
        assert_eq!(format!("{:?}", Secret("hunter2".into())), "<redacted>");
    }

    #[test]
    fn files_rustls_cannot_use_are_refused_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let cert = write(dir.path(), "cert.pem", "not a certificate", 0o644);
        let key = write(dir.path(), "key.pem", "not a key", 0o600);
        let err = Tls::read(&cert, &key, None).unwrap_err().to_string();
        assert!(err.contains("tls_cert"), "{err}");
        let open_key = write(dir.path(), "open.pem", "not a key", 0o644);
        let err = Tls::read(&cert, &open_key, None).unwrap_err().to_string();
        assert!(
            err.contains("tls_key") && err.contains("chmod 600"),
            "{err}"
        );
    }

    /// Resolves `[daemon]` keys `daemon` in a temporary folder holding a private token file.
    fn resolve(daemon: &str) -> Result<crate::config::Resolved, DaemonError> {
        let dir = tempfile::tempdir().unwrap();
        let token = write(dir.path(), "token", "0123456789abcdef-token", 0o600);
        let text = format!(
            "[daemon]\ndata_dir = \"{}\"\nauth_token_file = \"{}\"\n{daemon}\n",
            dir.path().display(),
            token.display()
        );
        crate::config::Config::parse(&text)?.resolve()
    }

    #[test]
    fn listeners_other_machines_reach_need_tls_or_an_explicit_opt_in() {
        let err = resolve("listen = \"0.0.0.0:9000\"")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tls_cert") && err.contains("insecure_plaintext"),
            "{err}"
        );
        let r = resolve("listen = \"0.0.0.0:9000\"\ninsecure_plaintext = true").unwrap();
        assert!(r.insecure_plaintext && r.tls.is_none());
        assert!(resolve("listen = \"127.0.0.1:9000\"").is_ok());

        let err = resolve("status_listen = \"0.0.0.0:9100\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("status_listen_public"), "{err}");
        let r = resolve("status_listen = \"0.0.0.0:9100\"\nstatus_listen_public = true").unwrap();
        assert!(r.status_listen.is_some());
        assert!(resolve("status_listen = \"127.0.0.1:9100\"").is_ok());
    }

    #[test]
    fn tls_keys_are_checked_together_and_only_for_tcp() {
        let err = resolve("listen = \"127.0.0.1:0\"\ntls_cert = \"/nonexistent\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("go together"), "{err}");
        let err = resolve("tls_client_ca = \"/nonexistent\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("tls_client_ca needs"), "{err}");
        let err = resolve(
            "listen = \"127.0.0.1:0\"\ntls_cert = \"/nonexistent/c\"\ntls_key = \"/nonexistent/k\"",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/nonexistent/k"), "{err}");
    }

    #[test]
    fn a_token_file_others_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let token = write(dir.path(), "token", "0123456789abcdef-token", 0o644);
        let text = format!(
            "[daemon]\ndata_dir = \"{}\"\nauth_token_file = \"{}\"\n",
            dir.path().display(),
            token.display()
        );
        let err = crate::config::Config::parse(&text)
            .unwrap()
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("auth_token_file") && err.contains("chmod 600"),
            "{err}"
        );
    }

    #[test]
    fn keepalive_and_stream_limits_have_defaults_and_bounds() {
        let r = resolve("").unwrap();
        assert_eq!(
            r.keepalive_interval,
            Some(std::time::Duration::from_secs(30))
        );
        assert_eq!(r.keepalive_timeout, std::time::Duration::from_secs(20));
        assert_eq!(r.max_concurrent_streams, 1024);
        let r = resolve("keepalive_interval_secs = 0").unwrap();
        assert_eq!(r.keepalive_interval, None);
        for bad in ["keepalive_timeout_secs = 0", "max_concurrent_streams = 0"] {
            let err = resolve(bad).unwrap_err().to_string();
            assert!(err.contains(bad.split(' ').next().unwrap()), "{err}");
        }
        // The token never appears in the resolved configuration's printout.
        let text = format!("{:?}", resolve("").unwrap());
        assert!(
            !text.contains("0123456789abcdef-token") && text.contains("<redacted>"),
            "{text}"
        );
    }
}
