//! Evaluation of conditions against a request's condition values, with
//! MinIO's semantics:
//!
//! - A key the request does not carry (or carries with no values) fails
//!   every operator except `Null`, the `ForAllValues:` string operators
//!   (vacuously true), the negated string, like, IP and ARN operators
//!   (which invert the failed match into success), and `...IfExists`
//!   (true when the key is absent).
//! - Without a qualifier, and with `ForAnyValue:`, a string operator holds
//!   when some request value matches some policy value; with
//!   `ForAllValues:` when every request value does (vacuously with none).
//!   The `Not` forms negate that whole result (MinIO's reading; AWS negates
//!   per value under a qualifier).
//! - Numeric, date and `Bool` operators read the first request value only,
//!   and ignore qualifiers.
//! - An `IpAddress` request value that is not an address makes the match
//!   fail.

use std::borrow::Cow;

use super::key::COMMON;
use super::{Condition, Qualifier, Test};
use crate::request::Request;
use crate::{date, ip, wildcard};

impl Condition {
    /// Whether the request satisfies this condition.
    pub(crate) fn holds(&self, req: &Request<'_>) -> bool {
        let values = req.values(&self.key.lookup);
        if self.if_exists && values.is_empty() {
            return true;
        }
        let all = self.qualifier == Qualifier::ForAllValues;
        match &self.test {
            Test::Strings {
                texts,
                has_vars,
                fold,
                negate,
            } => {
                let hit = if *has_vars {
                    let texts: Vec<Cow<'_, str>> =
                        texts.iter().map(|t| substitute(t, req)).collect();
                    set_match(values, all, |r| texts.iter().any(|t| equal(t, r, *fold)))
                } else {
                    set_match(values, all, |r| texts.iter().any(|t| equal(t, r, *fold)))
                };
                hit != *negate
            }
            Test::Binary(decoded) => {
                set_match(values, all, |r| decoded.iter().any(|d| d == r.as_bytes()))
            }
            Test::Like {
                texts,
                has_vars,
                negate,
            } => {
                let hit = if *has_vars {
                    let texts: Vec<Cow<'_, str>> =
                        texts.iter().map(|t| substitute(t, req)).collect();
                    set_match(values, all, |r| {
                        texts.iter().any(|t| wildcard::matches(t, r))
                    })
                } else {
                    set_match(values, all, |r| {
                        texts.iter().any(|t| wildcard::matches(t, r))
                    })
                };
                hit != *negate
            }
            Test::Arn { patterns, negate } => {
                set_match(values, all, |r| patterns.iter().any(|p| arn_matches(p, r))) != *negate
            }
            Test::Ip { nets, negate } => {
                let mut hit = false;
                for v in values {
                    let Some(addr) = ip::parse_ip(v) else {
                        hit = false;
                        break;
                    };
                    hit = hit || nets.iter().any(|n| n.contains(addr));
                }
                hit != *negate
            }
            Test::Null(absent) => values.is_empty() == *absent,
            Test::Bool(want) => values.first().is_some_and(|v| v == want),
            Test::Numeric(cmp, policy) => values
                .first()
                .and_then(|v| super::value::atoi(v))
                .is_some_and(|r| cmp.holds(&r, policy)),
            Test::Date(cmp, policy) => values
                .first()
                .and_then(|v| date::parse_rfc3339(v))
                .is_some_and(|r| cmp.holds(&r, policy)),
        }
    }
}

/// MinIO's reading of the request's values: `ForAllValues` wants every
/// one to match (vacuously true with none), otherwise one suffices. The
/// equality operators compare sets and `StringLike` walks the list, which
/// comes to the same.
fn set_match(values: &[String], all: bool, mut member: impl FnMut(&str) -> bool) -> bool {
    if all {
        values.iter().all(|v| member(v))
    } else {
        values.iter().any(|v| member(v))
    }
}

fn equal(policy: &str, request: &str, fold: bool) -> bool {
    if fold {
        policy
            .chars()
            .map(lower_char)
            .eq(request.chars().map(lower_char))
    } else {
        policy == request
    }
}

