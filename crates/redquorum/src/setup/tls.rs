//! TLS to the nodes: custom trust roots for `rediss://` URLs.
//!
//! A `rediss://` URL alone trusts the system's root certificates. Nodes with
//! certificates from a private CA need that CA as the trust root instead
//! ([`RedlockBuilder::tls_root_certificate`](crate::RedlockBuilder::tls_root_certificate)).
//! The rustls configuration names the ring provider explicitly rather than
//! using rustls' process-wide default, so it works whatever else the
//! application links in.

use crate::error::BuildError;

/// Parses the given roots (PEM, possibly several certificates, or DER) into a
/// fred TLS connector that trusts exactly those certificates.
#[cfg(feature = "tls")]
pub(crate) fn connector(
    roots: &[Vec<u8>],
) -> Result<fred::types::config::TlsConnector, BuildError> {
    use std::sync::Arc;

    use fred::rustls::pki_types::CertificateDer;
    use fred::rustls::pki_types::pem::PemObject;
    use fred::rustls::{ClientConfig, RootCertStore};

    let invalid = |source: Box<dyn std::error::Error + Send + Sync>| {
        BuildError::InvalidTlsRootCertificate { source }
    };
    let mut store = RootCertStore::empty();
    for bytes in roots {
        let certs: Vec<CertificateDer<'static>> = if is_pem(bytes) {
            CertificateDer::pem_slice_iter(bytes)
                .collect::<Result<_, _>>()
                .map_err(|e| invalid(Box::new(e)))?
        } else {
            vec![CertificateDer::from(bytes.clone())]
        };
        if certs.is_empty() {
            return Err(invalid("no certificate in the PEM data".into()));
        }
        for cert in certs {
            store.add(cert).map_err(|e| invalid(Box::new(e)))?;
        }
    }
    let provider = Arc::new(fred::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(Box::new(e)))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(config.into())
}

/// True when the bytes look like PEM text rather than DER.
#[cfg(feature = "tls")]
fn is_pem(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .is_some_and(|start| bytes[start..].starts_with(b"-----BEGIN"))
}

/// Applies custom roots to a parsed `rediss://` node config (no-op for `redis://`).
pub(crate) fn apply_roots(
    config: &mut fred::prelude::Config,
    roots: &[Vec<u8>],
) -> Result<(), BuildError> {
    #[cfg(feature = "tls")]
    if !roots.is_empty() && config.tls.is_some() {
        config.tls = Some(connector(roots)?.into());
    }
    #[cfg(not(feature = "tls"))]
    let _ = (config, roots);
    Ok(())
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    #[test]
    fn garbage_pem_is_a_named_build_error() {
        let err = connector(&[b"-----BEGIN CERTIFICATE-----\nnot base64!\n".to_vec()]).unwrap_err();
        assert!(
            matches!(err, BuildError::InvalidTlsRootCertificate { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn garbage_der_is_a_named_build_error() {
        let err = connector(&[vec![1, 2, 3]]).unwrap_err();
        assert!(
            matches!(err, BuildError::InvalidTlsRootCertificate { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn pem_detection_skips_leading_whitespace() {
        assert!(is_pem(b"\n  -----BEGIN CERTIFICATE-----"));
        assert!(!is_pem(&[0x30, 0x82]));
    }
}
