//! MinIO's admin API for users, groups and policies: what `mc admin user`,
//! `mc admin group` and `mc admin policy` send (madmin-go v3's paths and
//! JSON shapes). Bodies madmin encrypts with the caller's secret key are
//! decrypted, and answers it expects encrypted are encrypted, with
//! `sse::madmin`. Callers other than the root user need the `admin:*`
//! action of the call in one of their policies.

use std::collections::BTreeMap;
use std::time::SystemTime;

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body::Body;
use serde::{Deserialize, Serialize};

use crate::authz::Requester;
use crate::error::S3Error;
use crate::iam::IamError;
use crate::service::{Ctx, Gateway, ResponseBody};

/// A call of the IAM part of the admin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IamCall {
    AddUser,
    RemoveUser,
    ListUsers,
    UserInfo,
    SetUserStatus,
    AddPolicy,
    RemovePolicy,
    ListPolicies,
    PolicyInfo,
    SetUserOrGroupPolicy,
    AttachPolicy,
    DetachPolicy,
    PolicyEntities,
    UpdateGroupMembers,
    GroupInfo,
    ListGroups,
    SetGroupStatus,
    AddServiceAccount,
    UpdateServiceAccount,
    InfoServiceAccount,
    ListServiceAccounts,
    DeleteServiceAccount,
}

const PREFIX: &str = "/minio/admin/v3/";

impl IamCall {
    /// The call of `method` on `path`, if it is one of these.
    pub fn route(method: &Method, path: &str) -> Option<IamCall> {
        use IamCall::*;
        let rest = path.strip_prefix(PREFIX)?;
        let call = match (method.as_str(), rest) {
            ("PUT", "add-user") => AddUser,
            ("DELETE", "remove-user") => RemoveUser,
            ("GET", "list-users") => ListUsers,
            ("GET", "user-info") => UserInfo,
            ("PUT", "set-user-status") => SetUserStatus,
            ("PUT", "add-canned-policy") => AddPolicy,
            ("DELETE", "remove-canned-policy") => RemovePolicy,
            ("GET", "list-canned-policies") => ListPolicies,
            ("GET", "info-canned-policy") => PolicyInfo,
            ("PUT", "set-user-or-group-policy") => SetUserOrGroupPolicy,
            ("POST", "idp/builtin/policy/attach") => AttachPolicy,
            ("POST", "idp/builtin/policy/detach") => DetachPolicy,
            ("GET", "idp/builtin/policy-entities") => PolicyEntities,
            ("PUT", "update-group-members") => UpdateGroupMembers,
            ("GET", "group") => GroupInfo,
            ("GET", "groups") => ListGroups,
            ("PUT", "set-group-status") => SetGroupStatus,
            ("PUT", "add-service-account") => AddServiceAccount,
            ("POST", "update-service-account") => UpdateServiceAccount,
            ("GET", "info-service-account") => InfoServiceAccount,
            ("GET", "list-service-accounts") => ListServiceAccounts,
            ("DELETE", "delete-service-account") => DeleteServiceAccount,
            _ => return None,
        };
        Some(call)
    }

