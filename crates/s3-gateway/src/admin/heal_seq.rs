//! MinIO's heal sequences (`mc admin heal ALIAS/BUCKET[/PREFIX]`, with
//! `--recursive`, `--dry-run`, `--force-start`, `--force-stop`):
//! `POST /minio/admin/v3/heal/{bucket}/{prefix}` with madmin's `HealOpts`
//! JSON starts one and answers a client token; the same call with
//! `clientToken=` answers the status (`running`, `finished`, or `stopped`
//! with the reason) and the items healed since the last call, in madmin's
//! `HealResultItem` form (each drive's state before and after);
//! `forceStop` stops the one on the path, `forceStart` replaces it.
//!
//! The heal itself is the object layer's
//! ([`ObjectLayer::start_heal`](object::layer::ObjectLayer::start_heal)):
//! the bucket's volume, then every version in scope through the scanner's
//! heal of one version, at the scanner's speed. A sequence lives on the
//! node that started it, in memory; in a cluster its token names that node
//! and a poll that reaches another node is relayed to it over the node
//! RPC ([`HealForward`]), as MinIO forwards it by the node in the token. Ended
//! sequences are forgotten [`KEEP_ENDED`] after their end; the whole
//! namespace (no bucket) heals every bucket. `pool` and `set`, `recreate`
//! (`--rewrite`) and `updateParity` are 501 `NotImplemented`; the scan mode
//! changes nothing (a heal reads every shard record of a version all
//! drives hold, and checks sizes where a drive lacks it), and `remove`
//! neither: copies of a version no quorum agrees on are removed whenever
//! every drive answers, as the scanner does. The root user, or a user
//! allowed `admin:Heal`, may call it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Method, Response};
use http_body::Body;
use object::layer::{DriveHealState, HealItem, HealItemKind, HealScope, HealSequence};
use serde::{Deserialize, Serialize};

use super::iam::json;
use crate::authz::Requester;
use crate::error::S3Error;
use crate::service::{ConnInfo, Ctx, Gateway, ResponseBody};

const PREFIX: &str = "/minio/admin/v3/heal/";

/// How long an ended sequence's status stays (MinIO's figure).
pub const KEEP_ENDED: Duration = Duration::from_secs(600);

/// The most items one status answer carries.
const ITEMS_PER_ANSWER: usize = object::layer::HEAL_ITEMS_WAITING;

/// Go's zero time, what madmin decodes for "never".
const GO_ZERO: &str = "0001-01-01T00:00:00Z";

/// A heal call: the raw (still percent-encoded) path after `heal/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealCall {
    rest: String,
}

impl HealCall {
    /// The heal call `method` and `path` name, if any.
    pub fn route(method: &Method, path: &str) -> Option<HealCall> {
        let rest = path.strip_prefix(PREFIX)?;
        (method == Method::POST).then(|| HealCall {
            rest: rest.to_owned(),
        })
    }

    /// The bucket and prefix, decoded and checked.
    fn target(&self) -> Result<(String, String), S3Error> {
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| S3Error::new("InvalidArgument"))
        };
        let (bucket, prefix) = match self.rest.split_once('/') {
            Some((b, p)) => (decode(b)?, decode(p)?),
            None => (decode(&self.rest)?, String::new()),
        };
        if bucket.is_empty() {
            if !prefix.is_empty() {
                return Err(S3Error::with_message(
                    "XMinioHealMissingBucket",
                    "A heal start request with a non-empty object-prefix parameter requires a \
                     bucket to be specified.",
                ));
            }
        } else {
            object::layer::names::check_bucket(&bucket)?;
        }
        if prefix.len() > 1024 || prefix.contains('\0') {
            return Err(S3Error::new("InvalidObjectName"));
        }
        Ok((bucket, prefix))
    }
}

/// madmin's `HealOpts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealOpts {
    #[serde(default)]
    pub recursive: bool,
    #[serde(rename = "dryRun", default)]
    pub dry_run: bool,
    #[serde(default)]
    pub remove: bool,
    #[serde(default)]
    pub recreate: bool,
    #[serde(rename = "scanMode", default)]
    pub scan_mode: i64,
    #[serde(rename = "updateParity", default)]
    pub update_parity: bool,
    #[serde(rename = "nolock", default)]
    pub no_lock: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pool: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub set: Option<i64>,
}

