//! Formatting a cluster's drives as MinIO formats a distributed deployment:
//! one `format.json` layout (deployment id, sets of drive ids) across every
//! node's drives, each drive's copy naming itself. Only the node that
//! serves the first drive of the layout formats, and only when every drive
//! of every node answers; the other nodes wait for it. Then every node
//! checks its own drives: same deployment, each drive in the place the
//! endpoints give it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use drive::{DriveError, FormatErasureV3, LocalDrive, LocalDriveConfig};
use rpc::{Failure, Peer};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::config::{ClusterNodes, LaidDrive};

/// This node's drives, opened.
pub struct LocalDrives {
    /// (its place in the layout, the drive).
    drives: Vec<(LaidDrive, Arc<LocalDrive>)>,
}

impl LocalDrives {
    /// Opens (creating the directories of) this node's drives.
    pub async fn open(nodes: &ClusterNodes) -> Result<LocalDrives, String> {
        let mut drives = Vec::new();
        for d in nodes.layout.iter().filter(|d| d.node == nodes.me) {
            std::fs::create_dir_all(&d.path)
                .map_err(|e| format!("drive {}: {e}", d.path.display()))?;
            let drive = LocalDrive::open(d.path.clone(), LocalDriveConfig::default())
                .await
                .map_err(|e| format!("drive {}: {e}", d.path.display()))?;
            drives.push((d.clone(), Arc::new(drive)));
        }
        Ok(LocalDrives { drives })
    }

    /// Each drive's state: its endpoint and its `format.json` (`None`:
    /// unformatted).
    async fn status(&self) -> Result<Vec<(String, Option<FormatErasureV3>)>, String> {
        let mut out = Vec::new();
        for (d, drive) in &self.drives {
            match drive::load_format(drive.as_ref()).await {
                Ok(f) => out.push((d.endpoint.clone(), Some(f))),
                Err(DriveError::Unformatted) => out.push((d.endpoint.clone(), None)),
                Err(e) => return Err(format!("drive {}: {e}", d.endpoint)),
            }
        }
        Ok(out)
    }

    /// The node-RPC method `format.status`.
    pub async fn serve_status(&self) -> Result<Bytes, Failure> {
        let status = self.status().await.map_err(Failure::from)?;
        let v: Vec<Value> = status
            .into_iter()
            .map(|(endpoint, f)| {
                json!({
                    "endpoint": endpoint,
                    "format": f.map(|f| String::from_utf8_lossy(&f.to_json()).into_owned()),
                })
            })
            .collect();
        Ok(Bytes::from(serde_json::to_vec(&v).unwrap_or_default()))
    }

    /// The node-RPC method `format.write`: the formats of this node's
    /// drives, by endpoint; a drive already formatted keeps its format
    /// (and must already hold this one).
    pub async fn serve_write(&self, body: &[u8]) -> Result<Bytes, Failure> {
        let want: BTreeMap<String, String> = serde_json::from_slice(body)
            .map_err(|e| Failure::from(format!("format.write: {e}")))?;
        for (d, drive) in &self.drives {
            let Some(text) = want.get(&d.endpoint) else {
                continue;
            };
            let f = FormatErasureV3::from_json(text.as_bytes())
                .map_err(|e| Failure::from(format!("{}: {e}", d.endpoint)))?;
            match drive::load_format(drive.as_ref()).await {
                Ok(have) if have == f => {}
                Ok(_) => {
                    return Err(Failure {
                        status: 409,
                        message: format!("drive {} is already formatted otherwise", d.endpoint),
                    });
                }
                Err(DriveError::Unformatted) => {
                    drive::save_format(drive.as_ref(), &f, false)
                        .await
                        .map_err(|e| Failure::from(format!("{}: {e}", d.endpoint)))?;
                }
                Err(e) => return Err(Failure::from(format!("{}: {e}", d.endpoint))),
            }
        }
        Ok(Bytes::new())
    }

    /// Checks every drive against the deployment: formatted, the same
    /// deployment and layout as the others, and in its place.
    pub async fn check(&self) -> Result<Uuid, String> {
        let status = self.status().await?;
        let mut reference: Option<FormatErasureV3> = None;
        for ((d, _), (_, f)) in self.drives.iter().zip(&status) {
            let f = f
                .as_ref()
                .ok_or_else(|| format!("drive {} is not formatted", d.endpoint))?;
            let r = reference.get_or_insert_with(|| f.clone());
            let expected = drive::DrivePosition {
                set: d.set,
                disk: d.disk,
            };
            drive::check_format(r, f, Some(expected)).map_err(|e| {
                format!(
                    "drive {} does not belong here: {e} (a drive of another deployment, or \
                     moved from its place)",
                    d.endpoint
                )
            })?;
        }
        reference
            .and_then(|r| r.deployment_id())
            .ok_or_else(|| "this node has no drives".to_owned())
    }
}

