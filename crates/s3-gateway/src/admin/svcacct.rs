//! MinIO's admin API for service accounts: what `mc admin user svcacct
//! add|edit|enable|disable|info|ls|rm` send (madmin-go v3's paths and
//! JSON shapes, request and answer bodies sealed with the caller's secret
//! key).
//!
//! Who may call, as MinIO decides it: any caller makes, lists, reads and
//! removes its own user's service accounts (a user's temporary
//! credentials or service accounts act for that user) unless a policy
//! denies the action; another user's need `admin:CreateServiceAccount`,
//! `admin:ListServiceAccounts` or `admin:RemoveServiceAccount`; changing
//! one always needs `admin:UpdateServiceAccount`. A service account
//! cannot own service accounts, and one of another user reads as absent
//! to a caller without the right.

use http::Response;
use policy::Decision;
use serde::{Deserialize, Serialize};

use super::iam::{
    IamCall, admin_error, invalid, json, madmin_decrypt, madmin_encrypt, ok_empty, parse_json,
    required,
};
use crate::authz::Requester;
use crate::error::S3Error;
use crate::iam::IamError;
use crate::iam::store;
use crate::iam::svcacct::{self, NewSvcAccount, SvcAccountUpdate};
use crate::service::{Ctx, Gateway, ResponseBody};

/// madmin's `AddServiceAccountReq`.
#[derive(Deserialize)]
struct AddReq {
    #[serde(default)]
    policy: Option<serde_json::Value>,
    #[serde(rename = "targetUser", default)]
    target_user: String,
    #[serde(rename = "accessKey", default)]
    access_key: String,
    #[serde(rename = "secretKey", default)]
    secret_key: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    expiration: Option<String>,
    #[serde(default)]
    comment: String,
}

/// madmin's `UpdateServiceAccountReq`.
#[derive(Deserialize)]
struct UpdateReq {
    #[serde(rename = "newPolicy", default)]
    policy: Option<serde_json::Value>,
    #[serde(rename = "newSecretKey", default)]
    secret_key: String,
    #[serde(rename = "newStatus", default)]
    status: String,
    #[serde(rename = "newName", default)]
    name: String,
    #[serde(rename = "newDescription", default)]
    description: String,
    #[serde(rename = "newExpiration", default)]
    expiration: Option<String>,
}

#[derive(Serialize)]
struct AddResp {
    credentials: NewCredentials,
}

#[derive(Serialize)]
struct NewCredentials {
    #[serde(rename = "accessKey")]
    access_key: String,
    #[serde(rename = "secretKey")]
    secret_key: String,
    expiration: String,
}

/// madmin's `InfoServiceAccountResp`.
#[derive(Serialize)]
struct InfoResp {
    #[serde(rename = "parentUser")]
    parent: String,
    #[serde(rename = "accountStatus")]
    status: &'static str,
    #[serde(rename = "impliedPolicy")]
    implied: bool,
    policy: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    expiration: Option<String>,
}

/// madmin's `ServiceAccountInfo`.
#[derive(Serialize)]
struct ListEntry {
    #[serde(rename = "parentUser")]
    parent: String,
    #[serde(rename = "accountStatus")]
    status: &'static str,
    #[serde(rename = "impliedPolicy")]
    implied: bool,
    #[serde(rename = "accessKey")]
    access_key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    description: String,
    expiration: String,
}

#[derive(Serialize)]
struct ListResp {
    accounts: Vec<ListEntry>,
}

fn status_word(enabled: bool) -> &'static str {
    if enabled { "on" } else { "off" }
}

fn expiry_text(expires: Option<u64>) -> String {
    match expires {
        Some(e) => store::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(e)),
        None => store::EPOCH.to_owned(),
    }
}

/// An expiry a caller sent: `None` for absent, Go's zero time or Unix
/// time 0 (never); seconds are kept, the fraction dropped as MinIO
/// drops it.
fn parse_expiration(v: Option<&str>) -> Result<Option<u64>, S3Error> {
    match v {
        None | Some("") => Ok(None),
        Some(t) => svcacct::parse_expiry(t).map_err(admin_error),
    }
}

/// A policy field as madmin sends it (a JSON value, `null` or absent
/// when none).
fn policy_bytes(v: &Option<serde_json::Value>) -> Option<Vec<u8>> {
    v.as_ref()
        .filter(|v| !v.is_null())
        .map(|v| serde_json::to_vec(v).unwrap_or_default())
}