impl HealOpts {
    /// The options a heal here cannot honour.
    fn refused(&self) -> Option<&'static str> {
        if self.pool.is_some() || self.set.is_some() {
            Some("a heal of one pool or erasure set (--pool, --set)")
        } else if self.recreate {
            Some("rewriting every version (--rewrite)")
        } else if self.update_parity {
            Some("changing the parity of existing versions")
        } else {
            None
        }
    }
}

/// madmin's `HealStartSuccess` (and `HealStopSuccess`).
#[derive(Serialize)]
struct StartSuccess<'a> {
    #[serde(rename = "clientToken")]
    client_token: &'a str,
    #[serde(rename = "clientAddress")]
    client_address: &'a str,
    #[serde(rename = "startTime")]
    start_time: &'a str,
}

#[derive(Serialize)]
struct DriveDoc {
    uuid: String,
    endpoint: String,
    state: &'static str,
}

#[derive(Serialize)]
struct DrivesDoc {
    drives: Vec<DriveDoc>,
}

/// madmin's `HealResultItem`.
#[derive(Serialize)]
struct ResultItem {
    #[serde(rename = "resultId")]
    result_id: i64,
    #[serde(rename = "type")]
    kind: &'static str,
    bucket: String,
    object: String,
    #[serde(rename = "versionId")]
    version_id: String,
    detail: String,
    #[serde(rename = "parityBlocks", skip_serializing_if = "is_zero")]
    parity_blocks: usize,
    #[serde(rename = "dataBlocks", skip_serializing_if = "is_zero")]
    data_blocks: usize,
    #[serde(rename = "diskCount")]
    disk_count: usize,
    #[serde(rename = "setCount")]
    set_count: usize,
    before: DrivesDoc,
    after: DrivesDoc,
    #[serde(rename = "objectSize")]
    object_size: u64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// madmin's `HealTaskStatus`.
#[derive(Serialize)]
struct TaskStatus<'a> {
    summary: &'static str,
    detail: String,
    #[serde(rename = "startTime")]
    start_time: &'a str,
    settings: &'a HealOpts,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    items: Vec<ResultItem>,
}

/// The state names madmin gives drives.
fn state_name(s: DriveHealState) -> &'static str {
    match s {
        DriveHealState::Ok => "ok",
        DriveHealState::Missing => "missing",
        DriveHealState::Corrupt => "corrupt",
        DriveHealState::Offline => "offline",
        DriveHealState::Unknown => "unknown",
    }
}

/// An item as madmin reports it, numbered `result_id`.
fn result_item(item: HealItem, result_id: i64) -> ResultItem {
    let docs = |after: bool| DrivesDoc {
        drives: item
            .drives
            .iter()
            .map(|d| DriveDoc {
                uuid: d.id.map(|u| u.to_string()).unwrap_or_default(),
                endpoint: d.endpoint.clone(),
                state: state_name(if after { d.after } else { d.before }),
            })
            .collect(),
    };
    let (before, after) = (docs(false), docs(true));
    ResultItem {
        result_id,
        kind: match item.kind {
            HealItemKind::Bucket => "bucket",
            HealItemKind::Object => "object",
        },
        version_id: item.version_id.map(|v| v.to_string()).unwrap_or_default(),
        detail: item.error.unwrap_or_default(),
        parity_blocks: item.parity_blocks,
        data_blocks: item.data_blocks,
        disk_count: item.drives.len(),
        set_count: item.sets,
        before,
        after,
        object_size: item.size,
        bucket: item.bucket,
        object: item.key,
    }
}

/// One heal sequence and what its client has been told.
struct Seq {
    token: String,
    client_address: String,
    start_time: String,
    settings: HealOpts,
    run: HealSequence,
    /// The number of the last item handed out.
    last_result: i64,
    /// When it ended, and how (`Err`: why it stopped early).
    ended: Option<(Instant, Result<(), String>)>,
}

/// The heal sequences of a gateway, by path (`bucket/prefix`).
#[derive(Default)]
pub struct HealSequences {
    seqs: Mutex<HashMap<String, Seq>>,
}

