//! Property tests with a seeded generator (`fastrand`): whatever the bytes,
//! parsing returns (never panics); whatever parses serialises to a form
//! that parses back equal; whatever parses evaluates any request.
//!
//! Each property runs a fixed set of seeds, so a failure names the seed and
//! replays exactly.

use std::collections::HashMap;

use policy::{Kind, Limits, Policy, Request};

/// Documents to mutate: MinIO's canned policies and the documents of the
/// oracle file that parse (mutants of valid documents reach further).
fn corpus() -> Vec<String> {
    let v: serde_json::Value =
        serde_json::from_str(include_str!("../testdata/minio-vectors.json")).unwrap();
    let mut out: Vec<String> = policy::builtin::ALL
        .iter()
        .map(|(_, d)| (*d).to_owned())
        .collect();
    for p in v["policies"].as_array().unwrap() {
        let doc = p["json"].as_str().unwrap();
        if Policy::parse(doc.as_bytes()).is_ok() {
            out.push(doc.to_owned());
        }
    }
    out
}

const TOKENS: &[&str] = &[
    "\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "*",
    "?",
    "$",
    "${aws:username}",
    "${",
    "}",
    "\\u0000",
    "\\",
    "\"Condition\":{}",
    "\"StringLike\"",
    "\"ForAllValues:StringEquals\"",
    "\"IfExists\"",
    "null",
    "true",
    "1e999",
    "-0",
    "18446744073709551616",
    "\"arn:aws:s3:::\"",
    "\"*\"",
    "\"Principal\":\"*\",",
    "\"NotPrincipal\"",
    "\"2008-10-17\"",
    "é",
    "\u{fffd}",
    "/",
    "//",
    "/../",
    "::",
    "10.0.0.0/8",
];

/// Text that keeps a JSON string valid when put inside it.
const IN_STRING: &[&str] = &[
    "*",
    "?",
    "$",
    "${aws:username}",
    "${",
    "}",
    "é",
    "/",
    "//",
    "/../",
    ":",
    "s3:",
    "arn:aws:s3:::",
    "x",
    "IfExists",
    "ForAnyValue:",
    "10.0.0.0/8",
    "2020-01-01T00:00:00Z",
    "-",
    "0",
    " ",
];

/// The spans of the JSON strings of `d`: (opening quote, closing quote).
fn strings(d: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < d.len() {
        if d[i] == b'"' {
            let open = i;
            i += 1;
            while i < d.len() && d[i] != b'"' {
                i += if d[i] == b'\\' { 2 } else { 1 };
            }
            if i < d.len() {
                out.push((open, i));
            }
        }
        i += 1;
    }
    out
}

fn mutate(rng: &mut fastrand::Rng, doc: &[u8]) -> Vec<u8> {
    let mut d = doc.to_vec();
    for _ in 0..rng.usize(1..3) {
        let at = rng.usize(..=d.len());
        // Mostly edits inside strings, which keep the JSON valid and so
        // reach the policy reader rather than the tokenizer.
        if rng.u8(..3) != 0 {
            let spans = strings(&d);
            if !spans.is_empty() {
                let (open, close) = spans[rng.usize(..spans.len())];
                let q = rng.usize(open + 1..=close);
                let t = IN_STRING[rng.usize(..IN_STRING.len())];
                d.splice(q..q, t.bytes());
                continue;
            }
        }
        match rng.u8(..6) {
            0 if !d.is_empty() => {
                let i = rng.usize(..d.len());
                d[i] = rng.u8(..);
            }
            1 if !d.is_empty() => {
                let end = (at + rng.usize(..8)).min(d.len());
                d.drain(at..end);
            }
            2 => {
                let t = TOKENS[rng.usize(..TOKENS.len())];
                d.splice(at..at, t.bytes());
            }
            3 if at < d.len() => {
                let end = (at + rng.usize(..40)).min(d.len());
                let copy = d[at..end].to_vec();
                d.splice(at..at, copy);
            }
            4 => d.truncate(at),
            _ => d.insert(at.min(d.len()), rng.u8(..)),
        }
    }
    d
}

