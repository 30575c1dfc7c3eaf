//! The document of MinIO's admin info call (madmin-go's `InfoMessage`), as
//! plain structs with the JSON names madmin-go decodes.
//!
//! Every value is filled by the caller from what it measured; a figure
//! Tessera does not have is left out of the document (madmin-go decodes
//! it as zero) or, for the usage counts, given as zero with the `error`
//! madmin-go carries for that purpose. The structs deserialize too, so a
//! node can ship its [`ServerProperties`] to the node answering the call.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What `GET /minio/admin/v3/info` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfoMessage {
    /// `online` once the object layer serves.
    pub mode: ItemState,
    /// The region of credential scopes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// The deployment id of the drives' `format.json`.
    #[serde(rename = "deploymentID")]
    pub deployment_id: String,
    /// Buckets.
    pub buckets: Count,
    /// Objects (latest versions).
    pub objects: Count,
    /// Object versions.
    pub versions: Count,
    /// Delete markers.
    #[serde(rename = "deletemarkers")]
    pub delete_markers: Count,
    /// Bytes of object data stored.
    pub usage: Usage,
    /// The erasure backend: drive counts, parity, set layout.
    pub backend: ErasureBackend,
    /// Every server of the deployment, with its drives.
    pub servers: Vec<ServerProperties>,
}

/// What the caller knows of the deployment as a whole, for
/// [`InfoMessage::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    /// The deployment id (`id` of `format.json`).
    pub deployment_id: String,
    /// The region of credential scopes.
    pub region: String,
    /// Parity drives of the `STANDARD` storage class.
    pub standard_parity: usize,
    /// Parity drives of the `REDUCED_REDUNDANCY` storage class.
    pub rrs_parity: usize,
    /// Erasure sets of each pool, pool after pool.
    pub sets_per_pool: Vec<usize>,
    /// Drives per erasure set of each pool, pool after pool.
    pub drives_per_set: Vec<usize>,
    /// Buckets.
    pub buckets: Count,
    /// Objects.
    pub objects: Count,
    /// Object versions.
    pub versions: Count,
    /// Delete markers.
    pub delete_markers: Count,
    /// Bytes of object data.
    pub usage: Usage,
}

impl InfoMessage {
    /// The document of an online deployment served by `servers`; the
    /// backend's online and offline drive counts are taken from the
    /// servers' drives, counted as MinIO counts them
    /// ([`DriveState::counts_online`]).
    pub fn new(deployment: Deployment, servers: Vec<ServerProperties>) -> InfoMessage {
        let drives = servers.iter().flat_map(|s| &s.drives);
        let online_disks = drives.clone().filter(|d| d.state.counts_online()).count();
        let offline_disks = drives.count() - online_disks;
        InfoMessage {
            mode: ItemState::Online,
            region: deployment.region,
            deployment_id: deployment.deployment_id,
            buckets: deployment.buckets,
            objects: deployment.objects,
            versions: deployment.versions,
            delete_markers: deployment.delete_markers,
            usage: deployment.usage,
            backend: ErasureBackend {
                backend_type: BackendType::Erasure,
                online_disks,
                offline_disks,
                standard_parity: deployment.standard_parity,
                rrs_parity: deployment.rrs_parity,
                total_sets: deployment.sets_per_pool,
                drives_per_set: deployment.drives_per_set,
            },
            servers,
        }
    }

    /// The JSON document.
    pub fn to_json(&self) -> Vec<u8> {
        // Strings, numbers, sequences and maps keyed by strings always
        // serialise.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// A count with the reason it could not be taken (madmin-go's `Buckets`,
/// `Objects`, `Versions` and `DeleteMarkers`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Count {
    /// The count; 0 when `error` is set.
    pub count: u64,
    /// Why there is no count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Count {
    /// A count taken.
    pub fn of(count: u64) -> Count {
        Count { count, error: None }
    }

    /// No count, for `reason`.
    pub fn unknown(reason: impl Into<String>) -> Count {
        Count {
            count: 0,
            error: Some(reason.into()),
        }
    }
}

/// Bytes of object data, with the reason they could not be summed
/// (madmin-go's `Usage`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Bytes; 0 when `error` is set.
    pub size: u64,
    /// Why there is no figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Usage {
    /// No figure, for `reason`.
    pub fn unknown(reason: impl Into<String>) -> Usage {
        Usage {
            size: 0,
            error: Some(reason.into()),
        }
    }
}

/// The kind of backend; Tessera has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BackendType {
    /// Erasure-coded sets of drives.
    Erasure,
}

