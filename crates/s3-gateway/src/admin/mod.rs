//! MinIO's admin API (`/minio/admin/...`, what `mc admin` sends). Served:
//! - the info call `GET /minio/admin/v3/info` (`mc admin info`) and the
//!   background heal status `POST /minio/admin/v3/background-heal/status`
//!   (`mc admin heal ALIAS`), here;
//! - users, groups, policies and service accounts (`iam.rs`,
//!   `svcacct.rs`) and bucket quotas (`quota.rs`);
//! - the configuration calls `set-config-kv`, `get-config-kv`,
//!   `del-config-kv` and `help-config-kv` (`mc admin config set|get|reset
//!   ALIAS scanner`) for the scanner's speed, the one setting of MinIO's
//!   configuration that means something here (`config.rs`: the `heal`
//!   sub-system's keys are refused as invalid, other sub-systems are 501);
//! - heal sequences, `POST /minio/admin/v3/heal/{bucket}/{prefix}` (`mc
//!   admin heal ALIAS/BUCKET`, `heal_seq.rs`): a heal of a bucket or prefix
//!   started, polled with its client token, stopped.
//!
//! Every other admin call, and these paths by any other method, answer 501
//! `NotImplemented` naming the API. Request bodies are read under a bound
//! (MinIO's for configuration bodies) before they are parsed; madmin's
//! sealed payloads are opened and answers sealed with the caller's secret
//! key (`sse::madmin`).
//!
//! The pieces are public so that a server answering for several nodes (the
//! daemon's cluster mode) can answer the same call:
//! - [`route`] tells the calls apart ([`AdminCall`]); a cluster hands the
//!   IAM, quota, configuration and heal calls to its gateway, whose layer
//!   spans every node's drives and whose changes are announced to the
//!   other nodes;
//! - [`AdminAuth`] authenticates an admin request as MinIO does: SigV4 in
//!   the `Authorization` header by the root user, with the scope that names
//!   no region madmin-go signs with (the gateway's SigV4 verifier);
//! - [`InfoMessage`] and its parts are the document, built from plain
//!   structs ([`InfoMessage::new`] counts the online and offline drives of
//!   every server);
//! - [`probe_drive`] and [`probe_drives`] fill a [`DriveInfo`] from a drive
//!   of this process;
//! - [`info_response`] is the HTTP answer;
//! - [`BgHealState`] is the heal status, built from every drive's
//!   [`DriveInfo`] and what each server's layer healed ([`ServerHeal`]).
//!
//! [`Gateway::server_info`] puts them together for the one node a gateway
//! serves.

mod config;
mod heal;
mod heal_seq;
mod iam;
mod info;
mod probe;
mod quota;
mod svcacct;

use std::time::SystemTime;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Response, StatusCode};
use http_body::Body;

pub use config::{ConfigCall, MAX_CONFIG_BODY};
pub use heal::{BgHealState, HealingDisk, MrfStatus, ServerHeal, SetStatus};
pub use heal_seq::{HealCall, HealForward, HealOpts, HealSequences, KEEP_ENDED};
pub use info::{
    BackendType, Count, Deployment, DriveInfo, DrivePlace, DriveState, ErasureBackend, InfoMessage,
    ItemState, ServerProperties, Usage,
};
pub use probe::{PROBE_TIMEOUT, probe_drive, probe_drives};

use crate::auth::{
    ALGORITHM, AuthConfig, AuthKind, Authentication, Payload, StaticCredentials, Verifier,
};
use crate::error::S3Error;
use crate::service::{Ctx, Gateway, ResponseBody, static_credentials};

/// The path of the info call.
pub const INFO_PATH: &str = "/minio/admin/v3/info";
/// The path of the background heal status.
pub const HEAL_STATUS_PATH: &str = "/minio/admin/v3/background-heal/status";

/// Why the info document carries no object, version or usage figures.
const NOT_COUNTED: &str = "not counted: Tessera keeps no object, version or usage totals \
                           (its scanner checks objects but does not total them)";

/// An admin API request, by what the server does with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminCall {
    /// `GET /minio/admin/v3/info`: the server info.
    ServerInfo,
    /// `POST /minio/admin/v3/background-heal/status`: the heal status.
    HealStatus,
    /// Users, groups and policies (`mc admin user|group|policy`).
    Iam(iam::IamCall),
    /// Bucket quotas (`mc quota`).
    Quota(quota::QuotaCall),
    /// The configuration calls (`mc admin config set|get|reset`).
    Config(ConfigCall),
    /// Heal sequences (`mc admin heal ALIAS/BUCKET`).
    Heal(HealCall),
    /// Any other admin path or method: this error (501 `NotImplemented`
    /// naming the path).
    Unsupported(S3Error),
}

