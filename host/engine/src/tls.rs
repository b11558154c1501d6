//! Trust for https engines: the certificates to trust besides the
//! system's (`--ca-cert`, `SSL_CERT_FILE` checked), and what a refused
//! certificate means and what to do about it.

use std::io::Read as _;
use std::path::Path;

use crate::client::root_cause;
use crate::error::EngineError;

/// Largest CA certificate file read. A system bundle of every public root
/// is about 200 KiB; a private CA's is a few KiB.
const MAX_CA_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The rustls error somewhere in `e`'s chain, if the TLS handshake is
/// what failed. tokio-rustls carries it inside an `io::Error`, which
/// hyper-rustls wraps in another, and an `io::Error`'s `source` skips the
/// error it wraps, so each one is opened too.
pub(crate) fn tls_failure<'e>(
    e: &'e (dyn std::error::Error + 'static),
) -> Option<&'e rustls::Error> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            current = Some(inner);
            continue;
        }
        current = err.source();
    }
    None
}

/// What to do about a certificate rustls refused.
pub(crate) fn certificate_advice(why: &rustls::CertificateError) -> &'static str {
    use rustls::CertificateError as E;
    match why {
        E::NotValidForName | E::NotValidForNameContext { .. } => {
            "the certificate is for another host name: put a name it lists in the engine URL"
        }
        E::Expired | E::ExpiredContext { .. } | E::NotValidYet | E::NotValidYetContext { .. } => {
            "the certificate is outside its validity dates (or this machine's clock is wrong): renew it on the engine's side"
        }
        _ => {
            "if the engine uses a private or self-signed CA, trust it with --ca-cert FILE, the ca_cert setting or GOAT_CA_CERT (a PEM file), or SSL_CERT_FILE"
        }
    }
}

/// The certificates to trust besides the system's: `ca_cert`'s, and a
/// check that `SSL_CERT_FILE`, which replaces the system's roots when set,
/// names a file that can be read (rustls-native-certs would otherwise
/// leave no roots at all and every certificate would look untrusted).
pub(crate) fn extra_roots(
    ca_cert: Option<&Path>,
) -> Result<Vec<reqwest::Certificate>, EngineError> {
    if let Some(file) = std::env::var_os("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
        let path = Path::new(&file);
        let problem = match std::fs::metadata(path) {
            Err(e) => Some(e.to_string()),
            Ok(meta) if !meta.is_file() => Some("it is not a file".to_owned()),
            Ok(_) => None,
        };
        if let Some(why) = problem {
            return Err(EngineError::CaCert {
                path: format!("{} (SSL_CERT_FILE)", path.display()),
                reason: format!("{why}; point SSL_CERT_FILE at a PEM bundle, or unset it"),
            });
        }
    }
    let Some(path) = ca_cert else {
        return Ok(Vec::new());
    };
    let problem = |reason: String| EngineError::CaCert {
        path: path.display().to_string(),
        reason,
    };
    // Opened without ever blocking on a FIFO put where the file should be,
    // and refused unless it is a regular file.
    let file = goat_state::fs::open_regular(path).map_err(|e| match e {
        goat_state::fs::OpenRegularError::Open { source, .. } => problem(source.to_string()),
        goat_state::fs::OpenRegularError::NotAFile { kind, .. } => problem(format!(
            "it is not a regular file (it is {kind}); give a PEM file"
        )),
        other => problem(other.to_string()),
    })?;
    let mut pem = Vec::new();
    file.take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut pem)
        .map_err(|e| problem(e.to_string()))?;
    if pem.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(problem(format!(
            "it is larger than {MAX_CA_FILE_BYTES} bytes; a CA file holds a few certificates"
        )));
    }
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
        problem(format!(
            "it is not a PEM certificate bundle ({})",
            root_cause(&e)
        ))
    })?;
    if certs.is_empty() {
        return Err(problem(
            "it holds no PEM certificate (a -----BEGIN CERTIFICATE----- block)".to_owned(),
        ));
    }
    Ok(certs)
}
