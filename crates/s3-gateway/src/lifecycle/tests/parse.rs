//! Parsing, validation errors, the GET document and its round trip.

use super::{assert_err, doc, err, lc, rule};
use crate::lifecycle::{
    AndFilter, Expiration, Filter, Lifecycle, NoncurrentExpiration, NoncurrentTransition,
    Transition, TransitionWhen,
};

const MALFORMED: &str =
    "The XML you provided was not well-formed or did not validate against our published schema.";

#[track_caller]
fn assert_malformed(rules: &str) {
    assert_err(&err(rules), "MalformedXML", MALFORMED);
}

const DAYS_1: &str = "<Expiration><Days>1</Days></Expiration>";

#[test]
fn parses_every_form() {
    let l = lc(&[
        "<Rule><ID>legacy</ID><Prefix>logs/</Prefix><Status>Disabled</Status>\
         <Expiration><Days>30</Days></Expiration></Rule>",
    ]
    .concat());
    let r = &l.rules()[0];
    assert_eq!(r.id, "legacy");
    assert!(!r.enabled);
    assert_eq!(r.filter, Filter::Legacy("logs/".into()));
    assert_eq!(r.expiration, Some(Expiration::Days(30)));

    let l = lc(&[
        rule("all", &format!("<Filter/>{DAYS_1}")),
        rule("p", &format!("<Filter><Prefix>a/</Prefix></Filter>{DAYS_1}")),
        rule(
            "t",
            &format!("<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>{DAYS_1}"),
        ),
        rule(
            "gt",
            &format!("<Filter><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan></Filter>{DAYS_1}"),
        ),
        rule(
            "lt",
            &format!("<Filter><ObjectSizeLessThan>20</ObjectSizeLessThan></Filter>{DAYS_1}"),
        ),
        rule(
            "and",
            &format!(
                "<Filter><And><Prefix>x</Prefix><Tag><Key>a</Key><Value>1</Value></Tag>\
                 <Tag><Key>b</Key><Value></Value></Tag><ObjectSizeGreaterThan>0</ObjectSizeGreaterThan>\
                 <ObjectSizeLessThan>5</ObjectSizeLessThan></And></Filter>{DAYS_1}"
            ),
        ),
    ]
    .concat());
    let filters: Vec<_> = l.rules().iter().map(|r| r.filter.clone()).collect();
    assert_eq!(
        filters,
        vec![
            Filter::All,
            Filter::Prefix("a/".into()),
            Filter::Tag("k".into(), "v".into()),
            Filter::SizeGreaterThan(10),
            Filter::SizeLessThan(20),
            Filter::And(AndFilter {
                prefix: Some("x".into()),
                tags: vec![("a".into(), "1".into()), ("b".into(), String::new())],
                size_greater_than: Some(0),
                size_less_than: Some(5),
            }),
        ]
    );

    let l = lc(&rule(
        "actions",
        "<Filter></Filter>\
         <Transition><Days>0</Days><StorageClass>GLACIER</StorageClass></Transition>\
         <Transition><Date>2030-01-01T00:00:00Z</Date><StorageClass>DEEP_ARCHIVE</StorageClass></Transition>\
         <NoncurrentVersionTransition><NoncurrentDays>3</NoncurrentDays>\
         <NewerNoncurrentVersions>2</NewerNoncurrentVersions><StorageClass>TIER</StorageClass>\
         </NoncurrentVersionTransition>\
         <NoncurrentVersionExpiration><NoncurrentDays>7</NoncurrentDays>\
         <NewerNoncurrentVersions>100</NewerNoncurrentVersions></NoncurrentVersionExpiration>\
         <AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation>\
         </AbortIncompleteMultipartUpload>",
    ));
    let r = &l.rules()[0];
    assert_eq!(r.expiration, None);
    assert_eq!(
        r.transitions,
        vec![
            Transition {
                when: TransitionWhen::Days(0),
                storage_class: "GLACIER".into()
            },
            Transition {
                when: TransitionWhen::Date(1_893_456_000),
                storage_class: "DEEP_ARCHIVE".into()
            },
        ]
    );
    assert_eq!(
        r.noncurrent_transitions,
        vec![NoncurrentTransition {
            days: 3,
            newer_versions: Some(2),
            storage_class: "TIER".into()
        }]
    );
    assert_eq!(
        r.noncurrent_expiration,
        Some(NoncurrentExpiration {
            days: Some(7),
            newer_versions: Some(100)
        })
    );
    assert_eq!(r.abort_after_days, Some(2));
    assert!(l.has_transitions());
}

