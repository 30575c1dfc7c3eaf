//! The crate against MinIO's own policy package: `testdata/minio-vectors.json`
//! holds answers computed by `github.com/minio/pkg/v3/policy` (the generator
//! is `testdata/gen`), so these tests need no Go.

use std::collections::HashMap;

use policy::{Decision, Kind, Limits, Policy, Request};
use serde_json::Value;

const VECTORS: &str = include_str!("../testdata/minio-vectors.json");

fn vectors() -> Value {
    serde_json::from_str(VECTORS).expect("the vector file is JSON")
}

fn s(v: &Value) -> &str {
    v.as_str().expect("a string")
}

fn b(v: &Value) -> bool {
    v.as_bool().expect("a boolean")
}

#[test]
fn wildcard_matches_as_minio() {
    let v = vectors();
    let cases = v["wildcard"].as_array().unwrap();
    assert!(cases.len() > 1000);
    for c in cases {
        let (p, t) = (s(&c["pattern"]), s(&c["text"]));
        assert_eq!(
            policy::wildcard::matches(p, t),
            b(&c["match"]),
            "Match({p:?}, {t:?})"
        );
        assert_eq!(
            policy::wildcard::matches_simple(p, t),
            b(&c["simple"]),
            "MatchSimple({p:?}, {t:?})"
        );
    }
}

#[test]
fn dates_parse_as_go() {
    let v = vectors();
    for c in v["dates"].as_array().unwrap() {
        let text = s(&c["text"]);
        let got = policy::parse_rfc3339(text);
        if b(&c["ok"]) {
            let got = got.unwrap_or_else(|| panic!("{text:?} refused, Go accepts it"));
            assert_eq!(got.unix_secs, c["unix"].as_i64().unwrap(), "{text:?}");
            assert_eq!(
                i64::from(got.nanos),
                c["nanos"].as_i64().unwrap(),
                "{text:?}"
            );
        } else {
            assert!(got.is_none(), "{text:?} accepted, Go refuses it");
        }
    }
}

/// One request of the vector file, evaluated in either mode.
struct Req {
    action: String,
    bucket: String,
    object: String,
    account: String,
    conditions: HashMap<String, Vec<String>>,
}

impl Req {
    fn from(v: &Value) -> Req {
        let conditions = v["conditions"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, vals)| {
                let vals = vals
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| s(x).to_owned())
                    .collect();
                (k.to_lowercase(), vals)
            })
            .collect();
        Req {
            action: s(&v["action"]).to_owned(),
            bucket: s(&v["bucket"]).to_owned(),
            object: s(&v["object"]).to_owned(),
            account: s(&v["account"]).to_owned(),
            conditions,
        }
    }

    fn request(&self, bucket_policy: bool) -> Request<'_> {
        Request {
            action: &self.action,
            bucket: &self.bucket,
            object: (!self.object.is_empty()).then_some(self.object.as_str()),
            account: &self.account,
            groups: &[],
            principal_arn: None,
            anonymous: self.account.is_empty(),
            bucket_policy,
            conditions: &self.conditions,
        }
    }
}

fn letter(d: Decision) -> char {
    match d {
        Decision::Allow => 'A',
        Decision::Deny => 'D',
        Decision::NotApplicable => 'N',
    }
}

fn decisions(p: &Policy, reqs: &[Req], bucket_policy: bool) -> String {
    reqs.iter()
        .map(|r| letter(p.evaluate(&r.request(bucket_policy))))
        .collect()
}

/// Compares one parse with MinIO's: acceptance, then the decisions or the
/// message (ours must begin MinIO's, which may add Go's detail after a
/// colon; messages that depend on Go's map order, and Go's JSON decoder
/// messages, are not compared). Returns the number of decisions compared,
/// or what differs.
fn compare(
    ours: &Result<Policy, policy::PolicyError>,
    minio: &Value,
    reqs: &[Req],
    bucket_policy: bool,
) -> Result<usize, String> {
    let minio_ok = b(&minio["ok"]);
    match ours {
        Ok(p) => {
            if !minio_ok {
                return Err(format!("accepted here, MinIO says {:?}", minio["error"]));
            }
            let want = s(&minio["decisions"]);
            let got = decisions(p, reqs, bucket_policy);
            for (i, (g, w)) in got.chars().zip(want.chars()).enumerate() {
                if g != w {
                    let r = &reqs[i];
                    return Err(format!(
                        "request {i} ({} {}/{}) decided {g}, MinIO {w}",
                        r.action, r.bucket, r.object
                    ));
                }
            }
            // The canonical form reads back as the same policy.
            let json = p.to_json();
            let back = Policy::parse_with(json.as_bytes(), Some(p.kind()), &Limits::IAM)
                .map_err(|e| format!("canonical form refused: {e}: {json}"))?;
            if &back != p || back.to_json() != json {
                return Err(format!("round trip changed the policy: {json}"));
            }
            Ok(want.len())
        }
        Err(e) => {
            if minio_ok {
                return Err(format!("refused here ({e}), MinIO accepts it"));
            }
            let theirs = s(&minio["error"]);
            let ours = e.to_string();
            if minio["error_varies"].as_bool() != Some(true)
                && !theirs.starts_with("json:")
                && !theirs.starts_with(&ours)
            {
                return Err(format!("message {ours:?}, MinIO's {theirs:?}"));
            }
            Ok(0)
        }
    }
}

