//! Evaluation of the rules at exact instants, the `x-amz-expiration`
//! header, aborts of uploads, and the scanner's predicates.

use std::time::SystemTime;

use super::{NS, at, lc, rule};
use crate::lifecycle::{Action, Lifecycle, VersionFacts};

/// The current version of `key`: 100 bytes, untagged, the only version.
fn current(key: &str, mod_time: SystemTime) -> VersionFacts<'_> {
    VersionFacts {
        key,
        size: 100,
        mod_time,
        is_latest: true,
        is_delete_marker: false,
        successor_mod_time: None,
        newer_noncurrent: 0,
        num_versions: 1,
        tags: &[],
    }
}

/// A noncurrent version of `key` superseded at `successor`.
fn noncurrent(key: &str, successor: SystemTime, newer: usize) -> VersionFacts<'_> {
    VersionFacts {
        is_latest: false,
        successor_mod_time: Some(successor),
        newer_noncurrent: newer,
        num_versions: newer + 2,
        ..current(key, at(2025, 6, 1, 0, 0, 0))
    }
}

/// A delete marker of `key` that is the latest of `versions` versions.
fn marker(key: &str, mod_time: SystemTime, versions: usize) -> VersionFacts<'_> {
    VersionFacts {
        size: 0,
        is_delete_marker: true,
        num_versions: versions,
        ..current(key, mod_time)
    }
}

/// Asserts nothing is due just before `due` and `action` (by `id`) is
/// from `due` on.
#[track_caller]
fn assert_due(l: &Lifecycle, v: &VersionFacts<'_>, due: SystemTime, action: Action, id: &str) {
    assert_eq!(l.eval(v, due - NS), (Action::None, None), "before");
    assert_eq!(l.eval(v, due), (action, Some(id)), "at");
    assert_eq!(l.eval(v, due + NS), (action, Some(id)), "after");
}

#[test]
fn days_round_up_to_the_next_midnight() {
    let l = lc(&rule(
        "d1",
        "<Filter/><Expiration><Days>1</Days></Expiration>",
    ));
    // 10:00 on the 1st plus a day is due at midnight starting the 3rd.
    let v = current("k", at(2026, 1, 1, 10, 0, 0));
    assert_due(&l, &v, at(2026, 1, 3, 0, 0, 0), Action::DeleteCurrent, "d1");
    // An object written exactly at midnight also waits for the 3rd.
    let v = current("k", at(2026, 1, 1, 0, 0, 0));
    assert_due(&l, &v, at(2026, 1, 3, 0, 0, 0), Action::DeleteCurrent, "d1");
    // One nanosecond before midnight: due at the 2nd's end.
    let v = current("k", at(2026, 1, 1, 0, 0, 0) - NS);
    assert_due(&l, &v, at(2026, 1, 2, 0, 0, 0), Action::DeleteCurrent, "d1");
    // S3's own example: created 2014-01-15 10:30, 3 days, 2014-01-19.
    let l = lc(&rule(
        "d3",
        "<Filter/><Expiration><Days>3</Days></Expiration>",
    ));
    let v = current("k", at(2014, 1, 15, 10, 30, 0));
    assert_due(
        &l,
        &v,
        at(2014, 1, 19, 0, 0, 0),
        Action::DeleteCurrent,
        "d3",
    );
}

#[test]
fn date_expires_current_versions_from_that_midnight() {
    let l = lc(&rule(
        "date",
        "<Filter/><Expiration><Date>2026-03-01T00:00:00Z</Date></Expiration>",
    ));
    let v = current("k", at(2026, 1, 1, 10, 0, 0));
    assert_due(
        &l,
        &v,
        at(2026, 3, 1, 0, 0, 0),
        Action::DeleteCurrent,
        "date",
    );
    // An object written after the date is due at once.
    let late = current("k", at(2026, 4, 1, 0, 0, 0));
    assert_eq!(
        l.eval(&late, at(2026, 4, 1, 0, 0, 1)),
        (Action::DeleteCurrent, Some("date"))
    );
    // The Date does not reach noncurrent versions or delete markers.
    let nc = noncurrent("k", at(2026, 1, 2, 0, 0, 0), 0);
    assert_eq!(l.eval(&nc, at(2027, 1, 1, 0, 0, 0)), (Action::None, None));
    let m = marker("k", at(2026, 1, 1, 0, 0, 0), 1);
    assert_eq!(l.eval(&m, at(2027, 1, 1, 0, 0, 0)), (Action::None, None));
}