const ACTIONS: &[&str] = &[
    "s3:GetObject",
    "s3:PutObject",
    "s3:ListBucket",
    "s3:DeleteObject",
    "admin:ServerInfo",
    "kms:CreateKey",
    "sts:AssumeRoleWithWebIdentity",
    "s3:GetObjectVersion",
    "",
    "*",
    "S3:LISTBUCKET",
];
const KEYS: &[&str] = &[
    "aws:username",
    "aws:sourceip",
    "aws:currenttime",
    "aws:securetransport",
    "s3:prefix",
    "s3:max-keys",
    "s3:existingobjecttag/project",
    "s3:requestobjecttagkeys",
    "aws:epochtime",
    "jwt:sub",
];
const VALUES: &[&str] = &[
    "alice",
    "10.1.2.3",
    "2001:db8::1",
    "junk",
    "2024-06-01T12:00:00Z",
    "true",
    "false",
    "100",
    "-5",
    "home/alice/",
    "",
    "${aws:username}",
    "*",
    "blue",
    "9223372036854775808",
];

/// Evaluates `p` on a few random requests in both modes.
fn exercise(rng: &mut fastrand::Rng, p: &Policy) {
    for _ in 0..4 {
        let mut conditions: HashMap<String, Vec<String>> = HashMap::new();
        for _ in 0..rng.usize(..5) {
            conditions
                .entry(KEYS[rng.usize(..KEYS.len())].to_owned())
                .or_default()
                .push(VALUES[rng.usize(..VALUES.len())].to_owned());
        }
        let object = ["", "k", "a/b", "/x", "home/alice/f", "a//b/../c"][rng.usize(..6)];
        let account = ["", "alice", "bob"][rng.usize(..3)];
        let req = Request {
            action: ACTIONS[rng.usize(..ACTIONS.len())],
            bucket: ["", "mybucket", "b", "other"][rng.usize(..4)],
            object: (!object.is_empty()).then_some(object),
            account,
            groups: &[],
            principal_arn: rng.bool().then(|| format!("arn:aws:iam:::user/{account}")),
            anonymous: account.is_empty(),
            bucket_policy: rng.bool(),
            conditions: &conditions,
        };
        let _ = p.evaluate(&req);
        let _ = p.is_public(req.bucket);
    }
}

fn round_trip(p: &Policy, input: &[u8]) {
    let json = p.to_json();
    let back =
        Policy::parse_with(json.as_bytes(), Some(p.kind()), &Limits::IAM).unwrap_or_else(|e| {
            panic!(
                "canonical form refused ({e})\ninput: {}\noutput: {json}",
                String::from_utf8_lossy(input)
            )
        });
    assert_eq!(&back, p, "round trip of {}", String::from_utf8_lossy(input));
    assert_eq!(back.to_json(), json);
}

fn check(rng: &mut fastrand::Rng, input: &[u8]) -> bool {
    let mut accepted = false;
    for kind in [None, Some(Kind::Iam), Some(Kind::Bucket)] {
        if let Ok(p) = Policy::parse_with(input, kind, &Limits::IAM) {
            accepted = true;
            round_trip(&p, input);
            exercise(rng, &p);
        }
    }
    let _ = Policy::parse_bucket(input, "mybucket");
    accepted
}

#[test]
fn random_bytes_never_panic() {
    for seed in 0..40u64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        for _ in 0..500 {
            let len = rng.usize(..200);
            let alphabet = b"{}[]\":, ab*?$/\\0123456789.-eE";
            let input: Vec<u8> = (0..len)
                .map(|_| {
                    if rng.u8(..8) == 0 {
                        rng.u8(..)
                    } else {
                        alphabet[rng.usize(..alphabet.len())]
                    }
                })
                .collect();
            check(&mut rng, &input);
        }
    }
}

#[test]
fn mutated_policies_never_panic_and_round_trip() {
    let corpus = corpus();
    let mut accepted = 0;
    for seed in 0..20u64 {
        let mut rng = fastrand::Rng::with_seed(1000 + seed);
        for _ in 0..1000 {
            let doc = &corpus[rng.usize(..corpus.len())];
            let input = mutate(&mut rng, doc.as_bytes());
            if check(&mut rng, &input) {
                accepted += 1;
            }
        }
    }
    // Enough mutants stay valid for the round-trip property to bite.
    assert!(accepted > 1000, "only {accepted} mutants parsed");
}

