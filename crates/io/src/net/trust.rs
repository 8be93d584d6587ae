//! The certificate check of a verifying client: rustls' webpki verifier for every chain, plus
//! the one certificate it refuses that OpenSSL — and so curl and AIPerf (Python's `ssl`) —
//! accepts: a self-signed `CA:TRUE` certificate that is byte for byte one the user trusts, the
//! shape `openssl req -x509` makes by default. webpki refuses any CA certificate presented as a
//! server's own (`CaUsedAsEndEntity`); here such a certificate is accepted when it is one of the
//! trusted certificates, is self-issued, is valid now, carries a good signature by its own key
//! and names the URL's host. Any other `CA:TRUE` server certificate (one merely signed by a
//! trusted CA) is still refused, with a message saying why; so is a certificate that names no
//! host in `subjectAltName` (rustls never reads the subject's CN; docs/tls.md).
//!
//! The handshake signatures (the server holds the certificate's key) are checked by webpki for
//! every certificate, this one included.

use std::collections::HashSet;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{VerifierBuilderError, WebPkiServerVerifier, verify_server_name};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, OtherError, RootCertStore};

use ringperf_wire::x509;

/// Why a certificate was refused, where rustls' own error would not say it plainly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A `CA:TRUE` certificate presented as the server's own, and not itself trusted.
    CaAsServer,
    /// Trusted byte for byte and `CA:TRUE`, but not self-issued (issuer and subject differ).
    NotSelfIssued,
    /// Names no DNS name or IP address in `subjectAltName`; the URL's host is `name`.
    NoSubjectAltName {
        /// The host the certificate had to name.
        name: String,
    },
    /// A trusted self-signed certificate that cannot be read.
    Malformed(x509::X509Error),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::CaAsServer => f.write_str(
                "the server's certificate is a CA certificate (basicConstraints CA:TRUE) that is \
                 not itself trusted; a CA certificate is accepted as a server's own only when it \
                 is self-signed and trusted itself (SSL_CERT_FILE / SSL_CERT_DIR). Give the \
                 server a leaf certificate (CA:FALSE), or trust a self-signed one",
            ),
            Refusal::NotSelfIssued => f.write_str(
                "the server's certificate is trusted but is a CA certificate (basicConstraints \
                 CA:TRUE) issued by another CA; only a self-signed CA certificate is accepted as \
                 a server's own",
            ),
            Refusal::NoSubjectAltName { name } => write!(
                f,
                "certificate not valid for name {name:?}: it names no host in a subjectAltName \
                 extension, and the subject's common name (CN) is never used as a host name \
                 (RFC 6125; Python's ssl does not use it for IP addresses either). Make it with \
                 a subjectAltName, e.g. openssl req … -addext subjectAltName=DNS:{name} (or \
                 IP:{name})"
            ),
            Refusal::Malformed(e) => write!(f, "trusted self-signed certificate: {e}"),
        }
    }
}

impl std::error::Error for Refusal {}

/// The [`Refusal`] inside a rustls error, if that is what it carries.
#[must_use]
pub fn refusal(error: &rustls::Error) -> Option<&Refusal> {
    match error {
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(e))) => {
            e.downcast_ref::<Refusal>()
        }
        _ => None,
    }
}

fn refused(why: Refusal) -> rustls::Error {
    CertificateError::Other(OtherError(Arc::new(why))).into()
}

/// webpki's error for a CA certificate presented as a server's own.
fn is_ca_as_end_entity(error: &rustls::Error) -> bool {
    matches!(
        error,
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(e)))
            if matches!(e.downcast_ref::<webpki::Error>(), Some(webpki::Error::CaUsedAsEndEntity))
    )
}

/// A name mismatch of a certificate without any `subjectAltName` host becomes
/// [`Refusal::NoSubjectAltName`]; any other error is returned as it is.
fn explain_name(error: rustls::Error) -> rustls::Error {
    match &error {
        rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected,
            presented,
        }) if presented.is_empty() => refused(Refusal::NoSubjectAltName {
            name: expected.to_str().into_owned(),
        }),
        _ => error,
    }
}

