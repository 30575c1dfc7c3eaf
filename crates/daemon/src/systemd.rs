//! systemd's notification protocol (`sd_notify`), written by hand: one
//! datagram per message to the unix socket named by `$NOTIFY_SOCKET` (a
//! path, or an abstract name written `@name`), and the watchdog keep-alive
//! when `$WATCHDOG_USEC` asks for it.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// Sends state changes to systemd; does nothing when not run by systemd
/// with `Type=notify`.
#[derive(Debug)]
pub struct Notifier {
    target: Option<(UnixDatagram, SocketAddr)>,
}

impl Notifier {
    /// A notifier for `$NOTIFY_SOCKET`, if set. Problems are reported as a
    /// warning and leave the notifier inert.
    pub fn from_env(notify_socket: Option<&str>) -> (Notifier, Option<String>) {
        let Some(path) = notify_socket.filter(|p| !p.is_empty()) else {
            return (Notifier { target: None }, None);
        };
        match Self::connect(path) {
            Ok(target) => (
                Notifier {
                    target: Some(target),
                },
                None,
            ),
            Err(e) => (
                Notifier { target: None },
                Some(format!(
                    "NOTIFY_SOCKET={path}: {e}; systemd will not be notified"
                )),
            ),
        }
    }

    fn connect(path: &str) -> std::io::Result<(UnixDatagram, SocketAddr)> {
        let addr = if let Some(name) = path.strip_prefix('@') {
            abstract_addr(name.as_bytes())?
        } else if path.starts_with('/') {
            SocketAddr::from_pathname(path)?
        } else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "only unix socket paths and @abstract names are supported",
            ));
        };
        let sock = UnixDatagram::unbound()?;
        Ok((sock, addr))
    }

    /// Whether systemd is listening.
    pub fn enabled(&self) -> bool {
        self.target.is_some()
    }

    /// Sends `state` (newline-separated `KEY=VALUE` assignments).
    pub fn notify(&self, state: &str) {
        if let Some((sock, addr)) = &self.target
            && let Err(e) = sock.send_to_addr(state.as_bytes(), addr)
        {
            tracing::warn!("notifying systemd ({state:?}): {e}");
        }
    }

    /// `READY=1` with a status line.
    pub fn ready(&self, status: &str) {
        self.notify(&format!("READY=1\nSTATUS={}", one_line(status)));
    }

    /// A status line.
    pub fn status(&self, status: &str) {
        self.notify(&format!("STATUS={}", one_line(status)));
    }

    /// `STOPPING=1` with a status line.
    pub fn stopping(&self, status: &str) {
        self.notify(&format!("STOPPING=1\nSTATUS={}", one_line(status)));
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(target_os = "linux")]
fn abstract_addr(name: &[u8]) -> std::io::Result<SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    SocketAddr::from_abstract_name(name)
}

#[cfg(not(target_os = "linux"))]
fn abstract_addr(_name: &[u8]) -> std::io::Result<SocketAddr> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "abstract socket names exist on Linux only",
    ))
}

/// The watchdog period systemd asks for (`WATCHDOG_USEC`, for this process
/// if `WATCHDOG_PID` says so).
pub fn watchdog_interval(usec: Option<&str>, pid: Option<&str>) -> Option<Duration> {
    if let Some(pid) = pid
        && pid.trim().parse::<u32>().ok() != Some(std::process::id())
    {
        return None;
    }
    let usec: u64 = usec?.trim().parse().ok().filter(|u| *u > 0)?;
    Some(Duration::from_micros(usec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_to_a_path_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let server = UnixDatagram::bind(&path).unwrap();
        let (n, warning) = Notifier::from_env(path.to_str());
        assert!(warning.is_none());
        assert!(n.enabled());
        n.ready("serving");
        let mut buf = [0u8; 256];
        let len = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1\nSTATUS=serving");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sends_to_an_abstract_socket() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("tessera-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let server = UnixDatagram::bind_addr(&addr).unwrap();
        let (n, _) = Notifier::from_env(Some(&format!("@{name}")));
        n.stopping("bye\nnow");
        let mut buf = [0u8; 256];
        let len = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"STOPPING=1\nSTATUS=bye now");
    }

    #[test]
    fn inert_without_socket() {
        let (n, w) = Notifier::from_env(None);
        assert!(!n.enabled() && w.is_none());
        n.ready("nothing happens");
        let (n, w) = Notifier::from_env(Some("vsock:2:1234"));
        assert!(!n.enabled() && w.is_some());
    }

    #[test]
    fn watchdog() {
        let me = std::process::id().to_string();
        assert_eq!(
            watchdog_interval(Some("2000000"), Some(&me)),
            Some(Duration::from_secs(2))
        );
        assert_eq!(watchdog_interval(Some("2000000"), Some("1")), None);
        assert_eq!(watchdog_interval(Some("0"), None), None);
        assert_eq!(watchdog_interval(None, None), None);
    }
}
