//! What a policy is evaluated against, and the answer.

use std::collections::HashMap;

/// One request to authorise, as the evaluation sees it.
///
/// The crate reads no clock and no headers: the caller puts the request's
/// context into `conditions`, including the time (`aws:currenttime` as
/// RFC 3339, `aws:epochtime` as seconds).
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The action, such as `s3:GetObject` or `admin:CreateUser` (compared
    /// without ASCII case).
    pub action: &'a str,
    /// The bucket; empty for actions on no bucket (`s3:ListAllMyBuckets`,
    /// admin actions).
    pub bucket: &'a str,
    /// The object key for object actions; `None` (or empty) for actions on
    /// the bucket itself.
    pub object: Option<&'a str>,
    /// The requester's access key (user name), which bucket-policy
    /// principals are matched against.
    pub account: &'a str,
    /// The requester's groups. Kept for callers' use; MinIO's evaluation
    /// does not read them, and neither does this one.
    pub groups: &'a [String],
    /// The requester's ARN (`arn:aws:iam:::user/alice`), which
    /// bucket-policy principals are matched against too.
    pub principal_arn: Option<String>,
    /// No credentials: bucket-policy principals see the empty access key
    /// (which only `*`-like entries match).
    pub anonymous: bool,
    /// Evaluate as a bucket policy (principals matched, the bucket's own
    /// path without a trailing `/`) rather than as an identity policy.
    pub bucket_policy: bool,
    /// The condition keys' values, keyed by the whole key name in lower
    /// case (`aws:sourceip`, `s3:prefix`, `s3:existingobjecttag/project`).
    /// A key absent, or present with no values, is absent.
    pub conditions: &'a HashMap<String, Vec<String>>,
}

impl Request<'_> {
    /// The values of condition key `lower` (already lower case).
    pub(crate) fn values(&self, lower: &str) -> &[String] {
        self.conditions.get(lower).map_or(&[], Vec::as_slice)
    }

    /// The object key if there is a non-empty one.
    pub(crate) fn object_key(&self) -> Option<&str> {
        self.object.filter(|o| !o.is_empty())
    }
}

/// What a policy says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// No statement applies (a request nothing allows is denied by
    /// default).
    NotApplicable,
    /// An `Allow` statement applies and no `Deny` statement does.
    Allow,
    /// A `Deny` statement applies: nothing can allow the request.
    Deny,
}

impl Decision {
    /// The decision of two policies together: an explicit deny wins, then
    /// an allow.
    #[must_use]
    pub fn combine(self, other: Decision) -> Decision {
        match (self, other) {
            (Decision::Deny, _) | (_, Decision::Deny) => Decision::Deny,
            (Decision::Allow, _) | (_, Decision::Allow) => Decision::Allow,
            _ => Decision::NotApplicable,
        }
    }

    /// Whether the request may proceed: only an allow with no deny lets
    /// it.
    pub fn is_allowed(self) -> bool {
        self == Decision::Allow
    }
}

#[cfg(test)]
mod tests {
    use super::Decision::*;

    #[test]
    fn combine() {
        assert_eq!(NotApplicable.combine(NotApplicable), NotApplicable);
        assert_eq!(NotApplicable.combine(Allow), Allow);
        assert_eq!(Allow.combine(NotApplicable), Allow);
        assert_eq!(Allow.combine(Deny), Deny);
        assert_eq!(Deny.combine(Allow), Deny);
        assert!(!NotApplicable.is_allowed());
        assert!(Allow.is_allowed());
        assert!(!Deny.is_allowed());
    }
}