/// The erasure backend (madmin-go's `ErasureBackend`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasureBackend {
    /// `Erasure`.
    #[serde(rename = "backendType")]
    pub backend_type: BackendType,
    /// Drives that answer (state `ok` or `unformatted`).
    #[serde(rename = "onlineDisks")]
    pub online_disks: usize,
    /// Drives in any other state.
    #[serde(rename = "offlineDisks")]
    pub offline_disks: usize,
    /// Parity drives of the `STANDARD` storage class (`mc` prints it as
    /// `EC:n`).
    #[serde(rename = "standardSCParity")]
    pub standard_parity: usize,
    /// Parity drives of the `REDUCED_REDUNDANCY` storage class.
    #[serde(rename = "rrSCParity")]
    pub rrs_parity: usize,
    /// Erasure sets of each pool.
    #[serde(rename = "totalSets")]
    pub total_sets: Vec<usize>,
    /// Drives per set of each pool (`mc` indexes it by every drive's pool:
    /// one entry per pool is required).
    #[serde(rename = "totalDrivesPerSet")]
    pub drives_per_set: Vec<usize>,
}

/// The state of a server or of the deployment (madmin-go's `ItemState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemState {
    /// Serving.
    Online,
    /// Not answering.
    Offline,
    /// Up, the object layer not yet open.
    Initializing,
}

/// One server (node) of the deployment (madmin-go's `ServerProperties`).
///
/// Left out: the Go runtime's memory and GC statistics (`mem_stats`,
/// `gc_stats`, `go_max_procs`; Tessera has no Go runtime and its allocator
/// keeps no such counts), the commit id (not recorded in the build) and
/// MinIO's environment variables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerProperties {
    /// `online`, or `offline` for a server that did not answer.
    pub state: ItemState,
    /// `host:port` of the server.
    pub endpoint: String,
    /// `http` or `https`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheme: String,
    /// Seconds since the server started.
    #[serde(default)]
    pub uptime: u64,
    /// The server's version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The commit the server was built from, when known.
    #[serde(rename = "commitID", default, skip_serializing_if = "Option::is_none")]
    pub commit_id: Option<String>,
    /// Each server this one reaches, by endpoint, and whether it answers.
    #[serde(default)]
    pub network: BTreeMap<String, ItemState>,
    /// The server's drives.
    #[serde(default)]
    pub drives: Vec<DriveInfo>,
    /// The pool (1-based) of the server's drives, when they are all in
    /// one.
    #[serde(
        rename = "poolNumber",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub pool_number: Option<usize>,
    /// The pools (1-based) of the server's drives, ascending.
    #[serde(rename = "poolNumbers", default)]
    pub pool_numbers: Vec<usize>,
}

impl ServerProperties {
    /// An online server at `endpoint` with `drives`; its pools are those
    /// of its drives, and its network names itself online.
    pub fn online(
        endpoint: impl Into<String>,
        scheme: impl Into<String>,
        uptime_secs: u64,
        version: impl Into<String>,
        drives: Vec<DriveInfo>,
    ) -> ServerProperties {
        let endpoint = endpoint.into();
        let mut s = ServerProperties::with_drives(ItemState::Online, endpoint.clone(), drives);
        s.scheme = scheme.into();
        s.uptime = uptime_secs;
        s.version = version.into();
        s.network.insert(endpoint, ItemState::Online);
        s
    }

    /// A server that did not answer, with the drives it is known to hold
    /// (each in state `offline`, as MinIO reports them).
    pub fn offline(endpoint: impl Into<String>, mut drives: Vec<DriveInfo>) -> ServerProperties {
        for d in &mut drives {
            *d = DriveInfo::offline(DrivePlace {
                endpoint: std::mem::take(&mut d.endpoint),
                path: std::mem::take(&mut d.path),
                pool: d.pool_index,
                set: d.set_index,
                disk: d.disk_index,
            });
        }
        ServerProperties::with_drives(ItemState::Offline, endpoint.into(), drives)
    }

    fn with_drives(state: ItemState, endpoint: String, drives: Vec<DriveInfo>) -> ServerProperties {
        let mut pools: Vec<usize> = drives.iter().map(|d| d.pool_index + 1).collect();
        pools.sort_unstable();
        pools.dedup();
        ServerProperties {
            state,
            endpoint,
            scheme: String::new(),
            uptime: 0,
            version: String::new(),
            commit_id: None,
            network: BTreeMap::new(),
            drives,
            pool_number: match pools.as_slice() {
                [one] => Some(*one),
                _ => None,
            },
            pool_numbers: pools,
        }
    }
}

