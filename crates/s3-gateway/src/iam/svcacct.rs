//! Service accounts (MinIO's "access keys"): long-lived keys that belong
//! to a user (or the root user), stored as MinIO stores them
//! (`service-accounts/<access key>/identity.json`, with the parent, the
//! status, an optional expiry, and a token signed with the account's own
//! secret key that says whether the parent's policies apply as they are
//! or restricted by an embedded policy).
//!
//! Their rights are the parent's (its policies and its groups' as they
//! are now), and, with an embedded policy, only what that policy allows
//! too. A parent that is disabled takes its service accounts' rights
//! with it; a parent that is removed takes the accounts themselves.

use std::sync::Arc;

use policy::Policy;
use serde_json::{Map, Value};

use super::store::{self, StoredCredentials, UserIdentity, svc_path};
use super::temp::unix_now;
use super::token;
use super::{Iam, IamError, IamState};

/// Largest embedded policy, bytes of its compacted JSON (MinIO's bound).
pub const MAX_POLICY: usize = 4096;
/// The nearest expiry a service account may be given, seconds from now.
pub const MIN_EXPIRY: u64 = 15 * 60;
/// The farthest expiry a service account may be given, seconds from now.
pub const MAX_EXPIRY: u64 = 365 * 86_400;
/// Longest name, characters.
pub const MAX_NAME: usize = 32;
/// Longest description, bytes.
pub const MAX_DESCRIPTION: usize = 256;

/// A policy document as stored (compacted JSON) and its parsed form.
pub type EmbeddedPolicy = (Vec<u8>, Arc<Policy>);

/// A service account.
#[derive(Debug, Clone)]
pub struct SvcAccount {
    pub secret_key: String,
    /// The user (or the root user) it belongs to.
    pub parent: String,
    pub name: String,
    pub description: String,
    /// Unix seconds from which it is refused; `None`: never.
    pub expires: Option<u64>,
    pub enabled: bool,
    /// The embedded policy (compacted JSON, parsed); `None`: the parent's
    /// policies apply as they are.
    pub policy: Option<EmbeddedPolicy>,
    /// The claims of its token, kept when the token is signed again.
    pub claims: Map<String, Value>,
    pub groups: Vec<String>,
    pub updated_at: String,
}

impl SvcAccount {
    /// Whether it has expired at `now` (Unix seconds).
    pub fn expired_at(&self, now: u64) -> bool {
        self.expires.is_some_and(|e| now >= e)
    }
}

/// What a new service account is made with.
#[derive(Debug, Default, Clone)]
pub struct NewSvcAccount {
    /// Both or neither: generated when absent.
    pub keys: Option<(String, String)>,
    pub name: String,
    pub description: String,
    pub expires: Option<u64>,
    /// The embedded policy as the caller sent it.
    pub policy: Option<Vec<u8>>,
}

/// A change of a service account; `None` leaves a field as it is.
#[derive(Debug, Default, Clone)]
pub struct SvcAccountUpdate {
    pub secret_key: Option<String>,
    pub enabled: Option<bool>,
    pub name: Option<String>,
    pub description: Option<String>,
    /// `Some(None)`: never expires.
    pub expires: Option<Option<u64>>,
    /// `Some(None)`: the embedded policy is removed.
    pub policy: Option<Option<Vec<u8>>>,
}

/// The expiry of a stored `expiration`: `None` for Go's zero time, Unix
/// time 0, or anything before 1970 (MinIO's ways of writing "never").
pub fn parse_expiry(text: &str) -> Result<Option<u64>, IamError> {
    let t = policy::parse_rfc3339(text)
        .ok_or_else(|| IamError::Invalid(format!("the expiration {text:?} is not a time")))?;
    Ok(u64::try_from(t.unix_secs).ok().filter(|s| *s > 0))
}

/// Checks an expiry set by a caller: from 15 minutes to 365 days ahead.
pub fn check_expiry(expires: Option<u64>, now: u64) -> Result<(), IamError> {
    match expires {
        Some(e) if e < now + MIN_EXPIRY || e > now + MAX_EXPIRY => Err(IamError::Invalid(
            "the expiration must be from 15 minutes to 365 days ahead".into(),
        )),
        _ => Ok(()),
    }
}

