//! TLS for `ssl://` endpoints, as ArangoDB's client tools do it: `--ssl.protocol` takes
//! ArangoDB's numbers, and the server's certificate is not verified (arangodump and the other
//! tools of ArangoDB 3.12 connect with OpenSSL's `SSL_VERIFY_NONE` and have no option to
//! verify): the connection is encrypted and the server proves it holds the key of the
//! certificate it presents, but neither the certificate's issuer nor its names are checked.
//!
//! rustls with the ring provider, as the server uses: TLS 1.2 and 1.3, negotiated. ArangoDB's
//! tools built with OpenSSL 1.1 or later negotiate the version for every `--ssl.protocol`
//! value they accept except SSLv2, which they refuse; so do these.

use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

/// The `--ssl.protocol` values ArangoDB's client tools accept (1 SSLv2, 2 SSLv2 or SSLv3,
/// 3 SSLv3, 4 TLSv1, 5 TLSv1.2, 6 TLSv1.3, 9 generic TLS).
pub const PROTOCOLS: [u64; 7] = [1, 2, 3, 4, 5, 6, 9];

/// ArangoDB's default `--ssl.protocol` for its client tools: 5 (TLSv1.2).
pub const DEFAULT_PROTOCOL: u64 = 5;

/// Parses `--ssl.protocol` (a usage error for a number ArangoDB does not know).
pub fn parse_protocol(text: &str) -> std::result::Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if PROTOCOLS.contains(&n) => Ok(n),
        _ => Err(format!(
            "invalid --ssl.protocol '{text}'; possible values: 1, 2, 3, 4, 5, 6, 9"
        )),
    }
}

/// The client configuration for `--ssl.protocol protocol`: error 9 for 1 (SSLv2), which
/// ArangoDB dropped as well.
pub fn client_config(protocol: u64) -> Result<Arc<ClientConfig>> {
    if protocol == 1 {
        return Err(Error::with_message(
            ErrorCode::NotImplemented,
            "--ssl.protocol 1: support for SSLv2 has been dropped",
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|e| Error::with_message(ErrorCode::Internal, format!("cannot set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServerCertificate { provider }))
        .with_no_client_auth();
    // The tools speak HTTP/1.1; a server offering HTTP/2 by ALPN picks HTTP/1.1 for them.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepts the server's certificate whatever its issuer and names (ArangoDB's tools verify
/// neither), but checks the handshake signatures with its public key, so the peer must hold
/// the certificate's private key.
#[derive(Debug)]
struct AnyServerCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AnyServerCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_numbers_are_arangodbs() {
        for n in PROTOCOLS {
            assert_eq!(parse_protocol(&n.to_string()), Ok(n));
        }
        for bad in ["0", "7", "8", "10", "tls", ""] {
            assert!(parse_protocol(bad).is_err(), "{bad}");
        }
        assert_eq!(
            client_config(1).unwrap_err().code,
            ErrorCode::NotImplemented
        );
        for n in [2, 3, 4, 5, 6, 9] {
            let config = client_config(n).unwrap();
            assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        }
    }
}
