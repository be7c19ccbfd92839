//! TLS for an extender as kube-scheduler sets it up (`makeTransport`, client-go's `TLSConfigFor`):
//! `tlsConfig`'s CA (file or data) replaces the system roots, a client certificate is used when
//! both certificate and key are given, `serverName` names the server to verify, and `insecure`
//! skips verification — as does `enableHTTPS` without a CA.

use crate::config::extender::{ExtenderConfig, TlsConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// What a connection needs: the rustls configuration and the name to verify, if not the host's.
#[derive(Clone, Debug)]
pub struct Tls {
    pub config: Arc<ClientConfig>,
    pub server_name: Option<String>,
}

/// `dataFromSliceOrFile`: the inline bytes, else the file's.
fn data_or_file(data: &[u8], file: &str) -> Result<Option<Vec<u8>>, String> {
    if !data.is_empty() {
        return Ok(Some(data.to_vec()));
    }
    if file.is_empty() {
        return Ok(None);
    }
    crate::config::read_small_file(file)
        .map(Some)
        .map_err(|e| format!("open {file}: {e}"))
}

/// The TLS setup of an extender. `https` says whether its URL needs one; the files named in
/// `tlsConfig` are read either way, as kube-scheduler reads them when it starts.
pub fn setup(cfg: &ExtenderConfig, https: bool) -> Result<Option<Tls>, String> {
    let t = cfg.tls_config.clone().unwrap_or_default();
    let ca = data_or_file(&t.ca_data, &t.ca_file)?;
    if ca.is_some() && t.insecure {
        return Err(
            "specifying a root certificates file with the insecure flag is not allowed".into(),
        );
    }
    let insecure = t.insecure || (cfg.enable_https && ca.is_none());
    let client_cert = client_certificate(&t)?;
    if !https {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(
                provider.signature_verification_algorithms,
            )))
    } else {
        builder.with_root_certificates(roots(ca.as_deref())?)
    };
    let config = match client_cert {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| format!("tls: {e}"))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Some(Tls {
        config: Arc::new(config),
        server_name: (!t.server_name.is_empty()).then(|| t.server_name.clone()),
    }))
}

/// The CA's certificates, else the system's.
fn roots(ca: Option<&[u8]>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match ca {
        Some(pem) => {
            let certs: Vec<CertificateDer> = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("unable to load root certificates: {e}"))?;
            if certs.is_empty() {
                return Err(
                    "unable to load root certificates: unable to parse bytes as PEM block".into(),
                );
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| format!("unable to load root certificates: {e}"))?;
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
        }
    }
    Ok(roots)
}

type ClientCertificate = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// `HasCertAuth`: a certificate and a key, each inline or from a file; one without the other is
/// not used.
fn client_certificate(t: &TlsConfig) -> Result<Option<ClientCertificate>, String> {
    let cert = data_or_file(&t.cert_data, &t.cert_file)?;
    let key = data_or_file(&t.key_data, &t.key_file)?;
    let (Some(cert), Some(key)) = (cert, key) else {
        return Ok(None);
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tls: {e}"))?;
    if certs.is_empty() {
        return Err("tls: failed to find any PEM data in certificate input".into());
    }
    let key = PrivateKeyDer::from_pem_slice(&key)
        .map_err(|_| "tls: failed to find any PEM data in key input".to_string())?;
    Ok(Some((certs, key)))
}

/// `InsecureSkipVerify`: any certificate is accepted, the handshake's signatures still checked.
#[derive(Debug)]
struct NoVerification(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extender(tls: TlsConfig, enable_https: bool) -> ExtenderConfig {
        ExtenderConfig {
            url_prefix: "https://x".into(),
            enable_https,
            tls_config: Some(tls),
            ..ExtenderConfig::default()
        }
    }

    #[test]
    fn a_ca_with_insecure_is_refused_as_client_go_refuses_it() {
        let cfg = extender(
            TlsConfig {
                insecure: true,
                ca_data: b"x".to_vec(),
                ..TlsConfig::default()
            },
            true,
        );
        assert_eq!(
            setup(&cfg, true).unwrap_err(),
            "specifying a root certificates file with the insecure flag is not allowed"
        );
    }

    #[test]
    fn files_are_read_even_for_plain_http() {
        let cfg = extender(
            TlsConfig {
                ca_file: "/nonexistent/ca.pem".into(),
                ..TlsConfig::default()
            },
            false,
        );
        let err = setup(&cfg, false).unwrap_err();
        assert!(err.starts_with("open /nonexistent/ca.pem: "), "{err}");
    }

    #[test]
    fn a_ca_that_is_not_pem_is_an_error() {
        let cfg = extender(
            TlsConfig {
                ca_data: b"not a certificate".to_vec(),
                ..TlsConfig::default()
            },
            true,
        );
        assert_eq!(
            setup(&cfg, true).unwrap_err(),
            "unable to load root certificates: unable to parse bytes as PEM block"
        );
    }

    #[test]
    fn plain_http_needs_no_tls() {
        assert!(
            setup(&extender(TlsConfig::default(), false), false)
                .unwrap()
                .is_none()
        );
        let tls = setup(
            &extender(
                TlsConfig {
                    server_name: "quota.example".into(),
                    ..TlsConfig::default()
                },
                true,
            ),
            true,
        )
        .unwrap()
        .unwrap();
        assert_eq!(tls.server_name.as_deref(), Some("quota.example"));
    }
}