#[test]
fn policies_validate_and_decide_as_minio() {
    let v = vectors();
    let reqs: Vec<Req> = v["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(Req::from)
        .collect();
    let (mut decided, mut differs) = (0, 0);
    let mut failures = Vec::new();
    for (i, c) in v["policies"].as_array().unwrap().iter().enumerate() {
        let doc = s(&c["json"]);
        let iam = Policy::parse_with(doc.as_bytes(), Some(Kind::Iam), &Limits::IAM);
        let bucket = Policy::parse_bucket(doc.as_bytes(), "mybucket");
        if let Some(why) = c["differs"].as_str() {
            // A documented difference: it must show.
            if iam.is_ok() == b(&c["iam"]["ok"]) && bucket.is_ok() == b(&c["bucket"]["ok"]) {
                failures.push(format!(
                    "policy {i} ({why}) is read as MinIO reads it\n  {doc}"
                ));
            }
            differs += 1;
            continue;
        }
        let mut check = |what: &str, r: Result<usize, String>| match r {
            Ok(n) => decided += n,
            Err(e) => failures.push(format!("policy {i} as {what}: {e}\n  {doc}")),
        };
        if doc.contains("\"Principal\"") {
            // MinIO's identity policies ignore principals; ours refuse them.
            if iam.is_ok() {
                check(
                    "IAM",
                    Err("principals accepted in an identity policy".into()),
                );
            }
        } else {
            check("IAM", compare(&iam, &c["iam"], &reqs, false));
        }
        check("bucket policy", compare(&bucket, &c["bucket"], &reqs, true));
    }
    assert!(
        failures.is_empty(),
        "{} differences from MinIO:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(decided > 10_000, "only {decided} decisions compared");
    assert!(differs >= 10);
}

#[test]
fn builtins_are_minios() {
    let v = vectors();
    let reqs: Vec<Req> = v["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(Req::from)
        .collect();
    let theirs = v["builtins"].as_array().unwrap();
    assert_eq!(theirs.len(), policy::builtin::ALL.len());
    for (c, (name, doc)) in theirs.iter().zip(policy::builtin::ALL) {
        assert_eq!(s(&c["name"]), *name);
        assert_eq!(s(&c["json"]), *doc, "{name}");
        let p = policy::builtin::get(name).unwrap();
        assert_eq!(decisions(&p, &reqs, false), s(&c["decisions"]), "{name}");
    }
}

#[test]
fn ip_conditions_match_as_go() {
    let v = vectors();
    let mut checked = 0;
    for c in v["ips"].as_array().unwrap() {
        let (cidr, ip) = (s(&c["cidr"]), s(&c["ip"]));
        if !cidr.contains('/') {
            // MinIO's IpAddress reads a lone address its own way (crate
            // docs); `net.ParseCIDR` refuses it.
            continue;
        }
        let doc = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::*","Condition":{{"IpAddress":{{"aws:SourceIp":{}}}}}}}]}}"#,
            serde_json::to_string(cidr).unwrap()
        );
        let parsed = Policy::parse_iam(doc.as_bytes());
        assert_eq!(parsed.is_ok(), b(&c["cidr_ok"]), "CIDR {cidr:?}");
        let Ok(p) = parsed else { continue };
        let mut conditions = HashMap::new();
        conditions.insert("aws:sourceip".to_string(), vec![ip.to_string()]);
        let req = Request {
            action: "s3:GetObject",
            bucket: "b",
            object: Some("k"),
            account: "u",
            groups: &[],
            principal_arn: None,
            anonymous: false,
            bucket_policy: false,
            conditions: &conditions,
        };
        let want = b(&c["ip_ok"]) && b(&c["contains"]);
        assert_eq!(
            p.evaluate(&req) == Decision::Allow,
            want,
            "{ip:?} in {cidr:?}"
        );
        checked += 1;
    }
    assert!(checked > 300);
}
