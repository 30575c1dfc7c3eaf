//! Timestamps as S3 writes them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2006-01-02T15:04:05.000Z` (ISO 8601 with milliseconds, UTC), the form
/// of S3's XML documents.
pub(crate) fn iso8601(nanos: i64) -> String {
    let millis = nanos.div_euclid(1_000_000);
    let secs = millis.div_euclid(1000);
    let ms = millis.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = crate::auth::time_civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// `Mon, 02 Jan 2006 15:04:05 GMT`, the form of HTTP headers.
pub(crate) fn http_date(nanos: i64) -> String {
    httpdate::fmt_http_date(system_time(nanos))
}

/// A nanosecond timestamp as a `SystemTime` (the epoch if negative).
pub(crate) fn system_time(nanos: i64) -> SystemTime {
    if nanos > 0 {
        UNIX_EPOCH + Duration::from_nanos(nanos as u64)
    } else {
        UNIX_EPOCH
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_known_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        // 2013-05-24T00:00:00Z
        assert_eq!(
            iso8601(1_369_353_600_000_000_000),
            "2013-05-24T00:00:00.000Z"
        );
        // 2000-02-29T23:59:59.999Z (leap day)
        assert_eq!(iso8601(951_868_799_999_000_000), "2000-02-29T23:59:59.999Z");
        // 2026-11-23T01:02:03.456Z
        assert_eq!(
            iso8601(1_795_395_723_456_000_000),
            "2026-11-23T01:02:03.456Z"
        );
    }

    #[test]
    fn http_date_matches_httpdate() {
        assert_eq!(
            http_date(784_111_777_000_000_000),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
    }
}
