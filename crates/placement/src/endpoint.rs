//! One drive argument: a local path or an `http(s)://host[:port]/path` URL.
//!
//! MinIO's rules (cmd/endpoint.go, `NewEndpoint`):
//!
//! * `""`, `/` and `\` are refused ("empty or root endpoint").
//! * An argument with a host is a URL endpoint: the scheme must be `http` or
//!   `https`; user information, a query and a fragment are refused; a port, if
//!   any, must be a number in 1..=65535; the host must not be empty; the path
//!   is cleaned with Go's `path.Clean` and must not be empty or `/`.
//! * Anything else is a path endpoint, unless it is a bare IP address or
//!   `ip:port` (then a scheme is asked for). A relative path is made absolute
//!   against the process's working directory; here that directory is an
//!   input ([`crate::ParseOptions::working_dir`]) because reading it would be
//!   I/O. Without it, relative paths stay relative (cleaned) and
//!   [`Endpoint::is_relative`] says so.
//!
//! Whether an endpoint is on this machine needs DNS and interface lookups, so
//! it is not decided here (see [`crate::Topology::check_local`]).
//!
//! Deliberate differences, all refusals of inputs that MinIO accepts but that
//! cannot name a usable drive: control characters; `%` in a URL path
//! (percent-encoding); an empty fragment `#`; a URL with an empty host (MinIO
//! silently turns `http:///x` into a relative path); a URL whose path cleans to
//! `.` (`http://host`); a path that cleans to `/` (`/..`); host names with
//! characters other than letters, digits, `.`, `-`, `_` and `~`.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use crate::{Error, ParseOptions};

/// The scheme of a URL endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `http://`
    Http,
    /// `https://`
    Https,
}

impl Scheme {
    /// `"http"` or `"https"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct UrlParts {
    scheme: Scheme,
    /// Host without brackets or port; an IPv6 zone is kept (`fe80::1%eth0`).
    host: String,
    port: Option<u16>,
    /// `host[:port]` as it appears in the endpoint string (brackets kept).
    authority: String,
}

/// A parsed drive argument.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    arg: String,
    canonical: String,
    path: String,
    relative: bool,
    url: Option<UrlParts>,
}

impl Endpoint {
    /// Parses one drive argument (already expanded: no ellipses).
    ///
    /// ```
    /// use placement::{Endpoint, ParseOptions};
    /// let e = Endpoint::parse("http://node1:9000/mnt/disk1/", &ParseOptions::default())?;
    /// assert_eq!(e.as_str(), "http://node1:9000/mnt/disk1");
    /// assert_eq!((e.host(), e.port(), e.path()), (Some("node1"), Some(9000), "/mnt/disk1"));
    ///
    /// let p = Endpoint::parse("./data", &ParseOptions::default())?;
    /// assert!(p.is_relative());
    /// assert_eq!(p.path(), "data");
    /// # Ok::<(), placement::Error>(())
    /// ```
    pub fn parse(arg: &str, options: &ParseOptions) -> Result<Endpoint, Error> {
        if arg.chars().any(char::is_control) {
            return Err(Error::ControlCharacter {
                arg: arg.escape_debug().to_string(),
            });
        }
        if arg.is_empty() || arg == "/" || arg == "\\" {
            return Err(Error::EmptyOrRootPath {
                arg: arg.to_string(),
            });
        }
        match split_scheme(arg) {
            Some((scheme, rest)) => parse_url(arg, scheme, rest, options),
            None => parse_path(arg, options),
        }
    }

    /// The argument this endpoint was parsed from.
    pub fn arg(&self) -> &str {
        &self.arg
    }

    /// The normalized endpoint string, as MinIO prints it: the cleaned path
    /// for a path endpoint, `scheme://authority/cleaned-path` for a URL.
    pub fn as_str(&self) -> &str {
        &self.canonical
    }

    /// The cleaned path (for a URL endpoint, its path part).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether this is a URL endpoint.
    pub fn is_url(&self) -> bool {
        self.url.is_some()
    }

    /// A relative path endpoint parsed without a working directory.
    pub fn is_relative(&self) -> bool {
        self.relative
    }

    /// The scheme of a URL endpoint.
    pub fn scheme(&self) -> Option<Scheme> {
        self.url.as_ref().map(|u| u.scheme)
    }

    /// The host of a URL endpoint, without brackets or port.
    pub fn host(&self) -> Option<&str> {
        self.url.as_ref().map(|u| u.host.as_str())
    }

    /// The port of a URL endpoint, if it has one (or the default port of the
    /// options it was parsed with).
    pub fn port(&self) -> Option<u16> {
        self.url.as_ref().and_then(|u| u.port)
    }

    /// The node a URL endpoint is served by, `host[:port]` as written (MinIO's
    /// `Endpoint.Host`); `None` for a path endpoint.
    pub fn node(&self) -> Option<&str> {
        self.url.as_ref().map(|u| u.authority.as_str())
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical)
    }
}

/// If `arg` starts with `scheme://` (scheme as in RFC 3986: a letter, then
/// letters, digits, `+`, `-`, `.`), the scheme and what follows `://`.
fn split_scheme(arg: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = arg.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some((scheme, rest))
}

