//! MinIO's admin info (`GET /minio/admin/v3/info`, what `mc admin info`
//! shows) and background heal status (`POST
//! /minio/admin/v3/background-heal/status`, `mc admin heal`) for a
//! cluster: every node probes its own drives and tells what its object
//! layer healed, answering `admin.drives` over the node RPC; a node that
//! does not answer in time shows offline, with the drives the layout gives
//! it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use rpc::{Peer, RpcBody, full};
use s3_gateway::S3Error;
use s3_gateway::admin::{
    AdminAuth, AdminCall, BgHealState, Count, Deployment, DriveInfo, InfoMessage, ServerHeal,
    ServerProperties, Usage,
};
use serde::{Deserialize, Serialize};

use super::format::{LocalDrives, place};
use super::wire::{self, Dec, Enc, WireError};
use crate::config::LaidDrive;

/// Largest admin request body read (the info call has none).
const MAX_BODY: usize = 64 * 1024;
/// How long the info call waits for each node's drives.
const NODE_DEADLINE: Duration = Duration::from_secs(5);

/// A node's answer to `admin.drives`.
#[derive(Debug, Serialize, Deserialize)]
pub struct NodeDrives {
    /// Seconds since the node started.
    pub uptime_s: u64,
    /// Its drives, probed.
    pub drives: Vec<DriveInfo>,
    /// What its object layer healed (none before the layer is open).
    #[serde(default)]
    pub heal: Option<ServerHeal>,
}

/// What the admin info of the cluster is built from.
pub struct Admin {
    pub auth: AdminAuth,
    /// This node's index in `nodes`.
    pub me: usize,
    /// Every node's name (`host:port`), in endpoint order.
    pub nodes: Vec<String>,
    /// `peers[i]` calls node `i` (`None` for this node).
    pub peers: Vec<Option<Peer>>,
    pub layout: Vec<LaidDrive>,
    pub local: Arc<LocalDrives>,
    pub scheme: &'static str,
    pub region: String,
    pub standard_parity: usize,
    pub rrs_parity: usize,
    pub started: std::time::Instant,
    /// This node's object layer, once it is open.
    pub layer: Arc<std::sync::OnceLock<Arc<object::layer::ObjectLayer>>>,
    /// The heal sequences this node runs (its gateway's), which
    /// `admin.heal_poll` answers for the other nodes.
    pub heal_seqs: Arc<s3_gateway::admin::HealSequences>,
}

/// How long a relayed heal poll waits for the node that runs the heal.
const POLL_DEADLINE: Duration = Duration::from_secs(10);

/// Polls of heal sequences that other nodes run, relayed to them over the
/// node RPC (`admin.heal_poll`, answered by [`serve_heal_poll`]).
pub struct HealRelay {
    pub me: usize,
    pub nodes: Vec<String>,
    pub peers: Vec<Option<Peer>>,
}

impl s3_gateway::admin::HealForward for HealRelay {
    fn me(&self) -> usize {
        self.me
    }

    fn poll(
        &self,
        node: usize,
        path: String,
        token: String,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Vec<u8>, S3Error>> + Send>> {
        let peer = self.peers.get(node).cloned().flatten();
        let name = self.nodes.get(node).cloned().unwrap_or_default();
        Box::pin(async move {
            // A token naming no other node of this cluster is not one this
            // cluster handed out.
            let Some(peer) = peer else {
                return Err(S3Error::with_message(
                    "XMinioHealInvalidClientToken",
                    "Client token mismatch",
                ));
            };
            let mut args = Enc::new();
            args.str(&path).str(&token);
            let answer = peer
                .call("admin.heal_poll", Bytes::from(args.0), Some(POLL_DEADLINE))
                .await
                .map_err(|e| {
                    S3Error::with_message(
                        "ServiceUnavailable",
                        format!("the node running this heal ({name}) did not answer: {e}"),
                    )
                })?;
            decode_heal_poll(&answer)
        })
    }
}

/// `admin.heal_poll`: a poll of one of this node's heal sequences,
/// answered `[0] json` or `[1] code message`.
pub fn serve_heal_poll(seqs: &s3_gateway::admin::HealSequences, body: &[u8]) -> Bytes {
    let mut d = Dec::new(body);
    let parsed = (|| {
        let (path, token) = (d.string()?, d.string()?);
        d.end()?;
        Ok::<_, WireError>((path, token))
    })();
    let polled = parsed
        .map_err(|e| S3Error::with_message("InvalidRequest", e.to_string()))
        .and_then(|(path, token)| seqs.poll(&path, &token));
    let out = wire::answer(polled.as_deref(), |out, e| {
        out.str(e.code).str(&e.message);
    });
    Bytes::from(out.0)
}

/// The error codes a relayed poll passes on as they are; any other is an
/// internal error with the remote message.
const RELAYED_CODES: &[&str] = &["XMinioHealInvalidClientToken", "InvalidRequest"];

fn decode_heal_poll(answer: &[u8]) -> Result<Vec<u8>, S3Error> {
    let malformed = |e: WireError| S3Error::internal(format!("a relayed heal poll: {e}"));
    match wire::open(answer).map_err(malformed)? {
        Ok(json) => Ok(json.to_vec()),
        Err(mut d) => {
            let (code, message) = (
                d.string().map_err(malformed)?,
                d.string().map_err(malformed)?,
            );
            let code = RELAYED_CODES
                .iter()
                .find(|c| **c == code)
                .copied()
                .unwrap_or("InternalError");
            Err(S3Error::with_message(code, message))
        }
    }
}

impl Admin {
    /// Answers an admin call: the info after the root user's signature is
    /// checked, MinIO's error document otherwise.
    pub async fn serve(
        &self,
        call: AdminCall,
        req: Request<Incoming>,
        deployment: Option<String>,
    ) -> Response<RpcBody> {
        let path = req.uri().path().to_owned();
        let head = req.method() == Method::HEAD;
        let refuse = |e: &S3Error| s3_gateway::error_document(e, &path, head).map(|b| b.boxed());
        match call {
            AdminCall::Unsupported(e) => refuse(&e),
            // Routed to the gateway before this (`Node::route`).
            AdminCall::Iam(_) | AdminCall::Quota(_) | AdminCall::Config(_) | AdminCall::Heal(_) => {
                refuse(&S3Error::internal(
                    "a call the gateway serves reached the cluster's admin",
                ))
            }
            AdminCall::ServerInfo | AdminCall::HealStatus => {
                let (parts, body) = req.into_parts();
                let body = match Limited::new(body, MAX_BODY).collect().await {
                    Ok(b) => b.to_bytes(),
                    Err(_) => {
                        return refuse(&S3Error::with_message(
                            "InvalidRequest",
                            "The admin request's body is too large or was cut short.",
                        ));
                    }
                };
                if let Err(e) = self.auth.authenticate(&parts, &body) {
                    return refuse(&e);
                }
                let answers = self.gather().await;
                let json = if call == AdminCall::HealStatus {
                    self.heal_status(answers).to_json()
                } else {
                    self.info(deployment.unwrap_or_default(), answers).to_json()
                };
                let mut r = Response::new(full(json));
                *r.status_mut() = StatusCode::OK;
                r.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("application/json"),
                );
                r
            }
        }
    }

