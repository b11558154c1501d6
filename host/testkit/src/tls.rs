//! A certificate authority made for one test, and the server certificate
//! it signs: what a LAN engine behind TLS with a private CA looks like.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// A CA and a server certificate it signed.
#[derive(Clone)]
pub struct TestCa {
    ca_pem: String,
    server_cert: CertificateDer<'static>,
    server_key_pem: String,
}

impl TestCa {
    /// A new CA, and a server certificate for `127.0.0.1` and `localhost`.
    pub fn new() -> Self {
        Self::for_names(&["127.0.0.1", "localhost"])
    }

    /// A new CA, and a server certificate for `names` only (a name the
    /// client does not dial makes a certificate for the wrong host).
    pub fn for_names(names: &[&str]) -> Self {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "GOAT test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut server_params = CertificateParams::new(names).unwrap();
        server_params
            .distinguished_name
            .push(DnType::CommonName, "GOAT test engine");
        let server_key = KeyPair::generate().unwrap();
        let server = server_params.signed_by(&server_key, &ca).unwrap();
        Self {
            ca_pem: ca.pem(),
            server_cert: server.der().clone(),
            server_key_pem: server_key.serialize_pem(),
        }
    }

    /// The CA's certificate, PEM: what a person gives `--ca-cert`.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        let key = PrivateKeyDer::from_pem_slice(self.server_key_pem.as_bytes()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![self.server_cert.clone()], key)
            .unwrap();
        TlsAcceptor::from(Arc::new(config))
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}