/// Where a drive sits in the deployment and how clients name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrivePlace {
    /// The drive's endpoint as the server was given it (its path on a
    /// single node, `http://host:port/path` in a cluster).
    pub endpoint: String,
    /// The drive's path on its server.
    pub path: String,
    /// Its pool (0-based).
    pub pool: usize,
    /// Its erasure set within the pool (0-based).
    pub set: usize,
    /// Its position within the set (0-based).
    pub disk: usize,
}

/// A drive's state, in madmin-go's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriveState {
    /// Formatted and answering.
    Ok,
    /// Not answering, gone, or out of service.
    Offline,
    /// Answering, not yet given its `format.json`.
    Unformatted,
    /// Its `format.json` is unreadable or places it nowhere.
    Corrupt,
    /// The server may not read it.
    PermissionDenied,
    /// It fails with I/O errors.
    Faulty,
    /// Anything else.
    #[serde(other)]
    Unknown,
}

impl DriveState {
    /// Whether the backend counts the drive online: `ok` and
    /// `unformatted`, as MinIO counts them (an unformatted drive answers
    /// and is about to be formatted).
    pub fn counts_online(self) -> bool {
        matches!(self, DriveState::Ok | DriveState::Unformatted)
    }
}

/// One drive (madmin-go's `Disk`). Left out: device numbers, model,
/// throughput and latency, and whether the drive is on the root file
/// system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriveInfo {
    /// The drive's endpoint.
    pub endpoint: String,
    /// The drive's path on its server.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// `ok`, `offline`, `unformatted`, ...
    pub state: DriveState,
    /// The drive's id (`xl.this` of its `format.json`), when it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Size of the drive's file system, bytes.
    #[serde(
        rename = "totalspace",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub total_bytes: Option<u64>,
    /// Bytes in use on it.
    #[serde(rename = "usedspace", default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<u64>,
    /// Bytes available to the server.
    #[serde(
        rename = "availspace",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub available_bytes: Option<u64>,
    /// Inodes in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_inodes: Option<u64>,
    /// Inodes free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_inodes: Option<u64>,
    /// Its pool (0-based).
    pub pool_index: usize,
    /// Its erasure set within the pool (0-based).
    pub set_index: usize,
    /// Its position within the set (0-based).
    pub disk_index: usize,
    /// Replaced by an empty drive and being healed (the heal status
    /// sets it; the info leaves it out).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub healing: bool,
    /// The heal of the drive, in the heal status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal_info: Option<super::heal::HealingDisk>,
}

