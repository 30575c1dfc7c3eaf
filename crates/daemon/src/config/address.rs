//! Addresses: where the server listens (`--address`), and which hosts name
//! this machine (an endpoint URL is served here only if its host does).

use std::net::{IpAddr, ToSocketAddrs, UdpSocket};

/// The port of an address or endpoint URL written without one (MinIO's).
pub const DEFAULT_PORT: u16 = 9000;

/// Where the server listens: `host` `None` means every interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenAddr {
    pub host: Option<String>,
    pub port: u16,
}

impl ListenAddr {
    /// Parses `HOST:PORT`, `:PORT`, `[V6]:PORT`.
    pub fn parse(s: &str) -> Result<ListenAddr, String> {
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (h, p) = rest
                .split_once("]:")
                .ok_or_else(|| format!("'{s}' is not HOST:PORT"))?;
            (h, p)
        } else {
            s.rsplit_once(':')
                .ok_or_else(|| format!("'{s}' is not HOST:PORT (the port is missing)"))?
        };
        if host.contains(':') && !s.starts_with('[') {
            return Err(format!(
                "'{s}': write IPv6 addresses in brackets, [::1]:9000"
            ));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| format!("'{s}': port '{port}' is not a number in 0..65535"))?;
        if host
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/')
        {
            return Err(format!("'{s}': invalid host"));
        }
        Ok(ListenAddr {
            host: (!host.is_empty()).then(|| host.to_owned()),
            port,
        })
    }
}

impl std::fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Some(h) if h.contains(':') => write!(f, "[{h}]:{}", self.port),
            Some(h) => write!(f, "{h}:{}", self.port),
            None => write!(f, ":{}", self.port),
        }
    }
}

/// This machine, for deciding which endpoints are local.
pub struct LocalHost {
    hostname: Option<String>,
}

impl LocalHost {
    pub fn detect() -> LocalHost {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty());
        LocalHost { hostname }
    }

    /// A machine of the given host name (for tests).
    #[cfg(test)]
    pub fn named(hostname: &str) -> LocalHost {
        LocalHost {
            hostname: Some(hostname.to_owned()),
        }
    }

    /// The host name, if known.
    pub fn hostname(&self) -> Option<&str> {
        self.hostname.as_deref()
    }

    /// Whether `host` names this machine: `localhost`, this host name, a
    /// loopback address, or an address (or name resolving to one) that a
    /// socket can be bound to here.
    pub fn is_local(&self, host: &str) -> bool {
        let h = host.trim_end_matches('.').to_ascii_lowercase();
        if h == "localhost" || h.ends_with(".localhost") || Some(h.as_str()) == self.hostname() {
            return true;
        }
        let h = h.split('%').next().unwrap_or(&h).to_owned();
        let ips: Vec<IpAddr> = match h.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => match (h.as_str(), 0u16).to_socket_addrs() {
                Ok(a) => a.map(|a| a.ip()).collect(),
                Err(_) => return false,
            },
        };
        ips.iter()
            .any(|ip| ip.is_loopback() || UdpSocket::bind((*ip, 0)).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(
            ListenAddr::parse(":9000").unwrap(),
            ListenAddr {
                host: None,
                port: 9000
            }
        );
        assert_eq!(
            ListenAddr::parse("[::1]:0").unwrap().host.as_deref(),
            Some("::1")
        );
        assert_eq!(ListenAddr::parse("[::1]:0").unwrap().to_string(), "[::1]:0");
        assert!(ListenAddr::parse("9000").is_err());
        assert!(ListenAddr::parse("::1:9000").is_err());
        assert!(ListenAddr::parse("host:99999").is_err());
    }
}