fn invalid_url(arg: &str, reason: &str) -> Error {
    Error::InvalidUrl {
        arg: arg.to_string(),
        reason: reason.to_string(),
    }
}

fn is_host_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '~')
}

fn parse_port(arg: &str, text: &str) -> Result<u16, Error> {
    let bad = || Error::InvalidPort {
        arg: arg.to_string(),
        port: text.to_string(),
    };
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match text.parse::<u32>() {
        Ok(p @ 1..=65535) => u16::try_from(p).map_err(|_| bad()),
        _ => Err(bad()),
    }
}

fn parse_url(
    arg: &str,
    scheme_text: &str,
    rest: &str,
    options: &ParseOptions,
) -> Result<Endpoint, Error> {
    let scheme = match scheme_text.to_ascii_lowercase().as_str() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        _ => {
            return Err(Error::UnsupportedScheme {
                arg: arg.to_string(),
                scheme: scheme_text.to_string(),
            });
        }
    };
    if rest.contains(['?', '#']) {
        return Err(invalid_url(arg, "a query or fragment is not allowed"));
    }
    let (authority, path_text) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err(invalid_url(arg, "user information is not allowed"));
    }
    if authority.is_empty() {
        return Err(invalid_url(arg, "the host is empty"));
    }
    let (host, port_text) = if let Some(inner_and_rest) = authority.strip_prefix('[') {
        let end = inner_and_rest
            .find(']')
            .ok_or_else(|| invalid_url(arg, "missing ']' after an IPv6 address"))?;
        let inner = &inner_and_rest[..end];
        let after = &inner_and_rest[end + 1..];
        let port_text = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or_else(|| invalid_url(arg, "unexpected text after the IPv6 address"))?,
            ),
        };
        let (addr, zone) = match inner.split_once("%25") {
            Some((a, z)) => (a, Some(z)),
            None => (inner, None),
        };
        if addr.parse::<Ipv6Addr>().is_err() {
            return Err(invalid_url(arg, "invalid IPv6 address in brackets"));
        }
        let host = match zone {
            Some(z) if !z.is_empty() && z.chars().all(is_host_char) => format!("{addr}%{z}"),
            Some(_) => return Err(invalid_url(arg, "invalid IPv6 zone")),
            None => addr.to_string(),
        };
        (host, port_text)
    } else {
        let (host, port_text) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if host.contains(':') {
            return Err(invalid_url(
                arg,
                "too many colons in the host; write IPv6 addresses in brackets",
            ));
        }
        // MinIO judges the port before the host: "http://:/p" is a port error.
        if let Some(p) = port_text {
            parse_port(arg, p)?;
        }
        if host.is_empty() {
            return Err(invalid_url(arg, "the host is empty"));
        }
        if !host.chars().all(is_host_char) {
            return Err(invalid_url(arg, "invalid character in the host name"));
        }
        (host.to_string(), port_text)
    };
    let mut port = port_text.map(|p| parse_port(arg, p)).transpose()?;
    let mut authority = authority.to_string();
    if port.is_none()
        && let Some(default) = options.default_port
    {
        port = Some(default);
        authority = format!("{authority}:{default}");
    }
    if path_text.contains('%') {
        return Err(invalid_url(arg, "percent-encoded paths are not supported"));
    }
    let path = clean_path(path_text);
    if path_text.is_empty() || path == "/" || path == "." {
        return Err(Error::EmptyOrRootPath {
            arg: arg.to_string(),
        });
    }
    Ok(Endpoint {
        arg: arg.to_string(),
        canonical: format!("{scheme}://{authority}{path}"),
        path,
        relative: false,
        url: Some(UrlParts {
            scheme,
            host,
            port,
            authority,
        }),
    })
}

fn parse_path(arg: &str, options: &ParseOptions) -> Result<Endpoint, Error> {
    if is_host_ip(arg) {
        return Err(Error::MissingScheme {
            arg: arg.to_string(),
        });
    }
    let (path, relative) = if arg.starts_with('/') {
        (clean_path(arg), false)
    } else if let Some(dir) = &options.working_dir {
        (clean_path(&format!("{dir}/{arg}")), false)
    } else {
        (clean_path(arg), true)
    };
    if path == "/" {
        return Err(Error::EmptyOrRootPath {
            arg: arg.to_string(),
        });
    }
    Ok(Endpoint {
        arg: arg.to_string(),
        canonical: path.clone(),
        path,
        relative,
        url: None,
    })
}