/// A JSON value as Go's `json.MarshalIndent(v, "", " ")` writes it.
fn indented(v: &serde_json::Value) -> String {
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    if serde::Serialize::serialize(v, &mut ser).is_err() {
        return "{}".into();
    }
    String::from_utf8(out).unwrap_or_default()
}

impl Gateway {
    /// Serves a service account call for `who` (already authenticated),
    /// whose payloads are sealed with `secret`.
    pub(super) async fn serve_svcacct<B>(
        &self,
        ctx: &Ctx<B>,
        call: IamCall,
        who: &Requester,
        body: Vec<u8>,
        secret: String,
    ) -> Result<Response<ResponseBody>, S3Error> {
        // The user the caller acts for, and what its policies say of the
        // call's action (the root user may do everything).
        let (caller_user, decision) = match who {
            Requester::Owner => (ctx.access_key.clone(), Decision::Allow),
            Requester::User(id) => (
                id.name.clone(),
                crate::authz::admin_decision(id, call.action()),
            ),
            Requester::Anonymous => return Err(S3Error::new("AccessDenied")),
        };
        let denied = || S3Error::new("AccessDenied");
        let iam = &self.iam;
        match call {
            IamCall::AddServiceAccount => {
                let plain = madmin_decrypt(secret.clone(), body).await?;
                let req: AddReq = parse_json(&plain)?;
                let target = if req.target_user.is_empty() {
                    ctx.access_key.clone()
                } else {
                    req.target_user.clone()
                };
                // For itself (its key, or the user its derived key acts
                // for) unless denied; for others only if allowed.
                let for_self = target == ctx.access_key || target == caller_user;
                let ok = if for_self {
                    decision != Decision::Deny
                } else {
                    decision == Decision::Allow
                };
                if !ok {
                    return Err(denied());
                }
                let parent = if for_self { caller_user } else { target };
                let keys = match (req.access_key.is_empty(), req.secret_key.is_empty()) {
                    (true, true) => None,
                    (false, false) => Some((req.access_key, req.secret_key)),
                    _ => {
                        return Err(invalid(
                            "an access key and a secret key are given together or not at all",
                        ));
                    }
                };
                let description = if req.description.is_empty() {
                    req.comment
                } else {
                    req.description
                };
                let new = NewSvcAccount {
                    keys,
                    name: req.name,
                    description,
                    expires: parse_expiration(req.expiration.as_deref())?,
                    policy: policy_bytes(&req.policy),
                };
                let (access_key, secret_key, expires) = iam
                    .add_service_account(&parent, new)
                    .await
                    .map_err(admin_error)?;
                let resp = AddResp {
                    credentials: NewCredentials {
                        access_key,
                        secret_key,
                        expiration: expiry_text(expires),
                    },
                };
                madmin_encrypt(secret, json(&resp)).await
            }
            IamCall::UpdateServiceAccount => {
                let access = required(ctx, "accessKey")?.to_owned();
                if !iam.snapshot().svcaccts.contains_key(&access) {
                    return Err(admin_error(IamError::NoSuchServiceAccount(access)));
                }
                let plain = madmin_decrypt(secret, body).await?;
                let req: UpdateReq = parse_json(&plain)?;
                if decision != Decision::Allow {
                    return Err(denied());
                }
                let enabled = match req.status.as_str() {
                    "" => None,
                    "on" | "enabled" => Some(true),
                    "off" | "disabled" => Some(false),
                    other => return Err(invalid(format!("unknown account status {other:?}"))),
                };
                let nonempty = |s: String| Some(s).filter(|s| !s.is_empty());
                let update = SvcAccountUpdate {
                    secret_key: nonempty(req.secret_key),
                    enabled,
                    name: nonempty(req.name),
                    description: nonempty(req.description),
                    expires: match req.expiration.as_deref() {
                        None => None,
                        v => Some(parse_expiration(v)?),
                    },
                    // A policy sent replaces the embedded one; one with
                    // neither version nor statements removes it (the update
                    // reads it).
                    policy: policy_bytes(&req.policy).map(Some),
                };
                iam.update_service_account(&access, update)
                    .await
                    .map_err(admin_error)?;
                Ok(ok_empty_no_content())
            }
            IamCall::InfoServiceAccount => {
                let access = required(ctx, "accessKey")?;
                let st = iam.snapshot();
                let s = st
                    .svcaccts
                    .get(access)
                    .ok_or_else(|| admin_error(IamError::NoSuchServiceAccount(access.into())))?;
                if decision != Decision::Allow && caller_user != s.parent {
                    return Err(denied());
                }
                let policy = match &s.policy {
                    Some((text, _)) => serde_json::from_slice(text).unwrap_or_default(),
                    None => st.combined_policy(&st.policy_names_of(&s.parent)),
                };
                let resp = InfoResp {
                    parent: s.parent.clone(),
                    status: status_word(s.enabled),
                    implied: s.policy.is_none(),
                    policy: indented(&policy),
                    name: s.name.clone(),
                    description: s.description.clone(),
                    expiration: s.expires.map(|e| expiry_text(Some(e))),
                };
                madmin_encrypt(secret, json(&resp)).await
            }
            IamCall::ListServiceAccounts => {
                let user = ctx.q("user").filter(|u| !u.is_empty());
                let target = match user {
                    Some(u) if u != ctx.access_key => {
                        if decision != Decision::Allow {
                            return Err(denied());
                        }
                        u.to_owned()
                    }
                    _ => caller_user,
                };
                let st = iam.snapshot();
                let mut accounts: Vec<ListEntry> = st
                    .svcaccts
                    .iter()
                    .filter(|(_, s)| s.parent == target)
                    .map(|(ak, s)| ListEntry {
                        parent: s.parent.clone(),
                        status: status_word(s.enabled),
                        implied: s.policy.is_none(),
                        access_key: ak.clone(),
                        name: s.name.clone(),
                        description: s.description.clone(),
                        expiration: expiry_text(s.expires),
                    })
                    .collect();
                accounts.sort_by(|a, b| a.access_key.cmp(&b.access_key));
                madmin_encrypt(secret, json(&ListResp { accounts })).await
            }
            IamCall::DeleteServiceAccount => {
                let access = required(ctx, "accessKey")?;
                let not_found = || admin_error(IamError::NoSuchServiceAccount(access.into()));
                let parent = iam
                    .snapshot()
                    .svcaccts
                    .get(access)
                    .map(|s| s.parent.clone())
                    .ok_or_else(not_found)?;
                // Another user's account reads as absent, as MinIO
                // answers, so keys cannot be probed.
                if decision != Decision::Allow && caller_user != parent {
                    return Err(not_found());
                }
                iam.remove_service_account(access)
                    .await
                    .map_err(admin_error)?;
                Ok(ok_empty_no_content())
            }
            _ => Err(S3Error::internal("not a service account call")),
        }
    }
}