    /// The name in metrics and logs.
    pub fn name(self) -> &'static str {
        use IamCall::*;
        match self {
            AddUser => "AddUser",
            RemoveUser => "RemoveUser",
            ListUsers => "ListUsers",
            UserInfo => "GetUserInfo",
            SetUserStatus => "SetUserStatus",
            AddPolicy => "AddCannedPolicy",
            RemovePolicy => "RemoveCannedPolicy",
            ListPolicies => "ListCannedPolicies",
            PolicyInfo => "InfoCannedPolicy",
            SetUserOrGroupPolicy => "SetPolicyForUserOrGroup",
            AttachPolicy => "AttachPolicyBuiltin",
            DetachPolicy => "DetachPolicyBuiltin",
            PolicyEntities => "ListPolicyMappingEntities",
            UpdateGroupMembers => "UpdateGroupMembers",
            GroupInfo => "GetGroup",
            ListGroups => "ListGroups",
            SetGroupStatus => "SetGroupStatus",
            AddServiceAccount => "AddServiceAccount",
            UpdateServiceAccount => "UpdateServiceAccount",
            InfoServiceAccount => "InfoServiceAccount",
            ListServiceAccounts => "ListServiceAccounts",
            DeleteServiceAccount => "DeleteServiceAccount",
        }
    }

    /// The admin action a caller other than the root user needs (MinIO's
    /// names; enabling and disabling need their own, see `action_of`).
    /// Service account calls decide in their handler (a user manages its
    /// own without one).
    pub(super) fn action(self) -> &'static str {
        use IamCall::*;
        match self {
            AddUser => "admin:CreateUser",
            RemoveUser => "admin:DeleteUser",
            ListUsers => "admin:ListUsers",
            UserInfo => "admin:GetUser",
            SetUserStatus => "admin:EnableUser",
            AddPolicy => "admin:CreatePolicy",
            RemovePolicy => "admin:DeletePolicy",
            ListPolicies => "admin:ListUserPolicies",
            PolicyInfo => "admin:GetPolicy",
            SetUserOrGroupPolicy => "admin:AttachUserOrGroupPolicy",
            AttachPolicy | DetachPolicy => "admin:UpdatePolicyAssociation",
            // With admin:ListUsers and admin:ListGroups (`extra_actions`).
            PolicyEntities => "admin:ListUserPolicies",
            UpdateGroupMembers => "admin:AddUserToGroup",
            GroupInfo => "admin:GetGroup",
            ListGroups => "admin:ListGroups",
            SetGroupStatus => "admin:EnableGroup",
            AddServiceAccount => "admin:CreateServiceAccount",
            UpdateServiceAccount => "admin:UpdateServiceAccount",
            InfoServiceAccount | ListServiceAccounts => "admin:ListServiceAccounts",
            DeleteServiceAccount => "admin:RemoveServiceAccount",
        }
    }

    /// Whether the handler decides who may call (service accounts).
    fn decides_itself(self) -> bool {
        use IamCall::*;
        matches!(
            self,
            AddServiceAccount
                | UpdateServiceAccount
                | InfoServiceAccount
                | ListServiceAccounts
                | DeleteServiceAccount
        )
    }
}

/// Further actions `call` needs (MinIO asks all of them).
fn extra_actions(call: IamCall) -> &'static [&'static str] {
    match call {
        IamCall::PolicyEntities => &["admin:ListUsers", "admin:ListGroups"],
        _ => &[],
    }
}

/// The action of `call` with its query: disabling is its own action.
fn action_of<B>(call: IamCall, ctx: &Ctx<B>) -> &'static str {
    match (call, ctx.q("status")) {
        (IamCall::SetUserStatus, Some("disabled")) => "admin:DisableUser",
        (IamCall::SetGroupStatus, Some("disabled")) => "admin:DisableGroup",
        _ => call.action(),
    }
}

pub(super) fn admin_error(e: IamError) -> S3Error {
    let (code, status) = match &e {
        IamError::NoSuchUser(_) => ("XMinioAdminNoSuchUser", StatusCode::NOT_FOUND),
        IamError::NoSuchGroup(_) => ("XMinioAdminNoSuchGroup", StatusCode::NOT_FOUND),
        IamError::NoSuchPolicy(_) => ("XMinioAdminNoSuchPolicy", StatusCode::NOT_FOUND),
        IamError::GroupNotEmpty(_) => ("XMinioAdminGroupNotEmpty", StatusCode::BAD_REQUEST),
        IamError::NoSuchServiceAccount(_) => ("XMinioInvalidIAMCredentials", StatusCode::NOT_FOUND),
        IamError::NotAllowed(_) => ("XMinioIAMServiceAccountNotAllowed", StatusCode::BAD_REQUEST),
        IamError::PolicyTooLarge => (
            "XMinioIAMServiceAccountSessionPolicyTooLarge",
            StatusCode::BAD_REQUEST,
        ),
        IamError::Invalid(_) => ("XMinioAdminInvalidArgument", StatusCode::BAD_REQUEST),
        IamError::Storage(_) => (
            "XMinioAdminIAMStorageError",
            StatusCode::SERVICE_UNAVAILABLE,
        ),
    };
    let mut err = S3Error::with_message(code, e.to_string());
    err.status = status;
    err
}