/// Checks a name and description as madmin does.
pub fn check_label(name: &str, description: &str) -> Result<(), IamError> {
    let name_ok = name.is_empty()
        || (name.len() <= MAX_NAME
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    if !name_ok {
        return Err(IamError::Invalid(format!(
            "a service account's name has at most {MAX_NAME} ASCII letters, digits, '_' or '-', and starts with a letter"
        )));
    }
    if description.len() > MAX_DESCRIPTION {
        return Err(IamError::Invalid(format!(
            "a service account's description has at most {MAX_DESCRIPTION} bytes"
        )));
    }
    Ok(())
}

/// An embedded policy as the caller sent it: `None` for a policy with
/// neither a version nor statements (which MinIO reads as "no policy"),
/// else its compacted JSON and parsed form.
pub fn parse_policy(text: &[u8]) -> Result<Option<EmbeddedPolicy>, IamError> {
    let value: Value = serde_json::from_slice(text)
        .map_err(|e| IamError::Invalid(format!("the policy is not JSON: {e}")))?;
    let version = value.get("Version").and_then(Value::as_str).unwrap_or("");
    let statements = value
        .get("Statement")
        .is_some_and(|s| !s.is_null() && s.as_array().is_none_or(|a| !a.is_empty()));
    if version.is_empty() && !statements {
        return Ok(None);
    }
    let compact = serde_json::to_vec(&value).unwrap_or_default();
    if compact.len() > MAX_POLICY {
        return Err(IamError::PolicyTooLarge);
    }
    let p = Policy::parse_iam(&compact)
        .map_err(|e| IamError::Invalid(format!("the policy is not valid: {e}")))?;
    Ok(Some((compact, Arc::new(p))))
}

fn store_doc(access_key: &str, s: &SvcAccount, session_token: String) -> UserIdentity {
    let expiration = match s.expires {
        Some(e) => store::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(e)),
        None => store::EPOCH.to_owned(),
    };
    UserIdentity {
        version: 1,
        credentials: StoredCredentials {
            access_key: access_key.to_owned(),
            secret_key: s.secret_key.clone(),
            session_token,
            expiration,
            status: if s.enabled { "on" } else { "off" }.to_owned(),
            parent_user: s.parent.clone(),
            groups: s.groups.clone(),
            name: s.name.clone(),
            description: s.description.clone(),
        },
        updated_at: s.updated_at.clone(),
    }
}

impl IamState {
    /// Whether `access_key` names any key: a user, a service account or
    /// temporary credentials.
    pub fn key_taken(&self, access_key: &str) -> bool {
        self.users.contains_key(access_key)
            || self.svcaccts.contains_key(access_key)
            || self.temps.contains_key(access_key)
    }

    /// Names of the policies that apply to `user` as it is now: its own,
    /// then its enabled groups'.
    pub fn policy_names_of(&self, user: &str) -> Vec<String> {
        let mut names: Vec<String> = self.user_policies.get(user).cloned().unwrap_or_default();
        for g in self.member_of.get(user).into_iter().flatten() {
            if self.groups.get(g).is_some_and(|g| g.enabled) {
                for n in self.group_policies.get(g).into_iter().flatten() {
                    if !names.contains(n) {
                        names.push(n.clone());
                    }
                }
            }
        }
        names
    }

    /// The policy documents of `names` as one policy (their statements
    /// in order), as MinIO shows a service account's implied policy.
    pub fn combined_policy(&self, names: &[String]) -> Value {
        let mut statements = Vec::new();
        for n in names {
            let Some(p) = self.policies.get(n) else {
                continue;
            };
            match p.doc.policy.get("Statement") {
                Some(Value::Array(a)) => statements.extend(a.iter().cloned()),
                Some(one @ Value::Object(_)) => statements.push(one.clone()),
                _ => {}
            }
        }
        serde_json::json!({ "Version": "2012-10-17", "Statement": statements })
    }
}

