//! The instants of lifecycle rules: the `Date` of the document, S3's
//! rounding of day counts to midnight UTC, and the HTTP date of the
//! `x-amz-expiration` header. Every function is total: a date the
//! platform cannot represent is `None`, never a panic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::auth::{days_from_civil, days_in_month, time_civil_from_days};

/// Seconds in a day: S3 counts lifecycle days in whole UTC days.
pub(super) const DAY: i64 = 86_400;

/// Whole seconds since the Unix epoch, rounded toward the past.
pub(super) fn unix_secs(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => {
            let d = before.duration();
            let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            -(whole.saturating_add(i64::from(d.subsec_nanos() > 0)))
        }
    }
}

/// The instant `secs` seconds from the Unix epoch, if the platform's
/// clock type can hold it.
pub(super) fn from_unix_secs(secs: i64) -> Option<SystemTime> {
    let d = Duration::from_secs(secs.unsigned_abs());
    if secs >= 0 {
        UNIX_EPOCH.checked_add(d)
    } else {
        UNIX_EPOCH.checked_sub(d)
    }
}

/// When an action `days` days after `start` falls due, as S3 and MinIO
/// compute it: `start` plus the days plus one, truncated to midnight UTC,
/// i.e. the first midnight after `start + days` (10:00 on the 1st plus one
/// day is due at 00:00 on the 3rd; so is 00:00 on the 1st). S3's example:
/// created 2014-01-15 10:30, 3 days, expires 2014-01-19 00:00. Zero days
/// is `start` itself, MinIO's "immediately". `None` when beyond the clock.
pub(super) fn due_after_days(start: SystemTime, days: u32) -> Option<SystemTime> {
    if days == 0 {
        return Some(start);
    }
    let day = unix_secs(start).div_euclid(DAY);
    let due_day = day.checked_add(i64::from(days))?.checked_add(1)?;
    from_unix_secs(due_day.checked_mul(DAY)?)
}

/// A parsed `Date`: seconds since the epoch (UTC) and whether a fraction
/// of a second was given that is not zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ParsedDate {
    pub(super) secs: i64,
    pub(super) fraction: bool,
}

impl ParsedDate {
    /// S3 takes only dates at midnight GMT.
    pub(super) fn is_midnight(self) -> bool {
        !self.fraction && self.secs.rem_euclid(DAY) == 0
    }
}

/// Parses an ISO 8601 timestamp in RFC 3339's form, the form S3's SDKs
/// send and MinIO reads back: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
/// `None` for anything else, or a date outside years 0000-9999 once in
/// UTC (it would not print back in four digits).
pub(super) fn parse_date(text: &str) -> Option<ParsedDate> {
    let b = text.trim().as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let year = digits(&b[0..4])?;
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    let hour = digits(&b[11..13])?;
    let minute = digits(&b[14..16])?;
    let second = digits(&b[17..19])?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut rest = &b[19..];
    let mut fraction = false;
    if let [b'.', tail @ ..] = rest {
        let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        fraction = tail[..n].iter().any(|&c| c != b'0');
        rest = &tail[n..];
    }
    let offset = match rest {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let h = digits(&[*h1, *h2])?;
            let m = digits(&[*m1, *m2])?;
            if h > 23 || m > 59 {
                return None;
            }
            let off = h * 3600 + m * 60;
            if *sign == b'-' { -off } else { off }
        }
        _ => return None,
    };
    let local = days_from_civil(year, month, day) * DAY + hour * 3600 + minute * 60 + second;
    let secs = local - offset;
    let first = days_from_civil(0, 1, 1) * DAY;
    let end = days_from_civil(10_000, 1, 1) * DAY;
    (first..end)
        .contains(&secs)
        .then_some(ParsedDate { secs, fraction })
}

fn digits(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

/// `2012-12-23T00:00:00.000Z`: a midnight as S3's GET answers it (and as
/// MinIO, parsing RFC 3339, reads it back).
pub(super) fn format_date(secs: i64) -> String {
    let (y, m, d) = time_civil_from_days(secs.div_euclid(DAY));
    let sod = secs.rem_euclid(DAY);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// `Sun, 23 Dec 2012 00:00:00 GMT`, the HTTP date of `expiry-date`. Written
/// here rather than with `httpdate`, which panics outside 1970-9999 and a
/// rule may name any year.
pub(super) fn http_date(t: SystemTime) -> String {
    const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = unix_secs(t);
    let days = secs.div_euclid(DAY);
    let sod = secs.rem_euclid(DAY);
    let (y, m, d) = time_civil_from_days(days);
    // 1970-01-01 was a Thursday.
    let weekday = WEEKDAYS[usize::try_from((days + 4).rem_euclid(7)).unwrap_or(0)];
    let month = usize::try_from(m - 1)
        .ok()
        .and_then(|i| MONTHS.get(i))
        .copied()
        .unwrap_or("Jan");
    format!(
        "{weekday}, {d:02} {month} {y:04} {:02}:{:02}:{:02} GMT",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}