pub(super) fn invalid(why: impl Into<String>) -> S3Error {
    admin_error(IamError::Invalid(why.into()))
}

pub(super) fn required<'a, B>(ctx: &'a Ctx<B>, name: &str) -> Result<&'a str, S3Error> {
    ctx.q(name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| invalid(format!("the query parameter {name} is missing")))
}

pub(super) fn parse_json<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, S3Error> {
    serde_json::from_slice(bytes).map_err(|e| invalid(format!("malformed request: {e}")))
}

pub(super) fn json<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec())
}

pub(super) fn ok_empty() -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = StatusCode::OK;
    r
}

#[derive(Deserialize)]
struct AddUserReq {
    #[serde(rename = "secretKey", default)]
    secret_key: String,
    #[serde(default)]
    status: String,
}

#[derive(Serialize)]
struct UserInfoDoc {
    #[serde(rename = "policyName", skip_serializing_if = "String::is_empty")]
    policy_name: String,
    status: &'static str,
    #[serde(rename = "memberOf", skip_serializing_if = "Vec::is_empty")]
    member_of: Vec<String>,
    #[serde(rename = "updatedAt")]
    updated_at: String,
}

#[derive(Deserialize)]
struct AssociationReq {
    #[serde(default)]
    policies: Vec<String>,
    #[serde(default)]
    user: String,
    #[serde(default)]
    group: String,
}

#[derive(Serialize)]
struct AssociationResp {
    #[serde(rename = "policiesAttached", skip_serializing_if = "Vec::is_empty")]
    attached: Vec<String>,
    #[serde(rename = "policiesDetached", skip_serializing_if = "Vec::is_empty")]
    detached: Vec<String>,
    #[serde(rename = "updatedAt")]
    updated_at: String,
}

#[derive(Deserialize)]
struct GroupAddRemove {
    #[serde(default)]
    group: String,
    #[serde(default)]
    members: Option<Vec<String>>,
    #[serde(rename = "isRemove", default)]
    is_remove: bool,
}

#[derive(Serialize)]
struct GroupDesc {
    name: String,
    status: &'static str,
    members: Vec<String>,
    policy: String,
    #[serde(rename = "updatedAt")]
    updated_at: String,
}

/// MinIO's `PolicyInfo` (`info-canned-policy?v=2`).
#[derive(Serialize)]
struct PolicyInfoDoc<'a> {
    #[serde(rename = "PolicyName")]
    name: &'a str,
    #[serde(rename = "Policy")]
    policy: &'a serde_json::Value,
    #[serde(rename = "CreateDate", skip_serializing_if = "Option::is_none")]
    create_date: Option<&'a str>,
    #[serde(rename = "UpdateDate", skip_serializing_if = "Option::is_none")]
    update_date: Option<&'a str>,
}

fn status_of(enabled: bool) -> &'static str {
    if enabled { "enabled" } else { "disabled" }
}

fn parse_status(v: &str) -> Result<bool, S3Error> {
    match v {
        "enabled" => Ok(true),
        "disabled" => Ok(false),
        other => Err(invalid(format!(
            "unknown status {other:?}: enabled or disabled"
        ))),
    }
}