impl Iam {
    /// Reads the stored service accounts into `st` (after its users): those
    /// whose token verifies under their own secret key and names their
    /// parent. Expired ones are removed from the drives, as MinIO removes
    /// them when it loads.
    pub(super) async fn load_svcaccts(&self, st: &mut IamState) -> Result<(), IamError> {
        let now = unix_now();
        for name in self.names(store::SVC_PREFIX, "/identity.json").await? {
            let path = svc_path(&name);
            let Some(doc) = self.read_json::<UserIdentity>(&path).await? else {
                continue;
            };
            match account_of(&name, doc) {
                Ok(s) if s.expired_at(now) => {
                    if let Err(e) = self.layer.delete_config(&path).await {
                        tracing::debug!(%path, "expired service account not removed: {e}");
                    }
                }
                Ok(s) => {
                    st.svcaccts.insert(name, Arc::new(s));
                }
                Err(why) => tracing::warn!(%path, "service account skipped: {why}"),
            }
        }
        let ids: Vec<_> = st
            .svcaccts
            .iter()
            .filter(|(_, s)| s.enabled)
            .filter_map(|(ak, s)| {
                let root = self.is_root(&s.parent);
                let policy = s.policy.as_ref().map(|(_, p)| Arc::clone(p));
                let mut id = st.temp_identity(&s.parent, root, policy)?;
                id.temporary = false;
                id.service = true;
                Some((ak.clone(), Arc::new(id)))
            })
            .collect();
        st.svc_identities.extend(ids);
        Ok(())
    }

    /// Makes a service account for `parent` (a user or the root user).
    /// Returns its access key, secret key and expiry.
    pub async fn add_service_account(
        &self,
        parent: &str,
        new: NewSvcAccount,
    ) -> Result<(String, String, Option<u64>), IamError> {
        check_label(&new.name, &new.description)?;
        let now = unix_now();
        check_expiry(new.expires, now)?;
        let policy = match &new.policy {
            Some(p) => parse_policy(p)?,
            None => None,
        };
        let (access_key, secret_key) = match new.keys {
            Some((a, s)) => {
                super::check_name("access key", &a, 3, 20)?;
                if a.trim() != a {
                    return Err(IamError::Invalid(
                        "an access key cannot begin or end with a space".into(),
                    ));
                }
                check_secret(&s)?;
                (a, s)
            }
            None => (token::new_access_key(), token::new_secret_key()),
        };
        if access_key == parent || self.is_root(&access_key) {
            return Err(IamError::NotAllowed(
                "a service account's access key cannot be its parent's or the root user's".into(),
            ));
        }
        let _g = self.changes.lock().await;
        let st = self.snapshot();
        if !self.is_root(parent) && !st.users.contains_key(parent) {
            return Err(IamError::NoSuchUser(parent.to_owned()));
        }
        if st.key_taken(&access_key) {
            return Err(IamError::NotAllowed(
                "the service account's access key is already taken".into(),
            ));
        }
        if st.svcaccts.len() >= super::MAX_ENTRIES {
            return Err(IamError::Invalid(format!(
                "more than {} service accounts",
                super::MAX_ENTRIES
            )));
        }
        let account = SvcAccount {
            secret_key: secret_key.clone(),
            parent: parent.to_owned(),
            name: new.name,
            description: new.description,
            expires: new.expires,
            enabled: true,
            policy,
            claims: Map::new(),
            // MinIO keeps the creator's session groups here (none for
            // its own users); the parent's groups apply as they are now.
            groups: Vec::new(),
            updated_at: store::now_rfc3339(),
        };
        self.save_svc(&access_key, &account).await?;
        self.publish().await?;
        Ok((access_key, secret_key, new.expires))
    }

    /// Changes service account `access_key`.
    pub async fn update_service_account(
        &self,
        access_key: &str,
        update: SvcAccountUpdate,
    ) -> Result<(), IamError> {
        let _g = self.changes.lock().await;
        let st = self.snapshot();
        let mut s = st
            .svcaccts
            .get(access_key)
            .map(|s| s.as_ref().clone())
            .ok_or_else(|| IamError::NoSuchServiceAccount(access_key.to_owned()))?;
        if let Some(secret) = update.secret_key {
            check_secret(&secret)?;
            s.secret_key = secret;
        }
        if let Some(e) = update.enabled {
            s.enabled = e;
        }
        if let Some(n) = update.name {
            s.name = n;
        }
        if let Some(d) = update.description {
            s.description = d;
        }
        check_label(&s.name, &s.description)?;
        if let Some(e) = update.expires {
            check_expiry(e, unix_now())?;
            s.expires = e;
        }
        if let Some(p) = update.policy {
            s.policy = match p {
                Some(text) => parse_policy(&text)?,
                None => None,
            };
        }
        s.updated_at = store::now_rfc3339();
        self.save_svc(access_key, &s).await?;
        self.publish().await
    }

