//! Formatting a cluster's drives as MinIO formats a distributed deployment:
//! one `format.json` layout (deployment id, sets of drive ids) across every
//! node's drives, each drive's copy naming itself. Only the node that
//! serves the first drive of the layout formats, and only when every drive
//! of every node answers; the other nodes wait for it. A node whose drives
//! are blank while the rest of the cluster is formatted (a replaced node or
//! drive) gives each the deployment's format in its place. Then every node
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

    /// The drives with their places in the layout.
    pub fn laid(&self) -> impl Iterator<Item = (&LaidDrive, &Arc<LocalDrive>)> {
        self.drives.iter().map(|(d, drive)| (d, drive))
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

    /// What `mc admin info` shows of this node's drives (the node-RPC
    /// method `admin.drives`), each probed under the admin probe's
    /// deadline.
    pub async fn info(&self) -> Vec<s3_gateway::admin::DriveInfo> {
        let places = self
            .drives
            .iter()
            .map(|(d, drive)| (Arc::clone(drive) as Arc<dyn drive::Drive>, place(d)))
            .collect();
        s3_gateway::admin::probe_drives(places, s3_gateway::admin::PROBE_TIMEOUT).await
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

/// Where a drive of the layout sits, as `mc admin info` shows it.
pub fn place(d: &LaidDrive) -> s3_gateway::admin::DrivePlace {
    s3_gateway::admin::DrivePlace {
        endpoint: d.endpoint.clone(),
        path: d.path.display().to_string(),
        pool: d.pool,
        set: d.set,
        disk: d.disk,
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

/// The formats of this node's unformatted drives `blank`, taken from the
/// cluster's formatted drives (a replaced drive or node): each gets its
/// pool's format with `this` naming the drive id of its own place, as
/// MinIO heals the format of a replaced drive. More than half of the
/// pool's drives must carry one and the same format; anything less is
/// ambiguous and refused.
fn healed_formats(
    layout: &[LaidDrive],
    answers: &BTreeMap<String, FormatErasureV3>,
    blank: &[&LaidDrive],
) -> Result<BTreeMap<String, String>, String> {
    let mut references: BTreeMap<usize, &FormatErasureV3> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for d in blank {
        let reference = match references.get(&d.pool) {
            Some(r) => *r,
            None => {
                let r = pool_reference(layout, answers, d.pool)?;
                references.insert(d.pool, r);
                r
            }
        };
        let this = reference
            .xl
            .sets
            .get(d.set)
            .and_then(|s| s.get(d.disk))
            .ok_or_else(|| {
                format!(
                    "the deployment's format has no place for drive {} (set {}, drive {})",
                    d.endpoint,
                    d.set + 1,
                    d.disk + 1
                )
            })?;
        let mut f = reference.clone();
        f.xl.this = this.clone();
        out.insert(
            d.endpoint.clone(),
            String::from_utf8_lossy(&f.to_json()).into_owned(),
        );
    }
    Ok(out)
}

/// The format more than half of `pool`'s drives agree on (deployment id
/// and sets matrix), as one of those drives answered it.
fn pool_reference<'a>(
    layout: &[LaidDrive],
    answers: &'a BTreeMap<String, FormatErasureV3>,
    pool: usize,
) -> Result<&'a FormatErasureV3, String> {
    let drives = layout.iter().filter(|x| x.pool == pool).count();
    // The formats answered, each with how many drives agree on it.
    let mut groups: Vec<(usize, &FormatErasureV3)> = Vec::new();
    for x in layout.iter().filter(|x| x.pool == pool) {
        let Some(f) = answers.get(&x.endpoint) else {
            continue;
        };
        match groups
            .iter_mut()
            .find(|(_, g)| g.id == f.id && g.xl.sets == f.xl.sets)
        {
            Some((n, _)) => *n += 1,
            None => groups.push((1, f)),
        }
    }
    let Some((n, reference)) = groups.into_iter().max_by_key(|(n, _)| *n) else {
        return Err(format!("no drive of pool {} is formatted", pool + 1));
    };
    if n * 2 <= drives {
        return Err(format!(
            "only {n} of pool {}'s {drives} drives carry the deployment's format: too few to \
             format the others from",
            pool + 1,
        ));
    }
    Ok(reference)
}

/// Brings this node's drives to the deployment's format:
/// - all formatted: nothing to do;
/// - some drives of the cluster formatted: this node's unformatted drives
///   (replaced ones) get the deployment's format in their place;
/// - none formatted: the node serving the layout's first drive formats
///   every drive once every node answers; the others wait for it.
///
/// Logs what it waits for every `report`. Returns the endpoints of the
/// replaced drives it formatted (their heal is the scanner's first pass).
pub async fn format_or_wait(
    nodes: &ClusterNodes,
    local: &LocalDrives,
    peers: &[Peer],
    report: Duration,
) -> Result<Vec<String>, String> {
    let first = nodes
        .layout
        .first()
        .ok_or_else(|| "no drives in the layout".to_owned())?;
    let formatter = &nodes.nodes[first.node];
    let mut last = Instant::now();
    loop {
        let mine = local.status().await?;
        if mine.iter().all(|(_, f)| f.is_some()) {
            return Ok(Vec::new());
        }
        let mut answers: BTreeMap<String, FormatErasureV3> = BTreeMap::new();
        let mut total = mine.len();
        for (endpoint, f) in mine {
            if let Some(f) = f {
                answers.insert(endpoint, f);
            }
        }
        let mut missing = Vec::new();
        for p in peers {
            match p
                .call("format.status", Bytes::new(), Some(Duration::from_secs(5)))
                .await
            {
                Ok(b) => {
                    let v: Vec<Value> = serde_json::from_slice(&b).unwrap_or_default();
                    total += v.len();
                    for d in v {
                        let (Some(endpoint), Some(text)) =
                            (d["endpoint"].as_str(), d["format"].as_str())
                        else {
                            continue;
                        };
                        if let Ok(f) = FormatErasureV3::from_json(text.as_bytes()) {
                            answers.insert(endpoint.to_owned(), f);
                        }
                    }
                }
                Err(e) => missing.push(format!("{} ({e})", p.name())),
            }
        }
        let waiting = if !answers.is_empty() {
            let blank: Vec<&LaidDrive> = local
                .drives
                .iter()
                .map(|(d, _)| d)
                .filter(|d| !answers.contains_key(&d.endpoint))
                .collect();
            match healed_formats(&nodes.layout, &answers, &blank) {
                Ok(formats) => {
                    let body = Bytes::from(serde_json::to_vec(&formats).unwrap_or_default());
                    local
                        .serve_write(&body)
                        .await
                        .map_err(|f| format!("formatting this node's drives: {}", f.message))?;
                    tracing::warn!(
                        drives = ?formats.keys().collect::<Vec<_>>(),
                        "formatted this node's blank drives as the deployment's \
                         (replaced drives); their data returns by healing"
                    );
                    return Ok(formats.into_keys().collect());
                }
                // More drives may yet answer, or the first node may be
                // formatting them right now.
                Err(why) => format!(
                    "{} of the cluster's {total} drives answer formatted and this node's \
                     others are blank; waiting: {why}",
                    answers.len()
                ),
            }
        } else if first.node == nodes.me && missing.is_empty() {
            break;
        } else if first.node == nodes.me {
            format!(
                "waiting for every node before formatting the drives: {}",
                missing.join(", ")
            )
        } else {
            format!("waiting for node {formatter} to format the cluster's drives")
        };
        if last.elapsed() >= report {
            tracing::info!("{waiting}");
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
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(nodes: usize, per_node: usize) -> Vec<LaidDrive> {
        (0..nodes * per_node)
            .map(|i| LaidDrive {
                endpoint: format!("http://n{}:9000/d{}", i / per_node + 1, i % per_node + 1),
                node: i / per_node,
                path: format!("/d{}", i % per_node + 1).into(),
                pool: 0,
                set: 0,
                disk: i,
            })
            .collect()
    }

    fn formatted(layout: &[LaidDrive]) -> BTreeMap<String, FormatErasureV3> {
        fresh_formats(layout)
            .unwrap()
            .into_iter()
            .map(|(e, t)| (e, FormatErasureV3::from_json(t.as_bytes()).unwrap()))
            .collect()
    }

    #[test]
    fn blank_drives_get_the_format_of_their_place() {
        let l = layout(4, 4);
        let all = formatted(&l);
        let mut answers = all.clone();
        let blank: Vec<&LaidDrive> = l.iter().filter(|d| d.node == 0).collect();
        for d in &blank {
            answers.remove(&d.endpoint);
        }
        let healed = healed_formats(&l, &answers, &blank).unwrap();
        assert_eq!(healed.len(), 4);
        for d in &blank {
            let f = FormatErasureV3::from_json(healed[&d.endpoint].as_bytes()).unwrap();
            assert_eq!(f, all[&d.endpoint], "{}", d.endpoint);
        }
    }

    #[test]
    fn too_few_or_split_formats_are_not_followed() {
        let l = layout(4, 4);
        let all = formatted(&l);
        // Half of the drives formatted is not more than half.
        let answers: BTreeMap<_, _> = all
            .iter()
            .take(8)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let blank: Vec<&LaidDrive> = l
            .iter()
            .filter(|d| !answers.contains_key(&d.endpoint))
            .collect();
        let e = healed_formats(&l, &answers, &blank).unwrap_err();
        assert!(e.contains("only 8 of pool 1's 16 drives"), "{e}");
        // Nine drives of one deployment and four of another: the nine win.
        let other = formatted(&l);
        let mut answers: BTreeMap<_, _> = all
            .iter()
            .take(9)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (k, v) in other.iter().skip(9).take(4) {
            answers.insert(k.clone(), v.clone());
        }
        let last = l.last().unwrap();
        let healed = healed_formats(&l, &answers, &[last]).unwrap();
        let f = FormatErasureV3::from_json(healed[&last.endpoint].as_bytes()).unwrap();
        assert_eq!(f, all[&last.endpoint]);
    }
}
