//! Temporary credentials of web identities (STS
//! `AssumeRoleWithWebIdentity`), made as MinIO makes them: the parent is
//! not a user but the token's subject at its issuer
//! (`base64url(sha256("openid:<sub>:<iss>"))`), its policies are those the
//! token's policy claim names that exist, stored as MinIO stores them
//! (`policydb/sts-users/<parent>.json`), and the session token carries the
//! identity token's claims with the policy claim set to those names.

use std::sync::Arc;

use base64::Engine;
use policy::Policy;
use serde_json::{Map, Value};

use super::store::{self, MappedPolicy, sts_policy_path};
use super::temp::{Issued, MAX_DURATION, unix_now};
use super::{Iam, IamError, IamState, Identity};

/// The parent of a web identity's credentials, as MinIO names it.
pub fn parent_of(sub: &str, iss: &str) -> String {
    let digest = <sha2::Sha256 as sha2::Digest>::digest(format!("openid:{sub}:{iss}").as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
}

/// The policy names a claim value carries (a string of comma-separated
/// names, or an array of them), in order, without repeats.
pub fn policy_names(values: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if !n.is_empty() && !out.iter().any(|o| o == n) {
            out.push(n.to_owned());
        }
    }
    out
}

impl IamState {
    /// The identity of a web identity's credentials whose mapping is
    /// stored.
    pub(super) fn web_identity(&self, parent: &str) -> Option<Identity> {
        let names = self.sts_policies.get(parent)?;
        Some(self.policies_identity(parent, names, None))
    }

    /// An identity named `name` holding the policies `names` (those that
    /// exist), restricted by `session_policy`.
    pub(super) fn policies_identity(
        &self,
        name: &str,
        names: &[String],
        session_policy: Option<Arc<Policy>>,
    ) -> Identity {
        Identity {
            name: name.to_owned(),
            arn: format!("arn:aws:iam:::user/{name}"),
            groups: Vec::new(),
            policies: names
                .iter()
                .filter_map(|n| self.policies.get(n))
                .map(|p| Arc::clone(&p.compiled))
                .collect(),
            session_policy,
            root_parent: false,
            temporary: true,
            service: false,
        }
    }
}

impl Iam {
    /// Makes temporary credentials for the verified identity token
    /// `claims`, whose claim `claim_name` names the session's policies;
    /// lasting `duration` seconds, or as long as the token when `None`;
    /// restricted by `session_policy`.
    pub async fn assume_role_web(
        &self,
        claims: &Map<String, Value>,
        claim_name: &str,
        duration: Option<u64>,
        session_policy: Option<(Vec<u8>, Arc<Policy>)>,
    ) -> Result<Issued, IamError> {
        let text = |k: &str| claims.get(k).and_then(Value::as_str).unwrap_or("");
        let (sub, iss) = (text("sub"), text("iss"));
        if sub.is_empty() {
            return Err(IamError::Invalid(
                "the token has no sub claim, which is required".into(),
            ));
        }
        let requested = policy_names(&crate::oidc::claim_values(claims, claim_name));
        if requested.is_empty() {
            return Err(IamError::Invalid(format!(
                "the {claim_name} claim is missing from the token: credentials are not generated"
            )));
        }
        let _g = self.changes.lock().await;
        let st = self.snapshot();
        let names: Vec<String> = requested
            .iter()
            .filter(|n| st.policies.contains_key(*n))
            .cloned()
            .collect();
        if names.is_empty() {
            return Err(IamError::Invalid(format!(
                "none of the policies `{}` is defined: credentials are not generated",
                requested.join(",")
            )));
        }
        let now = unix_now();
        let token_exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(now);
        let expires = match duration {
            Some(d) => now + d,
            None => token_exp.min(now + MAX_DURATION),
        };
        if expires <= now {
            return Err(IamError::Invalid("the token has expired".into()));
        }
        let parent = parent_of(sub, iss);
        let mut session = claims.clone();
        session.remove("sessionPolicy");
        session.insert(claim_name.to_owned(), Value::from(names.join(",")));
        if let Some((json, _)) = &session_policy {
            session.insert(
                "sessionPolicy".into(),
                Value::from(base64::engine::general_purpose::STANDARD.encode(json)),
            );
        }
        // The mappings of parents whose credentials have all expired go.
        let live: std::collections::HashSet<&str> = st
            .temps
            .values()
            .filter(|t| !t.expired_at(now))
            .map(|t| t.parent.as_str())
            .collect();
        for stale in st.sts_policies.keys() {
            if !live.contains(stale.as_str()) && *stale != parent {
                self.layer.delete_config(&sts_policy_path(stale)).await?;
            }
        }
        let mapping = MappedPolicy {
            version: 0,
            policies: names.join(","),
            updated_at: store::now_rfc3339(),
        };
        self.write_json(&sts_policy_path(&parent), &mapping).await?;
        let issued = self.issue(&parent, expires, session).await?;
        self.publish().await?;
        Ok(issued)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_and_policy_names_are_minio_s() {
        // base64url(sha256("openid:alice:https://idp")), unpadded.
        // (computed with Python's hashlib and base64)
        assert_eq!(
            parent_of("alice", "https://idp"),
            "AG3cm0-nmyIyZ1V48lFvX_D7hPfALIlrynT_5yGd5CA"
        );
        assert_ne!(
            parent_of("alice", "https://idp"),
            parent_of("alice", "https://other")
        );
        assert_eq!(
            policy_names(&["readonly, diag".into(), "readonly".into(), ",".into()]),
            ["readonly", "diag"]
        );
    }
}