/// The formats of a fresh layout, by endpoint: a new deployment id and a
/// new id per drive, one pool at a time, MinIO's layout order.
fn fresh_formats(layout: &[LaidDrive]) -> Result<BTreeMap<String, String>, String> {
    let deployment = Uuid::new_v4();
    let mut out = BTreeMap::new();
    let pools = layout.iter().map(|d| d.pool).max().map_or(0, |p| p + 1);
    for pool in 0..pools {
        let drives: Vec<&LaidDrive> = layout.iter().filter(|d| d.pool == pool).collect();
        let sets = drives.iter().map(|d| d.set).max().map_or(0, |s| s + 1);
        let ids: Vec<Vec<Uuid>> = (0..sets)
            .map(|s| {
                let n = drives.iter().filter(|d| d.set == s).count();
                (0..n).map(|_| Uuid::new_v4()).collect()
            })
            .collect();
        let formats = drive::build_formats(deployment, &ids).map_err(|e| e.to_string())?;
        // build_formats gives set by set, position by position.
        let mut by_place: Vec<&LaidDrive> = drives.clone();
        by_place.sort_by_key(|d| (d.set, d.disk));
        for (d, f) in by_place.into_iter().zip(formats) {
            out.insert(
                d.endpoint.clone(),
                String::from_utf8_lossy(&f.to_json()).into_owned(),
            );
        }
    }
    Ok(out)
}

/// Formats the cluster's drives when this node serves the layout's first
/// drive and every drive answers unformatted; otherwise waits until this
/// node's drives are formatted. Logs what it waits for every `report`.
pub async fn format_or_wait(
    nodes: &ClusterNodes,
    local: &LocalDrives,
    peers: &[Peer],
    report: Duration,
) -> Result<(), String> {
    let first = nodes
        .layout
        .first()
        .ok_or_else(|| "no drives in the layout".to_owned())?;
    let mut last = Instant::now();
    if first.node != nodes.me {
        let formatter = &nodes.nodes[first.node];
        loop {
            if local.status().await?.iter().all(|(_, f)| f.is_some()) {
                return Ok(());
            }
            if last.elapsed() >= report {
                tracing::info!("waiting for node {formatter} to format the cluster's drives");
                last = Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    // This node formats: every node's drives must answer first.
    loop {
        let mut formatted = 0;
        let mut total = local.drives.len();
        formatted += local
            .status()
            .await?
            .iter()
            .filter(|(_, f)| f.is_some())
            .count();
        let mut missing = Vec::new();
        for p in peers {
            match p
                .call("format.status", Bytes::new(), Some(Duration::from_secs(5)))
                .await
            {
                Ok(b) => {
                    let v: Vec<Value> = serde_json::from_slice(&b).unwrap_or_default();
                    total += v.len();
                    formatted += v.iter().filter(|d| !d["format"].is_null()).count();
                }
                Err(e) => missing.push(format!("{} ({e})", p.name())),
            }
        }
        if missing.is_empty() {
            if formatted == total {
                return Ok(());
            }
            if formatted > 0 {
                return Err(format!(
                    "{formatted} of the cluster's {total} drives are formatted and the others \
                     are not: formatting only a part of a cluster's drives is not done yet"
                ));
            }
            break;
        }
        if last.elapsed() >= report {
            tracing::info!(
                "waiting for every node before formatting the drives: {}",
                missing.join(", ")
            );
            last = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let formats = fresh_formats(&nodes.layout)?;
    let body = Bytes::from(serde_json::to_vec(&formats).unwrap_or_default());
    local
        .serve_write(&body)
        .await
        .map_err(|f| format!("formatting this node's drives: {}", f.message))?;
    for p in peers {
        p.call("format.write", body.clone(), Some(Duration::from_secs(30)))
            .await
            .map_err(|e| format!("formatting the drives of {}: {e}", p.name()))?;
    }
    tracing::info!(drives = formats.len(), "formatted the cluster's drives");
    Ok(())
}
