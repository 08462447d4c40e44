//! TLS for `ssl://` endpoints: the rustls server configuration built from ArangoDB's options
//! (`--ssl.keyfile`, `--ssl.protocol`), its reload from the keyfile (`POST
//! /_admin/server/tls`) with the summary `/_admin/server/tls` shows, and the bounded handshake
//! of an accepted connection.
//!
//! rustls with the ring provider: no system OpenSSL, and no protocol older than TLS 1.2 exists
//! in it, which is the floor ArangoDB's own recommendations set.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use parking_lot::RwLock;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig, SupportedProtocolVersion};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// How long a client may take to complete the TLS handshake after connecting. A client that
/// connects and sends nothing (or speaks plain HTTP, which fails at once) costs the server at
/// most this long.
pub(crate) const HANDSHAKE_WAIT: Duration = Duration::from_secs(10);

/// The ALPN protocols offered, preferred first: HTTP/2 (`h2`), then HTTP/1.1. A client that
/// offers neither, or no ALPN at all, is served HTTP/1.1.
const ALPN_PROTOCOLS: &[&[u8]] = &[b"h2", b"http/1.1"];

/// The TLS versions a server accepts, from ArangoDB's `--ssl.protocol` numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsProtocol {
    /// `5`: TLS 1.2 only.
    Tls12,
    /// `6`: TLS 1.3 only.
    Tls13,
    /// `9` (ArangoDB's default, "generic TLS"): the highest version both sides support, here
    /// TLS 1.3 or 1.2.
    Negotiated,
}

impl TlsProtocol {
    /// ArangoDB's `--ssl.protocol` value: 5 (TLSv1.2), 6 (TLSv1.3) or 9 (negotiated). The
    /// SSL and TLS 1.0 values (1 to 4) are refused: nothing older than TLS 1.2 is served.
    pub fn from_arango(value: u32) -> Result<TlsProtocol, String> {
        match value {
            5 => Ok(TlsProtocol::Tls12),
            6 => Ok(TlsProtocol::Tls13),
            9 => Ok(TlsProtocol::Negotiated),
            1..=4 => Err(format!(
                "--ssl.protocol {value} selects SSLv2, SSLv3 or TLSv1.0, which are not supported; \
                 use 5 (TLSv1.2), 6 (TLSv1.3) or 9 (TLSv1.2 or higher, negotiated)"
            )),
            _ => Err(format!(
                "invalid --ssl.protocol {value}; use 5 (TLSv1.2), 6 (TLSv1.3) or 9 (TLSv1.2 or \
                 higher, negotiated)"
            )),
        }
    }

    fn versions(self) -> &'static [&'static SupportedProtocolVersion] {
        static TLS12: &[&SupportedProtocolVersion] = &[&rustls::version::TLS12];
        static TLS13: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13];
        match self {
            TlsProtocol::Tls12 => TLS12,
            TlsProtocol::Tls13 => TLS13,
            TlsProtocol::Negotiated => rustls::ALL_VERSIONS,
        }
    }
}

/// A server's TLS settings, ready to accept connections: the certificate chain and key, the
/// accepted versions and the ALPN protocols. Cheap to clone; clones share the loaded keyfile,
/// so a [`TlsConfig::reload`] through any clone applies to every endpoint's next handshake
/// (connections already open keep their session).
#[derive(Clone)]
pub struct TlsConfig {
    loaded: Arc<RwLock<Arc<Loaded>>>,
    /// The keyfile to reload from (`None` for settings built from PEM text).
    keyfile: Option<PathBuf>,
    protocol: TlsProtocol,
}

/// One reading of the keyfile.
struct Loaded {
    acceptor: TlsAcceptor,
    /// What `GET /_admin/server/tls` shows of it.
    summary: Value,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("keyfile", &self.keyfile)
            .finish_non_exhaustive()
    }
}

