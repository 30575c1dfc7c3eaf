//! Sizes (`1MiB`, `4KiB..16MiB`), durations (`30s`, `1m30s`) and the
//! random size distribution.

use std::fmt;
use std::time::Duration;

use crate::pattern::Rng;

/// The largest object a single PUT may carry (S3's limit).
pub const MAX_PUT_SIZE: u64 = 5 << 30;
/// The largest multipart object (S3's limit).
pub const MAX_MULTIPART_SIZE: u64 = 5 << 40;
/// The longest run accepted.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Parses a byte size: an integer or decimal number with an optional unit,
/// `B`, binary `KiB MiB GiB TiB` (also `K M G T`) or decimal `KB MB GB TB`;
/// case-insensitive, no space needed (`1MiB`, `1.5 MiB`, `4096`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("bad size {text:?}: expected a number, e.g. 1MiB"));
    }
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        u => {
            return Err(format!(
                "bad size {text:?}: unknown unit {u:?} (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
            ));
        }
    };
    let value = if let Some((int, frac)) = num.split_once('.') {
        if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
            return Err(format!("bad size {text:?}"));
        }
        let int: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| format!("bad size {text:?}"))?
        };
        let frac_digits = frac.len().min(9);
        let frac_val: u64 = if frac_digits == 0 {
            0
        } else {
            frac[..frac_digits]
                .parse()
                .map_err(|_| format!("bad size {text:?}"))?
        };
        let scale = 10u64.pow(frac_digits as u32);
        let whole = int
            .checked_mul(mult)
            .ok_or_else(|| format!("size {text:?} is too large"))?;
        let part = (u128::from(frac_val) * u128::from(mult) / u128::from(scale)) as u64;
        whole
            .checked_add(part)
            .ok_or_else(|| format!("size {text:?} is too large"))?
    } else {
        let n: u64 = num.parse().map_err(|_| format!("bad size {text:?}"))?;
        n.checked_mul(mult)
            .ok_or_else(|| format!("size {text:?} is too large"))?
    };
    Ok(value)
}

/// Formats a byte count with a binary unit (`1MiB`, `4KiB`, `1.5GiB`).
pub fn fmt_size(n: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    for (m, u) in UNITS {
        if n >= m {
            if n.is_multiple_of(m) {
                return format!("{}{u}", n / m);
            }
            return format!("{:.1}{u}", n as f64 / m as f64);
        }
    }
    format!("{n}B")
}

/// Object sizes: one size, or a random size in `lo..=hi` drawn
/// log-uniformly (every power of two in the range is equally likely, so
/// small and large objects both appear, as in warp's `--obj.randsize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeSpec {
    Fixed(u64),
    Range { lo: u64, hi: u64 },
}

impl SizeSpec {
    /// Parses `SIZE` or `LO..HI`.
    pub fn parse(text: &str) -> Result<SizeSpec, String> {
        match text.split_once("..") {
            None => Ok(SizeSpec::Fixed(parse_size(text)?)),
            Some((a, b)) => {
                let lo = parse_size(a)?;
                let hi = parse_size(b.trim_start_matches('='))?;
                if lo > hi {
                    return Err(format!("bad size range {text:?}: {lo} > {hi}"));
                }
                if lo == hi {
                    Ok(SizeSpec::Fixed(lo))
                } else {
                    Ok(SizeSpec::Range { lo, hi })
                }
            }
        }
    }

    /// The largest size this spec can produce.
    pub fn max(&self) -> u64 {
        match *self {
            SizeSpec::Fixed(n) => n,
            SizeSpec::Range { hi, .. } => hi,
        }
    }

    /// The mean size, for budgeting (exact for fixed sizes).
    pub fn mean(&self) -> u64 {
        match *self {
            SizeSpec::Fixed(n) => n,
            SizeSpec::Range { lo, hi } => {
                // Mean of a log-uniform distribution: (hi - lo) / ln(hi / lo).
                let lo = lo.max(1) as f64;
                let hi = hi as f64;
                if hi <= lo {
                    return lo as u64;
                }
                ((hi - lo) / (hi / lo).ln()) as u64
            }
        }
    }

    /// Draws one size.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match *self {
            SizeSpec::Fixed(n) => n,
            SizeSpec::Range { lo, hi } => {
                let l = (lo.max(1) as f64).ln();
                let h = (hi as f64).ln();
                let u = rng.next_f64();
                let v = (l + (h - l) * u).exp().round() as u64;
                v.clamp(lo, hi)
            }
        }
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SizeSpec::Fixed(n) => write!(f, "{}", fmt_size(n)),
            SizeSpec::Range { lo, hi } => write!(f, "{}..{}", fmt_size(lo), fmt_size(hi)),
        }
    }
}

/// Parses a duration: one or more `NUMBER UNIT` groups, units `ms`, `s`,
/// `m`, `h` (`30s`, `500ms`, `1m30s`, `1.5s`); a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return checked_secs(secs, text);
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let n_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("bad duration {text:?}: number without unit"))?;
        if n_end == 0 {
            return Err(format!(
                "bad duration {text:?}: expected e.g. 30s, 500ms, 2m, 1m30s"
            ));
        }
        let n: f64 = rest[..n_end]
            .parse()
            .map_err(|_| format!("bad duration {text:?}"))?;
        let after = &rest[n_end..];
        let u_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let factor = match &after[..u_end] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            u => {
                return Err(format!(
                    "bad duration {text:?}: unknown unit {u:?} (use ms, s, m, h)"
                ));
            }
        };
        total += n * factor;
        rest = &after[u_end..];
    }
    checked_secs(total, text)
}

fn checked_secs(secs: f64, text: &str) -> Result<Duration, String> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("bad duration {text:?}"));
    }
    let d = Duration::from_secs_f64(secs.min(MAX_DURATION.as_secs_f64() + 1.0));
    if d > MAX_DURATION {
        return Err(format!("duration {text:?} is longer than 24h"));
    }
    Ok(d)
}
