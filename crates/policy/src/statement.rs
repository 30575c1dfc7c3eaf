//! One statement: reading it, validating it as MinIO validates identity
//! policies (`Statement.isValid`) or bucket policies
//! (`BPStatement.isValid`), and deciding whether it applies to a request.

use std::collections::BTreeSet;

use crate::action::{self, ActionPattern};
use crate::condition::key::{ADMIN_SET, KeySet, STS_SET};
use crate::condition::{self, Condition};
use crate::json::Json;
use crate::principal::Principal;
use crate::request::Request;
use crate::resource::Resource;
use crate::{Limits, PolicyError, wildcard};

/// Whether a statement allows or denies what it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Effect {
    Allow,
    Deny,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "Allow",
            Effect::Deny => "Deny",
        }
    }
}

/// A policy statement, compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub(crate) sid: Option<String>,
    pub(crate) effect: Effect,
    pub(crate) principal: Option<Principal>,
    pub(crate) actions: Vec<ActionPattern>,
    pub(crate) not_actions: Vec<ActionPattern>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) not_resources: Vec<Resource>,
    pub(crate) conditions: Vec<Condition>,
    /// MinIO's statement families, from `Action` alone: an admin, STS or
    /// KMS action makes the statement one of that family.
    is_admin: bool,
    is_sts: bool,
    is_kms: bool,
}

/// A field's value as a list of strings: one string or an array of them;
/// repeats are dropped (MinIO reads these fields as sets).
pub(crate) fn string_list(j: &Json, field: &str) -> Result<Vec<String>, PolicyError> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    };
    match j {
        Json::String(s) => push(s),
        Json::Array(items) => {
            for item in items {
                match item {
                    Json::String(s) => push(s),
                    other => {
                        return Err(PolicyError::syntax(format!(
                            "{field} must hold strings, not {}",
                            other.kind()
                        )));
                    }
                }
            }
        }
        other => {
            return Err(PolicyError::syntax(format!(
                "{field} must be a string or an array of strings, not {}",
                other.kind()
            )));
        }
    }
    Ok(out)
}

fn check_count(n: usize, field: &str, limits: &Limits) -> Result<(), PolicyError> {
    if n > limits.max_values {
        return Err(PolicyError::Limit(format!(
            "{field} has more than {} entries",
            limits.max_values
        )));
    }
    Ok(())
}

fn parse_actions(
    j: &Json,
    field: &str,
    limits: &Limits,
) -> Result<Vec<ActionPattern>, PolicyError> {
    let list = string_list(j, field)?;
    if list.is_empty() {
        return Err(PolicyError::invalid("empty actions not allowed"));
    }
    check_count(list.len(), field, limits)?;
    Ok(list.into_iter().map(ActionPattern::new).collect())
}

fn parse_resources(j: &Json, field: &str, limits: &Limits) -> Result<Vec<Resource>, PolicyError> {
    let list = string_list(j, field)?;
    check_count(list.len(), field, limits)?;
    list.iter().map(|s| Resource::parse(s)).collect()
}

/// MinIO prints sets of resources as a sorted list.
fn show_resources(set: &[Resource]) -> String {
    let sorted: BTreeSet<&str> = set.iter().map(|r| r.text.as_str()).collect();
    format!("[{}]", sorted.into_iter().collect::<Vec<_>>().join(" "))
}

