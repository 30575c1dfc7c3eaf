//! The spellings of sizes and durations in the configuration.
//!
//! Durations are Go's (`time.ParseDuration`, as MinIO reads them) plus a
//! bare number of seconds; sizes are whole numbers of binary units only, so
//! that `10MB` (decimal or binary?) and fractions are refused rather than
//! guessed at. `tessera-bench` parses its command line with its own, looser
//! spellings (`1.5MiB`, decimal `MB`): the two grammars differ on purpose
//! and each crate's tests pin its own.

use std::time::Duration;

/// Parses a Go-style duration: `30s`, `1m30s`, `500ms`, `1h`, or a bare
/// number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("'{s}': missing unit (ms, s, m, h)"))?;
        if num_len == 0 {
            return Err(format!("'{s}' is not a duration (30s, 5m, 1h30m)"));
        }
        let n: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("'{s}' is not a duration"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            u => return Err(format!("'{s}': unknown unit '{u}' (ms, s, m, h)")),
        };
        rest = &rest[unit_len..];
        let secs = n * unit;
        if !secs.is_finite() || secs > 1e12 {
            return Err(format!("'{s}' is too long"));
        }
        total += Duration::from_secs_f64(secs);
    }
    Ok(total)
}

/// A size in bytes: a whole number, optionally followed by `B`, `KiB`,
/// `MiB`, `GiB` or `TiB` (any case, spaces allowed between), at most 1 PiB.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "kib" => 10,
        "mib" => 20,
        "gib" => 30,
        "tib" => 40,
        _ => return Err(format!("expected a size such as 512MiB or 2GiB, not '{t}'")),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n <= 1 << 50)
        .ok_or_else(|| format!("expected a size such as 512MiB or 2GiB (at most 1PiB), not '{t}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("45").unwrap(), Duration::from_secs(45));
        for bad in ["", "s", "10x", "1.2.3s", "5 m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    /// Go's units and fractions, and a bare number only when whole.
    #[test]
    fn durations_take_go_spellings() {
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("250µs").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("100ns").unwrap(), Duration::from_nanos(100));
        assert_eq!(parse_duration(" 0 ").unwrap(), Duration::ZERO);
        for bad in ["1.5", "-1s", "1d", "1e3s", "1m30", "99999999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    /// Whole numbers of binary units up to 1 PiB; decimal units and
    /// fractions are refused.
    #[test]
    fn sizes() {
        for (text, want) in [
            ("0", 0),
            ("4096", 4096),
            ("7B", 7),
            ("512MiB", 512 << 20),
            ("2 gib", 2 << 30),
            (" 1TiB ", 1 << 40),
            ("1024TiB", 1 << 50),
        ] {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
        for bad in [
            "",
            "lots",
            "1.5GiB",
            "-1",
            "10MB",
            "4k",
            "1KB",
            "MiB",
            "1025TiB",
            "2048TiB",
            "99999999999999999999",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