#[test]
fn disabled_rules_never_apply() {
    let l = lc("<Rule><ID>off</ID><Filter/><Status>Disabled</Status>\
                <Expiration><Days>1</Days></Expiration>\
                <NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration>\
                <AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation>\
                </AbortIncompleteMultipartUpload></Rule>");
    let far = at(2100, 1, 1, 0, 0, 0);
    assert_eq!(
        l.eval(&current("k", at(2026, 1, 1, 0, 0, 0)), far),
        (Action::None, None)
    );
    assert_eq!(
        l.eval(&noncurrent("k", at(2026, 1, 1, 0, 0, 0), 0), far),
        (Action::None, None)
    );
    assert!(!l.abort_upload_due("k", at(2026, 1, 1, 0, 0, 0), far));
    assert_eq!(
        l.expiration_header("k", 1, at(2026, 1, 1, 0, 0, 0), &[], true),
        None
    );
    assert!(!l.has_current_rules() && !l.has_noncurrent_rules() && !l.has_abort_rules());
    assert!(!l.may_act_under(""));
}

#[test]
fn prefix_filters() {
    let days = "<Expiration><Days>1</Days></Expiration>";
    let later = at(2027, 1, 1, 0, 0, 0);
    let born = at(2026, 1, 1, 0, 0, 0);
    for l in [
        lc(&rule(
            "p",
            &format!("<Filter><Prefix>logs/</Prefix></Filter>{days}"),
        )),
        lc(&format!(
            "<Rule><ID>p</ID><Prefix>logs/</Prefix><Status>Enabled</Status>{days}</Rule>"
        )),
    ] {
        assert_eq!(
            l.eval(&current("logs/a", born), later),
            (Action::DeleteCurrent, Some("p"))
        );
        assert_eq!(
            l.eval(&current("logs/", born), later).0,
            Action::DeleteCurrent
        );
        assert_eq!(l.eval(&current("logs", born), later), (Action::None, None));
        assert_eq!(
            l.eval(&current("x/logs/a", born), later),
            (Action::None, None)
        );
    }
    // An empty prefix is every key.
    let l = lc(&rule(
        "all",
        &format!("<Filter><Prefix></Prefix></Filter>{days}"),
    ));
    assert_eq!(l.eval(&current("", born), later).0, Action::DeleteCurrent);
}

#[test]
fn tag_filters() {
    let later = at(2027, 1, 1, 0, 0, 0);
    let born = at(2026, 1, 1, 0, 0, 0);
    let tagged = |tags: &'static [(String, String)]| VersionFacts {
        tags,
        ..current("docs/a", born)
    };
    let l = lc(&rule(
        "t",
        "<Filter><Tag><Key>class</Key><Value>tmp</Value></Tag></Filter>\
         <Expiration><Days>1</Days></Expiration>",
    ));
    let tmp = vec![
        ("x".to_owned(), "y".to_owned()),
        ("class".to_owned(), "tmp".to_owned()),
    ];
    let tmp: &'static [(String, String)] = Vec::leak(tmp);
    assert_eq!(
        l.eval(&tagged(tmp), later),
        (Action::DeleteCurrent, Some("t"))
    );
    let keep: &'static [(String, String)] =
        Vec::leak(vec![("class".to_owned(), "keep".to_owned())]);
    assert_eq!(l.eval(&tagged(keep), later), (Action::None, None));
    assert_eq!(l.eval(&tagged(&[]), later), (Action::None, None));

    // And: the prefix and every tag.
    let l = lc(&rule(
        "and",
        "<Filter><And><Prefix>docs/</Prefix><Tag><Key>a</Key><Value>1</Value></Tag>\
         <Tag><Key>b</Key><Value>2</Value></Tag></And></Filter><Expiration><Days>1</Days></Expiration>",
    ));
    let both: &'static [(String, String)] = Vec::leak(vec![
        ("b".to_owned(), "2".to_owned()),
        ("c".to_owned(), "3".to_owned()),
        ("a".to_owned(), "1".to_owned()),
    ]);
    let one: &'static [(String, String)] = Vec::leak(vec![("a".to_owned(), "1".to_owned())]);
    assert_eq!(
        l.eval(&tagged(both), later),
        (Action::DeleteCurrent, Some("and"))
    );
    assert_eq!(l.eval(&tagged(one), later), (Action::None, None));
    let elsewhere = VersionFacts {
        key: "other/a",
        ..tagged(both)
    };
    assert_eq!(l.eval(&elsewhere, later), (Action::None, None));
}