impl Gateway {
    /// Serves an IAM admin call: authenticated like every admin call,
    /// authorised by the call's admin action, the body read through its
    /// signed hash (bounded).
    pub(crate) async fn serve_iam<B>(
        &self,
        ctx: &mut Ctx<B>,
        call: IamCall,
    ) -> Result<Response<ResponseBody>, S3Error>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        let who = self.begin_admin(ctx, call.name()).await?;
        if let Requester::User(id) = &who {
            let action = action_of(call, ctx);
            let allowed = crate::authz::admin_allowed(id, action)
                && extra_actions(call)
                    .iter()
                    .all(|a| crate::authz::admin_allowed(id, a));
            if !call.decides_itself() && !allowed {
                return Err(S3Error::new("AccessDenied"));
            }
        }
        let secret = self
            .madmin_secret(&ctx.access_key, &who)
            .ok_or_else(|| S3Error::new("AccessDenied"))?;
        let body = crate::handlers::read_small_body(self, ctx).await?;
        let iam = &self.iam;
        let decrypt = |b: Vec<u8>| madmin_decrypt(secret.clone(), b);
        let encrypted = |plain: Vec<u8>| madmin_encrypt(secret.clone(), plain);
        use IamCall::*;
        match call {
            AddUser => {
                let access = required(ctx, "accessKey")?.to_owned();
                let plain = decrypt(body).await?;
                let req: AddUserReq = parse_json(&plain)?;
                let enabled = req.status.is_empty() || parse_status(&req.status)?;
                iam.set_user(&access, &req.secret_key, enabled)
                    .await
                    .map_err(admin_error)?;
                Ok(ok_empty())
            }
            RemoveUser => {
                let access = required(ctx, "accessKey")?;
                iam.remove_user(access).await.map_err(admin_error)?;
                Ok(ok_empty())
            }
            SetUserStatus => {
                let access = required(ctx, "accessKey")?;
                let enabled = parse_status(required(ctx, "status")?)?;
                iam.set_user_status(access, enabled)
                    .await
                    .map_err(admin_error)?;
                Ok(ok_empty())
            }
            ListUsers => {
                let st = iam.snapshot();
                let users: BTreeMap<&str, UserInfoDoc> = st
                    .users
                    .iter()
                    .map(|(name, u)| (name.as_str(), user_info(&st, name, u)))
                    .collect();
                encrypted(json(&users)).await
            }
            UserInfo => {
                let access = required(ctx, "accessKey")?;
                let st = iam.snapshot();
                let u = st
                    .users
                    .get(access)
                    .ok_or_else(|| admin_error(IamError::NoSuchUser(access.to_owned())))?;
                Ok(super::json_response(json(&user_info(&st, access, u))))
            }
            AddPolicy => {
                let name = required(ctx, "name")?;
                if body.is_empty() {
                    return Err(invalid("the policy document is empty"));
                }
                iam.set_policy(name, &body).await.map_err(admin_error)?;
                Ok(ok_empty())
            }
            RemovePolicy => {
                let name = required(ctx, "name")?;
                iam.remove_policy(name).await.map_err(admin_error)?;
                Ok(ok_empty())
            }
            ListPolicies => {
                let st = iam.snapshot();
                let all: BTreeMap<&str, &serde_json::Value> = st
                    .policies
                    .iter()
                    .map(|(n, p)| (n.as_str(), &p.doc.policy))
                    .collect();
                Ok(super::json_response(json(&all)))
            }
            PolicyInfo => {
                let name = required(ctx, "name")?;
                let st = iam.snapshot();
                let p = st
                    .policies
                    .get(name)
                    .ok_or_else(|| admin_error(IamError::NoSuchPolicy(name.to_owned())))?;
                if ctx.q("v") == Some("2") {
                    let create = Some(p.doc.create_date.as_str())
                        .filter(|d| *d != crate::iam::store::GO_ZERO);
                    let update = Some(p.doc.update_date.as_str())
                        .filter(|d| *d != crate::iam::store::GO_ZERO);
                    let info = PolicyInfoDoc {
                        name,
                        policy: &p.doc.policy,
                        create_date: create.or(update),
                        update_date: update.or(create),
                    };
                    Ok(super::json_response(json(&info)))
                } else {
                    Ok(super::json_response(json(&p.doc.policy)))
                }
            }
            SetUserOrGroupPolicy => {
                let name = required(ctx, "userOrGroup")?;
                let group = ctx.q("isGroup") == Some("true");
                let policies: Vec<String> = ctx
                    .q("policyName")
                    .unwrap_or("")
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect();
                iam.set_attached(name, group, &policies)
                    .await
                    .map_err(admin_error)?;
                Ok(ok_empty())
            }
            AttachPolicy | DetachPolicy => {
                let plain = decrypt(body).await?;
                let req: AssociationReq = parse_json(&plain)?;
                let (name, group) = match (req.user.is_empty(), req.group.is_empty()) {
                    (false, true) => (req.user.as_str(), false),
                    (true, false) => (req.group.as_str(), true),
                    _ => return Err(invalid("name exactly one of a user and a group")),
                };
                if req.policies.is_empty() {
                    return Err(invalid("no policy names were given"));
                }
                let detach = call == DetachPolicy;
                iam.attach(name, group, &req.policies, detach)
                    .await
                    .map_err(admin_error)?;
                let resp = AssociationResp {
                    attached: if detach {
                        Vec::new()
                    } else {
                        req.policies.clone()
                    },
                    detached: if detach { req.policies } else { Vec::new() },
                    updated_at: crate::iam::store::now_rfc3339(),
                };
                encrypted(json(&resp)).await
            }
            PolicyEntities => {
                let query = |name: &str| -> Vec<String> {
                    ctx.query
                        .iter()
                        .filter(|(k, v)| k == name && !v.is_empty())
                        .map(|(_, v)| v.clone())
                        .collect()
                };
                let resp = policy_entities(
                    &iam.snapshot(),
                    &query("user"),
                    &query("group"),
                    &query("policy"),
                );
                encrypted(json(&resp)).await
            }
            UpdateGroupMembers => {
                let req: GroupAddRemove = parse_json(&body)?;
                let members = req.members.unwrap_or_default();
                iam.update_group(&req.group, &members, req.is_remove)
                    .await
                    .map_err(admin_error)?;
                Ok(ok_empty())
            }
            GroupInfo => {
                let name = required(ctx, "group")?;
                let st = iam.snapshot();
                let g = st
                    .groups
                    .get(name)
                    .ok_or_else(|| admin_error(IamError::NoSuchGroup(name.to_owned())))?;
                let desc = GroupDesc {
                    name: name.to_owned(),
                    status: status_of(g.enabled),
                    members: g.members.clone(),
                    policy: st
                        .group_policies
                        .get(name)
                        .map(|p| p.join(","))
                        .unwrap_or_default(),
                    updated_at: g.updated_at.clone(),
                };
                Ok(super::json_response(json(&desc)))
            }
            ListGroups => {
                let st = iam.snapshot();
                let names: Vec<&String> = st.groups.keys().collect();
                Ok(super::json_response(json(&names)))
            }
            SetGroupStatus => {
                let name = required(ctx, "group")?;
                let enabled = parse_status(required(ctx, "status")?)?;
                iam.set_group_status(name, enabled)
                    .await
                    .map_err(admin_error)?;
                Ok(ok_empty())
            }
            AddServiceAccount | UpdateServiceAccount | InfoServiceAccount | ListServiceAccounts
            | DeleteServiceAccount => {
                self.serve_svcacct(ctx, call, &who, body, secret.clone())
                    .await
            }
        }
    }
}