/// A poll of a heal sequence that another node of the cluster runs: the
/// node is named by the suffix of the client token it handed out
/// (`<uuid>:<node>`), and its answer is relayed as it is, so a client
/// behind a load balancer follows its heal whichever node it reaches.
pub trait HealForward: Send + Sync {
    /// This node's index among the cluster's nodes.
    fn me(&self) -> usize;
    /// Node `node`'s answer to a poll of its sequence on `path` with
    /// `token` (what [`HealSequences::poll`] answers there).
    fn poll(
        &self,
        node: usize,
        path: String,
        token: String,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Vec<u8>, S3Error>> + Send>>;
}

/// The node a client token names (`<uuid>:<node>`), if any.
fn token_node(token: &str) -> Option<usize> {
    token.rsplit_once(':')?.1.parse().ok()
}

impl std::fmt::Debug for HealSequences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HealSequences")
    }
}

/// MinIO's `pathJoin` of a bucket and a prefix.
fn heal_path(bucket: &str, prefix: &str) -> String {
    match (bucket.is_empty(), prefix.is_empty()) {
        (true, _) => String::new(),
        (false, true) => bucket.to_owned(),
        (false, false) => format!("{bucket}/{prefix}"),
    }
}

fn now_rfc3339() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    crate::time::iso8601(nanos)
}

fn heal_error(code: &'static str, msg: impl Into<String>) -> S3Error {
    S3Error::with_message(code, msg)
}

impl HealSequences {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Seq>> {
        self.seqs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets the sequences that ended [`KEEP_ENDED`] ago.
    fn purge(&self) {
        self.lock().retain(|_, s| {
            s.ended
                .as_ref()
                .is_none_or(|(t, _)| t.elapsed() < KEEP_ENDED)
        });
    }

    /// A poll of this node's sequence on `path` by the client holding
    /// `token`: its status and the items healed since the last poll
    /// (madmin's `HealTaskStatus` JSON).
    pub fn poll(&self, path: &str, token: &str) -> Result<Vec<u8>, S3Error> {
        self.purge();
        self.status(path, token)
    }

    /// The status of the sequence on `path` for the client holding
    /// `token`, with the items waiting.
    fn status(&self, path: &str, token: &str) -> Result<Vec<u8>, S3Error> {
        let mut seqs = self.lock();
        let Some(s) = seqs.get_mut(path) else {
            // Gone (ended long ago, or stopped): MinIO says finished.
            let settings = HealOpts::default();
            return Ok(json(&TaskStatus {
                summary: "finished",
                detail: String::new(),
                start_time: GO_ZERO,
                settings: &settings,
                items: Vec::new(),
            }));
        };
        if s.token != token {
            return Err(heal_error(
                "XMinioHealInvalidClientToken",
                "Client token mismatch",
            ));
        }
        let (taken, end) = s.run.take(ITEMS_PER_ANSWER);
        if let Some(end) = end
            && s.ended.is_none()
        {
            s.ended = Some((Instant::now(), end));
        }
        let items = taken
            .into_iter()
            .map(|i| {
                s.last_result += 1;
                result_item(i, s.last_result)
            })
            .collect();
        let (summary, detail) = match &s.ended {
            None => ("running", String::new()),
            Some((_, Ok(()))) => ("finished", String::new()),
            Some((_, Err(why))) => ("stopped", why.clone()),
        };
        Ok(json(&TaskStatus {
            summary,
            detail,
            start_time: &s.start_time,
            settings: &s.settings,
            items,
        }))
    }

