//! A whole policy document: parsing under limits, validation by kind,
//! evaluation.

use std::borrow::Cow;

use crate::PolicyError;
use crate::json::{self, Json};
use crate::request::{Decision, Request};
use crate::resource;
use crate::statement::{Effect, Statement};

/// The policy language version (`Version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// `2012-10-17`, the current one (policy variables).
    V2012_10_17,
    /// `2008-10-17`, which AWS still accepts (MinIO refuses it).
    V2008_10_17,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V2012_10_17 => "2012-10-17",
            Version::V2008_10_17 => "2008-10-17",
        }
    }
}

/// The two kinds of policy documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An identity (IAM) policy, attached to users and groups: no
    /// principals; statements of admin, KMS and STS actions allowed.
    Iam,
    /// A bucket policy: every statement names its principals.
    Bucket,
}

/// Bounds on a document, so that hostile input costs bounded memory and
/// time: memory is linear in `max_bytes`, and evaluation at most linear in
/// the document's length times the request path's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest document, in bytes.
    pub max_bytes: usize,
    /// Deepest JSON nesting (a policy needs 7 levels).
    pub max_depth: usize,
    /// Most statements.
    pub max_statements: usize,
    /// Most entries in one `Action`, `Resource` or `Principal` list, keys
    /// under one `Condition`, or values of one condition key.
    pub max_values: usize,
}

impl Limits {
    /// For identity policies: 64 KiB, above MinIO's 20 KiB bound on the
    /// documents it takes in, so every policy it stored parses, even
    /// re-encoded less compactly.
    pub const IAM: Limits = Limits {
        max_bytes: 64 * 1024,
        max_depth: 16,
        max_statements: 1000,
        max_values: 1000,
    };

    /// For bucket policies: S3's and MinIO's 20 KiB.
    pub const BUCKET: Limits = Limits {
        max_bytes: 20 * 1024,
        ..Limits::IAM
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::IAM
    }
}

/// A parsed, validated, compiled policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub(crate) version: Option<Version>,
    pub(crate) id: Option<String>,
    pub(crate) statements: Vec<Statement>,
    pub(crate) kind: Kind,
    /// Whether a statement has a condition or a resource with a policy
    /// variable (derived from `statements` when parsed).
    reads_values: bool,
}

impl Policy {
    /// Reads and validates a policy of either kind: a bucket policy if any
    /// statement names principals, else an identity policy. Under
    /// [`Limits::IAM`].
    pub fn parse(json: &[u8]) -> Result<Policy, PolicyError> {
        Policy::parse_with(json, None, &Limits::IAM)
    }

    /// Reads and validates an identity policy (as MinIO's
    /// `policy.ParseConfig`). Under [`Limits::IAM`].
    pub fn parse_iam(json: &[u8]) -> Result<Policy, PolicyError> {
        Policy::parse_with(json, Some(Kind::Iam), &Limits::IAM)
    }

    /// Reads and validates the policy of `bucket` (as MinIO's
    /// `PutBucketPolicy`: `policy.ParseBucketPolicyConfig` and a required
    /// `Version`). Under [`Limits::BUCKET`].
    pub fn parse_bucket(json: &[u8], bucket: &str) -> Result<Policy, PolicyError> {
        let p = Policy::parse_with(json, Some(Kind::Bucket), &Limits::BUCKET)?;
        p.check_bucket_policy(bucket)?;
        Ok(p)
    }

