//! The restore status of a tiered object: whether its `X-Amz-Restore`
//! header says a restored copy is on disk, with the HTTP date it carries.

/// MinIO's restore-status check for a tiered object's `X-Amz-Restore`
/// header: on disk iff the restore completed and has not expired.
/// Accepts `ongoing-request="false", expiry-date="<RFC 1123 GMT date>"`
/// (quotes optional); MinIO also accepts the RFC 850 and ANSI C date forms,
/// which it never writes and which are treated here as unparseable.
pub(super) fn restored_on_disk(hdr: &str, now_unix_secs: i64) -> bool {
    let (progress, rest) = match hdr.split_once(',') {
        Some((p, r)) => (p, Some(r)),
        None => (hdr, None),
    };
    let Some((k, v)) = progress.split_once('=') else {
        return false;
    };
    if k.trim() != "ongoing-request" || !matches!(v, "false" | "\"false\"") {
        return false;
    }
    let Some((k, date)) = rest.and_then(|r| r.split_once('=')) else {
        return false;
    };
    if k.trim() != "expiry-date" {
        return false;
    }
    match parse_http_date(date.trim_matches('"')) {
        Some(expiry) => now_unix_secs < expiry,
        None => false,
    }
}

/// Parse `Mon, 02 Jan 2006 15:04:05 GMT` into Unix seconds.
fn parse_http_date(s: &str) -> Option<i64> {
    let rest = s.split_once(", ")?.1;
    let mut it = rest.split(' ');
    let day: i64 = it.next()?.parse().ok()?;
    let month = match it.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = it.next()?.parse().ok()?;
    let mut hms = it.next()?.split(':');
    let h: i64 = hms.next()?.parse().ok()?;
    let m: i64 = hms.next()?.parse().ok()?;
    let sec: i64 = hms.next()?.parse().ok()?;
    if it.next()? != "GMT" || it.next().is_some() || !(1..=31).contains(&day) {
        return None;
    }
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some(crate::civil::days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates() {
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 PST"), None);
        assert_eq!(parse_http_date("garbage"), None);
    }
}
