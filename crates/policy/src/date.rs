//! RFC 3339 times as Go's `time.Parse(time.RFC3339, s)` reads them, which
//! is how MinIO reads both a `Date*` condition's value and the request's
//! `aws:CurrentTime`.
//!
//! Go accepts slightly more than RFC 3339: a one-digit hour, `,` before the
//! fraction, any number of fraction digits (nanoseconds kept), and zone
//! offsets up to `24:60`. It refuses lower-case `t`/`z`, a missing zone,
//! a second of 60 and days beyond the month's length. The same rules are
//! kept here so a policy MinIO accepts means the same instant.

/// An instant: seconds since the Unix epoch and nanoseconds within them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    /// Whole seconds since 1970-01-01T00:00:00Z (negative before it).
    pub unix_secs: i64,
    /// Nanoseconds, `0..1_000_000_000`.
    pub nanos: u32,
}

/// Reads `s` as Go reads an RFC 3339 time; `None` if Go refuses it.
pub fn parse_rfc3339(s: &str) -> Option<Instant> {
    let mut r = Reader { b: s.as_bytes() };
    let year = r.digits(4)?;
    r.byte(b'-')?;
    let month = r.digits(2)?;
    r.byte(b'-')?;
    let day = r.digits(2)?;
    r.byte(b'T')?;
    // Go's layout `15` takes one or two digits.
    let hour = match r.b {
        [a, b, ..] if a.is_ascii_digit() && b.is_ascii_digit() => r.digits(2)?,
        _ => r.digits(1)?,
    };
    r.byte(b':')?;
    let minute = r.digits(2)?;
    r.byte(b':')?;
    let second = r.digits(2)?;
    let mut nanos = 0u32;
    if let [sep, d, ..] = r.b
        && (*sep == b'.' || *sep == b',')
        && d.is_ascii_digit()
    {
        r.b = &r.b[1..];
        let n = r.b.iter().take_while(|c| c.is_ascii_digit()).count();
        // Digits beyond the ninth are read but dropped, as Go does.
        for (i, c) in r.b[..n].iter().enumerate() {
            if i < 9 {
                nanos = nanos * 10 + u32::from(c - b'0');
            }
        }
        for _ in n..9 {
            nanos *= 10;
        }
        r.b = &r.b[n..];
    }
    let offset_secs: i64 = match r.b {
        [b'Z', rest @ ..] => {
            r.b = rest;
            0
        }
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2, rest @ ..] => {
            let two = |a: u8, b: u8| {
                (a.is_ascii_digit() && b.is_ascii_digit())
                    .then(|| i64::from(a - b'0') * 10 + i64::from(b - b'0'))
            };
            let (h, m) = (two(*h1, *h2)?, two(*m1, *m2)?);
            if h > 24 || m > 60 {
                return None;
            }
            r.b = rest;
            let off = (h * 60 + m) * 60;
            if *sign == b'-' { -off } else { off }
        }
        _ => return None,
    };
    if !r.b.is_empty() {
        return None;
    }
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let unix_secs = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_secs;
    Some(Instant { unix_secs, nanos })
}

struct Reader<'a> {
    b: &'a [u8],
}

impl Reader<'_> {
    fn digits(&mut self, n: usize) -> Option<i64> {
        let head = self.b.get(..n)?;
        let mut v = 0i64;
        for &c in head {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        self.b = &self.b[n..];
        Some(v)
    }

    fn byte(&mut self, want: u8) -> Option<()> {
        let (&c, rest) = self.b.split_first()?;
        (c == want).then(|| self.b = rest)
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (Howard
/// Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Option<(i64, u32)> {
        parse_rfc3339(s).map(|i| (i.unix_secs, i.nanos))
    }

    #[test]
    fn accepted_forms() {
        assert_eq!(at("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(at("2020-01-01T00:00:00Z"), Some((1_577_836_800, 0)));
        assert_eq!(at("2020-01-01T01:00:00+01:00"), Some((1_577_836_800, 0)));
        assert_eq!(at("2019-12-31T23:00:00-01:00"), Some((1_577_836_800, 0)));
        assert_eq!(
            at("2020-01-01T00:00:00.5Z"),
            Some((1_577_836_800, 500_000_000))
        );
        assert_eq!(
            at("2020-01-01T00:00:00,123456789999Z"),
            Some((1_577_836_800, 123_456_789))
        );
        assert_eq!(at("2020-01-01T1:00:00Z"), Some((1_577_840_400, 0)));
        assert_eq!(at("2020-02-29T00:00:00Z"), Some((1_582_934_400, 0)));
        assert!(at("2000-02-29T00:00:00Z").is_some());
        assert_eq!(at("0000-01-01T00:00:00Z"), Some((-62_167_219_200, 0)));
        assert!(at("2020-01-01T00:00:00+24:60").is_some());
    }

    #[test]
    fn refused_forms() {
        for s in [
            "",
            "2020-01-01",
            "2020-01-01T00:00:00",
            "2020-01-01t00:00:00Z",
            "2020-01-01T00:00:00z",
            "2020-01-01 00:00:00Z",
            "2020-13-01T00:00:00Z",
            "2020-00-01T00:00:00Z",
            "2019-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2020-04-31T00:00:00Z",
            "2020-01-01T24:00:00Z",
            "2020-01-01T00:60:00Z",
            "2020-01-01T00:00:60Z",
            "2020-01-01T00:00:00+25:00",
            "2020-01-01T00:00:00+00:61",
            "2020-01-01T00:00:00+0000",
            "2020-01-01T00:00:00.Z",
            "2020-01-01T00:00:00ZZ",
            "+2020-01-01T00:00:00Z",
            "20201-01-01T00:00:00Z",
            "2020-1-01T00:00:00Z",
            "2020-01-01T001:00:00Z",
        ] {
            assert_eq!(at(s), None, "{s:?}");
        }
    }

    #[test]
    fn order() {
        let a = parse_rfc3339("2020-01-01T00:00:00Z").unwrap();
        let b = parse_rfc3339("2020-01-01T00:00:00.000000001Z").unwrap();
        assert!(a < b);
    }
}
