//! The scanner's speed, settable while the server runs: MinIO's five
//! speeds (`mc admin config set ALIAS scanner speed=...`) mapped onto the
//! rate the scanner, the heal journal's healer and heal sequences keep to,
//! in versions per second, relative to the rate the server started with
//! (`TESSERA_SCANNER_RATE`, [`ScanOptions::versions_per_sec`]).
//!
//! A speed set through the API is stored as a configuration document of
//! the drives ([`SPEED_DOC`], JSON `{"speed":"fast"}`), written with
//! half-set parity like every document under `.minio.sys/config/`, so it
//! outlives restarts and every node of a cluster reads the same one; each
//! node reads it again when another announces a change
//! ([`ObjectLayer::config_changed`]). MinIO's own `config.json` is left
//! alone: it holds every sub-system of MinIO's configuration (sealed with
//! the KMS where one is configured), which a server that knows one
//! sub-system cannot rewrite faithfully.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};

use super::heal::ScanOptions;
use super::*;

/// Where a speed set through the API is stored (under `.minio.sys`).
pub const SPEED_DOC: &str = "config/tessera/scanner.json";

/// The rate `slow` and `slowest` are taken from when the start rate is
/// unlimited (the default of `TESSERA_SCANNER_RATE`).
pub const FALLBACK_RATE: u32 = 100;

/// MinIO's scanner speeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanSpeed {
    /// No pause between versions.
    Fastest,
    /// Ten times the start rate.
    Fast,
    /// The start rate.
    Default,
    /// A tenth of the start rate, at least one version a second.
    Slow,
    /// A hundredth of the start rate, at least one version a second.
    Slowest,
}

impl ScanSpeed {
    /// Every speed, fastest first.
    pub const ALL: [ScanSpeed; 5] = [
        ScanSpeed::Fastest,
        ScanSpeed::Fast,
        ScanSpeed::Default,
        ScanSpeed::Slow,
        ScanSpeed::Slowest,
    ];

    /// The name MinIO gives it.
    pub fn name(self) -> &'static str {
        match self {
            ScanSpeed::Fastest => "fastest",
            ScanSpeed::Fast => "fast",
            ScanSpeed::Default => "default",
            ScanSpeed::Slow => "slow",
            ScanSpeed::Slowest => "slowest",
        }
    }

    /// The speed named `name`.
    pub fn parse(name: &str) -> Option<ScanSpeed> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Versions per second at this speed for a server started at `start`
    /// versions per second (`None`: unlimited, as is the answer).
    pub fn rate(self, start: Option<u32>) -> Option<u32> {
        let floor = start.unwrap_or(FALLBACK_RATE);
        match self {
            ScanSpeed::Fastest => None,
            ScanSpeed::Fast => start.map(|r| r.saturating_mul(10)),
            ScanSpeed::Default => start,
            ScanSpeed::Slow => Some((floor / 10).max(1)),
            ScanSpeed::Slowest => Some((floor / 100).max(1)),
        }
    }

    fn code(self) -> u8 {
        match self {
            ScanSpeed::Fastest => 1,
            ScanSpeed::Fast => 2,
            ScanSpeed::Default => 3,
            ScanSpeed::Slow => 4,
            ScanSpeed::Slowest => 5,
        }
    }

    fn of_code(c: u8) -> Option<ScanSpeed> {
        Self::ALL.into_iter().find(|s| s.code() == c)
    }
}

/// The stored document.
fn encode(speed: ScanSpeed) -> Vec<u8> {
    serde_json::json!({ "speed": speed.name() })
        .to_string()
        .into_bytes()
}

fn decode(bytes: &[u8]) -> Result<ScanSpeed> {
    let v: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::Internal(format!(".minio.sys/{SPEED_DOC}: {e}")))?;
    v.get("speed")
        .and_then(|s| s.as_str())
        .and_then(ScanSpeed::parse)
        .ok_or_else(|| {
            Error::Internal(format!(
                ".minio.sys/{SPEED_DOC}: no known speed in {}",
                String::from_utf8_lossy(bytes)
            ))
        })
}

/// The scanner's pace, shared by every pacer of the layer: the rate it
/// started with and the speed set through the API, if any.
#[derive(Debug)]
pub struct ScanRate {
    /// The start rate, versions per second; 0: unlimited.
    start: AtomicU32,
    /// The speed set ([`ScanSpeed::code`]); 0: none.
    speed: AtomicU8,
    /// Whether the stored speed has been read since the layer opened.
    loaded: AtomicBool,
    /// Serialises a read or write of the document with the change it
    /// makes, so an older document read never undoes a newer set.
    change: tokio::sync::Mutex<()>,
}

impl Default for ScanRate {
    fn default() -> Self {
        ScanRate {
            start: AtomicU32::new(ScanOptions::default().versions_per_sec.unwrap_or(0)),
            speed: AtomicU8::new(0),
            loaded: AtomicBool::new(false),
            change: tokio::sync::Mutex::new(()),
        }
    }
}

impl ScanRate {
    /// The start rate (`None`: unlimited).
    pub fn start(&self) -> Option<u32> {
        Some(self.start.load(Ordering::Relaxed)).filter(|r| *r > 0)
    }

