//! What the nodes must agree on before they form a cluster, and the wait
//! for enough of them to agree.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rpc::{Peer, RpcError};
use serde_json::{Value, json};

/// The version of the cluster's formats (RPC methods, raft state): nodes
/// of different versions do not form a cluster.
pub const FORMAT_VERSION: u64 = 1;

/// The facts every node must share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agreement {
    /// Every drive endpoint, canonical, in order.
    pub endpoints: Vec<String>,
    /// Drives per erasure set of each pool.
    pub set_sizes: Vec<usize>,
    /// The standard storage class's parity, if set.
    pub parity: Option<usize>,
    /// [`FORMAT_VERSION`].
    pub format: u64,
}

impl Agreement {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "endpoints": self.endpoints,
            "set_sizes": self.set_sizes,
            "parity": self.parity,
            "format": self.format,
        }))
        .unwrap_or_default()
    }

    /// What differs between `theirs` (a peer's JSON) and this node's, in
    /// words; `None` when they agree.
    pub fn difference(&self, theirs: &[u8]) -> Option<String> {
        let Ok(v) = serde_json::from_slice::<Value>(theirs) else {
            return Some("the peer's agreement does not decode".into());
        };
        let mine: Value = serde_json::from_slice(&self.to_json()).unwrap_or(Value::Null);
        if v.get("format") != mine.get("format") {
            return Some(format!(
                "format version {} here, {} there (run the same release on every node)",
                mine["format"], v["format"]
            ));
        }
        if v.get("endpoints") != mine.get("endpoints") {
            let theirs: Vec<&str> = v["endpoints"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let first = self
                .endpoints
                .iter()
                .zip(&theirs)
                .position(|(a, b)| a != b)
                .unwrap_or(self.endpoints.len().min(theirs.len()));
            return Some(format!(
                "the endpoint lists differ: {} endpoints here, {} there; first difference at \
                 position {}: {:?} here, {:?} there (give every node the same endpoints)",
                self.endpoints.len(),
                theirs.len(),
                first + 1,
                self.endpoints
                    .get(first)
                    .map(String::as_str)
                    .unwrap_or("(none)"),
                theirs.get(first).copied().unwrap_or("(none)")
            ));
        }
        if v.get("set_sizes") != mine.get("set_sizes") {
            return Some(format!(
                "erasure set sizes {} here, {} there (TESSERA_ERASURE_SET_DRIVE_COUNT)",
                mine["set_sizes"], v["set_sizes"]
            ));
        }
        if v.get("parity") != mine.get("parity") {
            return Some(format!(
                "standard parity {} here, {} there (TESSERA_STORAGE_CLASS_STANDARD)",
                mine["parity"], v["parity"]
            ));
        }
        None
    }
}

/// Why the node cannot join.
#[derive(Debug)]
pub struct Refused(pub String);

/// Asks every peer whether it agrees, until a majority of the nodes (this
/// one included) does; logs who it still waits for every `report`.
/// A peer that disagrees, or holds other credentials, ends the wait with
/// the reason: this node does not join.
pub async fn wait_for_agreement(
    agreement: &Agreement,
    peers: &[Peer],
    nodes: usize,
    report: Duration,
) -> Result<Vec<String>, Refused> {
    let body = bytes::Bytes::from(agreement.to_json());
    let mut agreed: BTreeMap<String, ()> = BTreeMap::new();
    let mut last_report = Instant::now();
    loop {
        let mut waiting = Vec::new();
        for p in peers {
            if agreed.contains_key(p.name()) {
                continue;
            }
            match p
                .call(
                    "bootstrap.check",
                    body.clone(),
                    Some(Duration::from_secs(2)),
                )
                .await
            {
                Ok(_) => {
                    tracing::info!(peer = p.name(), "node agrees on the cluster");
                    agreed.insert(p.name().to_owned(), ());
                }
                Err(RpcError::Remote {
                    status: 409,
                    message,
                    ..
                }) => {
                    return Err(Refused(format!("node {} disagrees: {message}", p.name())));
                }
                Err(RpcError::Remote {
                    status: 401,
                    message,
                    ..
                }) if message.contains("other root credentials") => {
                    return Err(Refused(format!(
                        "node {} holds other root credentials (set the same \
                         TESSERA_ROOT_USER and TESSERA_ROOT_PASSWORD on every node)",
                        p.name()
                    )));
                }
                Err(RpcError::Unreachable { reason, .. }) => {
                    waiting.push(format!("{} ({reason})", p.name()));
                }
                Err(e) => waiting.push(format!("{} ({e})", p.name())),
            }
        }
        // This node agrees with itself.
        if agreed.len() + 1 > nodes / 2 && waiting.is_empty()
            || agreed.len() + 1 > nodes / 2 && last_report.elapsed() >= report
        {
            if !waiting.is_empty() {
                tracing::warn!(
                    "a majority of nodes agrees; forming the cluster while waiting for: {}",
                    waiting.join(", ")
                );
            }
            return Ok(agreed.into_keys().collect());
        }
        if last_report.elapsed() >= report {
            tracing::info!(
                agreed = agreed.len() + 1,
                of = nodes,
                "waiting for nodes: {}",
                waiting.join(", ")
            );
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(endpoints: &[&str]) -> Agreement {
        Agreement {
            endpoints: endpoints.iter().map(|s| s.to_string()).collect(),
            set_sizes: vec![4],
            parity: None,
            format: FORMAT_VERSION,
        }
    }

    #[test]
    fn differences_are_named() {
        let mine = a(&["http://n1:9000/d1", "http://n2:9000/d1"]);
        assert_eq!(mine.difference(&mine.to_json()), None);
        let d = mine
            .difference(&a(&["http://n1:9000/d1", "http://n3:9000/d1"]).to_json())
            .unwrap();
        assert!(d.contains("position 2") && d.contains("n3:9000"), "{d}");
        let mut other = mine.clone();
        other.parity = Some(2);
        assert!(
            mine.difference(&other.to_json())
                .unwrap()
                .contains("parity")
        );
        other = mine.clone();
        other.format = 9;
        assert!(
            mine.difference(&other.to_json())
                .unwrap()
                .contains("format version")
        );
        assert!(mine.difference(b"{").is_some());
    }
}