#[test]
fn size_filters_are_strict() {
    let later = at(2027, 1, 1, 0, 0, 0);
    let sized = |size: u64| VersionFacts {
        size,
        ..current("k", at(2026, 1, 1, 0, 0, 0))
    };
    let gt = lc(&rule(
        "gt",
        "<Filter><ObjectSizeGreaterThan>100</ObjectSizeGreaterThan></Filter>\
         <Expiration><Days>1</Days></Expiration>",
    ));
    assert_eq!(gt.eval(&sized(100), later), (Action::None, None));
    assert_eq!(
        gt.eval(&sized(101), later),
        (Action::DeleteCurrent, Some("gt"))
    );
    let lt = lc(&rule(
        "lt",
        "<Filter><ObjectSizeLessThan>100</ObjectSizeLessThan></Filter>\
         <Expiration><Days>1</Days></Expiration>",
    ));
    assert_eq!(
        lt.eval(&sized(99), later),
        (Action::DeleteCurrent, Some("lt"))
    );
    assert_eq!(lt.eval(&sized(100), later), (Action::None, None));
    let range = lc(&rule(
        "range",
        "<Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>\
         <ObjectSizeLessThan>20</ObjectSizeLessThan></And></Filter>\
         <NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration>",
    ));
    let nc = |size: u64| VersionFacts {
        size,
        ..noncurrent("k", at(2026, 1, 1, 0, 0, 0), 0)
    };
    assert_eq!(range.eval(&nc(10), later), (Action::None, None));
    assert_eq!(
        range.eval(&nc(11), later),
        (Action::DeleteVersion, Some("range"))
    );
    assert_eq!(
        range.eval(&nc(19), later),
        (Action::DeleteVersion, Some("range"))
    );
    assert_eq!(range.eval(&nc(20), later), (Action::None, None));
    // A noncurrent delete marker has no size: the bounds do not apply.
    let dm = VersionFacts {
        size: 0,
        is_delete_marker: true,
        ..nc(0)
    };
    assert_eq!(
        range.eval(&dm, later),
        (Action::DeleteVersion, Some("range"))
    );
}

#[test]
fn expired_object_delete_marker() {
    let l = lc(&rule(
        "eodm",
        "<Filter><Prefix>a/</Prefix></Filter>\
         <Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>",
    ));
    let born = at(2026, 1, 1, 10, 0, 0);
    // A marker left alone goes at once.
    assert_eq!(
        l.eval(&marker("a/k", born, 1), born),
        (Action::DeleteVersion, Some("eodm"))
    );
    // Not while versions remain behind it, not under another prefix.
    assert_eq!(
        l.eval(&marker("a/k", born, 2), at(2030, 1, 1, 0, 0, 0)),
        (Action::None, None)
    );
    assert_eq!(l.eval(&marker("b/k", born, 1), born), (Action::None, None));
    // The action touches markers only.
    assert_eq!(
        l.eval(&current("a/k", born), at(2030, 1, 1, 0, 0, 0)),
        (Action::None, None)
    );
    assert_eq!(
        l.eval(&noncurrent("a/k", born, 0), at(2030, 1, 1, 0, 0, 0)),
        (Action::None, None)
    );
    assert!(l.has_delete_marker_rules());
    // `false` does nothing.
    let off = lc(&rule(
        "off",
        "<Filter/><Expiration><ExpiredObjectDeleteMarker>false</ExpiredObjectDeleteMarker></Expiration>",
    ));
    assert_eq!(
        off.eval(&marker("a/k", born, 1), born),
        (Action::None, None)
    );
    assert!(!off.has_delete_marker_rules());
    assert!(!off.may_act_under("a/"));
}