    /// Reads and validates a policy of `kind` (inferred when `None`, as
    /// [`Policy::parse`] does) under `limits`.
    pub fn parse_with(
        json: &[u8],
        kind: Option<Kind>,
        limits: &Limits,
    ) -> Result<Policy, PolicyError> {
        if json.len() > limits.max_bytes {
            return Err(PolicyError::TooLarge {
                len: json.len(),
                max: limits.max_bytes,
            });
        }
        let tree = json::parse(json, limits.max_depth)?;
        let Json::Object(fields) = &tree else {
            return Err(PolicyError::syntax(format!(
                "a policy must be a JSON object, not {}",
                tree.kind()
            )));
        };
        let mut seen: Vec<&'static str> = Vec::new();
        let (mut version, mut id, mut statements) = (None, None, Vec::new());
        for (name, value) in fields {
            let Some(field) = ["Version", "Id", "Statement"]
                .into_iter()
                .find(|f| f.eq_ignore_ascii_case(name))
            else {
                return Err(PolicyError::syntax(format!(
                    "unknown field '{name}' in a policy"
                )));
            };
            if seen.contains(&field) {
                return Err(PolicyError::syntax(format!(
                    "field '{field}' given twice in a policy"
                )));
            }
            seen.push(field);
            match (field, value) {
                ("Version", Json::String(v)) => {
                    version = match v.as_str() {
                        "" => None,
                        "2012-10-17" => Some(Version::V2012_10_17),
                        "2008-10-17" => Some(Version::V2008_10_17),
                        _ => return Err(PolicyError::invalid(format!("invalid version '{v}'"))),
                    }
                }
                ("Id", Json::String(v)) => id = Some(v.clone()),
                ("Statement", Json::Object(_)) => {
                    statements = vec![Statement::parse(value, limits)?]
                }
                ("Statement", Json::Array(items)) => {
                    if items.len() > limits.max_statements {
                        return Err(PolicyError::Limit(format!(
                            "a policy has more than {} statements",
                            limits.max_statements
                        )));
                    }
                    statements = items
                        .iter()
                        .map(|s| Statement::parse(s, limits))
                        .collect::<Result<_, _>>()?;
                }
                (field, other) => {
                    return Err(PolicyError::syntax(format!(
                        "{field} must be {}, not {}",
                        if field == "Statement" {
                            "an object or an array"
                        } else {
                            "a string"
                        },
                        other.kind()
                    )));
                }
            }
        }
        let kind = kind.unwrap_or(if statements.iter().any(Statement::has_principal) {
            Kind::Bucket
        } else {
            Kind::Iam
        });
        for s in &statements {
            match kind {
                Kind::Iam => {
                    if s.has_principal() {
                        return Err(PolicyError::invalid(
                            "Principal is not allowed in an identity policy",
                        ));
                    }
                    s.validate_identity()?;
                }
                Kind::Bucket => s.validate_bucket()?,
            }
        }
        let reads_values = statements.iter().any(|s| {
            !s.conditions.is_empty()
                || s.resources
                    .iter()
                    .chain(&s.not_resources)
                    .any(|r| r.may_hold_variables())
        });
        Ok(Policy {
            version,
            id,
            statements,
            kind,
            reads_values,
        })
    }

    /// Whether this is a valid policy for `bucket`: a bucket policy, with
    /// a `Version`, whose every resource lies in the bucket (MinIO's
    /// `BucketPolicy.Validate` and the `Version` check of `PutBucketPolicy`).
    pub fn check_bucket_policy(&self, bucket: &str) -> Result<(), PolicyError> {
        for s in &self.statements {
            s.validate_bucket()?;
            s.validate_bucket_resources(bucket)?;
        }
        if self.version.is_none() {
            return Err(PolicyError::invalid(
                "The policy must contain a valid version string",
            ));
        }
        Ok(())
    }

    /// What this policy says about `req`: `Deny` if a `Deny` statement
    /// matches, else `Allow` if an `Allow` statement does, else
    /// `NotApplicable`. Statements are read as `req.bucket_policy` says
    /// (a statement without principals never matches as a bucket policy).
    pub fn evaluate(&self, req: &Request<'_>) -> Decision {
        let path = request_path(req);
        let clean = resource::clean(&path);
        let mut decision = Decision::NotApplicable;
        for s in &self.statements {
            match s.effect {
                Effect::Deny => {
                    if s.matches(req, &path, &clean) {
                        return Decision::Deny;
                    }
                }
                Effect::Allow => {
                    if decision == Decision::NotApplicable && s.matches(req, &path, &clean) {
                        decision = Decision::Allow;
                    }
                }
            }
        }
        decision
    }

    /// Whether this policy alone allows `req` (MinIO's `IsAllowed` for a
    /// requester that is not the owner).
    pub fn is_allowed(&self, req: &Request<'_>) -> bool {
        self.evaluate(req).is_allowed()
    }

    /// Whether this bucket policy makes `bucket` public: some `Allow`
    /// statement, without conditions, lets the anonymous requester list
    /// the bucket or read or write some of its objects. `Deny` statements
    /// are not weighed, as S3's `PolicyStatus` does not weigh them.
    pub fn is_public(&self, bucket: &str) -> bool {
        self.statements.iter().any(|s| s.is_public(bucket))
    }