/// Key derivation (Argon2id, 64 MiB) for one madmin payload at a time,
/// on a blocking thread: admin calls are rare, and a burst of them must
/// neither take the memory nor hold the executor.
static MADMIN_SLOT: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

pub(super) async fn madmin_decrypt(secret: String, body: Vec<u8>) -> Result<Vec<u8>, S3Error> {
    let _slot = MADMIN_SLOT
        .acquire()
        .await
        .map_err(|_| S3Error::internal("the madmin slot is closed"))?;
    tokio::task::spawn_blocking(move || sse::madmin::decrypt(secret.as_bytes(), &body))
        .await
        .map_err(S3Error::internal)?
        .map_err(|e| invalid(format!("the request body does not decrypt: {e}")))
}

pub(super) async fn madmin_encrypt(
    secret: String,
    plain: Vec<u8>,
) -> Result<Response<ResponseBody>, S3Error> {
    let salt = crate::encryption::random::<{ sse::madmin::SALT_LEN }>()?;
    let nonce = crate::encryption::random::<{ sse::madmin::NONCE_LEN }>()?;
    let _slot = MADMIN_SLOT
        .acquire()
        .await
        .map_err(|_| S3Error::internal("the madmin slot is closed"))?;
    let sealed = tokio::task::spawn_blocking(move || {
        sse::madmin::encrypt(
            secret.as_bytes(),
            salt,
            nonce,
            sse::madmin::Algorithm::Argon2idAes256Gcm,
            &plain,
        )
    })
    .await
    .map_err(S3Error::internal)?;
    let mut r = Response::new(ResponseBody::full(sealed));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/octet-stream"),
    );
    Ok(r)
}