#[test]
fn expiration_forms() {
    let exp = |body: &str| {
        lc(&rule(
            "r",
            &format!("<Filter/><Expiration>{body}</Expiration>"),
        ))
        .rules()[0]
            .expiration
    };
    assert_eq!(exp("<Days> 7 </Days>"), Some(Expiration::Days(7)));
    assert_eq!(
        exp("<Days>2147483647</Days>"),
        Some(Expiration::Days(2_147_483_647))
    );
    // 2026-01-01T00:00:00Z.
    assert_eq!(
        exp("<Date>2026-01-01T00:00:00Z</Date>"),
        Some(Expiration::Date(1_767_225_600))
    );
    assert_eq!(
        exp("<Date>2026-01-01T00:00:00.000Z</Date>"),
        Some(Expiration::Date(1_767_225_600))
    );
    // Midnight GMT written in another zone.
    assert_eq!(
        exp("<Date>2026-01-01T01:30:00+01:30</Date>"),
        Some(Expiration::Date(1_767_225_600))
    );
    assert_eq!(
        exp("<Date>2025-12-31T19:00:00-05:00</Date>"),
        Some(Expiration::Date(1_767_225_600))
    );
    for t in ["true", " true ", "1"] {
        assert_eq!(
            exp(&format!(
                "<ExpiredObjectDeleteMarker>{t}</ExpiredObjectDeleteMarker>"
            )),
            Some(Expiration::ExpiredObjectDeleteMarker(true))
        );
    }
    assert_eq!(
        exp("<ExpiredObjectDeleteMarker>false</ExpiredObjectDeleteMarker>"),
        Some(Expiration::ExpiredObjectDeleteMarker(false))
    );
}

#[test]
fn document_structure_errors() {
    for body in [
        &b""[..],
        b"not xml",
        b"<LifecycleConfiguration>",
        b"<Lifecycle><Rule/></Lifecycle>",
    ] {
        let e = Lifecycle::parse(body).unwrap_err();
        assert_eq!(e.code, "MalformedXML", "{body:?}");
    }
    // No rule at all.
    assert_malformed("");
    // Something else beside the rules.
    assert_malformed(&format!(
        "{}<Bogus/>",
        rule("a", &format!("<Filter/>{DAYS_1}"))
    ));
    // MinIO's root name and its ExpiryUpdatedAt bookkeeping are read.
    let minio = format!(
        "<BucketLifecycleConfiguration>{}<ExpiryUpdatedAt>2024-05-01T10:00:00Z</ExpiryUpdatedAt>\
         </BucketLifecycleConfiguration>",
        rule("a", &format!("<Filter/>{DAYS_1}"))
    );
    assert_eq!(Lifecycle::parse(minio.as_bytes()).unwrap().rules().len(), 1);
}

#[test]
fn rule_count_limit() {
    let one = rule("", &format!("<Filter/>{DAYS_1}"));
    let thousand = lc(&one.repeat(1000));
    assert_eq!(thousand.rules().len(), 1000);
    assert_err(
        &err(&one.repeat(1001)),
        "InvalidArgument",
        "Lifecycle configuration allows a maximum of 1000 rules",
    );
}

