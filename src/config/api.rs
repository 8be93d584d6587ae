//! `--api-port` / `--api-host`: where the live API listens (docs/api.md), resolved as AIPerf
//! 0.13 resolves them: the flags, else `AIPERF_API_SERVER_PORT` / `AIPERF_API_SERVER_HOST`,
//! the host defaulting to `127.0.0.1`. A host without a port is refused with AIPerf's message.

use super::ConfigError;

/// AIPerf's `Environment.API_SERVER.PORT`.
pub const PORT_VAR: &str = "AIPERF_API_SERVER_PORT";
/// AIPerf's `Environment.API_SERVER.HOST`.
pub const HOST_VAR: &str = "AIPERF_API_SERVER_HOST";
/// The host when neither the flag nor the variable names one.
pub const DEFAULT_HOST: &str = "127.0.0.1";

/// Where the live API listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiAddr {
    pub host: String,
    pub port: u16,
    /// The port came from `--api-port` (a port that cannot be bound fails the run); from the
    /// variable alone it is a warning and the run goes on without the API, as in AIPerf.
    pub from_flag: bool,
}

impl ApiAddr {
    /// `http://host:port/`, an IPv6 host in brackets.
    pub fn url(&self) -> String {
        if self.host.contains(':') {
            format!("http://[{}]:{}/", self.host, self.port)
        } else {
            format!("http://{}:{}/", self.host, self.port)
        }
    }
}

/// The API's address, `None` when it is off.
///
/// # Errors
/// `--api-host` without `--api-port`; a variable AIPerf refuses.
pub fn resolve(
    port: Option<u16>,
    host: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<ApiAddr>, ConfigError> {
    if host.is_some() && port.is_none() {
        return Err(ConfigError::flag(
            "api_host requires api_port (or AIPERF_API_SERVER_PORT) to be set",
        ));
    }
    let env_port = match lookup(PORT_VAR).filter(|v| !v.trim().is_empty()) {
        None => None,
        Some(raw) => match raw.trim().parse::<u16>() {
            Ok(p) if p >= 1 => Some(p),
            _ => {
                return Err(ConfigError::environment(format!(
                    "{PORT_VAR}={raw}: expected a port from 1 to 65535"
                )));
            }
        },
    };
    let Some(p) = port.or(env_port) else {
        return Ok(None);
    };
    let host = host
        .map(str::to_owned)
        .or_else(|| lookup(HOST_VAR).filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_HOST.to_owned());
    Ok(Some(ApiAddr {
        host: host.trim().to_owned(),
        port: p,
        from_flag: port.is_some(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(
        port: Option<u16>,
        host: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Result<Option<ApiAddr>, ConfigError> {
        resolve(port, host, |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_flags_win_and_the_host_defaults_to_loopback() {
        assert_eq!(with(None, None, &[]).unwrap(), None);
        let a = with(Some(9311), None, &[(PORT_VAR, "1")]).unwrap().unwrap();
        assert_eq!(
            (a.host.as_str(), a.port, a.from_flag),
            ("127.0.0.1", 9311, true)
        );
        assert_eq!(a.url(), "http://127.0.0.1:9311/");
        let a = with(Some(1), Some("::1"), &[]).unwrap().unwrap();
        assert_eq!(a.url(), "http://[::1]:1/");
        let a = with(None, None, &[(PORT_VAR, "8080"), (HOST_VAR, "0.0.0.0")])
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.host.as_str(), a.port, a.from_flag),
            ("0.0.0.0", 8080, false)
        );
    }

    #[test]
    fn a_host_alone_and_bad_ports_are_refused() {
        let e = with(None, Some("0.0.0.0"), &[(PORT_VAR, "9000")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "api_host requires api_port (or AIPERF_API_SERVER_PORT) to be set"
        );
        for bad in ["0", "65536", "http"] {
            let e = with(None, None, &[(PORT_VAR, bad)]).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("{PORT_VAR}={bad}")),
                "{e}"
            );
        }
    }
}