/// What a request for `raw_path` (under any host) is, if it is one of
/// MinIO's admin API: `/minio/admin` itself and every path under it, as
/// MinIO routes them.
pub fn route(method: &Method, raw_path: &str) -> Option<AdminCall> {
    if raw_path != "/minio/admin" && !raw_path.starts_with("/minio/admin/") {
        return None;
    }
    if method == Method::GET && raw_path == INFO_PATH {
        return Some(AdminCall::ServerInfo);
    }
    if method == Method::POST && raw_path == HEAL_STATUS_PATH {
        return Some(AdminCall::HealStatus);
    }
    if let Some(call) = iam::IamCall::route(method, raw_path) {
        return Some(AdminCall::Iam(call));
    }
    if let Some(call) = quota::QuotaCall::route(method, raw_path) {
        return Some(AdminCall::Quota(call));
    }
    if let Some(call) = ConfigCall::route(method, raw_path) {
        return Some(AdminCall::Config(call));
    }
    if let Some(call) = HealCall::route(method, raw_path) {
        return Some(AdminCall::Heal(call));
    }
    // The path is echoed for the operator, cut short: a long one names the
    // same API.
    let shown: String = raw_path.chars().take(128).collect();
    Some(AdminCall::Unsupported(S3Error::with_message(
        "NotImplemented",
        format!("The MinIO admin API ({method} {shown}) is not implemented by Tessera"),
    )))
}

/// Authenticates admin requests: SigV4 in the `Authorization` header (no
/// presigned URLs, no Signature Version 2, no `aws-chunked` bodies, as
/// MinIO takes them), signed by the root user. The credential scope may
/// name the region or none (madmin-go signs with none).
#[derive(Debug, Clone)]
pub struct AdminAuth {
    verifier: Verifier<StaticCredentials>,
    root: Option<String>,
}

impl AdminAuth {
    /// Admin authentication for `region` with `credentials` (access key,
    /// secret key) of which the first is the root user, as
    /// [`GatewayConfig::credentials`](crate::GatewayConfig::credentials)
    /// has them. Every pair verifies signatures (a key of another user is
    /// known, and refused with `AccessDenied`); only the root user's
    /// requests are admitted.
    pub fn new(region: &str, credentials: &[(String, String)]) -> AdminAuth {
        let config = AuthConfig {
            region: region.to_owned(),
            sigv2: false,
            accept_empty_region: true,
            ..AuthConfig::default()
        };
        AdminAuth {
            verifier: Verifier::new(config, static_credentials(credentials)),
            root: credentials.first().map(|(access, _)| access.clone()),
        }
    }

    /// Authenticates a whole request, head and body, at the current time:
    /// `Ok` for the root user's signed request, else the S3 error to answer
    /// (403 `AccessDenied` for an unsigned one or another user's,
    /// `SignatureDoesNotMatch`, `InvalidAccessKeyId`,
    /// `RequestTimeTooSkewed`, `XAmzContentSHA256Mismatch`, ...).
    pub fn authenticate(&self, parts: &http::request::Parts, body: &[u8]) -> Result<(), S3Error> {
        match self.authenticate_head(parts, SystemTime::now())? {
            Payload::Sha256(mut v) => {
                v.update(body);
                v.finish().map_err(S3Error::from)
            }
            Payload::Unsigned => Ok(()),
            Payload::Chunked(_) => Err(chunked_refused()),
        }
    }

    /// Authenticates the head at `now`; the body must then be read through
    /// the returned [`Payload`].
    pub fn authenticate_head(
        &self,
        parts: &http::request::Parts,
        now: SystemTime,
    ) -> Result<Payload, S3Error> {
        let sigv4_header = parts
            .headers
            .get(AUTHORIZATION)
            .is_some_and(|v| v.as_bytes().starts_with(ALGORITHM.as_bytes()));
        if !sigv4_header {
            return Err(S3Error::new("AccessDenied"));
        }
        let verified = match self.verifier.authenticate(parts.into(), now)? {
            Authentication::Signed(v) => v,
            Authentication::Anonymous => return Err(S3Error::new("AccessDenied")),
        };
        if verified.kind != AuthKind::Header
            || self.root.as_deref() != Some(verified.access_key.as_str())
        {
            return Err(S3Error::new("AccessDenied"));
        }
        if verified.content_sha256.is_streaming() {
            return Err(chunked_refused());
        }
        Ok(verified.payload)
    }
}

fn chunked_refused() -> S3Error {
    S3Error::with_message(
        "InvalidRequest",
        "The MinIO admin API takes no aws-chunked bodies.",
    )
}

/// The HTTP answer carrying `info`: 200, `application/json`.
pub fn info_response(info: &InfoMessage) -> Response<ResponseBody> {
    json_response(info.to_json())
}

