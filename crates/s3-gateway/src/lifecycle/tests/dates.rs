//! The date arithmetic and formats under the rules.

use std::time::{Duration, UNIX_EPOCH};

use super::{NS, at};
use crate::lifecycle::dates::{
    ParsedDate, due_after_days, format_date, from_unix_secs, http_date, parse_date, unix_secs,
};

#[test]
fn parses_rfc3339() {
    let p = |s: &str| parse_date(s);
    assert_eq!(
        p("2026-01-01T00:00:00Z"),
        Some(ParsedDate {
            secs: 1_767_225_600,
            fraction: false
        })
    );
    assert_eq!(
        p("2026-01-01T00:00:00.000000Z"),
        Some(ParsedDate {
            secs: 1_767_225_600,
            fraction: false
        })
    );
    assert_eq!(
        p("2026-01-01T00:00:00.001Z"),
        Some(ParsedDate {
            secs: 1_767_225_600,
            fraction: true
        })
    );
    assert_eq!(
        p("2026-01-01T05:30:00+05:30").map(|d| d.secs),
        Some(1_767_225_600)
    );
    assert_eq!(p("1969-12-31T00:00:00Z").map(|d| d.secs), Some(-86_400));
    assert_eq!(
        p("2024-02-29T00:00:00Z").map(|d| d.secs),
        Some(1_709_164_800)
    );
    assert_eq!(
        p("0000-01-01T00:00:00Z").map(|d| d.is_midnight()),
        Some(true)
    );
    assert_eq!(
        p("9999-12-31T00:00:00Z").map(|d| d.secs),
        Some(253_402_214_400)
    );
    for bad in [
        "",
        "2026-01-01",
        "2026-01-01T00:00:00",
        "2026-01-01T00:00:00z",
        "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00+0100",
        "2026-01-01T00:00:00+24:00",
        "2025-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-01-00T00:00:00Z",
        "2026-01-01T00:60:00Z",
        "2026-01-01T00:00:60Z",
        "+026-01-01T00:00:00Z",
        "2026-01-01T00:00:00ZZ",
        "0000-01-01T00:00:00+00:01",
        "2026-01-01T00:00:00Z\u{e9}",
        "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}",
    ] {
        assert_eq!(p(bad), None, "{bad}");
    }
    assert!(!p("2026-01-01T00:00:01Z").unwrap().is_midnight());
}

#[test]
fn formats() {
    assert_eq!(format_date(1_767_225_600), "2026-01-01T00:00:00.000Z");
    assert_eq!(format_date(-86_400), "1969-12-31T00:00:00.000Z");
    assert_eq!(
        http_date(at(2012, 12, 23, 0, 0, 0)),
        "Sun, 23 Dec 2012 00:00:00 GMT"
    );
    // Agrees with httpdate where that is defined.
    for t in [
        at(1970, 1, 1, 0, 0, 0),
        at(2000, 2, 29, 23, 59, 59),
        at(2026, 7, 4, 12, 30, 1),
    ] {
        assert_eq!(http_date(t), httpdate::fmt_http_date(t));
    }
    assert_eq!(
        http_date(UNIX_EPOCH - Duration::from_secs(86_400 * 365)),
        "Wed, 01 Jan 1969 00:00:00 GMT"
    );
}

#[test]
fn instants() {
    assert_eq!(unix_secs(UNIX_EPOCH), 0);
    assert_eq!(unix_secs(UNIX_EPOCH + Duration::from_millis(1500)), 1);
    assert_eq!(unix_secs(UNIX_EPOCH - Duration::from_millis(1500)), -2);
    assert_eq!(unix_secs(UNIX_EPOCH - Duration::from_secs(3)), -3);
    assert_eq!(
        from_unix_secs(-3),
        Some(UNIX_EPOCH - Duration::from_secs(3))
    );
    assert_eq!(from_unix_secs(86_400), Some(at(1970, 1, 2, 0, 0, 0)));
}

#[test]
fn due_after_days_rounds_to_the_next_midnight() {
    let start = at(2026, 1, 1, 10, 0, 0);
    assert_eq!(due_after_days(start, 0), Some(start));
    assert_eq!(due_after_days(start, 1), Some(at(2026, 1, 3, 0, 0, 0)));
    assert_eq!(due_after_days(start, 30), Some(at(2026, 2, 1, 0, 0, 0)));
    assert_eq!(
        due_after_days(at(2026, 1, 1, 23, 59, 59) + Duration::from_millis(999), 1),
        Some(at(2026, 1, 3, 0, 0, 0))
    );
    assert_eq!(
        due_after_days(at(2026, 1, 2, 0, 0, 0) - NS, 1),
        Some(at(2026, 1, 3, 0, 0, 0))
    );
    // Before the epoch: 1969-12-31 12:00 plus a day is 1970-01-02.
    assert_eq!(
        due_after_days(UNIX_EPOCH - Duration::from_secs(43_200), 1),
        Some(at(1970, 1, 2, 0, 0, 0))
    );
    // The largest count S3 takes stays representable.
    assert!(due_after_days(start, u32::MAX).is_some());
}