    /// Stops and forgets the sequence on `path`.
    fn stop(&self, path: &str) -> Vec<u8> {
        match self.lock().remove(path) {
            Some(s) => {
                s.run.stop();
                json(&StartSuccess {
                    client_token: &s.token,
                    client_address: &s.client_address,
                    start_time: &s.start_time,
                })
            }
            None => json(&StartSuccess {
                client_token: "unknown",
                client_address: "",
                start_time: &now_rfc3339(),
            }),
        }
    }
}

impl Gateway {
    pub(crate) async fn serve_heal<B>(
        &self,
        ctx: &mut Ctx<B>,
        call: HealCall,
    ) -> Result<Response<ResponseBody>, S3Error>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        let who = self.begin_admin(ctx, "Heal").await?;
        if let Requester::User(id) = &who
            && !crate::authz::admin_allowed(id, "admin:Heal")
        {
            return Err(S3Error::new("AccessDenied"));
        }
        let body = crate::handlers::read_small_body(self, ctx).await?;
        let (bucket, prefix) = call.target()?;
        let token = ctx.q("clientToken").unwrap_or("").to_owned();
        let (force_start, force_stop) = (ctx.has("forceStart"), ctx.has("forceStop"));
        if (force_start && force_stop) || (!token.is_empty() && (force_start || force_stop)) {
            return Err(S3Error::with_message("InvalidRequest", "Invalid Request"));
        }
        let heals = &self.heal_seqs;
        heals.purge();
        let path = heal_path(&bucket, &prefix);
        if !token.is_empty() {
            if let Some(fwd) = &self.heal_forward
                && let Some(node) = token_node(&token)
                && node != fwd.me()
            {
                return Ok(super::json_response(fwd.poll(node, path, token).await?));
            }
            return Ok(super::json_response(heals.status(&path, &token)?));
        }
        if force_stop {
            return Ok(super::json_response(heals.stop(&path)));
        }
        let opts: HealOpts = serde_json::from_slice(&body).map_err(|e| {
            heal_error(
                "XMinioRequestBodyParse",
                format!("The request body failed to parse: {e}"),
            )
        })?;
        if let Some(what) = opts.refused() {
            return Err(S3Error::with_message(
                "NotImplemented",
                format!("Tessera's heal does not implement {what}"),
            ));
        }
        if !bucket.is_empty() {
            self.layer.head_bucket(&bucket).await?;
        }
        let client_address = ctx
            .parts
            .extensions
            .get::<ConnInfo>()
            .map(|c| c.peer.ip().to_string())
            .unwrap_or_default();
        let mut seqs = heals.lock();
        if force_start {
            if let Some(old) = seqs.remove(&path) {
                old.run.stop();
            }
        } else if let Some(s) = seqs.get(&path)
            && s.ended.is_none()
        {
            // A client that lost track of a running heal picks it up again
            // while it has items waiting, as MinIO lets it.
            if s.run.waiting() > 0 {
                return Ok(super::json_response(json(&StartSuccess {
                    client_token: &s.token,
                    client_address: &s.client_address,
                    start_time: &s.start_time,
                })));
            }
            return Err(heal_error(
                "XMinioHealAlreadyRunning",
                format!(
                    "Heal is already running on the given path (use force-start option to stop \
                     and start afresh). The heal was started by IP {} at {}, token is {}",
                    s.client_address, s.start_time, s.token
                ),
            ));
        }
        if let Some(other) = seqs.iter().find_map(|(k, s)| {
            let overlaps = k.starts_with(&path) || path.starts_with(k.as_str());
            (s.ended.is_none() && overlaps).then_some(k)
        }) {
            return Err(heal_error(
                "XMinioHealOverlappingPaths",
                format!(
                    "The provided heal sequence path overlaps with an existing heal path: {other}"
                ),
            ));
        }
        let run = self.layer.start_heal(HealScope {
            bucket: (!bucket.is_empty()).then_some(bucket),
            prefix,
            recursive: opts.recursive,
            dry_run: opts.dry_run,
        });
        let seq = Seq {
            token: match &self.heal_forward {
                // Polls that reach another node are sent here.
                Some(fwd) => format!("{}:{}", uuid::Uuid::new_v4(), fwd.me()),
                None => uuid::Uuid::new_v4().to_string(),
            },
            client_address,
            start_time: now_rfc3339(),
            settings: opts,
            run,
            last_result: 0,
            ended: None,
        };
        let answer = json(&StartSuccess {
            client_token: &seq.token,
            client_address: &seq.client_address,
            start_time: &seq.start_time,
        });
        tracing::info!(path = %path, dry_run = seq.settings.dry_run, recursive = seq.settings.recursive, "heal sequence started");
        seqs.insert(path, seq);
        Ok(super::json_response(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_node() {
        assert_eq!(
            token_node("5f2b1c7e-0000-4000-8000-000000000000:3"),
            Some(3)
        );
        assert_eq!(token_node("5f2b1c7e-0000-4000-8000-000000000000"), None);
        assert_eq!(token_node("x:"), None);
        assert_eq!(token_node("x:-1"), None);
    }

    #[test]
    fn paths_route_and_decode() {
        let route = |p: &str| HealCall::route(&Method::POST, p);
        assert_eq!(
            route("/minio/admin/v3/heal/").unwrap().target().unwrap(),
            (String::new(), String::new())
        );
        assert_eq!(
            route("/minio/admin/v3/heal/photos")
                .unwrap()
                .target()
                .unwrap(),
            ("photos".to_owned(), String::new())
        );
        assert_eq!(
            route("/minio/admin/v3/heal/photos/2024/a%20b")
                .unwrap()
                .target()
                .unwrap(),
            ("photos".to_owned(), "2024/a b".to_owned())
        );
        assert!(HealCall::route(&Method::GET, "/minio/admin/v3/heal/photos").is_none());
        assert!(route("/minio/admin/v3/heal").is_none());
        assert_eq!(
            route("/minio/admin/v3/heal/.minio.sys")
                .unwrap()
                .target()
                .unwrap_err()
                .code,
            "InvalidBucketName"
        );
        assert_eq!(
            route("/minio/admin/v3/heal/b%FFb")
                .unwrap()
                .target()
                .unwrap_err()
                .code,
            "InvalidArgument"
        );
        assert_eq!(
            route("/minio/admin/v3/heal//x")
                .unwrap()
                .target()
                .unwrap_err()
                .code,
            "XMinioHealMissingBucket"
        );
        assert_eq!(heal_path("b", ""), "b");
        assert_eq!(heal_path("b", "p/"), "b/p/");
        assert_eq!(heal_path("", ""), "");
    }

    #[test]
    fn options_decode_as_madmin_sends_them() {
        let o: HealOpts = serde_json::from_slice(
            br#"{"recursive":true,"dryRun":true,"remove":false,"recreate":false,"scanMode":1,"updateParity":false,"nolock":false}"#,
        )
        .unwrap();
        assert!(o.recursive && o.dry_run && o.refused().is_none());
        let o: HealOpts = serde_json::from_slice(br#"{"pool":0,"set":1}"#).unwrap();
        assert!(o.refused().unwrap().contains("--pool"));
        let o: HealOpts = serde_json::from_slice(br#"{"recreate":true}"#).unwrap();
        assert!(o.refused().unwrap().contains("--rewrite"));
        let back = serde_json::to_value(HealOpts::default()).unwrap();
        assert_eq!(back["dryRun"], false);
        assert!(back.get("pool").is_none());
    }

    #[test]
    fn items_take_madmin_s_shape() {
        let item = HealItem {
            kind: HealItemKind::Object,
            bucket: "b".into(),
            key: "k".into(),
            version_id: None,
            drives: vec![
                object::layer::HealDrive {
                    endpoint: "/d1".into(),
                    id: None,
                    before: DriveHealState::Missing,
                    after: DriveHealState::Ok,
                },
                object::layer::HealDrive {
                    endpoint: "/d2".into(),
                    id: Some(uuid::Uuid::nil()),
                    before: DriveHealState::Corrupt,
                    after: DriveHealState::Corrupt,
                },
            ],
            sets: 1,
            data_blocks: 1,
            parity_blocks: 1,
            size: 42,
            error: Some("1 drive(s) could not be written".into()),
        };
        let v = serde_json::to_value(result_item(item, 7)).unwrap();
        assert_eq!(v["resultId"], 7);
        assert_eq!(v["type"], "object");
        assert_eq!(
            (v["bucket"].as_str(), v["object"].as_str()),
            (Some("b"), Some("k"))
        );
        assert_eq!(v["versionId"], "");
        assert_eq!(
            (v["dataBlocks"].as_u64(), v["parityBlocks"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(
            (v["diskCount"].as_u64(), v["setCount"].as_u64()),
            (Some(2), Some(1))
        );
        assert_eq!(v["before"]["drives"][0]["state"], "missing");
        assert_eq!(v["after"]["drives"][0]["state"], "ok");
        assert_eq!(v["before"]["drives"][1]["state"], "corrupt");
        assert_eq!(
            v["before"]["drives"][1]["uuid"],
            uuid::Uuid::nil().to_string()
        );
        assert_eq!(v["objectSize"], 42);
        assert_eq!(v["detail"], "1 drive(s) could not be written");
    }
}