impl DriveInfo {
    /// A drive at `place` that did not answer: nothing but its place.
    pub fn offline(place: DrivePlace) -> DriveInfo {
        DriveInfo {
            endpoint: place.endpoint,
            path: place.path,
            state: DriveState::Offline,
            uuid: None,
            total_bytes: None,
            used_bytes: None,
            available_bytes: None,
            used_inodes: None,
            free_inodes: None,
            pool_index: place.pool,
            set_index: place.set,
            disk_index: place.disk,
            healing: false,
            heal_info: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(disk: usize, state: DriveState) -> DriveInfo {
        let mut d = DriveInfo::offline(DrivePlace {
            endpoint: format!("/data/d{disk}"),
            path: format!("/data/d{disk}"),
            pool: 0,
            set: 0,
            disk,
        });
        d.state = state;
        if state == DriveState::Ok {
            d.uuid = Some(format!("00000000-0000-4000-8000-00000000000{disk}"));
            d.total_bytes = Some(1000);
            d.used_bytes = Some(400);
            d.available_bytes = Some(550);
            d.used_inodes = Some(7);
            d.free_inodes = Some(93);
        }
        d
    }

    fn message() -> InfoMessage {
        let drives = vec![
            drive(0, DriveState::Ok),
            drive(1, DriveState::Ok),
            drive(2, DriveState::Offline),
            drive(3, DriveState::Unformatted),
        ];
        let server = ServerProperties::online("127.0.0.1:9000", "http", 42, "0.1.0", drives);
        InfoMessage::new(
            Deployment {
                deployment_id: "d0c7e3a8-3a4c-4a52-9f3e-6a8b7f3c1e55".into(),
                region: "us-east-1".into(),
                standard_parity: 2,
                rrs_parity: 1,
                sets_per_pool: vec![1],
                drives_per_set: vec![4],
                buckets: Count::of(3),
                objects: Count::unknown("not counted"),
                versions: Count::unknown("not counted"),
                delete_markers: Count::unknown("not counted"),
                usage: Usage::unknown("not summed"),
            },
            vec![server],
        )
    }

    fn keys(v: &serde_json::Value) -> Vec<&str> {
        let mut k: Vec<&str> = v
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        k.sort_unstable();
        k
    }

    #[test]
    fn encodes_madmin_field_names() {
        let v: serde_json::Value = serde_json::from_slice(&message().to_json()).unwrap();
        assert_eq!(
            keys(&v),
            [
                "backend",
                "buckets",
                "deletemarkers",
                "deploymentID",
                "mode",
                "objects",
                "region",
                "servers",
                "usage",
                "versions"
            ]
        );
        assert_eq!(v["mode"], "online");
        assert_eq!(v["deploymentID"], "d0c7e3a8-3a4c-4a52-9f3e-6a8b7f3c1e55");
        assert_eq!(v["buckets"], serde_json::json!({"count": 3}));
        assert_eq!(
            v["objects"],
            serde_json::json!({"count": 0, "error": "not counted"})
        );
        assert_eq!(
            v["usage"],
            serde_json::json!({"size": 0, "error": "not summed"})
        );
        assert_eq!(
            v["backend"],
            serde_json::json!({
                "backendType": "Erasure",
                "onlineDisks": 3,
                "offlineDisks": 1,
                "standardSCParity": 2,
                "rrSCParity": 1,
                "totalSets": [1],
                "totalDrivesPerSet": [4],
            })
        );
        let server = &v["servers"][0];
        assert_eq!(
            keys(server),
            [
                "drives",
                "endpoint",
                "network",
                "poolNumber",
                "poolNumbers",
                "scheme",
                "state",
                "uptime",
                "version"
            ]
        );
        assert_eq!(server["state"], "online");
        assert_eq!(server["endpoint"], "127.0.0.1:9000");
        assert_eq!(
            server["network"],
            serde_json::json!({"127.0.0.1:9000": "online"})
        );
        assert_eq!(server["poolNumber"], 1);
        assert_eq!(server["poolNumbers"], serde_json::json!([1]));
        assert_eq!(server["uptime"], 42);
        let ok = &server["drives"][0];
        assert_eq!(
            keys(ok),
            [
                "availspace",
                "disk_index",
                "endpoint",
                "free_inodes",
                "path",
                "pool_index",
                "set_index",
                "state",
                "totalspace",
                "used_inodes",
                "usedspace",
                "uuid"
            ]
        );
        assert_eq!(ok["state"], "ok");
        assert_eq!(ok["totalspace"], 1000);
        assert_eq!(ok["usedspace"], 400);
        assert_eq!(ok["availspace"], 550);
        let offline = &server["drives"][2];
        assert_eq!(
            keys(offline),
            [
                "disk_index",
                "endpoint",
                "path",
                "pool_index",
                "set_index",
                "state"
            ]
        );
        assert_eq!(offline["state"], "offline");
        assert_eq!(offline["disk_index"], 2);
        assert_eq!(server["drives"][3]["state"], "unformatted");
    }

    #[test]
    fn drive_states_are_madmin_strings() {
        for (state, text) in [
            (DriveState::Ok, "ok"),
            (DriveState::Offline, "offline"),
            (DriveState::Unformatted, "unformatted"),
            (DriveState::Corrupt, "corrupt"),
            (DriveState::PermissionDenied, "permission-denied"),
            (DriveState::Faulty, "faulty"),
            (DriveState::Unknown, "unknown"),
        ] {
            assert_eq!(serde_json::to_value(state).unwrap(), text);
        }
        let other: DriveState = serde_json::from_str("\"root-mount\"").unwrap();
        assert_eq!(other, DriveState::Unknown);
    }

    #[test]
    fn decodes_what_it_encodes() {
        let m = message();
        let back: InfoMessage = serde_json::from_slice(&m.to_json()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn a_server_in_several_pools_names_no_single_pool() {
        let mut other = drive(0, DriveState::Ok);
        other.pool_index = 1;
        let s = ServerProperties::online(
            "n1:9000",
            "http",
            1,
            "v",
            vec![drive(0, DriveState::Ok), other],
        );
        assert_eq!(s.pool_number, None);
        assert_eq!(s.pool_numbers, [1, 2]);
        let v = serde_json::to_value(&s).unwrap();
        assert!(v.get("poolNumber").is_none());
    }

    #[test]
    fn an_offline_server_reports_its_drives_offline() {
        let s = ServerProperties::offline("n2:9000", vec![drive(1, DriveState::Ok)]);
        assert_eq!(s.state, ItemState::Offline);
        assert_eq!(s.drives[0].state, DriveState::Offline);
        assert_eq!(s.drives[0].uuid, None);
        assert_eq!(s.drives[0].disk_index, 1);
        assert_eq!(s.drives[0].endpoint, "/data/d1");
    }
}