/// Hex SHA-256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A PEM block of `label` for `der`, 64 base64 characters a line (as OpenSSL writes them).
fn pem_block(label: &str, der: &[u8]) -> String {
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

impl TlsConfig {
    /// Reads ArangoDB's keyfile: one PEM file holding the server certificate, then any
    /// intermediate certificates, and the private key (PKCS#8, PKCS#1 or SEC1).
    pub fn from_keyfile(path: &Path, protocol: TlsProtocol) -> Result<TlsConfig, String> {
        let loaded = Self::load_keyfile(path, protocol)?;
        Ok(TlsConfig {
            loaded: Arc::new(RwLock::new(Arc::new(loaded))),
            keyfile: Some(path.to_owned()),
            protocol,
        })
    }

    /// The settings for a PEM text holding the certificate chain and the private key.
    pub fn from_pem(pem: &[u8], protocol: TlsProtocol) -> Result<TlsConfig, String> {
        Ok(TlsConfig {
            loaded: Arc::new(RwLock::new(Arc::new(Self::load(pem, protocol)?))),
            keyfile: None,
            protocol,
        })
    }

    fn load_keyfile(path: &Path, protocol: TlsProtocol) -> Result<Loaded, String> {
        let pem = std::fs::read(path)
            .map_err(|e| format!("cannot read --ssl.keyfile {}: {e}", path.display()))?;
        Self::load(&pem, protocol)
            .map_err(|e| format!("invalid --ssl.keyfile {}: {e}", path.display()))
    }

    fn load(pem: &[u8], protocol: TlsProtocol) -> Result<Loaded, String> {
        let chain = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("cannot read the certificates: {e}"))?;
        if chain.is_empty() {
            return Err("it holds no certificate (BEGIN CERTIFICATE block)".into());
        }
        let key = PrivateKeyDer::from_pem_slice(pem)
            .map_err(|e| format!("cannot read the private key: {e}"))?;
        let key_label = match &key {
            PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
            PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
            _ => "PRIVATE KEY",
        };
        // ArangoDB's summary: the SHA-256 of the whole file, the certificates of the chain as
        // PEM and the SHA-256 of the private key's PEM block.
        let summary = json!({
            "sha256": sha256_hex(pem),
            "certificates": chain
                .iter()
                .map(|c| pem_block("CERTIFICATE", c.as_ref()))
                .collect::<Vec<_>>(),
            "privateKeySha256": sha256_hex(pem_block(key_label, key.secret_der()).as_bytes()),
        });
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(protocol.versions())
            .map_err(|e| format!("cannot use the TLS versions: {e}"))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| format!("the certificate and key do not fit: {e}"))?;
        config.alpn_protocols = ALPN_PROTOCOLS.iter().map(|p| p.to_vec()).collect();
        Ok(Loaded {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            summary,
        })
    }

    /// Reads the keyfile again and uses it for every handshake from now on. On any error
    /// (unreadable file, no certificate, a key that does not fit) the settings in use stay.
    pub fn reload(&self) -> Result<(), String> {
        let path = self
            .keyfile
            .as_ref()
            .ok_or("these TLS settings were not read from a keyfile")?;
        let loaded = Self::load_keyfile(path, self.protocol)?;
        *self.loaded.write() = Arc::new(loaded);
        Ok(())
    }

    /// ArangoDB's summary of the keyfile in use: `{"sha256", "certificates",
    /// "privateKeySha256"}`.
    pub fn keyfile_summary(&self) -> Value {
        self.loaded.read().summary.clone()
    }

    /// Completes the server side of the handshake on `stream`, within [`HANDSHAKE_WAIT`].
    /// `None` when the client fails it (wrong protocol, plain HTTP, unknown certificate
    /// authority, no common version) or takes too long; the socket is then closed.
    pub(crate) async fn handshake(&self, stream: TcpStream) -> Option<TlsStream<TcpStream>> {
        let acceptor = self.loaded.read().acceptor.clone();
        match tokio::time::timeout(HANDSHAKE_WAIT, acceptor.accept(stream)).await {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(e)) => {
                tracing::debug!("TLS handshake failed: {e}");
                None
            }
            Err(_) => {
                tracing::debug!("TLS handshake timed out");
                None
            }
        }
    }
}