#[test]
fn rule_id_errors() {
    let ok = "x".repeat(255);
    assert_eq!(
        lc(&rule(&ok, &format!("<Filter/>{DAYS_1}"))).rules()[0].id,
        ok
    );
    // Characters, not bytes.
    let wide = "é".repeat(255);
    assert_eq!(
        lc(&rule(&wide, &format!("<Filter/>{DAYS_1}"))).rules()[0].id,
        wide
    );
    let long = "x".repeat(256);
    let e = err(&rule(&long, &format!("<Filter/>{DAYS_1}")));
    assert_err(
        &e,
        "InvalidArgument",
        "ID length should not exceed allowed limit of 255",
    );
    assert_eq!(
        e.details,
        vec![("ArgumentName", "ID".to_owned()), ("ArgumentValue", long)]
    );

    let twice = [
        rule("same", &format!("<Filter/>{DAYS_1}")),
        rule("other", &format!("<Filter/>{DAYS_1}")),
        rule("same", &format!("<Filter/>{DAYS_1}")),
    ]
    .concat();
    let e = err(&twice);
    assert_err(
        &e,
        "InvalidArgument",
        "Rule ID must be unique. Found same ID for more than one rule",
    );
    assert_eq!(
        e.details,
        vec![
            ("ArgumentName", "ID".to_owned()),
            ("ArgumentValue", "same".to_owned())
        ]
    );
    // Rules without an ID get fresh ones, so they never collide.
    let mut l = lc(&[
        format!("<Rule><Status>Enabled</Status><Filter/>{DAYS_1}</Rule>"),
        format!("<Rule><ID></ID><Status>Enabled</Status><Filter/>{DAYS_1}</Rule>"),
        rule("kept", &format!("<Filter/>{DAYS_1}")),
    ]
    .concat());
    assert!(l.rules()[..2].iter().all(|r| r.id.is_empty()));
    l.fill_missing_ids();
    let ids: Vec<_> = l.rules().iter().map(|r| r.id.clone()).collect();
    assert_eq!(ids[0].len(), 36);
    assert_eq!(ids[1].len(), 36);
    assert_ne!(ids[0], ids[1]);
    assert_eq!(ids[2], "kept");
    // A control character cannot be written back in a document.
    assert_malformed(&rule("a&#x1;b", &format!("<Filter/>{DAYS_1}")));
}

#[test]
fn status_errors() {
    assert_malformed(&format!("<Rule><ID>a</ID><Filter/>{DAYS_1}</Rule>"));
    for bad in ["enabled", "On", ""] {
        assert_malformed(&format!(
            "<Rule><Status>{bad}</Status><Filter/>{DAYS_1}</Rule>"
        ));
    }
    assert_malformed(&format!(
        "<Rule><Status>Enabled</Status><Status>Enabled</Status><Filter/>{DAYS_1}</Rule>"
    ));
    assert!(
        lc(&format!(
            "<Rule><Status> Enabled </Status><Filter/>{DAYS_1}</Rule>"
        ))
        .rules()[0]
            .enabled
    );
}

#[test]
fn rule_structure_errors() {
    // Neither a filter nor a prefix; both.
    assert_malformed(&rule("a", DAYS_1));
    assert_malformed(&rule("a", &format!("<Prefix>p</Prefix><Filter/>{DAYS_1}")));
    // Unknown or repeated elements, MinIO's extensions included.
    assert_malformed(&rule("a", &format!("<Filter/>{DAYS_1}<Bogus/>")));
    assert_malformed(&rule(
        "a",
        "<Filter/><DelMarkerExpiration><Days>1</Days></DelMarkerExpiration>",
    ));
    assert_malformed(&rule("a", &format!("<Filter/>{DAYS_1}{DAYS_1}")));
    assert_malformed(&format!(
        "<Rule><ID>a</ID><ID>b</ID><Status>Enabled</Status><Filter/>{DAYS_1}</Rule>"
    ));
    // A value with elements in it.
    assert_malformed(&rule(
        "a",
        "<Filter/><Expiration><Days><x/></Days></Expiration>",
    ));
    // No action.
    assert_err(
        &err(&rule("a", "<Filter/>")),
        "InvalidRequest",
        "At least one action needs to be specified in a rule",
    );
}

#[test]
fn structure_errors_win_over_value_errors() {
    let rules = [
        rule("a", "<Filter/><Expiration><Days>0</Days></Expiration>"),
        rule("b", &format!("<Filter/>{DAYS_1}<Bogus/>")),
    ]
    .concat();
    assert_malformed(&rules);
    // Of value errors, the first in the document.
    let rules = [
        rule("a", "<Filter/><Expiration><Days>0</Days></Expiration>"),
        rule(&"x".repeat(300), &format!("<Filter/>{DAYS_1}")),
    ]
    .concat();
    assert_err(
        &err(&rules),
        "InvalidArgument",
        "'Days' for Expiration action must be a positive integer",
    );
}