/// Go's `path.Clean`: the shortest path lexically equivalent to `path`
/// (repeated `/` collapsed, `.` removed, `..` applied; `""` becomes `"."`; a
/// rooted path cannot climb above `/`).
///
/// ```
/// assert_eq!(placement::clean_path("/mnt//disk1/./x/.."), "/mnt/disk1");
/// assert_eq!(placement::clean_path("../a/"), "../a");
/// assert_eq!(placement::clean_path(""), ".");
/// ```
pub fn clean_path(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|&p| p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Go's `net.SplitHostPort`.
fn split_host_port(hostport: &str) -> Option<(&str, &str)> {
    let i = hostport.rfind(':')?;
    let (host, j, k) = if hostport.starts_with('[') {
        let end = hostport.find(']')?;
        if end + 1 != i {
            return None;
        }
        (&hostport[1..end], 1, end + 1)
    } else {
        let host = &hostport[..i];
        if host.contains(':') {
            return None;
        }
        (host, 0, 0)
    };
    if hostport[j..].contains('[') || hostport[k..].contains(']') {
        return None;
    }
    Some((host, &hostport[i + 1..]))
}

/// MinIO's `isHostIP`: whether `arg` is an IP address, or `ip:port` (the host
/// part decides), ignoring an IPv6 zone. Such an argument is refused as a
/// drive path: it was surely meant as a URL.
///
/// ```
/// assert!(placement::is_host_ip("10.0.0.1:9000"));
/// assert!(placement::is_host_ip("[::1]:9000"));
/// assert!(!placement::is_host_ip("/mnt/disk1"));
/// ```
pub fn is_host_ip(arg: &str) -> bool {
    let host = split_host_port(arg).map_or(arg, |(h, _)| h);
    let host = host.split_once('%').map_or(host, |(h, _)| h);
    host.parse::<IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(arg: &str) -> Result<Endpoint, Error> {
        Endpoint::parse(arg, &ParseOptions::default())
    }

    #[test]
    fn url_endpoints() {
        let e = parse("https://[fe80::1%25eth0]:9443/mnt//d1/").unwrap();
        assert_eq!(e.as_str(), "https://[fe80::1%25eth0]:9443/mnt/d1");
        assert_eq!(e.host(), Some("fe80::1%eth0"));
        assert_eq!(e.port(), Some(9443));
        assert_eq!(e.node(), Some("[fe80::1%25eth0]:9443"));
        assert_eq!(e.scheme(), Some(Scheme::Https));

        let e = parse("HTTP://Node-1.example.com/data").unwrap();
        assert_eq!(e.as_str(), "http://Node-1.example.com/data");
        assert_eq!(e.port(), None);
    }

    #[test]
    fn default_port_is_filled() {
        let opts = ParseOptions {
            default_port: Some(9000),
            ..ParseOptions::default()
        };
        let e = Endpoint::parse("http://[::1]/d", &opts).unwrap();
        assert_eq!(e.as_str(), "http://[::1]:9000/d");
        assert_eq!(e.port(), Some(9000));
        let e = Endpoint::parse("http://h:9001/d", &opts).unwrap();
        assert_eq!(e.port(), Some(9001));
    }

    #[test]
    fn url_errors() {
        for (arg, what) in [
            ("ftp://h/d", "scheme"),
            ("http://user@h/d", "userinfo"),
            ("http://h/d?x=1", "query"),
            ("http://h/d#f", "fragment"),
            ("http://h:0/d", "port 0"),
            ("http://h:65536/d", "port too large"),
            ("http://h:/d", "empty port"),
            ("http://h:x/d", "port not a number"),
            ("http:///d", "empty host"),
            ("http://:9000/d", "empty host with port"),
            ("http://h", "no path"),
            ("http://h/", "root path"),
            ("http://h/a/..", "path cleaning to root"),
            ("http://a:b:9000/d", "unbracketed IPv6"),
            ("http://[::1/d", "missing bracket"),
            ("http://[zz]/d", "bad IPv6"),
            ("http://h h/d", "space in host"),
            ("http://h/d%20x", "percent in path"),
        ] {
            assert!(parse(arg).is_err(), "{arg} ({what}) should be refused");
        }
    }

    #[test]
    fn path_endpoints() {
        assert_eq!(parse("/mnt/disk1/").unwrap().as_str(), "/mnt/disk1");
        assert!(matches!(parse("/"), Err(Error::EmptyOrRootPath { .. })));
        assert!(matches!(parse("/.."), Err(Error::EmptyOrRootPath { .. })));
        assert!(matches!(parse(""), Err(Error::EmptyOrRootPath { .. })));
        assert!(matches!(
            parse("1.2.3.4:9000"),
            Err(Error::MissingScheme { .. })
        ));
        let opts = ParseOptions {
            working_dir: Some("/srv/minio".to_string()),
            ..ParseOptions::default()
        };
        let e = Endpoint::parse("./data/../d1", &opts).unwrap();
        assert_eq!(e.as_str(), "/srv/minio/d1");
        assert!(!e.is_relative());
        // A colon without "//" is not a URL (Go reads it as an opaque URL or a
        // path with a colon, which MinIO treats as a path).
        assert_eq!(parse("node1:9000/data").unwrap().path(), "node1:9000/data");
    }

    #[test]
    fn split_host_port_like_go() {
        assert_eq!(split_host_port("h:80"), Some(("h", "80")));
        assert_eq!(split_host_port("[::1]:80"), Some(("::1", "80")));
        assert_eq!(split_host_port("::1"), None);
        assert_eq!(split_host_port("h"), None);
        assert_eq!(split_host_port("[::1]x:80"), None);
        assert_eq!(split_host_port("h:"), Some(("h", "")));
    }
}
