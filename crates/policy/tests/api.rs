//! The public API: parsing, validation messages, evaluation in both modes,
//! the AWS extensions, bucket checks, `is_public`, limits, serialisation.

use std::collections::HashMap;

use policy::{Decision, Effect, Kind, Limits, Policy, PolicyError, Request, Version, evaluate_all};

/// A request of `action` on `path` (`bucket` or `bucket/key`) by `account`
/// (empty: anonymous), with condition values `kv` (keys in lower case).
struct R {
    action: String,
    bucket: String,
    object: Option<String>,
    account: String,
    arn: Option<String>,
    conditions: HashMap<String, Vec<String>>,
}

fn r(action: &str, path: &str, account: &str, kv: &[(&str, &str)]) -> R {
    let (bucket, object) = match path.split_once('/') {
        Some((b, o)) => (b.to_owned(), Some(o.to_owned())),
        None => (path.to_owned(), None),
    };
    let mut conditions: HashMap<String, Vec<String>> = HashMap::new();
    for (k, v) in kv {
        conditions
            .entry((*k).to_owned())
            .or_default()
            .push((*v).to_owned());
    }
    R {
        action: action.to_owned(),
        bucket,
        object,
        account: account.to_owned(),
        arn: None,
        conditions,
    }
}

impl R {
    fn req(&self, bucket_policy: bool) -> Request<'_> {
        Request {
            action: &self.action,
            bucket: &self.bucket,
            object: self.object.as_deref(),
            account: &self.account,
            groups: &[],
            principal_arn: self.arn.clone(),
            anonymous: self.account.is_empty(),
            bucket_policy,
            conditions: &self.conditions,
        }
    }

    fn iam(&self, p: &Policy) -> Decision {
        p.evaluate(&self.req(false))
    }

    fn bucket(&self, p: &Policy) -> Decision {
        p.evaluate(&self.req(true))
    }
}

fn iam(doc: &str) -> Policy {
    Policy::parse_iam(doc.as_bytes()).unwrap_or_else(|e| panic!("{e}: {doc}"))
}

fn bucket(doc: &str) -> Policy {
    Policy::parse_bucket(doc.as_bytes(), "b").unwrap_or_else(|e| panic!("{e}: {doc}"))
}

fn iam_err(doc: &str) -> String {
    Policy::parse_iam(doc.as_bytes()).unwrap_err().to_string()
}

fn bucket_err(doc: &str) -> String {
    Policy::parse_bucket(doc.as_bytes(), "b")
        .unwrap_err()
        .to_string()
}