#[test]
fn v1_and_v2_rules_do_not_mix() {
    let v1 = format!("<Rule><ID>v1</ID><Prefix>a</Prefix><Status>Enabled</Status>{DAYS_1}</Rule>");
    let v2 = rule(
        "v2",
        &format!("<Filter><Prefix>b</Prefix></Filter>{DAYS_1}"),
    );
    assert_err(
        &err(&[v1.clone(), v2.clone()].concat()),
        "InvalidRequest",
        "Filter element can only be used in Lifecycle V2.",
    );
    assert_err(
        &err(&[v2, v1.clone()].concat()),
        "InvalidRequest",
        "Base level prefix cannot be used in Lifecycle V2, prefixes are only supported in the Filter.",
    );
    let v1b = v1.replace("v1", "v1b");
    assert_eq!(lc(&[v1, v1b].concat()).rules().len(), 2);
}

#[test]
fn filter_errors() {
    // Two predicates where one is allowed.
    assert_malformed(&rule(
        "a",
        &format!(
            "<Filter><Prefix>p</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>{DAYS_1}"
        ),
    ));
    assert_malformed(&rule(
        "a",
        &format!(
            "<Filter><ObjectSizeGreaterThan>1</ObjectSizeGreaterThan>\
             <ObjectSizeLessThan>9</ObjectSizeLessThan></Filter>{DAYS_1}"
        ),
    ));
    assert_malformed(&rule(
        "a",
        &format!("<Filter><Prefix>p</Prefix><Prefix>q</Prefix></Filter>{DAYS_1}"),
    ));
    assert_malformed(&rule("a", &format!("<Filter><Bogus/></Filter>{DAYS_1}")));
    // And needs two predicates.
    assert_malformed(&rule(
        "a",
        &format!("<Filter><And><Prefix>p</Prefix></And></Filter>{DAYS_1}"),
    ));
    assert_malformed(&rule("a", &format!("<Filter><And/></Filter>{DAYS_1}")));
    // A tag needs a key.
    assert_malformed(&rule(
        "a",
        &format!("<Filter><Tag><Value>v</Value></Tag></Filter>{DAYS_1}"),
    ));
    assert_malformed(&rule(
        "a",
        &format!("<Filter><Tag><Key>k</Key><Other/></Tag></Filter>{DAYS_1}"),
    ));
    // Sizes are integers.
    assert_malformed(&rule(
        "a",
        &format!("<Filter><ObjectSizeLessThan>big</ObjectSizeLessThan></Filter>{DAYS_1}"),
    ));

    let tag_rule = |k: &str, v: &str| {
        rule(
            "a",
            &format!("<Filter><Tag><Key>{k}</Key><Value>{v}</Value></Tag></Filter>{DAYS_1}"),
        )
    };
    assert_err(
        &err(&tag_rule("", "v")),
        "InvalidRequest",
        "A Tag's Key must be a length between 1 and 128.",
    );
    assert_err(
        &err(&tag_rule(&"k".repeat(129), "v")),
        "InvalidRequest",
        "A Tag's Key must be a length between 1 and 128.",
    );
    assert_err(
        &err(&tag_rule("k", &"v".repeat(257))),
        "InvalidRequest",
        "A Tag's Value must be a length between 0 and 256.",
    );
    lc(&tag_rule(&"k".repeat(128), &"v".repeat(256)));

    let and_tags = |n: usize, dup: bool| {
        let tags: String = (0..n)
            .map(|i| {
                let k = if dup { 0 } else { i };
                format!("<Tag><Key>k{k}</Key><Value>v</Value></Tag>")
            })
            .collect();
        rule("a", &format!("<Filter><And>{tags}</And></Filter>{DAYS_1}"))
    };
    assert!(lc(&and_tags(50, false)).rules()[0].filter.has_tags());
    assert_err(
        &err(&and_tags(51, false)),
        "InvalidRequest",
        "A lifecycle rule filter cannot name more than 50 tags.",
    );
    assert_err(
        &err(&and_tags(2, true)),
        "InvalidRequest",
        "Duplicate Tag Keys are not allowed.",
    );

    let sizes = |gt: &str, lt: &str| {
        rule(
            "a",
            &format!(
                "<Filter><And><ObjectSizeGreaterThan>{gt}</ObjectSizeGreaterThan>\
                 <ObjectSizeLessThan>{lt}</ObjectSizeLessThan></And></Filter>{DAYS_1}"
            ),
        )
    };
    lc(&sizes("9", "10"));
    assert_err(
        &err(&sizes("10", "10")),
        "InvalidRequest",
        "'ObjectSizeLessThan' has to be a value greater than 'ObjectSizeGreaterThan'.",
    );
    assert_err(
        &err(&sizes("-1", "10")),
        "InvalidRequest",
        "'ObjectSizeGreaterThan' should be between 0 and 1099511627776000.",
    );
    assert_err(
        &err(&sizes("1099511627776001", "1099511627776002")),
        "InvalidRequest",
        "'ObjectSizeGreaterThan' should be between 0 and 1099511627776000.",
    );
    assert_err(
        &err(&rule(
            "a",
            &format!("<Filter><ObjectSizeLessThan>0</ObjectSizeLessThan></Filter>{DAYS_1}"),
        )),
        "InvalidRequest",
        "'ObjectSizeLessThan' should be between 1 and 1099511627776000.",
    );

    // Prefixes are bounded like keys, in both rule forms.
    let p = "p".repeat(1024);
    lc(&rule(
        "a",
        &format!("<Filter><Prefix>{p}</Prefix></Filter>{DAYS_1}"),
    ));
    for r in [
        rule(
            "a",
            &format!("<Filter><Prefix>{p}x</Prefix></Filter>{DAYS_1}"),
        ),
        format!("<Rule><Prefix>{p}x</Prefix><Status>Enabled</Status>{DAYS_1}</Rule>"),
    ] {
        assert_err(
            &err(&r),
            "InvalidRequest",
            "The maximum size of a prefix is 1024",
        );
    }
}