impl Statement {
    /// Reads a statement object. Field names are matched without case, as
    /// Go's decoder matches them; a field given twice, an unknown field,
    /// and both of a pair (`Action` and `NotAction`) are refused.
    pub(crate) fn parse(j: &Json, limits: &Limits) -> Result<Statement, PolicyError> {
        let Json::Object(fields) = j else {
            return Err(PolicyError::syntax(format!(
                "a statement must be an object, not {}",
                j.kind()
            )));
        };
        let mut seen: Vec<&'static str> = Vec::new();
        let mut sid = None;
        let mut effect = None;
        let mut principal = None;
        let mut actions = Vec::new();
        let mut not_actions = Vec::new();
        let mut resources = Vec::new();
        let mut not_resources = Vec::new();
        let mut conditions = Vec::new();
        for (name, value) in fields {
            const FIELDS: [&str; 9] = [
                "Sid",
                "Effect",
                "Principal",
                "NotPrincipal",
                "Action",
                "NotAction",
                "Resource",
                "NotResource",
                "Condition",
            ];
            let Some(field) = FIELDS
                .iter()
                .copied()
                .find(|f| f.eq_ignore_ascii_case(name))
            else {
                return Err(PolicyError::syntax(format!(
                    "unknown field '{name}' in a statement"
                )));
            };
            if seen.contains(&field) {
                return Err(PolicyError::syntax(format!(
                    "field '{field}' given twice in a statement"
                )));
            }
            seen.push(field);
            match field {
                "Sid" => match value {
                    Json::String(s) => sid = Some(s.clone()),
                    other => {
                        return Err(PolicyError::syntax(format!(
                            "Sid must be a string, not {}",
                            other.kind()
                        )));
                    }
                },
                "Effect" => match value {
                    Json::String(s) => effect = Some(s.clone()),
                    other => {
                        return Err(PolicyError::syntax(format!(
                            "Effect must be a string, not {}",
                            other.kind()
                        )));
                    }
                },
                "Principal" | "NotPrincipal" => {
                    if principal.is_some() {
                        return Err(PolicyError::invalid(
                            "Principal and NotPrincipal cannot be specified in the same statement",
                        ));
                    }
                    let p = Principal::parse(value, field == "NotPrincipal")?;
                    check_count(p.patterns.len(), field, limits)?;
                    principal = Some(p);
                }
                "Action" => actions = parse_actions(value, field, limits)?,
                "NotAction" => not_actions = parse_actions(value, field, limits)?,
                "Resource" => resources = parse_resources(value, field, limits)?,
                "NotResource" => not_resources = parse_resources(value, field, limits)?,
                _ => {
                    conditions = condition::parse_block(value, limits)?;
                    check_count(conditions.len(), field, limits)?;
                }
            }
        }
        let effect = match effect.as_deref() {
            Some("Allow") => Effect::Allow,
            Some("Deny") => Effect::Deny,
            other => {
                return Err(PolicyError::invalid(format!(
                    "invalid Effect {}",
                    other.unwrap_or("")
                )));
            }
        };
        let has = |f: fn(&str) -> bool| actions.iter().any(|a| f(&a.lower));
        let (is_admin, is_sts, is_kms) = (
            has(action::is_admin),
            has(action::is_sts),
            has(action::is_kms),
        );
        Ok(Statement {
            sid,
            effect,
            principal,
            actions,
            not_actions,
            resources,
            not_resources,
            conditions,
            is_admin,
            is_sts,
            is_kms,
        })
    }

    /// The `Sid`, if any.
    pub fn sid(&self) -> Option<&str> {
        self.sid.as_deref()
    }

    pub fn effect(&self) -> Effect {
        self.effect
    }

    /// The `Action` entries as written (empty when `NotAction` is used).
    pub fn actions(&self) -> impl Iterator<Item = &str> {
        self.actions.iter().map(|a| a.text.as_str())
    }

    /// The `NotAction` entries as written.
    pub fn not_actions(&self) -> impl Iterator<Item = &str> {
        self.not_actions.iter().map(|a| a.text.as_str())
    }

    /// The `Resource` entries as written.
    pub fn resources(&self) -> impl Iterator<Item = &str> {
        self.resources.iter().map(|r| r.text.as_str())
    }

    /// The `NotResource` entries as written.
    pub fn not_resources(&self) -> impl Iterator<Item = &str> {
        self.not_resources.iter().map(|r| r.text.as_str())
    }

    /// Whether the statement names principals (a bucket-policy statement).
    pub fn has_principal(&self) -> bool {
        self.principal.is_some()
    }

    fn check_actions_present(&self) -> Result<(), PolicyError> {
        if self.actions.is_empty() && self.not_actions.is_empty() {
            return Err(PolicyError::invalid("Action must not be empty"));
        }
        if !self.actions.is_empty() && !self.not_actions.is_empty() {
            return Err(PolicyError::invalid(
                "Action and NotAction cannot be specified in the same statement",
            ));
        }
        Ok(())
    }

    fn check_resources_present(&self) -> Result<(), PolicyError> {
        if self.resources.is_empty() && self.not_resources.is_empty() {
            return Err(PolicyError::invalid("Resource must not be empty"));
        }
        if !self.resources.is_empty() && !self.not_resources.is_empty() {
            return Err(PolicyError::invalid(
                "Resource and NotResource cannot be specified in the same statement",
            ));
        }
        Ok(())
    }

    /// The condition keys used that `allowed` lacks, as MinIO prints them.
    fn check_keys(&self, allowed: KeySet, action: &str) -> Result<(), PolicyError> {
        let extra: BTreeSet<String> = self
            .conditions
            .iter()
            .filter(|c| !allowed.contains(c.key.name))
            .map(|c| c.key.text.clone())
            .collect();
        if extra.is_empty() {
            return Ok(());
        }
        let list = extra.into_iter().collect::<Vec<_>>().join(" ");
        Err(PolicyError::invalid(format!(
            "unsupported condition keys '[{list}]' used for action '{action}'"
        )))
    }