fn stmts(s: &str) -> String {
    format!(r#"{{"Version":"2012-10-17","Statement":[{s}]}}"#)
}

use Decision::{Allow, Deny, NotApplicable as Na};

#[test]
fn parse_shapes_and_accessors() {
    let p = iam(
        r#"{"Version":"2012-10-17","Id":"x","Statement":{"Sid":"one","Effect":"Deny","NotAction":"s3:Delete*","NotResource":"arn:aws:s3:::b/keep/*"}}"#,
    );
    assert_eq!(p.version(), Some(Version::V2012_10_17));
    assert_eq!(p.id(), Some("x"));
    assert_eq!(p.kind(), Kind::Iam);
    let s = &p.statements()[0];
    assert_eq!((s.sid(), s.effect()), (Some("one"), Effect::Deny));
    assert_eq!(s.not_actions().collect::<Vec<_>>(), ["s3:Delete*"]);
    assert_eq!(
        s.not_resources().collect::<Vec<_>>(),
        ["arn:aws:s3:::b/keep/*"]
    );
    assert_eq!(s.actions().count() + s.resources().count(), 0);
    assert!(!s.has_principal());
    let old = iam(r#"{"Version":"2008-10-17","Statement":[]}"#);
    assert_eq!(old.version(), Some(Version::V2008_10_17));
    assert!(old.statements().is_empty());
    // Field names without case, as Go reads them.
    let lower = iam(
        r#"{"version":"2012-10-17","statement":[{"effect":"Allow","action":"s3:GetObject","resource":"arn:aws:s3:::b/*"}]}"#,
    );
    assert_eq!(lower.statements().len(), 1);
    assert_eq!(Policy::parse(stmts(r#"{"Principal":"*","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#).as_bytes()).unwrap().kind(), Kind::Bucket);
}

#[test]
fn validation_messages_are_minios() {
    let get = |extra: &str| {
        stmts(&format!(
            r#"{{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"{extra}}}"#
        ))
    };
    assert_eq!(
        iam_err(r#"{"Version":"2013-01-01","Statement":[]}"#),
        "invalid version '2013-01-01'"
    );
    assert_eq!(
        iam_err(&stmts(
            r#"{"Effect":"allow","Action":"s3:GetObject","Resource":"*"}"#
        )),
        "invalid Effect allow"
    );
    assert_eq!(
        iam_err(&stmts(r#"{"Effect":"Allow","Resource":"*"}"#)),
        "Action must not be empty"
    );
    assert_eq!(
        iam_err(&stmts(r#"{"Effect":"Allow","Action":[],"Resource":"*"}"#)),
        "empty actions not allowed"
    );
    assert_eq!(
        iam_err(&stmts(
            r#"{"Effect":"Allow","Action":"s3:GetObject","NotAction":"s3:PutObject","Resource":"*"}"#
        )),
        "Action and NotAction cannot be specified in the same statement"
    );
    assert_eq!(
        iam_err(&stmts(r#"{"Effect":"Allow","Action":"s3:GetObject"}"#)),
        "Resource must not be empty"
    );
    assert_eq!(
        iam_err(&stmts(
            r#"{"Effect":"Allow","Action":"s3:Nope","Resource":"*"}"#
        )),
        "unsupported action 's3:Nope'"
    );
    assert_eq!(
        iam_err(&stmts(
            r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"bucket"}"#
        )),
        "invalid resource 'bucket'"
    );
    assert_eq!(
        iam_err(&stmts(
            r#"{"Effect":"Allow","Action":["admin:ServerInfo","s3:GetObject"]}"#
        )),
        "unsupported admin action 's3:GetObject'"
    );
    assert_eq!(
        iam_err(&get(
            r#","Condition":{"StringEquals":{"s3:prefix":"x","aws:SourceIp":"y"}}"#
        )),
        "unsupported condition keys '[s3:prefix]' used for action 's3:GetObject'"
    );
    assert_eq!(
        iam_err(&get(r#","Condition":{}"#)),
        "condition must not be empty"
    );
    assert_eq!(
        iam_err(&get(
            r#","Condition":{"StringEquals":{"aws:username":["a","a"]}}"#
        )),
        "duplicate value found 'a'"
    );
    assert_eq!(bucket_err(&get("")), "invalid Principal {[]}");
    assert_eq!(
        bucket_err(&stmts(
            r#"{"Principal":"*","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}"#
        )),
        "bucket name does not match"
    );
    assert_eq!(
        bucket_err(&stmts(
            r#"{"Principal":"*","Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b/*"}"#
        )),
        "unsupported Resource found [arn:aws:s3:::b/*] for action s3:ListBucket"
    );
    assert_eq!(
        bucket_err(
            r#"{"Statement":[{"Principal":"*","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}"#
        ),
        "The policy must contain a valid version string"
    );
    assert_eq!(
        iam_err(&stmts(
            r#"{"Principal":"*","Effect":"Allow","Action":"s3:GetObject","Resource":"*"}"#
        )),
        "Principal is not allowed in an identity policy"
    );
}

#[test]
fn syntax_and_limits() {
    for doc in [
        "",
        "[]",
        "{",
        r#"{"Statement":5}"#,
        r#"{"Version":1}"#,
        r#"{"Version":"2012-10-17","Nope":1}"#,
        r#"{"Version":"2012-10-17","version":"2012-10-17"}"#,
        &stmts(
            r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"Null":{"s3:prefix":null}}}"#,
        ),
        &stmts(
            r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"NumericEquals":{"s3:max-keys":1.0}}}"#,
        ),
        &stmts(r#"{"Effect":"Allow","Action":["s3:GetObject",1],"Resource":"*"}"#),
        &stmts(r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Bogus":true}"#),
    ] {
        assert!(
            matches!(Policy::parse(doc.as_bytes()), Err(PolicyError::Syntax(_))),
            "{doc}"
        );
    }
    let big =
        stmts(&vec![r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}"#; 400].join(","));
    assert!(matches!(
        Policy::parse_bucket(big.as_bytes(), "b"),
        Err(PolicyError::TooLarge { max: 20480, .. })
    ));
    assert!(Policy::parse_iam(big.as_bytes()).is_ok());
    let tight = Limits {
        max_statements: 10,
        ..Limits::IAM
    };
    assert!(matches!(
        Policy::parse_with(big.as_bytes(), None, &tight),
        Err(PolicyError::Limit(_))
    ));
    let values = Limits {
        max_values: 2,
        ..Limits::IAM
    };
    let three = stmts(
        r#"{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:ListBucket"],"Resource":"*"}"#,
    );
    assert!(matches!(
        Policy::parse_with(three.as_bytes(), None, &values),
        Err(PolicyError::Limit(_))
    ));
    let deep = format!("{}{}", "[".repeat(50), "]".repeat(50));
    assert!(matches!(
        Policy::parse(deep.as_bytes()),
        Err(PolicyError::Limit(_))
    ));
}

#[test]
fn identity_resources_and_actions() {
    let p = iam(&stmts(
        r#"{"Effect":"Allow","Action":["s3:ListBucket","s3:GetObject"],"Resource":"arn:aws:s3:::b/*"}"#,
    ));
    assert_eq!(r("s3:GetObject", "b/k", "u", &[]).iam(&p), Allow);
    // In identity policies `bucket/*` covers the bucket itself (`b/`).
    assert_eq!(r("s3:ListBucket", "b", "u", &[]).iam(&p), Allow);
    assert_eq!(r("s3:GetObject", "c/k", "u", &[]).iam(&p), Na);
    assert_eq!(r("s3:PutObject", "b/k", "u", &[]).iam(&p), Na);
    // Actions compare without case.
    assert_eq!(r("S3:GETOBJECT", "b/k", "u", &[]).iam(&p), Allow);
    let lower = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:getobject","Resource":"*"}"#,
    ));
    assert_eq!(r("s3:GetObject", "b/k", "u", &[]).iam(&lower), Allow);
    let b_only = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b"}"#,
    ));
    assert_eq!(r("s3:ListBucket", "b", "u", &[]).iam(&b_only), Allow);
    assert_eq!(r("s3:GetObject", "b/k", "u", &[]).iam(&b_only), Na);
    // `path.Clean`: `b/a//k` is `b/a/k`.
    let exact = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/a/k"}"#,
    ));
    assert_eq!(r("s3:GetObject", "b/a//k", "u", &[]).iam(&exact), Allow);
    // `s3:GetObjectVersion` grants `s3:GetObject`.
    let v = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:GetObjectVersion","Resource":"*"}"#,
    ));
    assert_eq!(r("s3:GetObject", "b/k", "u", &[]).iam(&v), Allow);
    // MinIO's STS quirk: an action list with `*` ignores resources.
    let star = iam(&stmts(
        r#"{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::other/*"}"#,
    ));
    assert_eq!(r("s3:DeleteBucket", "b", "u", &[]).iam(&star), Allow);
    // Admin statements ignore resources; KMS ones without resources too.
    let admin = iam(&stmts(
        r#"{"Effect":"Allow","Action":"admin:*"},{"Effect":"Allow","Action":"kms:KeyStatus","Resource":"arn:minio:kms:::k1"}"#,
    ));
    assert_eq!(r("admin:CreateUser", "", "u", &[]).iam(&admin), Allow);
    assert_eq!(r("kms:KeyStatus", "k1", "u", &[]).iam(&admin), Allow);
    assert_eq!(r("kms:KeyStatus", "k2", "u", &[]).iam(&admin), Na);
    assert_eq!(r("kms:KeyStatus", "", "u", &[]).iam(&admin), Allow);
}

#[test]
fn deny_wins_and_combines() {
    let p = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:*","Resource":"*"},{"Effect":"Deny","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::b/keep/*"}"#,
    ));
    assert_eq!(r("s3:DeleteObject", "b/keep/x", "u", &[]).iam(&p), Deny);
    assert_eq!(r("s3:DeleteObject", "b/tmp/x", "u", &[]).iam(&p), Allow);
    let other = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}"#,
    ));
    let none = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::z/*"}"#,
    ));
    let req = r("s3:DeleteObject", "b/keep/x", "u", &[]);
    assert_eq!(evaluate_all([&other, &p], &req.req(false)), Deny);
    assert_eq!(
        evaluate_all(
            [&none, &other],
            &r("s3:GetObject", "b/k", "u", &[]).req(false)
        ),
        Allow
    );
    assert_eq!(
        evaluate_all([&none], &r("s3:GetObject", "b/k", "u", &[]).req(false)),
        Na
    );
    assert_eq!(evaluate_all(std::iter::empty(), &req.req(false)), Na);
    assert!(!p.is_allowed(&req.req(false)));
}

#[test]
fn bucket_policies_and_principals() {
    let p = bucket(&stmts(
        r#"{"Principal":{"AWS":["alice","arn:aws:iam:::user/bob"]},"Effect":"Allow","Action":["s3:ListBucket","s3:GetObject"],"Resource":["arn:aws:s3:::b","arn:aws:s3:::b/*"]}"#,
    ));
    assert_eq!(p.kind(), Kind::Bucket);
    assert_eq!(r("s3:GetObject", "b/k", "alice", &[]).bucket(&p), Allow);
    assert_eq!(r("s3:GetObject", "b/k", "carol", &[]).bucket(&p), Na);
    assert_eq!(r("s3:GetObject", "b/k", "", &[]).bucket(&p), Na);
    let mut bob = r("s3:GetObject", "b/k", "bob-key", &[]);
    assert_eq!(bob.bucket(&p), Na);
    bob.arn = Some("arn:aws:iam:::user/bob".into());
    assert_eq!(bob.bucket(&p), Allow);
    // Statements without principals never apply as bucket policies, and
    // principals are checked even in the identity mode.
    let id = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}"#,
    ));
    assert_eq!(r("s3:GetObject", "b/k", "alice", &[]).bucket(&id), Na);
    assert_eq!(r("s3:GetObject", "b/k", "carol", &[]).iam(&p), Na);
    // `bucket/*` does not cover the bucket itself in bucket policies.
    let objs = bucket(&stmts(
        r#"{"Principal":"*","Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/*"}"#,
    ));
    assert_eq!(r("s3:ListBucket", "b", "", &[]).bucket(&objs), Na);
    assert_eq!(r("s3:GetObject", "b/k", "", &[]).bucket(&objs), Allow);
    // NotPrincipal: everyone but alice.
    let not = bucket(&stmts(
        r#"{"NotPrincipal":{"AWS":"alice"},"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#,
    ));
    assert_eq!(r("s3:GetObject", "b/k", "alice", &[]).bucket(&not), Na);
    assert_eq!(r("s3:GetObject", "b/k", "bob", &[]).bucket(&not), Deny);
    assert_eq!(r("s3:GetObject", "b/k", "", &[]).bucket(&not), Deny);
    assert!(Policy::parse(stmts(r#"{"Principal":"*","NotPrincipal":"*","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#).as_bytes()).is_err());
    // check_bucket_policy on a parsed document.
    let doc = stmts(
        r#"{"Principal":"*","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#,
    );
    let parsed = Policy::parse(doc.as_bytes()).unwrap();
    assert!(parsed.check_bucket_policy("b").is_ok());
    assert!(parsed.check_bucket_policy("c").is_err());
    assert!(id.check_bucket_policy("b").is_err());
}

#[test]
fn public_status() {
    let public = |s: &str| Policy::parse(stmts(s).as_bytes()).unwrap().is_public("b");
    assert!(public(
        r#"{"Principal":"*","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#
    ));
    assert!(public(
        r#"{"Principal":{"AWS":["*"]},"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b"}"#
    ));
    assert!(public(
        r#"{"Principal":"*","Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/uploads/*"}"#
    ));
    assert!(public(
        r#"{"Principal":"*","Effect":"Allow","Action":"s3:*","Resource":"*"}"#
    ));
    assert!(!public(
        r#"{"Principal":"*","Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::c"}"#
    ));
    assert!(!public(
        r#"{"Principal":"*","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::c/*"}"#
    ));
    assert!(!public(
        r#"{"Principal":{"AWS":"alice"},"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#
    ));
    assert!(!public(
        r#"{"Principal":"*","Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#
    ));
    assert!(!public(
        r#"{"Principal":"*","Effect":"Allow","Action":"s3:GetBucketLocation","Resource":"arn:aws:s3:::b"}"#
    ));
    assert!(!public(
        r#"{"Principal":"*","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}"#
    ));
    assert!(!public(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#
    ));
}

#[test]
fn conditions_end_to_end() {
    let home = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b","Condition":{"StringLike":{"s3:prefix":["home/${aws:username}/*"]}}},
           {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::b/home/${aws:username}/*"}"#,
    ));
    let alice = [("aws:username", "alice")];
    assert_eq!(
        r("s3:GetObject", "b/home/alice/x", "alice", &alice).iam(&home),
        Allow
    );
    assert_eq!(
        r("s3:GetObject", "b/home/bob/x", "alice", &alice).iam(&home),
        Na
    );
    let mut listing = alice.to_vec();
    listing.push(("s3:prefix", "home/alice/docs/"));
    assert_eq!(r("s3:ListBucket", "b", "alice", &listing).iam(&home), Allow);
    assert_eq!(r("s3:ListBucket", "b", "alice", &alice).iam(&home), Na);
    // The time comes from the caller.
    let window = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"DateGreaterThan":{"aws:CurrentTime":"2024-01-01T00:00:00Z"},"DateLessThan":{"aws:CurrentTime":"2025-01-01T00:00:00Z"}}}"#,
    ));
    assert_eq!(
        r(
            "s3:GetObject",
            "b/k",
            "u",
            &[("aws:currenttime", "2024-06-01T00:00:00Z")]
        )
        .iam(&window),
        Allow
    );
    assert_eq!(
        r(
            "s3:GetObject",
            "b/k",
            "u",
            &[("aws:currenttime", "2025-06-01T00:00:00+02:00")]
        )
        .iam(&window),
        Na
    );
    assert_eq!(r("s3:GetObject", "b/k", "u", &[]).iam(&window), Na);
    // TLS required: a deny on plain HTTP.
    let tls = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:*","Resource":"*"},{"Effect":"Deny","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"False"}}}"#,
    ));
    assert_eq!(
        r(
            "s3:GetObject",
            "b/k",
            "u",
            &[("aws:securetransport", "false")]
        )
        .iam(&tls),
        Deny
    );
    assert_eq!(
        r(
            "s3:GetObject",
            "b/k",
            "u",
            &[("aws:securetransport", "true")]
        )
        .iam(&tls),
        Allow
    );
    // Condition keys without case; tag keys lower-cased in the request.
    let tag = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"StringEquals":{"S3:EXISTINGOBJECTTAG/Project":"blue"}}}"#,
    ));
    assert_eq!(
        r(
            "s3:GetObject",
            "b/k",
            "u",
            &[("s3:existingobjecttag/project", "blue")]
        )
        .iam(&tag),
        Allow
    );
    // A lone IPv6 address is that address alone.
    let v6 = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"2001:db8::1"}}}"#,
    ));
    assert_eq!(
        r(
            "s3:GetObject",
            "b/k",
            "u",
            &[("aws:sourceip", "2001:db8::1")]
        )
        .iam(&v6),
        Allow
    );
    assert_eq!(
        r(
            "s3:GetObject",
            "b/k",
            "u",
            &[("aws:sourceip", "2001:db8::2")]
        )
        .iam(&v6),
        Na
    );
    // IfExists and Arn operators (AWS's, not MinIO's).
    let ext = iam(&stmts(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"StringEqualsIfExists":{"aws:username":"alice"},"ArnNotLike":{"aws:userid":"arn:aws:iam::*:root"}}}"#,
    ));
    assert_eq!(r("s3:GetObject", "b/k", "u", &[]).iam(&ext), Allow);
    assert_eq!(
        r("s3:GetObject", "b/k", "u", &[("aws:username", "bob")]).iam(&ext),
        Na
    );
    assert_eq!(
        r(
            "s3:GetObject",
            "b/k",
            "u",
            &[("aws:userid", "arn:aws:iam::1:root")]
        )
        .iam(&ext),
        Na
    );
}

#[test]
fn canonical_json() {
    let doc = r#"{"statement":{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/*",
        "Condition":{"StringLike":{"s3:ExistingObjectTag/a":["x*","y"]},"NumericLessThan":{"s3:max-keys":"5"},"Null":{"aws:username":true},"StringEqualsIfExists":{"aws:userid":"\"q\""}}},"version":"2012-10-17","id":"i"}"#;
    let p = Policy::parse(doc.as_bytes()).unwrap();
    let json = p.to_json();
    assert_eq!(
        json,
        r#"{"Version":"2012-10-17","Id":"i","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::b/*"],"Condition":{"StringLike":{"s3:ExistingObjectTag/a":["x*","y"]},"NumericLessThan":{"s3:max-keys":["5"]},"Null":{"aws:username":[true]},"StringEqualsIfExists":{"aws:userid":["\"q\""]}}}]}"#
    );
    let back = Policy::parse(json.as_bytes()).unwrap();
    assert_eq!(back, p);
    assert_eq!(back.to_json(), json);
    let b = bucket(&stmts(
        r#"{"Sid":"s","Principal":"*","Effect":"Deny","NotAction":"s3:GetObject","NotResource":"arn:aws:s3:::b/x"}"#,
    ));
    assert_eq!(
        b.to_json(),
        r#"{"Version":"2012-10-17","Statement":[{"Sid":"s","Effect":"Deny","Principal":{"AWS":["*"]},"NotAction":["s3:GetObject"],"NotResource":["arn:aws:s3:::b/x"]}]}"#
    );
    assert_eq!(Policy::parse(b.to_json().as_bytes()).unwrap(), b);
}

#[test]
fn a_policy_says_which_condition_keys_it_reads() {
    let p = policy::Policy::parse_iam(
        br#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],
            "Resource":["arn:aws:s3:::b/*"],
            "Condition":{"StringEquals":{"s3:ExistingObjectTag/Project":"alpha"}}}]}"#,
    )
    .unwrap();
    assert!(p.uses_condition_key("s3:existingobjecttag/"));
    assert!(p.uses_condition_key("s3:existingobjecttag/project"));
    assert!(!p.uses_condition_key("aws:sourceip"));
    let plain = policy::builtin::get("readwrite").unwrap();
    assert!(!plain.uses_condition_key("s3:existingobjecttag/"));
}