#[test]
fn expiration_errors() {
    let exp = |body: &str| rule("a", &format!("<Filter/><Expiration>{body}</Expiration>"));
    for body in [
        "",
        "<Days>1</Days><Date>2026-01-01T00:00:00Z</Date>",
        "<Days>1</Days><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker>",
        "<Date>2026-01-01T00:00:00Z</Date><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker>",
        "<Days>1</Days><Days>2</Days>",
        "<Days>one</Days>",
        "<Days>2147483648</Days>",
        "<Days>1.5</Days>",
        "<Date>2026-01-01</Date>",
        "<Date>2026-02-30T00:00:00Z</Date>",
        "<Date>2026-01-01T00:00:00</Date>",
        "<Date>2026-01-01 00:00:00Z</Date>",
        "<Date>2026-01-01T24:00:00Z</Date>",
        "<Date>9999-12-31T23:00:00-01:00</Date>",
        "<ExpiredObjectDeleteMarker>yes</ExpiredObjectDeleteMarker>",
        "<ExpiredObjectAllVersions>true</ExpiredObjectAllVersions>",
    ] {
        let e = err(&exp(body));
        assert_eq!(e.code, "MalformedXML", "{body}");
    }
    for days in ["0", "-3"] {
        let e = err(&exp(&format!("<Days>{days}</Days>")));
        assert_err(
            &e,
            "InvalidArgument",
            "'Days' for Expiration action must be a positive integer",
        );
        assert_eq!(
            e.details,
            vec![
                ("ArgumentName", "Days".to_owned()),
                ("ArgumentValue", days.to_owned())
            ]
        );
    }
    for date in [
        "2026-01-01T00:00:01Z",
        "2026-01-01T00:00:00.5Z",
        "2026-01-01T00:00:00+01:00",
    ] {
        let e = err(&exp(&format!("<Date>{date}</Date>")));
        assert_err(&e, "InvalidArgument", "'Date' must be at midnight GMT");
        assert_eq!(
            e.details,
            vec![
                ("ArgumentName", "Date".to_owned()),
                ("ArgumentValue", date.to_owned())
            ]
        );
    }
    // ExpiredObjectDeleteMarker concerns markers, which have no tags and no
    // size.
    let marker =
        "<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>";
    for filter in [
        "<Tag><Key>k</Key><Value>v</Value></Tag>",
        "<And><Prefix>p</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And>",
    ] {
        assert_err(
            &err(&rule("a", &format!("<Filter>{filter}</Filter>{marker}"))),
            "InvalidRequest",
            "ExpiredObjectDeleteMarker cannot be specified with Tags.",
        );
    }
    for filter in [
        "<ObjectSizeGreaterThan>5</ObjectSizeGreaterThan>",
        "<And><Prefix>p</Prefix><ObjectSizeLessThan>5</ObjectSizeLessThan></And>",
    ] {
        assert_err(
            &err(&rule("a", &format!("<Filter>{filter}</Filter>{marker}"))),
            "InvalidRequest",
            "ExpiredObjectDeleteMarker cannot be specified with Object Size.",
        );
    }
    // Days and Date are fine with tag filters.
    lc(&rule(
        "a",
        &format!("<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>{DAYS_1}"),
    ));
}

