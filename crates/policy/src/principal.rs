//! `Principal` and `NotPrincipal` of bucket-policy statements.
//!
//! MinIO accepts `"*"` and `{"AWS": <string or array>}` and matches each
//! entry against the requester's access key with `wildcard.MatchSimple`
//! (an anonymous requester has the empty access key, which `*` matches).
//! Here an entry also matches the requester's ARN when the caller gives
//! one (`arn:aws:iam:::user/alice`), so AWS-style principals work too.
//! `NotPrincipal` (not in MinIO) applies the statement to every requester
//! no entry matches.

use crate::PolicyError;
use crate::json::Json;
use crate::request::Request;
use crate::wildcard;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Principal {
    /// Written as `NotPrincipal`.
    pub(crate) negated: bool,
    /// The `AWS` entries, without repeats, in order.
    pub(crate) patterns: Vec<String>,
}

impl Principal {
    pub(crate) fn parse(j: &Json, negated: bool) -> Result<Principal, PolicyError> {
        let patterns = match j {
            Json::String(s) if s == "*" => vec!["*".to_owned()],
            Json::String(s) => {
                return Err(PolicyError::invalid(format!("invalid principal '{s}'")));
            }
            Json::Object(fields) => match fields.as_slice() {
                [] => Vec::new(),
                [(k, v)] if k.eq_ignore_ascii_case("AWS") => {
                    crate::statement::string_list(v, "Principal")?
                }
                [(k, _)] => {
                    return Err(PolicyError::invalid(format!(
                        "unsupported principal type '{k}': only AWS principals are supported"
                    )));
                }
                _ => {
                    return Err(PolicyError::invalid(
                        "a Principal holds one entry, AWS, in this implementation",
                    ));
                }
            },
            other => {
                return Err(PolicyError::syntax(format!(
                    "Principal must be \"*\" or an object, not {}",
                    other.kind()
                )));
            }
        };
        Ok(Principal { negated, patterns })
    }

    fn any_matches(&self, name: &str) -> bool {
        self.patterns
            .iter()
            .any(|p| wildcard::matches_simple(p, name))
    }

    /// Whether the statement applies to the requester.
    pub(crate) fn admits(&self, req: &Request<'_>) -> bool {
        let hit = if req.anonymous {
            self.any_matches("")
        } else {
            self.any_matches(req.account)
                || req
                    .principal_arn
                    .as_deref()
                    .is_some_and(|arn| self.any_matches(arn))
        };
        hit != self.negated
    }

    /// Whether the statement applies to an anonymous requester.
    pub(crate) fn admits_anonymous(&self) -> bool {
        self.any_matches("") != self.negated
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn principal(s: &str, negated: bool) -> Principal {
        Principal::parse(&crate::json::parse(s.as_bytes(), 8).unwrap(), negated).unwrap()
    }

    fn admits(p: &Principal, account: &str, arn: Option<&str>) -> bool {
        let conditions = HashMap::new();
        let req = Request {
            action: "s3:GetObject",
            bucket: "b",
            object: None,
            account,
            groups: &[],
            principal_arn: arn.map(str::to_owned),
            anonymous: account.is_empty(),
            bucket_policy: true,
            conditions: &conditions,
        };
        p.admits(&req)
    }

    #[test]
    fn forms() {
        assert_eq!(principal(r#""*""#, false).patterns, ["*"]);
        assert_eq!(
            principal(r#"{"aws":["a","b","a"]}"#, false).patterns,
            ["a", "b"]
        );
        assert!(principal("{}", false).patterns.is_empty());
        for bad in [
            r#""alice""#,
            r#"{"Service":"x"}"#,
            r#"{"AWS":"a","aws":"b"}"#,
            "[]",
            "1",
            r#"{"AWS":[1]}"#,
        ] {
            let j = crate::json::parse(bad.as_bytes(), 8).unwrap();
            assert!(Principal::parse(&j, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn matching() {
        let star = principal(r#""*""#, false);
        assert!(admits(&star, "", None));
        assert!(admits(&star, "alice", None));
        assert!(star.admits_anonymous());
        let named = principal(r#"{"AWS":["alice","arn:aws:iam:::user/b*"]}"#, false);
        assert!(admits(&named, "alice", None));
        assert!(!admits(&named, "bob", None));
        assert!(admits(&named, "bob", Some("arn:aws:iam:::user/bob")));
        assert!(!named.admits_anonymous());
        // MinIO's MatchSimple: a `?` past the end of the name matches.
        let q = principal(r#"{"AWS":"al?"}"#, false);
        assert!(admits(&q, "al", None));
        assert!(principal(r#"{"AWS":"?"}"#, false).admits_anonymous());
        let not = principal(r#"{"AWS":"alice"}"#, true);
        assert!(!admits(&not, "alice", None));
        assert!(admits(&not, "bob", None));
        assert!(not.admits_anonymous());
    }
}