/// The verifier of a run that checks certificates ([`super::Verify::On`]).
#[derive(Debug)]
pub(super) struct TrustVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    /// The DER of every trusted certificate read from a file: the system store, or what
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR` name, and the `ca_file` bundle. (webpki-roots are
    /// compiled-in anchors, not certificates: a server cannot present one.)
    anchors: HashSet<Vec<u8>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl TrustVerifier {
    /// Trusts `roots`; `anchors` are the certificates among them that a server may present as
    /// its own self-signed `CA:TRUE` certificate.
    ///
    /// # Errors
    /// `roots` is empty.
    pub(super) fn new(
        roots: RootCertStore,
        anchors: HashSet<Vec<u8>>,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Self, VerifierBuilderError> {
        let webpki =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
                .build()?;
        Ok(Self {
            webpki,
            anchors,
            algorithms: provider.signature_verification_algorithms,
        })
    }

    /// The checks webpki would make of a self-signed trusted certificate, but for its
    /// basic constraints: self-issued, valid at `now`, signed by its own key, names `name`.
    fn check_trusted_self_signed(
        &self,
        cert: &CertificateDer<'_>,
        name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<(), rustls::Error> {
        let parts = x509::parse(cert).map_err(|e| refused(Refusal::Malformed(e)))?;
        if !parts.is_self_issued() {
            return Err(refused(Refusal::NotSelfIssued));
        }
        let unix = |secs: i64| {
            UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                u64::try_from(secs).unwrap_or(0),
            ))
        };
        let t = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        if t < parts.not_before {
            return Err(CertificateError::NotValidYetContext {
                time: now,
                not_before: unix(parts.not_before),
            }
            .into());
        }
        if t > parts.not_after {
            return Err(CertificateError::ExpiredContext {
                time: now,
                not_after: unix(parts.not_after),
            }
            .into());
        }
        self.check_self_signature(cert, &parts)?;
        let parsed = ParsedCertificate::try_from(cert)?;
        verify_server_name(&parsed, name).map_err(explain_name)
    }

    /// The certificate's signature verifies with its own public key.
    fn check_self_signature(
        &self,
        cert: &CertificateDer<'_>,
        parts: &x509::CertParts<'_>,
    ) -> Result<(), rustls::Error> {
        let ee = webpki::EndEntityCert::try_from(cert)
            .map_err(|_| rustls::Error::from(CertificateError::BadEncoding))?;
        let mut known = false;
        for alg in self.algorithms.all {
            if alg.signature_alg_id().as_ref() != parts.signature_algorithm {
                continue;
            }
            known = true;
            // Several algorithms share an identifier (ECDSA with SHA-256 on P-256 or P-384);
            // one whose key type is not the certificate's fails here, and the next is tried.
            if ee
                .verify_signature(*alg, parts.tbs, parts.signature)
                .is_ok()
            {
                return Ok(());
            }
        }
        Err(if known {
            CertificateError::BadSignature
        } else {
            CertificateError::UnsupportedSignatureAlgorithmContext {
                signature_algorithm_id: parts.signature_algorithm.to_vec(),
                supported_algorithms: self
                    .algorithms
                    .all
                    .iter()
                    .map(|alg| alg.signature_alg_id())
                    .collect(),
            }
        }
        .into())
    }
}

impl ServerCertVerifier for TrustVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => Ok(verified),
            Err(e) if is_ca_as_end_entity(&e) => {
                if !self.anchors.contains(end_entity.as_ref()) {
                    return Err(refused(Refusal::CaAsServer));
                }
                self.check_trusted_self_signed(end_entity, server_name, now)?;
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => Err(explain_name(e)),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, date_time_ymd};

    /// A self-signed `CA:TRUE` certificate for `127.0.0.1`, valid through 2020, and a verifier
    /// that trusts it.
    fn anchor() -> (CertificateDer<'static>, TrustVerifier) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "anchor");
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2021, 1, 1);
        let cert = params.self_signed(&key).unwrap().der().clone();
        let mut roots = RootCertStore::empty();
        roots.add(cert.clone()).unwrap();
        let anchors = HashSet::from([cert.as_ref().to_vec()]);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        (cert, TrustVerifier::new(roots, anchors, &provider).unwrap())
    }

    fn at(secs: u64) -> UnixTime {
        UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs))
    }

    /// 2020-01-01T00:00:00Z and 2021-01-01T00:00:00Z.
    const NOT_BEFORE: u64 = 1_577_836_800;
    const NOT_AFTER: u64 = 1_609_459_200;

    #[test]
    fn a_trusted_self_signed_ca_is_checked_like_a_leaf() {
        let (cert, v) = anchor();
        let ip = ServerName::try_from("127.0.0.1").unwrap();
        let inside = at(NOT_BEFORE + 86_400);
        // Through the verifier: webpki refuses it as a CA, and it is accepted as an anchor.
        assert!(v.verify_server_cert(&cert, &[], &ip, &[], inside).is_ok());
        // The window's edges, as webpki draws them (both ends inside).
        for ok in [NOT_BEFORE, NOT_AFTER] {
            assert!(
                v.check_trusted_self_signed(&cert, &ip, at(ok)).is_ok(),
                "{ok}"
            );
        }
        assert_eq!(
            v.check_trusted_self_signed(&cert, &ip, at(NOT_AFTER + 1)),
            Err(CertificateError::ExpiredContext {
                time: at(NOT_AFTER + 1),
                not_after: at(NOT_AFTER),
            }
            .into())
        );
        assert_eq!(
            v.check_trusted_self_signed(&cert, &ip, at(NOT_BEFORE - 1)),
            Err(CertificateError::NotValidYetContext {
                time: at(NOT_BEFORE - 1),
                not_before: at(NOT_BEFORE),
            }
            .into())
        );
        let other = ServerName::try_from("127.0.0.2").unwrap();
        let e = v
            .verify_server_cert(&cert, &[], &other, &[], inside)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("certificate not valid for name \"127.0.0.2\""),
            "{e}"
        );
    }

    #[test]
    fn a_damaged_signature_or_an_unknown_certificate_is_refused() {
        let (cert, v) = anchor();
        let ip = ServerName::try_from("127.0.0.1").unwrap();
        let inside = at(NOT_BEFORE + 86_400);
        let mut bent = cert.as_ref().to_vec();
        *bent.last_mut().unwrap() ^= 1;
        let bent = CertificateDer::from(bent);
        // Not trusted byte for byte: refused as a CA certificate.
        assert_eq!(
            refusal(
                &v.verify_server_cert(&bent, &[], &ip, &[], inside)
                    .unwrap_err()
            ),
            Some(&Refusal::CaAsServer)
        );
        // Checked as if trusted: its signature fails.
        assert_eq!(
            v.check_trusted_self_signed(&bent, &ip, inside),
            Err(CertificateError::BadSignature.into())
        );
        assert_eq!(
            refusal(
                &v.check_trusted_self_signed(&CertificateDer::from(vec![0x30, 0x00]), &ip, inside)
                    .unwrap_err()
            ),
            Some(&Refusal::Malformed(x509::X509Error::Der("truncated")))
        );
    }

    #[test]
    fn refusals_are_found_in_rustls_errors() {
        let e = refused(Refusal::NotSelfIssued);
        assert_eq!(refusal(&e), Some(&Refusal::NotSelfIssued));
        assert_eq!(refusal(&CertificateError::UnknownIssuer.into()), None);
        let no_san = explain_name(
            CertificateError::NotValidForNameContext {
                expected: ServerName::try_from("a.example").unwrap(),
                presented: Vec::new(),
            }
            .into(),
        );
        assert_eq!(
            refusal(&no_san),
            Some(&Refusal::NoSubjectAltName {
                name: "a.example".to_owned()
            })
        );
        // A certificate that names other hosts keeps rustls' own error.
        let other: rustls::Error = CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("a.example").unwrap(),
            presented: vec!["DnsName(\"b.example\")".to_owned()],
        }
        .into();
        assert_eq!(explain_name(other.clone()), other);
    }
}