#[test]
fn noncurrent_expiration_errors() {
    let nc = |body: &str| {
        rule(
            "a",
            &format!("<Filter/><NoncurrentVersionExpiration>{body}</NoncurrentVersionExpiration>"),
        )
    };
    assert_malformed(&nc(""));
    assert_malformed(&nc("<NoncurrentDays>1</NoncurrentDays><Bogus/>"));
    assert_malformed(&nc("<NoncurrentDays>x</NoncurrentDays>"));
    let e = err(&nc("<NoncurrentDays>0</NoncurrentDays>"));
    assert_err(
        &e,
        "InvalidArgument",
        "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer",
    );
    assert_eq!(e.details[0], ("ArgumentName", "NoncurrentDays".to_owned()));
    assert_err(
        &err(&nc("<NewerNoncurrentVersions>0</NewerNoncurrentVersions>")),
        "InvalidArgument",
        "'NewerNoncurrentVersions' for NoncurrentVersionExpiration action must be a positive integer",
    );
    assert_err(
        &err(&nc(
            "<NewerNoncurrentVersions>101</NewerNoncurrentVersions>",
        )),
        "InvalidArgument",
        "'NewerNoncurrentVersions' for NoncurrentVersionExpiration action must be between 1 and 100",
    );
    // NewerNoncurrentVersions alone: MinIO's form.
    assert_eq!(
        lc(&nc("<NewerNoncurrentVersions>3</NewerNoncurrentVersions>")).rules()[0]
            .noncurrent_expiration,
        Some(NoncurrentExpiration {
            days: None,
            newer_versions: Some(3)
        })
    );
    // Not in a V1 rule.
    assert_err(
        &err(
            "<Rule><Prefix>p</Prefix><Status>Enabled</Status><NoncurrentVersionExpiration>\
             <NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions>\
             </NoncurrentVersionExpiration></Rule>",
        ),
        "InvalidRequest",
        "NewerNoncurrentVersions element can only be used in Lifecycle V2.",
    );
}

#[test]
fn abort_upload_errors() {
    let abort = |filter: &str, body: &str| {
        rule(
            "a",
            &format!(
                "<Filter>{filter}</Filter><AbortIncompleteMultipartUpload>{body}\
                 </AbortIncompleteMultipartUpload>"
            ),
        )
    };
    assert_malformed(&abort("", ""));
    assert_malformed(&abort("", "<Days>1</Days>"));
    assert_malformed(&abort(
        "",
        "<DaysAfterInitiation>1</DaysAfterInitiation><DaysAfterInitiation>1</DaysAfterInitiation>",
    ));
    assert_err(
        &err(&abort("", "<DaysAfterInitiation>0</DaysAfterInitiation>")),
        "InvalidArgument",
        "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer",
    );
    let days = "<DaysAfterInitiation>7</DaysAfterInitiation>";
    assert_err(
        &err(&abort("<Tag><Key>k</Key><Value>v</Value></Tag>", days)),
        "InvalidRequest",
        "AbortIncompleteMultipartUpload cannot be specified with Tags.",
    );
    assert_err(
        &err(&abort(
            "<And><Tag><Key>k</Key><Value>v</Value></Tag><Tag><Key>j</Key><Value>v</Value></Tag></And>",
            days,
        )),
        "InvalidRequest",
        "AbortIncompleteMultipartUpload cannot be specified with Tags.",
    );
    assert_err(
        &err(&abort("<ObjectSizeLessThan>100</ObjectSizeLessThan>", days)),
        "InvalidRequest",
        "AbortIncompleteMultipartUpload cannot be specified with Object Size.",
    );
    assert_eq!(
        lc(&abort("<Prefix>uploads/</Prefix>", days)).rules()[0].abort_after_days,
        Some(7)
    );
}