fn ok_empty_no_content() -> Response<ResponseBody> {
    let mut r = ok_empty();
    *r.status_mut() = http::StatusCode::NO_CONTENT;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_print_as_go_indents_them() {
        let v = serde_json::json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow"}]});
        assert_eq!(
            indented(&v),
            "{\n \"Statement\": [\n  {\n   \"Effect\": \"Allow\"\n  }\n ],\n \"Version\": \"2012-10-17\"\n}"
        );
    }

    #[test]
    fn expirations_read_as_madmin_sends_them() {
        assert_eq!(parse_expiration(None).unwrap(), None);
        assert_eq!(parse_expiration(Some(store::GO_ZERO)).unwrap(), None);
        assert_eq!(parse_expiration(Some(store::EPOCH)).unwrap(), None);
        assert_eq!(
            parse_expiration(Some("2030-01-01T00:00:00.75+01:00")).unwrap(),
            Some(1_893_452_400)
        );
        assert!(parse_expiration(Some("tomorrow")).is_err());
        assert_eq!(expiry_text(None), store::EPOCH);
        assert_eq!(expiry_text(Some(1_893_456_000)), "2030-01-01T00:00:00Z");
    }

    #[test]
    fn absent_and_null_policies_are_none() {
        let r: AddReq = serde_json::from_str(r#"{"policy":null}"#).unwrap();
        assert_eq!(policy_bytes(&r.policy), None);
        let r: AddReq = serde_json::from_str("{}").unwrap();
        assert_eq!(policy_bytes(&r.policy), None);
        let r: AddReq = serde_json::from_str(r#"{"policy":{"Version":"2012-10-17"}}"#).unwrap();
        assert_eq!(
            policy_bytes(&r.policy).unwrap(),
            br#"{"Version":"2012-10-17"}"#
        );
    }
}
