//! Temporary credentials (STS `AssumeRole`): made for a user (or the root
//! user), stored as MinIO stores them (`sts/<access key>/identity.json`,
//! the credentials with their session token and parent), loaded while
//! they are live, and dropped from the drives once expired.
//!
//! Their rights are the parent's, restricted by the session policy the
//! token carries (both must allow; a deny in either wins). A parent that
//! is disabled or removed takes its temporary credentials' rights with it.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use policy::Policy;

use super::store::{self, StoredCredentials, UserIdentity, sts_path};
use super::token;
use super::{Iam, IamError, IamState, Identity};

/// Shortest session MinIO grants (15 minutes), seconds.
pub const MIN_DURATION: u64 = 900;
/// Longest session MinIO grants (365 days), seconds.
pub const MAX_DURATION: u64 = 31_536_000;
/// The session length when the caller names none (1 hour).
pub const DEFAULT_DURATION: u64 = 3600;
/// Largest session policy, bytes of its JSON (MinIO's and AWS's bound).
pub const MAX_SESSION_POLICY: usize = 2048;
/// Most live temporary credentials of one parent: beyond, AssumeRole is
/// refused until some expire.
pub const MAX_PER_PARENT: usize = 1000;
/// Most live temporary credentials in all.
pub const MAX_TOTAL: usize = super::MAX_ENTRIES;

/// Live temporary credentials.
#[derive(Debug, Clone)]
pub struct TempCred {
    pub secret_key: String,
    pub session_token: String,
    /// Unix seconds: from then on the credentials are refused.
    pub expires: u64,
    pub parent: String,
    /// The session policy, parsed.
    pub session_policy: Option<Arc<Policy>>,
    /// The policies the token names (web identities': the `policy`
    /// claim), used when no mapping of the parent is stored.
    pub claim_policies: Vec<String>,
}

impl TempCred {
    /// Whether the credentials have expired at `now` (Unix seconds).
    pub fn expired_at(&self, now: u64) -> bool {
        now >= self.expires
    }
}

/// Now, Unix seconds.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The session length of `DurationSeconds` (absent: the default), within
/// `min ..= MAX_DURATION`.
pub fn parse_duration(value: Option<&str>, min: u64) -> Result<u64, IamError> {
    let Some(v) = value.filter(|v| !v.is_empty()) else {
        return Ok(DEFAULT_DURATION.max(min));
    };
    match v.parse::<u64>() {
        Ok(d) if (min..=MAX_DURATION).contains(&d) => Ok(d),
        _ => Err(IamError::Invalid(format!(
            "DurationSeconds must be a whole number of seconds from {min} to {MAX_DURATION}"
        ))),
    }
}

/// A session policy as the caller sent it: a policy document that parses,
/// names a version, and fits the bound once compacted. Returns the
/// compacted JSON (what the token carries) and the parsed policy.
pub fn parse_session_policy(text: &str) -> Result<(Vec<u8>, Arc<Policy>), IamError> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| IamError::Invalid(format!("the session policy is not JSON: {e}")))?;
    if value
        .get("Version")
        .and_then(|v| v.as_str())
        .is_none_or(str::is_empty)
    {
        return Err(IamError::Invalid(
            "the session policy's Version cannot be empty, expecting '2012-10-17'".into(),
        ));
    }
    let compact = serde_json::to_vec(&value).unwrap_or_default();
    if compact.len() > MAX_SESSION_POLICY {
        return Err(IamError::Invalid(format!(
            "the session policy is larger than {MAX_SESSION_POLICY} bytes"
        )));
    }
    let p = Policy::parse_iam(&compact)
        .map_err(|e| IamError::Invalid(format!("the session policy is not valid: {e}")))?;
    Ok((compact, Arc::new(p)))
}

/// Temporary credentials handed out.
#[derive(Debug, Clone)]
pub struct Issued {
    pub access_key: String,
    pub secret_key: String,
    pub session_token: String,
    /// Unix seconds.
    pub expires: u64,
}