#[test]
fn days_also_remove_a_lone_delete_marker_once_old_enough() {
    let l = lc(&rule(
        "d2",
        "<Filter/><Expiration><Days>2</Days></Expiration>",
    ));
    let born = at(2026, 1, 1, 10, 0, 0);
    assert_due(
        &l,
        &marker("k", born, 1),
        at(2026, 1, 4, 0, 0, 0),
        Action::DeleteVersion,
        "d2",
    );
    assert_eq!(
        l.eval(&marker("k", born, 3), at(2030, 1, 1, 0, 0, 0)),
        (Action::None, None)
    );
    assert!(l.has_delete_marker_rules());
}

#[test]
fn noncurrent_days_count_from_the_successor() {
    let l = lc(&rule(
        "nc",
        "<Filter/><NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays>\
         </NoncurrentVersionExpiration>",
    ));
    // Superseded 2026-01-05 12:00, two days: due 2026-01-08 00:00.
    let v = noncurrent("k", at(2026, 1, 5, 12, 0, 0), 0);
    assert_due(&l, &v, at(2026, 1, 8, 0, 0, 0), Action::DeleteVersion, "nc");
    // A noncurrent delete marker goes the same way.
    let dm = VersionFacts {
        is_delete_marker: true,
        ..v
    };
    assert_due(
        &l,
        &dm,
        at(2026, 1, 8, 0, 0, 0),
        Action::DeleteVersion,
        "nc",
    );
    // Without the successor's time nothing is removed on a guess.
    let unknown = VersionFacts {
        successor_mod_time: None,
        ..v
    };
    assert_eq!(
        l.eval(&unknown, at(2100, 1, 1, 0, 0, 0)),
        (Action::None, None)
    );
    // The current version is not noncurrent.
    assert_eq!(
        l.eval(
            &current("k", at(2020, 1, 1, 0, 0, 0)),
            at(2100, 1, 1, 0, 0, 0)
        ),
        (Action::None, None)
    );
    assert!(l.has_noncurrent_rules());
    assert!(!l.has_current_rules());
}

#[test]
fn newer_noncurrent_versions_keeps_the_newest() {
    let l = lc(&rule(
        "keep2",
        "<Filter/><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>\
         <NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration>",
    ));
    let superseded = at(2026, 1, 1, 10, 0, 0);
    let due = at(2026, 1, 3, 0, 0, 0);
    // The two newest noncurrent versions stay whatever their age.
    for newer in [0, 1] {
        assert_eq!(
            l.eval(&noncurrent("k", superseded, newer), at(2100, 1, 1, 0, 0, 0)),
            (Action::None, None),
            "{newer}"
        );
    }
    // Older ones go once the days have passed too.
    for newer in [2, 3, 50] {
        assert_due(
            &l,
            &noncurrent("k", superseded, newer),
            due,
            Action::DeleteVersion,
            "keep2",
        );
    }
    // NewerNoncurrentVersions alone applies from the moment of supersession.
    let l = lc(&rule(
        "only",
        "<Filter/><NoncurrentVersionExpiration><NewerNoncurrentVersions>1</NewerNoncurrentVersions>\
         </NoncurrentVersionExpiration>",
    ));
    assert_eq!(
        l.eval(&noncurrent("k", superseded, 0), at(2100, 1, 1, 0, 0, 0)),
        (Action::None, None)
    );
    let v = noncurrent("k", superseded, 1);
    assert_eq!(
        l.eval(&v, superseded),
        (Action::DeleteVersion, Some("only"))
    );
    let unknown = VersionFacts {
        successor_mod_time: None,
        ..v
    };
    assert_eq!(
        l.eval(&unknown, at(1970, 1, 1, 0, 0, 0)),
        (Action::DeleteVersion, Some("only"))
    );
}