    /// MinIO's `Statement.isValid`, for identity policies.
    pub(crate) fn validate_identity(&self) -> Result<(), PolicyError> {
        self.check_actions_present()?;
        let family =
            |valid: fn(&str) -> bool, what: &str, keys: KeySet| -> Result<(), PolicyError> {
                for a in &self.actions {
                    if !valid(&a.lower) {
                        return Err(PolicyError::invalid(format!(
                            "unsupported {what} action '{}'",
                            a.text
                        )));
                    }
                }
                for a in &self.actions {
                    self.check_keys(keys, &a.text)?;
                }
                Ok(())
            };
        if self.is_admin {
            return family(action::is_admin, "admin", ADMIN_SET);
        }
        if self.is_sts {
            return family(action::is_sts, "STS", STS_SET);
        }
        if self.is_kms {
            for a in &self.actions {
                if !action::is_kms(&a.lower) {
                    return Err(PolicyError::invalid(format!(
                        "unsupported KMS action '{}'",
                        a.text
                    )));
                }
            }
            for r in self.resources.iter().chain(&self.not_resources) {
                if !r.is_kms() {
                    return Err(PolicyError::invalid(format!(
                        "resource '{}' type is not KMS",
                        r.text
                    )));
                }
                if !r.is_valid() {
                    return Err(PolicyError::invalid("invalid resource"));
                }
            }
            return Ok(());
        }
        self.check_resources_present()?;
        for r in self.resources.iter().chain(&self.not_resources) {
            if !r.is_s3() {
                return Err(PolicyError::invalid(format!(
                    "resource '{}' type is not S3",
                    r.text
                )));
            }
            if !r.is_valid() {
                return Err(PolicyError::invalid("invalid resource"));
            }
        }
        for a in &self.actions {
            if !action::is_valid_s3(&a.lower) {
                return Err(PolicyError::invalid(format!(
                    "unsupported action '{}'",
                    a.text
                )));
            }
        }
        for a in &self.actions {
            self.check_keys(action::keys_for(&a.lower), &a.text)?;
        }
        Ok(())
    }

    /// MinIO's `BPStatement.isValid`, for bucket policies.
    pub(crate) fn validate_bucket(&self) -> Result<(), PolicyError> {
        match &self.principal {
            Some(p) if !p.patterns.is_empty() => {}
            _ => return Err(PolicyError::invalid("invalid Principal {[]}")),
        }
        self.check_actions_present()?;
        self.check_resources_present()?;
        for a in &self.actions {
            let object = action::is_object_action(&a.lower);
            for set in [&self.resources, &self.not_resources] {
                let ok = set.is_empty()
                    || set.iter().any(|r| {
                        if object {
                            r.is_object_pattern()
                        } else {
                            r.is_bucket_pattern()
                        }
                    });
                if !ok {
                    return Err(PolicyError::invalid(format!(
                        "unsupported Resource found {} for action {}",
                        show_resources(set),
                        a.text
                    )));
                }
            }
            self.check_keys(action::keys_for(&a.lower), &a.text)?;
        }
        Ok(())
    }

    /// MinIO's `BPStatement.Validate(bucket)` beyond `isValid`: every
    /// resource is valid and belongs to the bucket.
    pub(crate) fn validate_bucket_resources(&self, bucket: &str) -> Result<(), PolicyError> {
        for r in self.resources.iter().chain(&self.not_resources) {
            if !r.is_valid() {
                return Err(PolicyError::invalid("invalid resource"));
            }
            if !r.covers_bucket(bucket) {
                return Err(PolicyError::invalid("bucket name does not match"));
            }
        }
        Ok(())
    }

    fn action_applies(&self, action: &str) -> bool {
        (self.actions.is_empty() || self.actions.iter().any(|a| a.matches(action)))
            && !self.not_actions.iter().any(|a| a.matches(action))
    }

    fn resources_apply(&self, path: &str, clean: &str, req: &Request<'_>) -> bool {
        (self.resources.is_empty() || self.resources.iter().any(|r| r.matches(path, clean, req)))
            && !self
                .not_resources
                .iter()
                .any(|r| r.matches(path, clean, req))
    }