    pub(crate) fn set_start(&self, rate: Option<u32>) {
        self.start.store(rate.unwrap_or(0), Ordering::Relaxed);
    }

    /// The speed set through the API, if one is.
    pub fn speed(&self) -> Option<ScanSpeed> {
        ScanSpeed::of_code(self.speed.load(Ordering::Relaxed))
    }

    fn set_speed(&self, speed: Option<ScanSpeed>) {
        self.speed
            .store(speed.map_or(0, ScanSpeed::code), Ordering::Relaxed);
    }

    /// Versions per second now (`None`: unlimited).
    pub fn current(&self) -> Option<u32> {
        match self.speed() {
            Some(s) => s.rate(self.start()),
            None => self.start(),
        }
    }
}

impl ObjectLayer {
    /// The scanner's pace: its start rate, the speed set, the rate now.
    pub fn scan_rate(&self) -> &ScanRate {
        &self.scan_rate
    }

    /// Sets the scanner's speed (`None`: back to the start rate), stores
    /// it on the drives, applies it to this layer's scanner, healers and
    /// heal sequences at once, and tells the other layers serving the same
    /// drives (a cluster's nodes), which apply it before this returns.
    pub async fn set_scan_speed(&self, speed: Option<ScanSpeed>) -> Result<()> {
        {
            let _g = self.scan_rate.change.lock().await;
            match speed {
                Some(s) => self.write_config(SPEED_DOC, &encode(s)).await?,
                None => self.delete_config(SPEED_DOC).await?,
            }
            self.scan_rate.set_speed(speed);
            self.scan_rate.loaded.store(true, Ordering::Relaxed);
        }
        tracing::info!(
            speed = speed.map_or("(start rate)", ScanSpeed::name),
            rate = ?self.scan_rate.current(),
            "scanner speed set"
        );
        self.announce_config_change().await;
        Ok(())
    }

    /// Reads the stored speed and applies it (the start rate when none is
    /// stored). A document that does not decode leaves the speed as it is
    /// and is not read again until the next change is announced.
    pub async fn load_scan_speed(&self) -> Result<()> {
        let _g = self.scan_rate.change.lock().await;
        let doc = self.read_config(SPEED_DOC).await?;
        self.scan_rate.loaded.store(true, Ordering::Relaxed);
        let speed = match doc {
            Some(b) => Some(decode(&b)?),
            None => None,
        };
        if speed != self.scan_rate.speed() {
            tracing::info!(
                speed = speed.map_or("(start rate)", ScanSpeed::name),
                "scanner speed read from the drives"
            );
        }
        self.scan_rate.set_speed(speed);
        Ok(())
    }

    /// [`load_scan_speed`](Self::load_scan_speed) unless it has succeeded
    /// once: the scanner's tasks call it until the drives answer.
    pub(crate) async fn ensure_scan_speed(&self) {
        if self.scan_rate.loaded.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.load_scan_speed().await {
            tracing::warn!("reading the scanner speed (retried): {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_map_onto_rates_relative_to_the_start_rate() {
        let at = |start| ScanSpeed::ALL.map(|s| s.rate(start));
        assert_eq!(
            at(Some(100)),
            [None, Some(1000), Some(100), Some(10), Some(1)]
        );
        assert_eq!(at(Some(5)), [None, Some(50), Some(5), Some(1), Some(1)]);
        assert_eq!(
            at(Some(u32::MAX)),
            [
                None,
                Some(u32::MAX),
                Some(u32::MAX),
                Some(u32::MAX / 10),
                Some(u32::MAX / 100)
            ]
        );
        // An unlimited start: slow and slowest from the fallback rate.
        assert_eq!(at(None), [None, None, None, Some(10), Some(1)]);
    }

    #[test]
    fn names_and_documents_round_trip() {
        for s in ScanSpeed::ALL {
            assert_eq!(ScanSpeed::parse(s.name()), Some(s));
            assert_eq!(ScanSpeed::of_code(s.code()), Some(s));
            assert_eq!(decode(&encode(s)).unwrap(), s);
        }
        assert_eq!(ScanSpeed::parse("Fast"), None);
        assert_eq!(ScanSpeed::parse(""), None);
        assert_eq!(ScanSpeed::of_code(0), None);
        assert!(decode(b"{\"speed\":\"warp\"}").is_err());
        assert!(decode(b"not json").is_err());
        assert!(decode(b"{}").is_err());
    }

    #[test]
    fn the_rate_follows_the_speed_set() {
        let r = ScanRate::default();
        assert_eq!((r.start(), r.current()), (Some(100), Some(100)));
        r.set_speed(Some(ScanSpeed::Slowest));
        assert_eq!(r.current(), Some(1));
        r.set_start(Some(1000));
        assert_eq!(r.current(), Some(10));
        r.set_speed(Some(ScanSpeed::Fastest));
        assert_eq!(r.current(), None);
        r.set_speed(None);
        assert_eq!((r.speed(), r.current()), (None, Some(1000)));
        r.set_start(None);
        assert_eq!(r.current(), None);
    }
}