/// Whether the client chose HTTP/2 by ALPN during the handshake.
pub(crate) fn negotiated_h2(stream: &TlsStream<TcpStream>) -> bool {
    stream.get_ref().1.alpn_protocol() == Some(b"h2")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_numbers_follow_arangodb_and_refuse_old_versions() {
        assert_eq!(TlsProtocol::from_arango(5), Ok(TlsProtocol::Tls12));
        assert_eq!(TlsProtocol::from_arango(6), Ok(TlsProtocol::Tls13));
        assert_eq!(TlsProtocol::from_arango(9), Ok(TlsProtocol::Negotiated));
        for old in 1..=4 {
            let err = TlsProtocol::from_arango(old).unwrap_err();
            assert!(err.contains("not supported"), "{err}");
        }
        for unknown in [0, 7, 8, 10, 99] {
            let err = TlsProtocol::from_arango(unknown).unwrap_err();
            assert!(err.contains("invalid --ssl.protocol"), "{err}");
        }
    }

    #[test]
    fn keyfile_needs_certificate_and_key() {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert_pem = cert.cert.pem();
        let key_pem = cert.key_pair.serialize_pem();
        let both = format!("{cert_pem}{key_pem}");
        assert!(TlsConfig::from_pem(both.as_bytes(), TlsProtocol::Negotiated).is_ok());
        let err = TlsConfig::from_pem(key_pem.as_bytes(), TlsProtocol::Negotiated).unwrap_err();
        assert!(err.contains("no certificate"), "{err}");
        let err = TlsConfig::from_pem(cert_pem.as_bytes(), TlsProtocol::Tls12).unwrap_err();
        assert!(err.contains("private key"), "{err}");
        // A key that is not the certificate's.
        let other = rcgen::KeyPair::generate().unwrap().serialize_pem();
        let err = TlsConfig::from_pem(format!("{cert_pem}{other}").as_bytes(), TlsProtocol::Tls13)
            .unwrap_err();
        assert!(err.contains("do not fit"), "{err}");
        let err = TlsConfig::from_keyfile(Path::new("/nonexistent/server.pem"), TlsProtocol::Tls12)
            .unwrap_err();
        assert!(err.contains("cannot read --ssl.keyfile"), "{err}");
    }

    #[test]
    fn reload_swaps_the_keyfile_and_keeps_the_old_one_on_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.pem");
        let write = |names: &[&str]| {
            let cert = rcgen::generate_simple_self_signed(
                names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
            )
            .unwrap();
            let pem = format!("{}{}", cert.cert.pem(), cert.key_pair.serialize_pem());
            std::fs::write(&path, &pem).unwrap();
            (pem, cert.cert.pem())
        };
        let (first_pem, first_cert) = write(&["localhost"]);
        let config = TlsConfig::from_keyfile(&path, TlsProtocol::Negotiated).unwrap();
        let shared = config.clone();
        let summary = config.keyfile_summary();
        assert_eq!(summary["sha256"], sha256_hex(first_pem.as_bytes()));
        assert_eq!(
            summary["certificates"][0].as_str().unwrap().trim(),
            first_cert.trim()
        );
        assert_eq!(summary["privateKeySha256"].as_str().unwrap().len(), 64);
        let (second_pem, _) = write(&["localhost", "other.example"]);
        config.reload().unwrap();
        assert_eq!(
            shared.keyfile_summary()["sha256"],
            sha256_hex(second_pem.as_bytes()),
            "clones see the reload"
        );
        assert_ne!(
            shared.keyfile_summary()["privateKeySha256"],
            summary["privateKeySha256"]
        );
        std::fs::write(&path, "not a keyfile").unwrap();
        let err = config.reload().unwrap_err();
        assert!(err.contains("no certificate"), "{err}");
        assert_eq!(
            shared.keyfile_summary()["sha256"],
            sha256_hex(second_pem.as_bytes()),
            "a failed reload keeps the settings in use"
        );
        let from_text = TlsConfig::from_pem(second_pem.as_bytes(), TlsProtocol::Tls13).unwrap();
        assert!(from_text.reload().is_err());
    }
}
