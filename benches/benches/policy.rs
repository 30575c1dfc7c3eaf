//! Policy evaluation, the cost every request of an IAM user or an
//! anonymous requester pays before it is served: one decision of a
//! built-in policy, of a user's three policies with conditions and policy
//! variables, and of a bucket policy, in nanoseconds per decision.
//!
//! ```text
//! cargo bench -p tessera-benches --bench policy
//! ```

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use policy::{Decision, Policy, Request, evaluate_all};

/// The condition values the gateway fills for a signed GET.
fn conditions() -> HashMap<String, Vec<String>> {
    let mut m = HashMap::new();
    for (k, v) in [
        ("aws:sourceip", "127.0.0.1"),
        ("aws:securetransport", "false"),
        ("aws:currenttime", "2026-11-28T23:00:00Z"),
        ("aws:epochtime", "1795906800"),
        ("aws:username", "alice"),
        ("aws:userid", "alice"),
        ("aws:principaltype", "User"),
        ("aws:useragent", "aws-sdk-rust/1.0"),
        ("s3:signatureversion", "AWS4-HMAC-SHA256"),
        ("s3:authtype", "REST-HEADER"),
        ("s3:x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
        ("s3:x-amz-date", "20261128T230000Z"),
    ] {
        m.insert(k.to_owned(), vec![v.to_owned()]);
    }
    m
}

fn request<'a>(
    action: &'a str,
    key: &'a str,
    conditions: &'a HashMap<String, Vec<String>>,
    bucket_policy: bool,
) -> Request<'a> {
    Request {
        action,
        bucket: "photos",
        object: Some(key),
        account: "alice",
        groups: &[],
        principal_arn: Some("arn:aws:iam:::user/alice".to_owned()),
        anonymous: false,
        bucket_policy,
        conditions,
    }
}

fn evaluation(c: &mut Criterion) {
    let cond = conditions();
    let mut g = c.benchmark_group("policy/evaluate");

    let readonly = policy::builtin::get("readonly").expect("built in");
    g.bench_function("builtin-readonly", |b| {
        b.iter(|| {
            let r = request("s3:GetObject", "alice/cat.jpg", &cond, false);
            assert_eq!(black_box(&readonly).evaluate(&r), Decision::Allow);
        });
    });

    let user: Vec<Policy> = [
        r#"{"Version":"2012-10-17","Statement":[
            {"Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::photos"],
             "Condition":{"StringLike":{"s3:prefix":["${aws:username}/*"]}}},
            {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],
             "Resource":["arn:aws:s3:::photos/${aws:username}/*"]}]}"#,
        r#"{"Version":"2012-10-17","Statement":[
            {"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::shared/*"],
             "Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","127.0.0.0/8"]}}}]}"#,
        r#"{"Version":"2012-10-17","Statement":[
            {"Effect":"Deny","Action":["s3:PutObject"],"Resource":["arn:aws:s3:::*"],
             "Condition":{"StringNotEquals":{"s3:x-amz-server-side-encryption":"AES256"}}}]}"#,
    ]
    .iter()
    .map(|d| Policy::parse_iam(d.as_bytes()).expect("parses"))
    .collect();
    g.bench_function("user-3-policies-with-conditions", |b| {
        b.iter(|| {
            let r = request("s3:GetObject", "alice/cat.jpg", &cond, false);
            assert_eq!(evaluate_all(black_box(&user), &r), Decision::Allow);
        });
    });

    let bucket = Policy::parse_bucket(
        br#"{"Version":"2012-10-17","Statement":[
            {"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],
             "Resource":["arn:aws:s3:::photos/public/*"]},
            {"Effect":"Deny","Principal":"*","Action":["s3:GetObject"],
             "Resource":["arn:aws:s3:::photos/private/*"]}]}"#,
        "photos",
    )
    .expect("parses");
    g.bench_function("bucket-policy", |b| {
        b.iter(|| {
            let r = request("s3:GetObject", "public/cat.jpg", &cond, true);
            assert_eq!(black_box(&bucket).evaluate(&r), Decision::Allow);
        });
    });
    g.finish();
}

criterion_group!(benches, evaluation);
criterion_main!(benches);