/// A random policy from pools of parts, valid or not.
fn generated(rng: &mut fastrand::Rng) -> String {
    const GEN_ACTIONS: &[&str] = &[
        "s3:GetObject",
        "s3:PutObject",
        "s3:ListBucket",
        "s3:Get*",
        "s3:*",
        "*",
        "admin:*",
        "kms:*",
        "s3:getobject",
        "s3:?etObject",
        "s3:ListBucketVersions",
    ];
    const GEN_RESOURCES: &[&str] = &[
        "arn:aws:s3:::mybucket",
        "arn:aws:s3:::mybucket/*",
        "*",
        "arn:aws:s3:::*",
        "arn:aws:s3:::mybucket/${aws:username}/*",
        "arn:minio:kms:::k",
        "arn:aws:s3:::my*",
    ];
    const GEN_CONDITIONS: &[&str] = &[
        r#""StringEquals":{"aws:username":["alice","bob"]}"#,
        r#""StringLikeIfExists":{"s3:prefix":"home/*"}"#,
        r#""ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["a","b"]}"#,
        r#""IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32","1.2.3.4"]}"#,
        r#""NotIpAddress":{"aws:SourceIp":"192.168.0.0/16"}"#,
        r#""DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}"#,
        r#""NumericGreaterThanEquals":{"s3:max-keys":"10"}"#,
        r#""Null":{"aws:username":false}"#,
        r#""Bool":{"aws:SecureTransport":true}"#,
        r#""BinaryEquals":{"aws:username":"YWxpY2U="}"#,
        r#""ArnLike":{"aws:userid":"arn:aws:iam::*:user/*"}"#,
        r#""StringNotEqualsIgnoreCase":{"aws:UserAgent":"curl"}"#,
    ];
    let pick = |rng: &mut fastrand::Rng, pool: &[&str]| -> String {
        let n = rng.usize(1..3);
        let items: Vec<String> = (0..n)
            .map(|_| format!("{:?}", pool[rng.usize(..pool.len())]))
            .collect();
        format!("[{}]", items.join(","))
    };
    let mut statements = Vec::new();
    for _ in 0..rng.usize(1..4) {
        let mut fields = vec![format!(
            r#""Effect":{:?}"#,
            if rng.bool() { "Allow" } else { "Deny" }
        )];
        if rng.u8(..3) == 0 {
            let p = ["\"*\"", r#"{"AWS":"alice"}"#, r#"{"AWS":["a*","bob"]}"#][rng.usize(..3)];
            fields.push(format!(
                r#""{}":{p}"#,
                if rng.u8(..4) == 0 {
                    "NotPrincipal"
                } else {
                    "Principal"
                }
            ));
        }
        let a = if rng.u8(..8) == 0 {
            "NotAction"
        } else {
            "Action"
        };
        fields.push(format!(r#""{a}":{}"#, pick(rng, GEN_ACTIONS)));
        if rng.u8(..6) != 0 {
            let r = if rng.u8(..8) == 0 {
                "NotResource"
            } else {
                "Resource"
            };
            fields.push(format!(r#""{r}":{}"#, pick(rng, GEN_RESOURCES)));
        }
        if rng.bool() {
            let n = rng.usize(1..3);
            let mut conds: Vec<&str> = (0..n)
                .map(|_| GEN_CONDITIONS[rng.usize(..GEN_CONDITIONS.len())])
                .collect();
            conds.dedup();
            fields.push(format!(r#""Condition":{{{}}}"#, conds.join(",")));
        }
        statements.push(format!("{{{}}}", fields.join(",")));
    }
    format!(
        r#"{{"Version":"2012-10-17","Statement":[{}]}}"#,
        statements.join(",")
    )
}

#[test]
fn generated_policies_round_trip() {
    let mut accepted = 0;
    for seed in 0..20u64 {
        let mut rng = fastrand::Rng::with_seed(5000 + seed);
        for _ in 0..200 {
            let doc = generated(&mut rng);
            if check(&mut rng, doc.as_bytes()) {
                accepted += 1;
            }
        }
    }
    assert!(accepted > 500, "only {accepted} generated policies parsed");
}

#[test]
fn hostile_documents_are_bounded() {
    // Nesting far beyond serde_json's own recursion limit.
    let deep = "[".repeat(200_000);
    assert!(
        Policy::parse_with(
            deep.as_bytes(),
            None,
            &Limits {
                max_bytes: usize::MAX,
                ..Limits::IAM
            }
        )
        .is_err()
    );
    // A pattern that makes MinIO's recursive matcher exponential.
    let pattern = format!("arn:aws:s3:::b/{}c", "a*".repeat(300));
    let doc = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"s3:GetObject","Resource":"{pattern}"}}]}}"#
    );
    let p = Policy::parse_iam(doc.as_bytes()).unwrap();
    let key = "a".repeat(1024);
    let conditions = HashMap::new();
    let req = Request {
        action: "s3:GetObject",
        bucket: "b",
        object: Some(&key),
        account: "u",
        groups: &[],
        principal_arn: None,
        anonymous: false,
        bucket_policy: false,
        conditions: &conditions,
    };
    assert!(!p.is_allowed(&req));
}