#[test]
fn earliest_due_rule_decides() {
    let l = lc(&[
        rule("ten", "<Filter/><Expiration><Days>10</Days></Expiration>"),
        rule(
            "three",
            "<Filter><Prefix>a</Prefix></Filter><Expiration><Days>3</Days></Expiration>",
        ),
        rule(
            "three-too",
            "<Filter><Prefix>a/</Prefix></Filter><Expiration><Days>3</Days></Expiration>",
        ),
        rule(
            "date",
            "<Filter><Prefix>b</Prefix></Filter><Expiration><Date>2026-01-02T00:00:00Z</Date></Expiration>",
        ),
    ]
    .concat());
    let born = at(2026, 1, 1, 10, 0, 0);
    // Three days (first of the two) beats ten, before and after both are due.
    let a = current("a/k", born);
    assert_due(
        &l,
        &a,
        at(2026, 1, 5, 0, 0, 0),
        Action::DeleteCurrent,
        "three",
    );
    assert_eq!(
        l.eval(&a, at(2030, 1, 1, 0, 0, 0)),
        (Action::DeleteCurrent, Some("three"))
    );
    // The Date comes before ten days.
    let b = current("b/k", born);
    assert_due(
        &l,
        &b,
        at(2026, 1, 2, 0, 0, 0),
        Action::DeleteCurrent,
        "date",
    );
    // Only the ten-day rule for other keys.
    let c = current("c/k", born);
    assert_due(
        &l,
        &c,
        at(2026, 1, 12, 0, 0, 0),
        Action::DeleteCurrent,
        "ten",
    );
    assert_eq!(
        l.expiration_header("a/k", 1, born, &[], true).as_deref(),
        Some("expiry-date=\"Mon, 05 Jan 2026 00:00:00 GMT\", rule-id=\"three\"")
    );
}

#[test]
fn transitions_are_never_executed() {
    let l = lc(&rule(
        "t",
        "<Filter/><Transition><Days>0</Days><StorageClass>GLACIER</StorageClass></Transition>\
         <NoncurrentVersionTransition><NoncurrentDays>0</NoncurrentDays>\
         <StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>",
    ));
    let far = at(2100, 1, 1, 0, 0, 0);
    let born = at(2026, 1, 1, 0, 0, 0);
    assert_eq!(l.eval(&current("k", born), far), (Action::None, None));
    assert_eq!(l.eval(&noncurrent("k", born, 5), far), (Action::None, None));
    assert_eq!(l.expiration_header("k", 1, born, &[], true), None);
    assert!(l.has_transitions());
    assert!(!l.may_act_under(""));
    let plain = lc(&rule(
        "e",
        "<Filter/><Expiration><Days>1</Days></Expiration>",
    ));
    assert!(!plain.has_transitions());
}

