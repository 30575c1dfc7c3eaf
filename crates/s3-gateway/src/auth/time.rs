//! Request timestamps: the ISO 8601 basic format of `x-amz-date`
//! (`20130524T000000Z`), HTTP dates, and seconds since the Unix epoch. No
//! clock is read here: the current time is always an argument.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A whole second of UTC, the precision of every SigV4 timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Timestamp {
    secs: i64,
}

impl Timestamp {
    pub(crate) fn from_system_time(time: SystemTime) -> Self {
        let secs = match time.duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            Err(before) => {
                // Round toward the past, as a floor would.
                let d = before.duration();
                let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                -(whole.saturating_add(i64::from(d.subsec_nanos() > 0)))
            }
        };
        Timestamp { secs }
    }

    pub(crate) fn to_system_time(self) -> SystemTime {
        if self.secs >= 0 {
            UNIX_EPOCH + Duration::from_secs(self.secs.unsigned_abs())
        } else {
            UNIX_EPOCH - Duration::from_secs(self.secs.unsigned_abs())
        }
    }

    pub(crate) fn secs(self) -> i64 {
        self.secs
    }

    pub(crate) fn plus_secs(self, secs: u64) -> Self {
        Timestamp {
            secs: self
                .secs
                .saturating_add(i64::try_from(secs).unwrap_or(i64::MAX)),
        }
    }

    /// Parses `YYYYMMDD'T'HHMMSS'Z'` strictly: 16 characters, a real
    /// calendar date, hours below 24, minutes and seconds below 60.
    pub(crate) fn parse_iso8601_basic(text: &str) -> Option<Self> {
        let b = text.as_bytes();
        if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
            return None;
        }
        let (year, month, day) = parse_date_stamp(&text[..8])?;
        let hour = digits(&b[9..11])?;
        let minute = digits(&b[11..13])?;
        let second = digits(&b[13..15])?;
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        let days = days_from_civil(year, month, day);
        Some(Timestamp {
            secs: days * 86_400 + hour * 3600 + minute * 60 + second,
        })
    }

    /// Parses an HTTP date (`Fri, 24 May 2013 00:00:00 GMT` and the two
    /// obsolete forms RFC 9110 still requires a recipient to accept).
    pub(crate) fn parse_http_date(text: &str) -> Option<Self> {
        httpdate::parse_http_date(text)
            .ok()
            .map(Timestamp::from_system_time)
    }

    /// `YYYYMMDD'T'HHMMSS'Z'`.
    pub fn iso8601_basic(self) -> String {
        let (year, month, day, hour, minute, second) = self.civil();
        format!("{year:04}{month:02}{day:02}T{hour:02}{minute:02}{second:02}Z")
    }

    /// `YYYYMMDD`, the date of a credential scope.
    pub(crate) fn date_stamp(self) -> String {
        let (year, month, day, ..) = self.civil();
        format!("{year:04}{month:02}{day:02}")
    }

    /// An HTTP date, as S3 writes times in its error bodies.
    pub(crate) fn http_date(self) -> String {
        // httpdate cannot represent times before 1970 or after 9999; clamp
        // rather than fail, this is only ever for messages.
        let clamped = self.secs.clamp(0, 253_402_300_799);
        httpdate::fmt_http_date(Timestamp { secs: clamped }.to_system_time())
    }

    fn civil(self) -> (i64, i64, i64, i64, i64, i64) {
        let days = self.secs.div_euclid(86_400);
        let rem = self.secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        (year, month, day, rem / 3600, rem % 3600 / 60, rem % 60)
    }
}

/// Parses a credential-scope date `YYYYMMDD` into (year, month, day),
/// refusing days a month does not have.
pub(crate) fn parse_date_stamp(text: &str) -> Option<(i64, i64, i64)> {
    let b = text.as_bytes();
    if b.len() != 8 {
        return None;
    }
    let year = digits(&b[0..4])?;
    let month = digits(&b[4..6])?;
    let day = digits(&b[6..8])?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some((year, month, day))
}

fn digits(b: &[u8]) -> Option<i64> {
    let mut value = 0i64;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(c - b'0');
    }
    Some(value)
}

/// Days in `month` (1-12) of `year`.
pub(crate) fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// algorithm).
pub(crate) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_round_trip_and_known_values() {
        let t = Timestamp::parse_iso8601_basic("20130524T000000Z").unwrap();
        assert_eq!(t.secs(), 1_369_353_600);
        assert_eq!(t.iso8601_basic(), "20130524T000000Z");
        assert_eq!(t.date_stamp(), "20130524");
        assert_eq!(t.http_date(), "Fri, 24 May 2013 00:00:00 GMT");
        assert_eq!(
            Timestamp::parse_http_date("Fri, 24 May 2013 00:00:00 GMT"),
            Some(t)
        );
        let leap = Timestamp::parse_iso8601_basic("20000229T235959Z").unwrap();
        assert_eq!(leap.iso8601_basic(), "20000229T235959Z");
        assert_eq!(Timestamp::from_system_time(leap.to_system_time()), leap);
        // Every day of four centuries survives the round trip.
        let mut secs = Timestamp::parse_iso8601_basic("19000101T000000Z")
            .unwrap()
            .secs();
        for _ in 0..(146_097 + 10) {
            let t = Timestamp { secs };
            assert_eq!(Timestamp::parse_iso8601_basic(&t.iso8601_basic()), Some(t));
            secs += 86_400 + 3_661;
        }
    }

    #[test]
    fn iso8601_rejects_what_is_not_a_time() {
        for bad in [
            "",
            "20130524T000000",
            "20130524t000000Z",
            "20130524T000000Z ",
            "2013052AT000000Z",
            "20131324T000000Z",
            "20130001T000000Z",
            "20130230T000000Z",
            "20190229T000000Z",
            "19000229T000000Z",
            "20130524T240000Z",
            "20130524T006000Z",
            "20130524T000060Z",
            "+0130524T000000Z",
            "２0130524T00000Z",
        ] {
            assert_eq!(Timestamp::parse_iso8601_basic(bad), None, "{bad}");
        }
        assert!(Timestamp::parse_iso8601_basic("20000229T000000Z").is_some());
        assert_eq!(parse_date_stamp("20130431"), None);
        assert_eq!(parse_date_stamp("2013043"), None);
    }

    #[test]
    fn times_before_the_epoch_floor() {
        let t = Timestamp::from_system_time(UNIX_EPOCH - Duration::from_millis(1500));
        assert_eq!(t.secs(), -2);
        assert_eq!(t.iso8601_basic(), "19691231T235958Z");
        assert_eq!(
            Timestamp { secs: -5 }.http_date(),
            "Thu, 01 Jan 1970 00:00:00 GMT"
        );
        assert_eq!(t.plus_secs(u64::MAX).secs(), i64::MAX - 2);
    }
}