    /// Whether the statement's principal, action, resource and conditions
    /// all match the request (its effect aside). `path` is the request's
    /// resource path for the mode `req.bucket_policy` chooses, `clean` its
    /// `path.Clean` form.
    pub(crate) fn matches(&self, req: &Request<'_>, path: &str, clean: &str) -> bool {
        // Principals are checked whenever a statement names them, so a
        // bucket policy evaluated as an identity policy by mistake still
        // applies only to whom it names; a statement that names none never
        // applies as a bucket policy.
        match &self.principal {
            Some(p) if !p.admits(req) => return false,
            None if req.bucket_policy => return false,
            _ => {}
        }
        if req.bucket_policy {
            if !self.action_applies(req.action) || !self.resources_apply(path, clean, req) {
                return false;
            }
        } else {
            if !self.action_applies(req.action) {
                return false;
            }
            // KMS statements without resources, or asked about no bucket,
            // are decided by their conditions alone.
            let kms_only = self.is_kms && (path == "/" || self.resources.is_empty());
            // Admin and STS statements ignore resources.
            let skip = kms_only || self.is_admin || self.is_sts;
            if !skip && !self.resources_apply(path, clean, req) {
                return false;
            }
        }
        self.conditions.iter().all(|c| c.holds(req))
    }

    /// Whether this statement opens the bucket to everyone: an `Allow`
    /// for the anonymous requester, without conditions, of `s3:ListBucket`
    /// on the bucket or `s3:GetObject`/`s3:PutObject` on some of its
    /// objects.
    pub(crate) fn is_public(&self, bucket: &str) -> bool {
        if self.effect != Effect::Allow
            || !self.conditions.is_empty()
            || !self
                .principal
                .as_ref()
                .is_some_and(Principal::admits_anonymous)
        {
            return false;
        }
        let lists = self.action_applies("s3:ListBucket")
            && self.some_resource(|p| wildcard::matches(p, bucket));
        let objects = (self.action_applies("s3:GetObject") || self.action_applies("s3:PutObject"))
            && self
                .some_resource(|p| wildcard::matches_as_pattern_prefix(p, &format!("{bucket}/")));
        lists || objects
    }

    /// Whether some resource the statement covers passes `test` (applied
    /// to the patterns of `Resource`; a `NotResource` statement is taken
    /// to cover something unless it excludes everything).
    fn some_resource(&self, test: impl Fn(&str) -> bool) -> bool {
        if !self.not_resources.is_empty() {
            return !self.not_resources.iter().any(|r| r.pattern == "*");
        }
        self.resources.iter().any(|r| r.is_s3() && test(&r.pattern))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn statement(s: &str) -> Statement {
        Statement::parse(&crate::json::parse(s.as_bytes(), 16).unwrap(), &Limits::IAM).unwrap()
    }

    #[test]
    fn lists() {
        let j = crate::json::parse(br#"["a","b","a"]"#, 4).unwrap();
        assert_eq!(string_list(&j, "Action").unwrap(), ["a", "b"]);
        let one = crate::json::parse(br#""a""#, 4).unwrap();
        assert_eq!(string_list(&one, "Action").unwrap(), ["a"]);
        for bad in ["1", "{}", "[1]", "[[]]", "null"] {
            let j = crate::json::parse(bad.as_bytes(), 4).unwrap();
            assert!(string_list(&j, "Action").is_err(), "{bad}");
        }
    }

    #[test]
    fn families() {
        let admin = statement(r#"{"Effect":"Allow","Action":"ADMIN:ServerInfo"}"#);
        assert!(admin.is_admin && !admin.is_sts && !admin.is_kms);
        assert!(admin.validate_identity().is_ok());
        let sts = statement(r#"{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::b/*"}"#);
        assert!(sts.is_sts);
        let kms = statement(r#"{"Effect":"Deny","Action":"kms:*"}"#);
        assert!(kms.is_kms);
        assert!(kms.validate_identity().is_ok());
        // NotAction lists do not make a family.
        let not = statement(r#"{"Effect":"Allow","NotAction":"admin:*","Resource":"*"}"#);
        assert!(!not.is_admin);
        assert!(not.validate_identity().is_ok());
    }

    #[test]
    fn matching_paths() {
        let s = statement(
            r#"{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b/*"}"#,
        );
        let conditions = HashMap::new();
        let mut req = Request {
            action: "s3:ListBucket",
            bucket: "b",
            object: None,
            account: "u",
            groups: &[],
            principal_arn: None,
            anonymous: false,
            bucket_policy: false,
            conditions: &conditions,
        };
        assert!(s.matches(&req, "b/", "b"));
        req.action = "s3:GetObject";
        assert!(!s.matches(&req, "b/", "b"));
        req.action = "s3:ListBucket";
        req.bucket_policy = true;
        assert!(
            !s.matches(&req, "b", "b"),
            "no principal, no bucket-policy match"
        );
    }
}