#[test]
fn transition_errors() {
    let t = |body: &str| rule("a", &format!("<Filter/><Transition>{body}</Transition>"));
    assert_malformed(&t("<Days>1</Days>"));
    assert_malformed(&t("<Days>1</Days><StorageClass> </StorageClass>"));
    assert_malformed(&t("<StorageClass>GLACIER</StorageClass>"));
    assert_malformed(&t(
        "<Days>3</Days><Date>2030-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass>",
    ));
    assert_err(
        &err(&t("<Days>-1</Days><StorageClass>GLACIER</StorageClass>")),
        "InvalidArgument",
        "'Days' in Transition action must be nonnegative",
    );
    assert_err(
        &err(&t(
            "<Date>2030-01-01T12:00:00Z</Date><StorageClass>GLACIER</StorageClass>",
        )),
        "InvalidArgument",
        "'Date' must be at midnight GMT",
    );
    // MinIO writes Days 0 beside a Date.
    assert_eq!(
        lc(&t(
            "<Days>0</Days><Date>2030-01-01T00:00:00Z</Date><StorageClass>WARM</StorageClass>"
        ))
        .rules()[0]
            .transitions[0]
            .when,
        TransitionWhen::Date(1_893_456_000)
    );
    let nt = |body: &str| {
        rule(
            "a",
            &format!("<Filter/><NoncurrentVersionTransition>{body}</NoncurrentVersionTransition>"),
        )
    };
    assert_malformed(&nt("<StorageClass>GLACIER</StorageClass>"));
    assert_malformed(&nt("<NoncurrentDays>1</NoncurrentDays>"));
    assert_err(
        &err(&nt(
            "<NoncurrentDays>-2</NoncurrentDays><StorageClass>GLACIER</StorageClass>",
        )),
        "InvalidArgument",
        "'NoncurrentDays' in NoncurrentVersionTransition action must be nonnegative",
    );
}

/// The GET document of a configuration with every form reads back to the
/// same configuration.
#[test]
fn get_document_round_trips() {
    let rules = [
        rule(
            "a&amp;&lt;b&gt;\"'",
            "<Filter><Prefix>logs/ &amp; more</Prefix></Filter>\
             <Expiration><Days>30</Days></Expiration>\
             <Transition><Days>0</Days><StorageClass>GLACIER</StorageClass></Transition>\
             <AbortIncompleteMultipartUpload><DaysAfterInitiation>3</DaysAfterInitiation>\
             </AbortIncompleteMultipartUpload>",
        ),
        rule(
            "date",
            "<Filter><Tag><Key>k&#xD;</Key><Value></Value></Tag></Filter>\
             <Expiration><Date>2030-06-01T02:00:00+02:00</Date></Expiration>\
             <Transition><Date>2029-01-01T00:00:00Z</Date><StorageClass>X</StorageClass></Transition>",
        ),
        rule(
            "marker",
            "<Filter><Prefix></Prefix></Filter>\
             <Expiration><ExpiredObjectDeleteMarker>false</ExpiredObjectDeleteMarker></Expiration>\
             <NoncurrentVersionExpiration><NewerNoncurrentVersions>4</NewerNoncurrentVersions>\
             </NoncurrentVersionExpiration>",
        ),
        rule(
            "and",
            "<Filter><And><Prefix>é/</Prefix><Tag><Key>a</Key><Value>1</Value></Tag>\
             <ObjectSizeLessThan>99</ObjectSizeLessThan></And></Filter>\
             <NoncurrentVersionExpiration><NoncurrentDays>9</NoncurrentDays>\
             </NoncurrentVersionExpiration>\
             <NoncurrentVersionTransition><NoncurrentDays>0</NoncurrentDays>\
             <NewerNoncurrentVersions>1</NewerNoncurrentVersions><StorageClass>Y</StorageClass>\
             </NoncurrentVersionTransition>",
        ),
        "<Rule><Status>Disabled</Status><Filter></Filter><Expiration>\
         <ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>"
            .to_owned(),
        rule("lt", "<Filter><ObjectSizeLessThan>1</ObjectSizeLessThan></Filter><Expiration><Days>1</Days></Expiration>"),
        rule("gt", "<Filter><ObjectSizeGreaterThan>0</ObjectSizeGreaterThan></Filter><Expiration><Days>1</Days></Expiration>"),
    ]
    .concat();
    let l = lc(&rules);
    let xml = l.to_xml();
    assert_eq!(Lifecycle::parse(xml.as_bytes()).unwrap(), l, "{xml}");
    // Legacy rules stay legacy.
    let v1 = lc(
        "<Rule><ID>v1</ID><Prefix>p/</Prefix><Status>Enabled</Status>\
                 <Expiration><Days>2</Days></Expiration></Rule>",
    );
    assert_eq!(Lifecycle::parse(v1.to_xml().as_bytes()).unwrap(), v1);
}

