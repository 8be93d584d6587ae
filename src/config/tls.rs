//! TLS settings of a run, from the environment as AIPerf and Python read them:
//! `AIPERF_HTTP_SSL_VERIFY` (AIPerf's `Environment.HTTP.SSL_VERIFY`, a pydantic boolean, on by
//! default) and `SSL_CERT_FILE` (a PEM bundle of extra trusted CAs, which OpenSSL — and so
//! aiohttp — honours).

use std::path::PathBuf;

use super::ConfigError;

/// Whether to check servers' certificates (AIPerf's `Environment.HTTP.SSL_VERIFY`).
pub const VERIFY_VAR: &str = "AIPERF_HTTP_SSL_VERIFY";
/// A PEM bundle of extra trusted CAs.
pub const CA_FILE_VAR: &str = "SSL_CERT_FILE";

/// How `https://` connections check the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// Check the server's certificate (`AIPERF_HTTP_SSL_VERIFY`, default true).
    pub verify: bool,
    /// Extra trusted CAs: the PEM bundle `SSL_CERT_FILE` names.
    pub ca_file: Option<PathBuf>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        Self {
            verify: true,
            ca_file: None,
        }
    }
}

impl TlsSettings {
    /// The settings `lookup` (an environment) gives.
    ///
    /// # Errors
    /// `AIPERF_HTTP_SSL_VERIFY` is not a boolean pydantic accepts.
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let verify = match lookup(VERIFY_VAR) {
            None => true,
            // pydantic's boolean words (case-insensitive); anything else fails AIPerf's start-up.
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "t" | "yes" | "y" | "on" => true,
                "0" | "false" | "f" | "no" | "n" | "off" => false,
                _ => {
                    return Err(ConfigError::environment(format!(
                        "{VERIFY_VAR}={v}: expected true or false"
                    )));
                }
            },
        };
        let ca_file = lookup(CA_FILE_VAR)
            .filter(|p| !p.trim().is_empty())
            .map(PathBuf::from);
        Ok(Self { verify, ca_file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn verification_is_on_unless_turned_off() {
        assert_eq!(
            TlsSettings::from_env(env(&[])).unwrap(),
            TlsSettings::default()
        );
        assert!(TlsSettings::default().verify);
        for off in ["false", "False", "0", "no", "off", " F "] {
            let s = TlsSettings::from_env(env(&[("AIPERF_HTTP_SSL_VERIFY", off)])).unwrap();
            assert!(!s.verify, "{off}");
        }
        for on in ["true", "TRUE", "1", "yes", "on"] {
            let s = TlsSettings::from_env(env(&[("AIPERF_HTTP_SSL_VERIFY", on)])).unwrap();
            assert!(s.verify, "{on}");
        }
        let e = TlsSettings::from_env(env(&[("AIPERF_HTTP_SSL_VERIFY", "maybe")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "AIPERF_HTTP_SSL_VERIFY=maybe: expected true or false"
        );
    }

    #[test]
    fn ca_file_comes_from_ssl_cert_file() {
        let s = TlsSettings::from_env(env(&[("SSL_CERT_FILE", "/tmp/ca.pem")])).unwrap();
        assert_eq!(s.ca_file, Some(PathBuf::from("/tmp/ca.pem")));
        let s = TlsSettings::from_env(env(&[("SSL_CERT_FILE", "")])).unwrap();
        assert_eq!(s.ca_file, None);
    }
}