impl Gateway {
    /// Starts serving an admin call named `api`: its query read, a request
    /// slot taken, the request authenticated ([`Self::admin_authenticate`]);
    /// `ctx` gets its access key and payload. The caller authorises the
    /// requester returned.
    pub(super) async fn begin_admin<B>(
        &self,
        ctx: &mut Ctx<B>,
        api: &'static str,
    ) -> Result<Requester, S3Error> {
        ctx.api = api;
        ctx.query = crate::service::parse_query(ctx.parts.uri.query().unwrap_or(""))?;
        ctx.slot = Some(self.admit().await?);
        let verified = self.admin_authenticate(&ctx.parts, SystemTime::now())?;
        let who = crate::authz::requester_of(self, &verified.access_key)?;
        ctx.access_key = verified.access_key;
        ctx.payload = Some(verified.payload);
        Ok(who)
    }

    /// The secret key madmin seals a caller's payloads with: the root
    /// user's, a user's own, the temporary one for temporary credentials,
    /// the service account's own for a service account (`None` for
    /// anonymous callers and unknown keys).
    pub(super) fn madmin_secret(&self, access_key: &str, who: &Requester) -> Option<String> {
        match who {
            Requester::Owner => self.iam.root_secret(access_key),
            Requester::User(id) => {
                let st = self.iam.snapshot();
                if id.service {
                    st.svcaccts.get(access_key).map(|s| s.secret_key.clone())
                } else if id.temporary {
                    st.temps.get(access_key).map(|t| t.secret_key.clone())
                } else {
                    st.users.get(&id.name).map(|u| u.secret_key.clone())
                }
            }
            Requester::Anonymous => None,
        }
    }

    /// Authenticates an admin request as MinIO does (SigV4 in the
    /// `Authorization` header, a scope with or without a region, no
    /// `aws-chunked` body) by the root user or any enabled user; the
    /// caller authorises.
    fn admin_authenticate(
        &self,
        parts: &http::request::Parts,
        now: SystemTime,
    ) -> Result<Box<crate::auth::Verified>, S3Error> {
        let sigv4_header = parts
            .headers
            .get(http::header::AUTHORIZATION)
            .is_some_and(|v| v.as_bytes().starts_with(crate::auth::ALGORITHM.as_bytes()));
        if !sigv4_header {
            return Err(S3Error::new("AccessDenied"));
        }
        let verified = match self.admin_verifier.authenticate(parts.into(), now)? {
            crate::auth::Authentication::Signed(v) => v,
            crate::auth::Authentication::Anonymous => return Err(S3Error::new("AccessDenied")),
        };
        if verified.kind != crate::auth::AuthKind::Header {
            return Err(S3Error::new("AccessDenied"));
        }
        if verified.content_sha256.is_streaming() {
            return Err(super::chunked_refused());
        }
        Ok(verified)
    }
}

#[derive(Serialize)]
struct GroupEntities {
    group: String,
    policies: Vec<String>,
}

/// An empty list as Go writes a nil slice: `null`.
fn null_if_empty<S: serde::Serializer>(v: &[String], s: S) -> Result<S::Ok, S::Error> {
    if v.is_empty() {
        s.serialize_none()
    } else {
        v.serialize(s)
    }
}

#[derive(Serialize)]
struct UserEntities {
    user: String,
    #[serde(serialize_with = "null_if_empty")]
    policies: Vec<String>,
    #[serde(rename = "memberOfMappings", skip_serializing_if = "Vec::is_empty")]
    member_of: Vec<GroupEntities>,
}

#[derive(Serialize)]
struct PolicyEntitiesDoc {
    policy: String,
    #[serde(serialize_with = "null_if_empty")]
    users: Vec<String>,
    #[serde(serialize_with = "null_if_empty")]
    groups: Vec<String>,
}