#[test]
fn get_document_is_exact() {
    let l = lc(&[
        rule(
            "one",
            "<Filter><Prefix>a/</Prefix></Filter><Expiration><Date>2026-01-01T00:00:00Z</Date></Expiration>",
        ),
        "<Rule><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Disabled</Status>\
         <NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays></NoncurrentVersionExpiration></Rule>"
            .to_owned(),
    ]
    .concat());
    assert_eq!(
        l.to_xml(),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <Rule><ID>one</ID><Filter><Prefix>a/</Prefix></Filter><Status>Enabled</Status>\
         <Expiration><Date>2026-01-01T00:00:00.000Z</Date></Expiration></Rule>\
         <Rule><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Disabled</Status>\
         <NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays></NoncurrentVersionExpiration>\
         </Rule></LifecycleConfiguration>"
    );
}

/// Arbitrary damage to a valid document never panics, and whatever still
/// parses round-trips through the GET document.
#[test]
fn damaged_documents_never_panic() {
    let base = doc(&[
        rule(
            "r1",
            "<Filter><And><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>\
             <ObjectSizeGreaterThan>1</ObjectSizeGreaterThan><ObjectSizeLessThan>9</ObjectSizeLessThan>\
             </And></Filter><Expiration><Days>3</Days></Expiration>\
             <NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>\
             <NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration>",
        ),
        rule(
            "r2",
            "<Filter/><Expiration><Date>2026-01-01T00:00:00Z</Date></Expiration>\
             <AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation>\
             </AbortIncompleteMultipartUpload>\
             <Transition><Days>5</Days><StorageClass>S</StorageClass></Transition>",
        ),
    ]
    .concat());
    let base = base.into_bytes();
    let alphabet = b"<>/&;#x0123456789-:TZ.+ abcdefghijklmnopqrstuvwxyzDPEFSA\"'";
    let mut rng = fastrand::Rng::with_seed(0x11fe_c7c1e);
    let mut parsed = 0;
    for _ in 0..5000 {
        let mut d = base.clone();
        for _ in 0..rng.usize(1..4) {
            let i = rng.usize(..d.len());
            match rng.u8(..3) {
                0 => d[i] = alphabet[rng.usize(..alphabet.len())],
                1 => {
                    d.remove(i);
                }
                _ => d.insert(i, alphabet[rng.usize(..alphabet.len())]),
            }
        }
        if let Ok(l) = Lifecycle::parse(&d) {
            parsed += 1;
            assert_eq!(
                Lifecycle::parse(l.to_xml().as_bytes()).as_ref(),
                Ok(&l),
                "{}",
                String::from_utf8_lossy(&d)
            );
        }
    }
    assert!(parsed > 100, "{parsed}");
}