    /// Every node's drives and heals, asked of all nodes at once (`None`:
    /// the node did not answer in time).
    async fn gather(&self) -> Vec<Option<NodeDrives>> {
        let mut asks = tokio::task::JoinSet::new();
        for (i, p) in self.peers.iter().enumerate() {
            if let Some(p) = p.clone() {
                asks.spawn(async move {
                    let answer = match p
                        .call("admin.drives", Bytes::new(), Some(NODE_DEADLINE))
                        .await
                    {
                        Ok(b) => serde_json::from_slice::<NodeDrives>(&b)
                            .map_err(|e| tracing::warn!(peer = %p.name(), "admin.drives: {e}"))
                            .ok(),
                        Err(e) => {
                            tracing::warn!(peer = %p.name(), "admin.drives: {e}");
                            None
                        }
                    };
                    (i, answer)
                });
            }
        }
        let mut answers: Vec<Option<NodeDrives>> = self.nodes.iter().map(|_| None).collect();
        answers[self.me] = Some(NodeDrives {
            uptime_s: self.started.elapsed().as_secs(),
            drives: self.local.info().await,
            heal: self.layer.get().map(|l| ServerHeal::of(l)),
        });
        while let Some(joined) = asks.join_next().await {
            if let Ok((i, Some(a))) = joined {
                answers[i] = Some(a);
            }
        }
        answers
    }

    /// The drives the layout gives node `i`, offline.
    fn offline_drives(&self, i: usize) -> Vec<DriveInfo> {
        (self.layout.iter())
            .filter(|d| d.node == i)
            .map(|d| DriveInfo::offline(place(d)))
            .collect()
    }

    /// The heal status from every node's answer.
    fn heal_status(&self, answers: Vec<Option<NodeDrives>>) -> BgHealState {
        let (mut drives, mut heals, mut offline) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (name, answer)) in self.nodes.iter().zip(answers).enumerate() {
            match answer {
                Some(a) => {
                    drives.extend(a.drives);
                    heals.extend(a.heal.map(|h| (name.clone(), h)));
                }
                None => {
                    drives.extend(self.offline_drives(i));
                    offline.push(name.clone());
                }
            }
        }
        BgHealState::new(
            drives,
            heals,
            offline,
            self.standard_parity,
            self.rrs_parity,
        )
    }

    /// The admin info from every node's answer.
    fn info(&self, deployment_id: String, answers: Vec<Option<NodeDrives>>) -> InfoMessage {
        let servers = self
            .nodes
            .iter()
            .zip(answers)
            .enumerate()
            .map(|(i, (name, answer))| match answer {
                Some(a) => ServerProperties::online(
                    name.clone(),
                    self.scheme,
                    a.uptime_s,
                    env!("CARGO_PKG_VERSION"),
                    a.drives,
                ),
                None => ServerProperties::offline(name.clone(), self.offline_drives(i)),
            })
            .collect();
        let pools = self
            .layout
            .iter()
            .map(|d| d.pool)
            .max()
            .map_or(0, |p| p + 1);
        let sets_per_pool = (0..pools)
            .map(|p| {
                self.layout
                    .iter()
                    .filter(|d| d.pool == p)
                    .map(|d| d.set + 1)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let drives_per_set = (0..pools)
            .map(|p| {
                self.layout
                    .iter()
                    .filter(|d| d.pool == p && d.set == 0)
                    .count()
            })
            .collect();
        const NOT_SERVED: &str = "not counted: a cluster node does not count its objects yet";
        InfoMessage::new(
            Deployment {
                deployment_id,
                region: self.region.clone(),
                standard_parity: self.standard_parity,
                rrs_parity: self.rrs_parity,
                sets_per_pool,
                drives_per_set,
                buckets: Count::unknown(NOT_SERVED),
                objects: Count::unknown(NOT_SERVED),
                versions: Count::unknown(NOT_SERVED),
                delete_markers: Count::unknown(NOT_SERVED),
                usage: Usage::unknown(NOT_SERVED),
            },
            servers,
        )
    }
}