    /// Removes service account `access_key`.
    pub async fn remove_service_account(&self, access_key: &str) -> Result<(), IamError> {
        let _g = self.changes.lock().await;
        if !self.snapshot().svcaccts.contains_key(access_key) {
            return Err(IamError::NoSuchServiceAccount(access_key.to_owned()));
        }
        self.layer.delete_config(&svc_path(access_key)).await?;
        self.publish().await
    }

    /// Writes `s` with a token signed under its secret key.
    async fn save_svc(&self, access_key: &str, s: &SvcAccount) -> Result<(), IamError> {
        let claims = token::service_claims(
            access_key,
            &s.parent,
            s.policy.as_ref().map(|(json, _)| json.as_slice()),
            &s.claims,
        );
        let session_token = token::sign(&claims, s.secret_key.as_bytes());
        self.write_json(
            &svc_path(access_key),
            &store_doc(access_key, s, session_token),
        )
        .await
    }
}

/// Whether `secret` can be a secret key (MinIO's bounds), for users and
/// service accounts alike.
pub(super) fn check_secret(secret: &str) -> Result<(), IamError> {
    if (8..=40).contains(&secret.len()) {
        Ok(())
    } else {
        Err(IamError::Invalid(
            "a secret key has 8 to 40 characters".into(),
        ))
    }
}