/// Go's `unicode.ToLower`: one character to one character (Rust's full
/// mapping turns `İ` into two; Go keeps the first).
fn lower_char(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// Go's `strings.ToLower`, character by character.
pub(crate) fn lower(s: &str) -> String {
    s.chars().map(lower_char).collect()
}

/// MinIO's substitution in condition values: for each common key in
/// order, every `${key}` (spelled exactly) becomes the request's first
/// value of that key, unless it has none or an empty one.
pub(crate) fn substitute<'a>(text: &'a str, req: &Request<'_>) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for key in COMMON {
        let var = key.variable();
        if !out.contains(var) {
            continue;
        }
        let lookup = key.name().to_ascii_lowercase();
        if let Some(first) = req.values(&lookup).first()
            && !first.is_empty()
        {
            out = Cow::Owned(out.replace(var, first));
        }
    }
    out
}

/// `ArnLike`: each of the six `:`-separated parts matched on its own with
/// wildcards (the sixth keeps any further `:`). A pattern of fewer parts is
/// matched as a whole.
fn arn_matches(pattern: &str, arn: &str) -> bool {
    let p: Vec<&str> = pattern.splitn(6, ':').collect();
    if p.len() < 6 {
        return wildcard::matches(pattern, arn);
    }
    let a: Vec<&str> = arn.splitn(6, ':').collect();
    a.len() == 6 && p.iter().zip(&a).all(|(p, a)| wildcard::matches(p, a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::condition::parse_block;
    use std::collections::HashMap;

    fn conds(s: &str) -> Vec<Condition> {
        parse_block(
            &crate::json::parse(s.as_bytes(), 16).unwrap(),
            &Limits::default(),
        )
        .unwrap()
    }

    fn holds(block: &str, values: &[(&str, &[&str])]) -> bool {
        let map: HashMap<String, Vec<String>> = values
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect();
        let req = Request {
            action: "s3:GetObject",
            bucket: "b",
            object: None,
            account: "",
            groups: &[],
            principal_arn: None,
            anonymous: true,
            bucket_policy: false,
            conditions: &map,
        };
        conds(block).iter().all(|c| c.holds(&req))
    }

    #[test]
    fn strings() {
        let eq = r#"{"StringEquals":{"aws:username":["alice","bob"]}}"#;
        assert!(holds(eq, &[("aws:username", &["bob"])]));
        assert!(!holds(eq, &[("aws:username", &["carol"])]));
        assert!(!holds(eq, &[]));
        let ne = r#"{"StringNotEquals":{"aws:username":"alice"}}"#;
        assert!(holds(ne, &[]));
        assert!(holds(ne, &[("aws:username", &["bob"])]));
        assert!(!holds(ne, &[("aws:username", &["alice"])]));
        let ic = r#"{"StringEqualsIgnoreCase":{"aws:username":"ALICE"}}"#;
        assert!(holds(ic, &[("aws:username", &["Alice"])]));
        let all = r#"{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["a","b"]}}"#;
        assert!(holds(all, &[]));
        assert!(holds(all, &[("s3:requestobjecttagkeys", &["a", "b"])]));
        assert!(!holds(all, &[("s3:requestobjecttagkeys", &["a", "c"])]));
        let any = r#"{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["a","b"]}}"#;
        assert!(holds(any, &[("s3:requestobjecttagkeys", &["c", "b"])]));
        assert!(!holds(any, &[]));
        let if_exists = r#"{"StringEqualsIfExists":{"aws:username":"alice"}}"#;
        assert!(holds(if_exists, &[]));
        assert!(!holds(if_exists, &[("aws:username", &["bob"])]));
    }

    #[test]
    fn variables() {
        let v = r#"{"StringEquals":{"s3:prefix":"home/${aws:username}/"}}"#;
        assert!(holds(
            v,
            &[
                ("s3:prefix", &["home/alice/"]),
                ("aws:username", &["alice"])
            ]
        ));
        assert!(!holds(
            v,
            &[("s3:prefix", &["home/bob/"]), ("aws:username", &["alice"])]
        ));
        // Without a value the variable stays as written.
        assert!(holds(v, &[("s3:prefix", &["home/${aws:username}/"])]));
        let like = r#"{"StringLike":{"s3:prefix":"${aws:username}/*"}}"#;
        assert!(holds(
            like,
            &[("s3:prefix", &["alice/x"]), ("aws:username", &["alice"])]
        ));
    }

    #[test]
    fn like_null_bool_numbers_dates_ips() {
        let like = r#"{"StringLike":{"s3:prefix":["a*","b?"]}}"#;
        assert!(holds(like, &[("s3:prefix", &["abc"])]));
        assert!(holds(like, &[("s3:prefix", &["bc"])]));
        assert!(!holds(like, &[("s3:prefix", &["bcd"])]));
        let not_like = r#"{"StringNotLike":{"s3:prefix":"a*"}}"#;
        assert!(holds(not_like, &[]));
        let null = r#"{"Null":{"s3:prefix":true}}"#;
        assert!(holds(null, &[]));
        assert!(holds(null, &[("s3:prefix", &[])]));
        assert!(!holds(null, &[("s3:prefix", &[""])]));
        let tls = r#"{"Bool":{"aws:SecureTransport":"true"}}"#;
        assert!(holds(tls, &[("aws:securetransport", &["true"])]));
        assert!(!holds(tls, &[("aws:securetransport", &["false"])]));
        assert!(!holds(tls, &[]));
        let n = r#"{"NumericLessThanEquals":{"s3:max-keys":"10"}}"#;
        assert!(holds(n, &[("s3:max-keys", &["10"])]));
        assert!(!holds(n, &[("s3:max-keys", &["11"])]));
        assert!(!holds(n, &[("s3:max-keys", &["x"])]));
        assert!(!holds(r#"{"NumericNotEquals":{"s3:max-keys":1}}"#, &[]));
        assert!(holds(
            r#"{"NumericGreaterThanIfExists":{"s3:max-keys":1}}"#,
            &[]
        ));
        let d = r#"{"DateLessThan":{"aws:CurrentTime":"2020-01-01T00:00:00Z"}}"#;
        assert!(holds(d, &[("aws:currenttime", &["2019-12-31T23:59:59Z"])]));
        assert!(!holds(d, &[("aws:currenttime", &["2020-01-01T00:00:00Z"])]));
        assert!(!holds(d, &[("aws:currenttime", &["yesterday"])]));
        let ip = r#"{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32"]}}"#;
        assert!(holds(ip, &[("aws:sourceip", &["10.1.2.3"])]));
        assert!(holds(ip, &[("aws:sourceip", &["2001:db8::1"])]));
        assert!(!holds(ip, &[("aws:sourceip", &["11.1.2.3"])]));
        assert!(!holds(ip, &[("aws:sourceip", &["10.1.2.3", "junk"])]));
        let not_ip = r#"{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}"#;
        assert!(holds(not_ip, &[]));
        assert!(holds(not_ip, &[("aws:sourceip", &["junk"])]));
        assert!(!holds(not_ip, &[("aws:sourceip", &["10.0.0.1"])]));
    }

    #[test]
    fn binary_and_arn() {
        let b = r#"{"BinaryEquals":{"aws:username":"YWxpY2U="}}"#;
        assert!(holds(b, &[("aws:username", &["alice"])]));
        assert!(!holds(b, &[("aws:username", &["bob"])]));
        assert!(arn_matches(
            "arn:aws:iam::*:user/*",
            "arn:aws:iam::123:user/alice"
        ));
        assert!(!arn_matches(
            "arn:aws:iam::*:user/*",
            "arn:aws:iam::123:role/x"
        ));
        assert!(arn_matches("arn:aws:s3:::b/a:b", "arn:aws:s3:::b/a:b"));
        assert!(!arn_matches("arn:aws:iam::*:*", "arn:aws:iam"));
        assert!(arn_matches("*", "anything"));
    }

    #[test]
    fn go_lowercase() {
        assert_eq!(lower("İSTANBUL"), "istanbul");
        assert!(equal("straße", "STRAßE", true));
    }
}