/// 200, `application/json`, carrying `json`.
pub fn json_response(json: Vec<u8>) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::full(json));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

impl Gateway {
    /// Serves an admin API request: the info call once authenticated (in
    /// a request slot, like any S3 request), the error for the rest.
    pub(crate) async fn serve_admin<B>(
        &self,
        ctx: &mut Ctx<B>,
        call: AdminCall,
    ) -> Result<Response<ResponseBody>, S3Error>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        match call {
            AdminCall::Iam(c) => self.serve_iam(ctx, c).await,
            AdminCall::Quota(c) => self.serve_quota(ctx, c).await,
            AdminCall::Config(c) => self.serve_config(ctx, c).await,
            AdminCall::Heal(c) => self.serve_heal(ctx, c).await,
            AdminCall::Unsupported(e) => {
                ctx.api = "AdminAPI";
                Err(e)
            }
            AdminCall::ServerInfo | AdminCall::HealStatus => {
                ctx.api = if call == AdminCall::ServerInfo {
                    "ServerInfo"
                } else {
                    "BackgroundHealStatus"
                };
                ctx.slot = Some(self.admit().await?);
                let payload = self
                    .admin_auth
                    .authenticate_head(&ctx.parts, SystemTime::now())?;
                ctx.access_key = self.admin_auth.root.clone().unwrap_or_default();
                ctx.payload = Some(payload);
                // The body (none is expected) is read through its signed
                // hash before anything is answered.
                crate::handlers::read_small_body(self, ctx).await?;
                let endpoint = request_host(&ctx.parts);
                let info = self.server_info(&endpoint).await;
                if call == AdminCall::ServerInfo {
                    return Ok(info_response(&info));
                }
                let drives = (info.servers.into_iter()).flat_map(|s| s.drives).collect();
                let storage_class = self.layer.storage_class();
                let status = BgHealState::new(
                    drives,
                    vec![(endpoint, ServerHeal::of(&self.layer))],
                    Vec::new(),
                    storage_class.standard_parity(),
                    storage_class.rrs_parity(),
                );
                Ok(json_response(status.to_json()))
            }
        }
    }

    /// The admin info of the one server this gateway is: every drive
    /// probed now ([`probe_drives`]), the bucket count from listing the
    /// buckets, the layout and parity of the object layer, the uptime since
    /// the gateway was made. `endpoint` names the server (`host:port`; a
    /// single MinIO names itself by the request's `Host`). Objects,
    /// versions, delete markers and usage are not counted: they carry the
    /// reason instead.
    pub async fn server_info(&self, endpoint: &str) -> InfoMessage {
        let layer = &self.layer;
        let mut places = Vec::new();
        let mut sets_per_pool = Vec::with_capacity(layer.pool_count());
        let mut drives_per_set = Vec::with_capacity(layer.pool_count());
        for pool in 0..layer.pool_count() {
            let sets = layer.pool_sets(pool);
            sets_per_pool.push(sets.len());
            drives_per_set.push(sets.first().map_or(0, |s| s.drives().len()));
            for (set, s) in sets.iter().enumerate() {
                for (disk, d) in s.drives().iter().enumerate() {
                    let label = d.label();
                    let place = DrivePlace {
                        endpoint: label.clone(),
                        path: label,
                        pool,
                        set,
                        disk,
                    };
                    places.push((d.clone(), place));
                }
            }
        }
        let drives = probe_drives(places, PROBE_TIMEOUT).await;
        let buckets = match layer.list_buckets().await {
            Ok(b) => Count::of(b.len() as u64),
            Err(e) => Count::unknown(e.to_string()),
        };
        let scheme = if self.config.encryption.tls {
            "https"
        } else {
            "http"
        };
        let server = ServerProperties::online(
            endpoint,
            scheme,
            self.started.elapsed().as_secs(),
            env!("CARGO_PKG_VERSION"),
            drives,
        );
        let storage_class = layer.storage_class();
        InfoMessage::new(
            Deployment {
                deployment_id: layer.deployment_id().to_string(),
                region: self.config.region.clone(),
                standard_parity: storage_class.standard_parity(),
                rrs_parity: storage_class.rrs_parity(),
                sets_per_pool,
                drives_per_set,
                buckets,
                objects: Count::unknown(NOT_COUNTED),
                versions: Count::unknown(NOT_COUNTED),
                delete_markers: Count::unknown(NOT_COUNTED),
                usage: Usage::unknown(NOT_COUNTED),
            },
            vec![server],
        )
    }
}

/// The `Host` the request names (its URI's authority over HTTP/2).
fn request_host(parts: &http::request::Parts) -> String {
    parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or("")
        .to_owned()
}

#[cfg(test)]
mod tests;