/// madmin's `PolicyEntitiesResult`.
#[derive(Serialize)]
struct EntitiesResult {
    timestamp: String,
    #[serde(rename = "userMappings", skip_serializing_if = "Vec::is_empty")]
    users: Vec<UserEntities>,
    #[serde(rename = "groupMappings", skip_serializing_if = "Vec::is_empty")]
    groups: Vec<GroupEntities>,
    #[serde(rename = "policyMappings", skip_serializing_if = "Vec::is_empty")]
    policies: Vec<PolicyEntitiesDoc>,
}

/// Who has which policies, as MinIO answers `mc admin policy entities`:
/// the queried users' own policies and their groups', the queried
/// groups' policies, and for the queried policies (all of them when
/// nothing is queried) the users (web identities' sessions included) and
/// groups they are attached to.
fn policy_entities(
    st: &crate::iam::IamState,
    users: &[String],
    groups: &[String],
    policies: &[String],
) -> EntitiesResult {
    let sorted = |v: Option<&Vec<String>>| {
        let mut v = v.cloned().unwrap_or_default();
        v.sort();
        v
    };
    let group_entities = |wanted: &[String]| -> Vec<GroupEntities> {
        let mut out: Vec<GroupEntities> = st
            .group_policies
            .iter()
            .filter(|(g, _)| wanted.contains(g))
            .map(|(g, p)| GroupEntities {
                group: g.clone(),
                policies: sorted(Some(p)),
            })
            .collect();
        out.sort_by(|a, b| a.group.cmp(&b.group));
        out
    };
    let mut user_out: Vec<UserEntities> = users
        .iter()
        .filter_map(|u| {
            let own = st.user_policies.get(u).or_else(|| st.sts_policies.get(u));
            let member_of = st
                .member_of
                .get(u)
                .map(|gs| group_entities(gs))
                .unwrap_or_default();
            (own.is_some() || !member_of.is_empty()).then(|| UserEntities {
                user: u.clone(),
                policies: sorted(own),
                member_of,
            })
        })
        .collect();
    user_out.sort_by(|a, b| a.user.cmp(&b.user));
    user_out.dedup_by(|a, b| a.user == b.user);
    let mut policy_out = Vec::new();
    if !policies.is_empty() || (users.is_empty() && groups.is_empty()) {
        let mut by_policy: BTreeMap<&str, (Vec<String>, Vec<String>)> = BTreeMap::new();
        let wanted = |p: &str| policies.is_empty() || policies.iter().any(|q| q == p);
        for (u, ps) in st.user_policies.iter().chain(&st.sts_policies) {
            for p in ps.iter().filter(|p| wanted(p)) {
                by_policy.entry(p).or_default().0.push(u.clone());
            }
        }
        for (g, ps) in &st.group_policies {
            for p in ps.iter().filter(|p| wanted(p)) {
                by_policy.entry(p).or_default().1.push(g.clone());
            }
        }
        for (p, (mut us, mut gs)) in by_policy {
            us.sort();
            gs.sort();
            policy_out.push(PolicyEntitiesDoc {
                policy: p.to_owned(),
                users: us,
                groups: gs,
            });
        }
    }
    EntitiesResult {
        timestamp: crate::iam::store::now_rfc3339(),
        users: user_out,
        groups: group_entities(groups),
        policies: policy_out,
    }
}

fn user_info(st: &crate::iam::IamState, name: &str, u: &crate::iam::User) -> UserInfoDoc {
    UserInfoDoc {
        policy_name: st
            .user_policies
            .get(name)
            .map(|p| p.join(","))
            .unwrap_or_default(),
        status: status_of(u.enabled),
        member_of: st.member_of.get(name).cloned().unwrap_or_default(),
        updated_at: u.updated_at.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn madmin_paths_route_to_their_calls() {
        assert_eq!(
            IamCall::route(&Method::PUT, "/minio/admin/v3/add-user"),
            Some(IamCall::AddUser)
        );
        assert_eq!(
            IamCall::route(&Method::POST, "/minio/admin/v3/idp/builtin/policy/attach"),
            Some(IamCall::AttachPolicy)
        );
        assert_eq!(
            IamCall::route(&Method::GET, "/minio/admin/v3/add-user"),
            None
        );
        assert_eq!(
            IamCall::route(&Method::GET, "/minio/admin/v2/list-users"),
            None
        );
    }
}