    /// The `Version`, if the document has one.
    pub fn version(&self) -> Option<Version> {
        self.version
    }

    /// The `Id`, if the document has one.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn statements(&self) -> &[Statement] {
        &self.statements
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Whether deciding a request with this policy reads any of the
    /// request's values (`Request::conditions`): it has a condition, or a
    /// resource with a policy variable. A caller may leave the values
    /// empty for policies that read none.
    pub fn reads_request_values(&self) -> bool {
        self.reads_values
    }

    /// Whether a condition of this policy reads a key starting with
    /// `prefix` (lower case, such as `s3:existingobjecttag/`): the caller
    /// fills costly values only for policies that read them.
    pub fn uses_condition_key(&self, prefix: &str) -> bool {
        self.statements
            .iter()
            .flat_map(|s| &s.conditions)
            .any(|c| c.key.lookup.starts_with(prefix))
    }
}

/// The request's resource path as MinIO builds it: `bucket/key`; for the
/// bucket itself `bucket/` in identity policies, `bucket` in bucket
/// policies. A key that starts with `/` gets no separator of its own.
fn request_path<'a>(req: &Request<'a>) -> Cow<'a, str> {
    match req.object_key() {
        Some(key) if key.starts_with('/') => Cow::Owned(format!("{}{key}", req.bucket)),
        Some(key) => Cow::Owned(format!("{}/{key}", req.bucket)),
        None if req.bucket_policy => Cow::Borrowed(req.bucket),
        None => Cow::Owned(format!("{}/", req.bucket)),
    }
}

/// The decision of several policies together (a user's own and its
/// groups', a bucket's): an explicit deny in any wins; otherwise an allow
/// in any; otherwise nothing applies, which callers treat as a deny.
pub fn evaluate_all<'p>(
    policies: impl IntoIterator<Item = &'p Policy>,
    req: &Request<'_>,
) -> Decision {
    let mut decision = Decision::NotApplicable;
    for p in policies {
        decision = decision.combine(p.evaluate(req));
        if decision == Decision::Deny {
            break;
        }
    }
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn paths() {
        let conditions = HashMap::new();
        let mut req = Request {
            action: "s3:GetObject",
            bucket: "b",
            object: Some("k/x"),
            account: "",
            groups: &[],
            principal_arn: None,
            anonymous: true,
            bucket_policy: false,
            conditions: &conditions,
        };
        assert_eq!(request_path(&req), "b/k/x");
        req.object = Some("/k");
        assert_eq!(request_path(&req), "b/k");
        req.object = Some("");
        assert_eq!(request_path(&req), "b/");
        req.bucket_policy = true;
        assert!(matches!(request_path(&req), Cow::Borrowed("b")));
        req.object = None;
        req.bucket = "";
        req.bucket_policy = false;
        assert_eq!(request_path(&req), "/");
    }

    #[test]
    fn policies_that_read_request_values_say_so() {
        let doc = |statement: &str| {
            Policy::parse_iam(
                format!(r#"{{"Version":"2012-10-17","Statement":[{statement}]}}"#).as_bytes(),
            )
            .unwrap()
        };
        let plain = r#"{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::b/*"]}"#;
        assert!(!doc(plain).reads_request_values());
        assert!(
            !crate::builtin::get("readwrite")
                .unwrap()
                .reads_request_values()
        );
        let variable = r#"{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::b/${aws:username}/*"]}"#;
        assert!(doc(variable).reads_request_values());
        let not_resource =
            r#"{"Effect":"Deny","Action":["s3:*"],"NotResource":["arn:aws:s3:::${aws:username}"]}"#;
        assert!(doc(not_resource).reads_request_values());
        let condition = r#"{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/*"],"Condition":{"Bool":{"aws:SecureTransport":"true"}}}"#;
        assert!(doc(&format!("{plain},{condition}")).reads_request_values());
    }

    #[test]
    fn limits() {
        assert_eq!(Limits::default(), Limits::IAM);
        assert_eq!(Limits::BUCKET.max_bytes, 20 * 1024);
        let err = Policy::parse_with(
            b"{}",
            None,
            &Limits {
                max_bytes: 1,
                ..Limits::IAM
            },
        )
        .unwrap_err();
        assert_eq!(err, PolicyError::TooLarge { len: 2, max: 1 });
        assert_eq!(
            err.to_string(),
            "policy document of 2 bytes exceeds the maximum of 1 bytes"
        );
    }
}