impl IamState {
    /// The identity temporary credentials of `parent` act as, restricted
    /// by `session_policy`: the parent's, if it is the root user or an
    /// enabled user.
    pub(super) fn temp_identity(
        &self,
        parent: &str,
        parent_is_root: bool,
        session_policy: Option<Arc<Policy>>,
    ) -> Option<Identity> {
        let mut id = if let Some(web) = self.web_identity(parent) {
            web
        } else if parent_is_root {
            Identity {
                name: parent.to_owned(),
                arn: format!("arn:aws:iam:::user/{parent}"),
                groups: Vec::new(),
                policies: Vec::new(),
                session_policy: None,
                root_parent: false,
                temporary: false,
                service: false,
            }
        } else {
            self.identities.get(parent)?.as_ref().clone()
        };
        id.root_parent = parent_is_root;
        id.temporary = true;
        id.session_policy = session_policy;
        Some(id)
    }
}

impl Iam {
    /// The key session tokens are signed with: the root user's secret key,
    /// as MinIO signs them.
    fn token_key(&self) -> Option<String> {
        self.root_secret(&self.root_key)
    }

    /// Reads the stored temporary credentials into `st` (after its users
    /// and policies): those whose token verifies and that have not
    /// expired. Expired ones are removed from the drives.
    pub(super) async fn load_temps(&self, st: &mut IamState) -> Result<(), IamError> {
        let Some(key) = self.token_key() else {
            return Ok(());
        };
        let now = unix_now();
        for name in self.names(store::STS_PREFIX, "/identity.json").await? {
            let path = sts_path(&name);
            let Some(doc) = self.read_json::<UserIdentity>(&path).await? else {
                continue;
            };
            let c = doc.credentials;
            let claims = match token::verify(&c.session_token, key.as_bytes()) {
                Ok(cl) => cl,
                Err(e) => {
                    tracing::warn!(%path, "temporary credentials skipped: token {e:?}");
                    continue;
                }
            };
            if claims.exp == 0 {
                tracing::warn!(%path, "temporary credentials skipped: token without expiry");
                continue;
            }
            if now >= claims.exp {
                if let Err(e) = self.layer.delete_config(&path).await {
                    tracing::debug!(%path, "expired temporary credentials not removed: {e}");
                }
                continue;
            }
            if claims.access_key != name || c.secret_key.is_empty() {
                tracing::warn!(%path, "temporary credentials skipped: token of another key");
                continue;
            }
            let session_policy = match &claims.session_policy {
                None => None,
                Some(p) => match Policy::parse_iam(p) {
                    Ok(p) => Some(Arc::new(p)),
                    Err(e) => {
                        tracing::warn!(%path, "temporary credentials skipped: policy {e}");
                        continue;
                    }
                },
            };
            let parent = if c.parent_user.is_empty() {
                claims.parent
            } else {
                c.parent_user
            };
            let claim_policies =
                super::webid::policy_names(&crate::oidc::claim_values(&claims.raw, "policy"));
            st.temps.insert(
                name,
                Arc::new(TempCred {
                    secret_key: c.secret_key,
                    session_token: c.session_token,
                    expires: claims.exp,
                    parent,
                    session_policy,
                    claim_policies,
                }),
            );
        }
        let ids: Vec<(String, Arc<Identity>)> = st
            .temps
            .iter()
            .filter_map(|(ak, t)| {
                let root = self.is_root(&t.parent);
                let web_parent = !root && !st.users.contains_key(&t.parent);
                if web_parent && !st.sts_policies.contains_key(&t.parent) {
                    // A web identity whose mapping is not stored: the
                    // policies its token names.
                    return Some((
                        ak.clone(),
                        Arc::new(st.policies_identity(
                            &t.parent,
                            &t.claim_policies,
                            t.session_policy.clone(),
                        )),
                    ));
                }
                st.temp_identity(&t.parent, root, t.session_policy.clone())
                    .map(|id| (ak.clone(), Arc::new(id)))
            })
            .collect();
        st.temp_identities.extend(ids);
        Ok(())
    }

    /// Makes temporary credentials for `parent` (a user, or the root
    /// user) lasting `duration` seconds, restricted by `session_policy`
    /// (compacted JSON and its parsed form), stores them and publishes
    /// them.
    pub async fn assume_role(
        &self,
        parent: &str,
        duration: u64,
        session_policy: Option<(Vec<u8>, Arc<Policy>)>,
    ) -> Result<Issued, IamError> {
        let _g = self.changes.lock().await;
        if !self.is_root(parent) && !self.snapshot().identities.contains_key(parent) {
            return Err(IamError::NoSuchUser(parent.to_owned()));
        }
        let claims = token::session_claims(
            "",
            0,
            parent,
            session_policy.as_ref().map(|(json, _)| json.as_slice()),
        );
        let expires = unix_now() + duration;
        let issued = self.issue(parent, expires, claims).await?;
        self.publish().await?;
        Ok(issued)
    }