#[test]
fn expiration_header_format() {
    let l = lc(&rule(
        "picture-deletion-rule",
        "<Filter><Prefix>pictures/</Prefix></Filter><Expiration><Days>3</Days></Expiration>",
    ));
    let born = at(2012, 12, 19, 15, 4, 5);
    assert_eq!(
        l.expiration_header("pictures/a.jpg", 10, born, &[], true)
            .as_deref(),
        Some("expiry-date=\"Sun, 23 Dec 2012 00:00:00 GMT\", rule-id=\"picture-deletion-rule\"")
    );
    // Not for other keys, not for noncurrent versions.
    assert_eq!(l.expiration_header("docs/a", 10, born, &[], true), None);
    assert_eq!(
        l.expiration_header("pictures/a.jpg", 10, born, &[], false),
        None
    );
    // The rule ID is URL-encoded.
    let l = lc(&rule(
        "rule one/é&amp;\"x\"",
        "<Filter/><Expiration><Date>1900-01-01T00:00:00Z</Date></Expiration>",
    ));
    assert_eq!(
        l.expiration_header("k", 0, born, &[], true).as_deref(),
        Some(
            "expiry-date=\"Mon, 01 Jan 1900 00:00:00 GMT\", rule-id=\"rule%20one%2F%C3%A9%26%22x%22\""
        )
    );
    // Years far beyond HTTP dates' usual range format without panicking.
    let l = lc(&rule(
        "far",
        "<Filter/><Expiration><Days>2147483647</Days></Expiration>",
    ));
    let h = l.expiration_header("k", 0, born, &[], true);
    assert!(
        h.as_deref().is_some_and(
            |h| h.starts_with("expiry-date=\"") && h.ends_with("GMT\", rule-id=\"far\"")
        ),
        "{h:?}"
    );
    assert_eq!(
        l.eval(&current("k", born), at(2100, 1, 1, 0, 0, 0)),
        (Action::None, None)
    );
    // A tag filter is honoured.
    let l = lc(&rule(
        "tagged",
        "<Filter><Tag><Key>t</Key><Value>1</Value></Tag></Filter><Expiration><Days>1</Days></Expiration>",
    ));
    let tags = [("t".to_owned(), "1".to_owned())];
    assert_eq!(
        l.expiration_header("k", 0, at(2026, 1, 1, 10, 0, 0), &tags, true)
            .as_deref(),
        Some("expiry-date=\"Sat, 03 Jan 2026 00:00:00 GMT\", rule-id=\"tagged\"")
    );
    assert_eq!(
        l.expiration_header("k", 0, at(2026, 1, 1, 10, 0, 0), &[], true),
        None
    );
}

#[test]
fn abort_incomplete_uploads() {
    let l = lc(&[
        rule(
            "uploads",
            "<Filter><Prefix>up/</Prefix></Filter>\
             <AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation>\
             </AbortIncompleteMultipartUpload>",
        ),
        rule("expire", "<Filter/><Expiration><Days>1</Days></Expiration>"),
    ]
    .concat());
    let initiated = at(2026, 1, 1, 10, 0, 0);
    let due = at(2026, 1, 9, 0, 0, 0);
    assert!(!l.abort_upload_due("up/big", initiated, due - NS));
    assert!(l.abort_upload_due("up/big", initiated, due));
    assert!(l.abort_upload_due("up/big", initiated, due + NS));
    // Another prefix, and the expiration rule, abort nothing.
    assert!(!l.abort_upload_due("down/big", initiated, at(2100, 1, 1, 0, 0, 0)));
    assert!(l.has_abort_rules());
    let none = lc(&rule(
        "e",
        "<Filter/><Expiration><Days>1</Days></Expiration>",
    ));
    assert!(!none.has_abort_rules());
    assert!(!none.abort_upload_due("k", initiated, at(2100, 1, 1, 0, 0, 0)));
    // An abort-only rule acts on no object.
    let abort_only = lc(&rule(
        "a",
        "<Filter/><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation>\
         </AbortIncompleteMultipartUpload>",
    ));
    assert!(!abort_only.may_act_under(""));
}

#[test]
fn scanner_predicates() {
    let l = lc(&[
        rule(
            "logs",
            "<Filter><Prefix>logs/2026/</Prefix></Filter><Expiration><Days>1</Days></Expiration>",
        ),
        rule(
            "tmp",
            "<Filter><And><Prefix>tmp/</Prefix><Tag><Key>a</Key><Value>b</Value></Tag></And></Filter>\
             <NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration>",
        ),
    ]
    .concat());
    assert!(l.has_current_rules());
    assert!(l.has_noncurrent_rules());
    assert!(l.has_delete_marker_rules());
    assert!(!l.has_abort_rules());
    assert!(!l.has_transitions());
    // A subtree is relevant when one prefix contains the other.
    assert!(l.may_act_under(""));
    assert!(l.may_act_under("logs/"));
    assert!(l.may_act_under("logs/2026/01/"));
    assert!(l.may_act_under("tmp/x/"));
    assert!(!l.may_act_under("logs/2025/"));
    assert!(!l.may_act_under("data/"));
}
