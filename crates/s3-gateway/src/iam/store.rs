//! MinIO's IAM documents under `.minio.sys/config/iam/`, read and written
//! in MinIO's JSON shapes so that MinIO serving the same drives sees the
//! same users, groups, policies and attachments:
//!
//! ```text
//! format.json                          {"version":1}
//! users/<access key>/identity.json     {"version":1,"credentials":{..},"updatedAt":..}
//! groups/<group>/members.json          {"version":1,"status":"enabled","members":[..],"updatedAt":..}
//! policies/<name>/policy.json          {"Version":1,"Policy":{..},"CreateDate":..,"UpdateDate":..}
//! policydb/users/<access key>.json     {"version":1,"policy":"a,b","updatedAt":..}
//! policydb/groups/<group>.json         (the same)
//! sts/<access key>/identity.json       temporary credentials (AssumeRole)
//! service-accounts/<key>/identity.json service accounts (with their token)
//! policydb/sts-users/<parent>.json     policies of a web identity's sessions
//! ```
//!
//! MinIO writes these documents in the clear unless it has a KMS, and
//! reads either; documents encrypted by a MinIO KMS are refused with a
//! clear error (see `Error::Encrypted`).

use serde::{Deserialize, Serialize};

/// Where the IAM documents live, under `.minio.sys`.
pub const IAM_PREFIX: &str = "config/iam/";
/// The format marker MinIO writes once.
pub const FORMAT_PATH: &str = "config/iam/format.json";
pub const USERS_PREFIX: &str = "config/iam/users/";
pub const GROUPS_PREFIX: &str = "config/iam/groups/";
pub const POLICIES_PREFIX: &str = "config/iam/policies/";
pub const USER_POLICY_PREFIX: &str = "config/iam/policydb/users/";
pub const GROUP_POLICY_PREFIX: &str = "config/iam/policydb/groups/";
/// Temporary credentials of AssumeRole (MinIO writes no policy mapping for
/// those of a user: their rights are the parent's and the token's).
pub const STS_PREFIX: &str = "config/iam/sts/";

/// Service accounts (MinIO writes no policy mapping for them either: the
/// token says whether the parent's policies or an embedded one apply).
pub const SVC_PREFIX: &str = "config/iam/service-accounts/";

/// The expiry MinIO writes for a service account that never expires:
/// Unix time 0.
pub const EPOCH: &str = "1970-01-01T00:00:00Z";

/// The expiry MinIO writes for keys that never expire: Go's zero time
/// (older MinIO wrote Unix time 0, which reads as never expiring too).
pub const NEVER: &str = GO_ZERO;

pub fn user_path(access_key: &str) -> String {
    format!("{USERS_PREFIX}{access_key}/identity.json")
}

pub fn sts_path(access_key: &str) -> String {
    format!("{STS_PREFIX}{access_key}/identity.json")
}

/// Policies of web identities' temporary credentials, by parent.
pub const STS_POLICY_PREFIX: &str = "config/iam/policydb/sts-users/";

pub fn sts_policy_path(parent: &str) -> String {
    format!("{STS_POLICY_PREFIX}{parent}.json")
}

pub fn svc_path(access_key: &str) -> String {
    format!("{SVC_PREFIX}{access_key}/identity.json")
}

pub fn group_path(group: &str) -> String {
    format!("{GROUPS_PREFIX}{group}/members.json")
}

pub fn policy_path(name: &str) -> String {
    format!("{POLICIES_PREFIX}{name}/policy.json")
}

pub fn user_policy_path(access_key: &str) -> String {
    format!("{USER_POLICY_PREFIX}{access_key}.json")
}

pub fn group_policy_path(group: &str) -> String {
    format!("{GROUP_POLICY_PREFIX}{group}.json")
}

/// `format.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Format {
    pub version: u32,
}

/// MinIO's `auth.Credentials` as it stores them.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct StoredCredentials {
    #[serde(
        rename = "accessKey",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub access_key: String,
    #[serde(
        rename = "secretKey",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub secret_key: String,
    #[serde(
        rename = "sessionToken",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub session_token: String,
    #[serde(default = "never")]
    pub expiration: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(
        rename = "parentUser",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub parent_user: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

fn never() -> String {
    NEVER.to_owned()
}

/// `users/<access key>/identity.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserIdentity {
    pub version: u32,
    pub credentials: StoredCredentials,
    #[serde(rename = "updatedAt", default = "never")]
    pub updated_at: String,
}