    /// Stores temporary credentials for `parent` expiring at `expires`
    /// whose token carries `claims` (their access key and expiry set
    /// here), after removing expired ones; within the bounds per parent
    /// and in all. The caller holds the change lock and publishes.
    pub(super) async fn issue(
        &self,
        parent: &str,
        expires: u64,
        mut claims: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Issued, IamError> {
        let key = self
            .token_key()
            .ok_or_else(|| IamError::Invalid("the server has no root user".into()))?;
        let st = self.snapshot();
        let now = unix_now();
        let mut expired = Vec::new();
        let mut mine = 0usize;
        for (ak, t) in &st.temps {
            if t.expired_at(now) {
                expired.push(ak.clone());
            } else if t.parent == parent {
                mine += 1;
            }
        }
        if mine >= MAX_PER_PARENT {
            return Err(IamError::Invalid(format!(
                "{parent} has {MAX_PER_PARENT} live temporary credentials, the most allowed"
            )));
        }
        if st.temps.len() - expired.len() >= MAX_TOTAL {
            return Err(IamError::Invalid(format!(
                "the server holds {MAX_TOTAL} live temporary credentials, the most allowed"
            )));
        }
        for ak in expired {
            self.layer.delete_config(&sts_path(&ak)).await?;
        }
        let access_key = token::new_access_key();
        let secret_key = token::new_secret_key();
        claims.insert("accessKey".into(), access_key.clone().into());
        claims.insert("exp".into(), expires.into());
        let session_token = token::sign(&claims, key.as_bytes());
        let doc = UserIdentity {
            version: 1,
            credentials: StoredCredentials {
                access_key: access_key.clone(),
                secret_key: secret_key.clone(),
                session_token: session_token.clone(),
                expiration: store::rfc3339(UNIX_EPOCH + std::time::Duration::from_secs(expires)),
                status: "on".to_owned(),
                parent_user: parent.to_owned(),
                ..StoredCredentials::default()
            },
            updated_at: store::now_rfc3339(),
        };
        self.write_json(&sts_path(&access_key), &doc).await?;
        Ok(Issued {
            access_key,
            secret_key,
            session_token,
            expires,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_bounded_as_minio_bounds_them() {
        assert_eq!(parse_duration(None, MIN_DURATION).unwrap(), 3600);
        assert_eq!(parse_duration(Some(""), MIN_DURATION).unwrap(), 3600);
        assert_eq!(parse_duration(Some("900"), MIN_DURATION).unwrap(), 900);
        assert_eq!(
            parse_duration(Some("31536000"), MIN_DURATION).unwrap(),
            MAX_DURATION
        );
        for bad in [
            "899",
            "31536001",
            "-1",
            "1h",
            "9999999999999999999999",
            " 900",
        ] {
            assert!(parse_duration(Some(bad), MIN_DURATION).is_err(), "{bad}");
        }
        // The test-only shorter minimum.
        assert_eq!(parse_duration(Some("1"), 1).unwrap(), 1);
    }

    #[test]
    fn session_policies_are_checked_and_compacted() {
        let (json, _) = parse_session_policy(
            r#"{ "Version": "2012-10-17",
                 "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::b/*"]}] }"#,
        )
        .unwrap();
        assert!(!json.contains(&b'\n'));
        assert!(parse_session_policy("not json").is_err());
        assert!(parse_session_policy(r#"{"Statement":[]}"#).is_err());
        let big = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::{}"]}}]}}"#,
            "b".repeat(MAX_SESSION_POLICY)
        );
        assert!(parse_session_policy(&big).is_err());
    }

    #[test]
    fn expiry_is_inclusive_of_the_expiry_second() {
        let t = TempCred {
            secret_key: String::new(),
            session_token: String::new(),
            expires: 100,
            parent: "p".into(),
            session_policy: None,
            claim_policies: Vec::new(),
        };
        assert!(!t.expired_at(99));
        assert!(t.expired_at(100));
        assert!(t.expired_at(101));
    }
}