/// The service account stored as `doc` under `access_key`, if its token
/// is its own and says it is one.
fn account_of(access_key: &str, doc: UserIdentity) -> Result<SvcAccount, String> {
    let c = doc.credentials;
    if c.secret_key.is_empty() || c.parent_user.is_empty() {
        return Err("no secret key or no parent".into());
    }
    let claims = token::verify(&c.session_token, c.secret_key.as_bytes())
        .map_err(|e| format!("token {e:?}"))?;
    if claims.access_key != access_key {
        return Err("a token of another key".into());
    }
    // MinIO refuses a service account whose token names another parent
    // (a leaked token cannot widen a key's rights).
    if claims.parent != c.parent_user {
        return Err("the token names another parent".into());
    }
    let embedded = match claims.raw.get("sa-policy").and_then(Value::as_str) {
        Some(token::INHERITED_POLICY) => false,
        Some(token::EMBEDDED_POLICY) => true,
        _ => return Err("the token has no sa-policy claim".into()),
    };
    let policy = match (&claims.session_policy, embedded) {
        (Some(p), true) => parse_policy(p).map_err(|e| format!("policy: {e}"))?,
        _ => None,
    };
    let expires = parse_expiry(&c.expiration).map_err(|e| e.to_string())?;
    let mut raw = claims.raw;
    for k in ["accessKey", "parent", "sa-policy", "sessionPolicy"] {
        raw.remove(k);
    }
    Ok(SvcAccount {
        secret_key: c.secret_key,
        parent: c.parent_user,
        name: c.name,
        description: c.description,
        expires,
        enabled: c.status != "off" && c.status != "disabled",
        policy,
        claims: raw,
        groups: c.groups,
        updated_at: doc.updated_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(secret: &str, token: String, expiration: &str, status: &str) -> UserIdentity {
        UserIdentity {
            version: 1,
            credentials: StoredCredentials {
                access_key: "SVC1".into(),
                secret_key: secret.into(),
                session_token: token,
                expiration: expiration.into(),
                status: status.into(),
                parent_user: "alice".into(),
                ..StoredCredentials::default()
            },
            updated_at: store::GO_ZERO.into(),
        }
    }

    #[test]
    fn stored_accounts_read_as_minio_writes_them() {
        let policy = br#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/*"]}]}"#;
        let t = token::sign(
            &token::service_claims("SVC1", "alice", Some(policy), &Map::new()),
            b"svc-secret-1",
        );
        let s = account_of("SVC1", doc("svc-secret-1", t.clone(), store::EPOCH, "on")).unwrap();
        assert_eq!((s.expires, s.enabled), (None, true));
        let json = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap();
        assert_eq!(json(&s.policy.as_ref().unwrap().0), json(policy));
        // Go's zero time is "never" too; an expiry is kept.
        let s = account_of(
            "SVC1",
            doc("svc-secret-1", t.clone(), store::GO_ZERO, "off"),
        )
        .unwrap();
        assert_eq!((s.expires, s.enabled), (None, false));
        let s = account_of(
            "SVC1",
            doc("svc-secret-1", t.clone(), "2030-01-01T00:00:00Z", "on"),
        )
        .unwrap();
        assert_eq!(s.expires, Some(1_893_456_000));
        assert!(s.expired_at(1_893_456_000) && !s.expired_at(1_893_455_999));
        // A token under another key, of another key or another parent is
        // refused.
        assert!(account_of("SVC1", doc("other-secret", t.clone(), store::EPOCH, "on")).is_err());
        assert!(account_of("SVC2", doc("svc-secret-1", t, store::EPOCH, "on")).is_err());
        let t = token::sign(
            &token::service_claims("SVC1", "mallory", None, &Map::new()),
            b"svc-secret-1",
        );
        assert!(account_of("SVC1", doc("svc-secret-1", t, store::EPOCH, "on")).is_err());
        // A token without the sa-policy claim is temporary credentials'.
        let t = token::sign(
            &token::session_claims("SVC1", 5, "alice", None),
            b"svc-secret-1",
        );
        assert!(account_of("SVC1", doc("svc-secret-1", t, store::EPOCH, "on")).is_err());
    }

    #[test]
    fn written_documents_have_minio_shape() {
        let s = SvcAccount {
            secret_key: "svc-secret-1".into(),
            parent: "alice".into(),
            name: "backup".into(),
            description: String::new(),
            expires: None,
            enabled: true,
            policy: None,
            claims: Map::new(),
            groups: Vec::new(),
            updated_at: "2026-11-29T00:00:00Z".into(),
        };
        let d = serde_json::to_value(store_doc("SVC1", &s, "t".into())).unwrap();
        assert_eq!(
            d,
            serde_json::json!({"version":1,"credentials":{"accessKey":"SVC1","secretKey":"svc-secret-1","sessionToken":"t","expiration":"1970-01-01T00:00:00Z","status":"on","parentUser":"alice","name":"backup"},"updatedAt":"2026-11-29T00:00:00Z"})
        );
    }

    #[test]
    fn labels_expiries_and_policies_are_checked() {
        assert!(check_label("backup-1_x", &"d".repeat(MAX_DESCRIPTION)).is_ok());
        assert!(check_label("", "").is_ok());
        for bad in ["1abc", "a b", "ä", &"a".repeat(MAX_NAME + 1)] {
            assert!(check_label(bad, "").is_err(), "{bad}");
        }
        assert!(check_label("a", &"d".repeat(MAX_DESCRIPTION + 1)).is_err());
        let now = 1_000_000;
        assert!(check_expiry(None, now).is_ok());
        assert!(check_expiry(Some(now + MIN_EXPIRY), now).is_ok());
        assert!(check_expiry(Some(now + MIN_EXPIRY - 1), now).is_err());
        assert!(check_expiry(Some(now + MAX_EXPIRY + 1), now).is_err());
        assert_eq!(parse_policy(b"{}").unwrap().map(|p| p.0), None);
        assert_eq!(
            parse_policy(br#"{"Version":"","Statement":[]}"#)
                .unwrap()
                .map(|p| p.0),
            None
        );
        assert!(parse_policy(b"nope").is_err());
        assert!(
            parse_policy(br#"{"Version":"2012-10-17","Statement":[{"Effect":"Maybe"}]}"#).is_err()
        );
        let big = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::{}"]}}]}}"#,
            "b".repeat(MAX_POLICY)
        );
        assert_eq!(
            parse_policy(big.as_bytes()).unwrap_err(),
            IamError::PolicyTooLarge
        );
    }
}