/// `groups/<group>/members.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupInfo {
    pub version: u32,
    pub status: String,
    #[serde(default)]
    pub members: Vec<String>,
    #[serde(rename = "updatedAt", default = "never")]
    pub updated_at: String,
}

/// `policydb/{users,groups}/<name>.json`: the attached policies, names
/// joined with commas.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MappedPolicy {
    pub version: u32,
    #[serde(rename = "policy", default)]
    pub policies: String,
    #[serde(rename = "updatedAt", default = "never")]
    pub updated_at: String,
}

impl MappedPolicy {
    /// The attached policy names, without blanks or repeats, in order.
    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for n in self.policies.split(',').map(str::trim) {
            if !n.is_empty() && !out.iter().any(|o| o == n) {
                out.push(n.to_owned());
            }
        }
        out
    }
}

/// `policies/<name>/policy.json` in its current shape (MinIO also reads a
/// bare policy, its shape before December 2021: [`parse_policy_doc`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PolicyDoc {
    #[serde(rename = "Version", default, skip_serializing_if = "is_zero")]
    pub version: u32,
    #[serde(rename = "Policy")]
    pub policy: serde_json::Value,
    #[serde(rename = "CreateDate", default = "go_zero")]
    pub create_date: String,
    #[serde(rename = "UpdateDate", default = "go_zero")]
    pub update_date: String,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Go's zero time, as `encoding/json` writes it.
pub const GO_ZERO: &str = "0001-01-01T00:00:00Z";

fn go_zero() -> String {
    GO_ZERO.to_owned()
}

/// A stored policy document in either of MinIO's shapes.
pub fn parse_policy_doc(bytes: &[u8]) -> Result<PolicyDoc, String> {
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if v.get("Policy").is_some_and(|p| p.is_object()) {
        serde_json::from_value(v).map_err(|e| e.to_string())
    } else {
        Ok(PolicyDoc {
            version: 1,
            policy: v,
            create_date: go_zero(),
            update_date: go_zero(),
        })
    }
}

/// Now as MinIO writes times (RFC 3339 with nanoseconds, UTC).
pub fn now_rfc3339() -> String {
    rfc3339(std::time::SystemTime::now())
}

/// `t` in RFC 3339 with the fraction Go prints (trailing zeros dropped).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, dd) = crate::auth::time_civil_from_days(days);
    let mut s = format!(
        "{y:04}-{m:02}-{dd:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
    let nanos = d.subsec_nanos();
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minio_identity_documents_read_and_write_in_its_shape() {
        // As MinIO writes a user made by `mc admin user add`.
        let doc = br#"{"version":1,"credentials":{"accessKey":"alice","secretKey":"alice-secret-1","expiration":"0001-01-01T00:00:00Z","status":"on"},"updatedAt":"2026-11-28T20:01:02.123456789Z"}"#;
        let u: UserIdentity = serde_json::from_slice(doc).unwrap();
        assert_eq!(u.credentials.access_key, "alice");
        assert_eq!(u.credentials.status, "on");
        let back = serde_json::to_string(&u).unwrap();
        assert_eq!(back.as_bytes(), &doc[..]);
    }

    #[test]
    fn both_policy_doc_shapes_parse() {
        let new = br#"{"Version":1,"Policy":{"Version":"2012-10-17","Statement":[]},"CreateDate":"2026-01-01T00:00:00Z","UpdateDate":"2026-01-02T00:00:00Z"}"#;
        let d = parse_policy_doc(new).unwrap();
        assert_eq!(d.update_date, "2026-01-02T00:00:00Z");
        assert_eq!(d.policy["Version"], "2012-10-17");
        let old = br#"{"Version":"2012-10-17","Statement":[]}"#;
        let d = parse_policy_doc(old).unwrap();
        assert_eq!(d.policy["Version"], "2012-10-17");
        assert_eq!(d.create_date, GO_ZERO);
    }

    #[test]
    fn mapped_policies_split_as_minio_joins_them() {
        let m: MappedPolicy = serde_json::from_slice(
            br#"{"version":1,"policy":"readonly, diag,,readonly","updatedAt":"x"}"#,
        )
        .unwrap();
        assert_eq!(m.names(), ["readonly", "diag"]);
    }

    #[test]
    fn times_print_as_go_prints_them() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::new(1_795_000_000, 120_000_000);
        assert_eq!(rfc3339(t), "2026-11-18T11:06:40.12Z");
        assert_eq!(rfc3339(std::time::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }
}
