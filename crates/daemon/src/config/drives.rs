//! Which directories to open: the endpoints parsed and laid out in pools
//! and erasure sets through `placement`, only drives of this machine.

use std::path::{Path, PathBuf};

use placement::{DeploymentStyle, Endpoint, ParseOptions, StorageClass};

use super::address::{DEFAULT_PORT, LocalHost};
use super::{ConfigError, err};

/// The pools of drives to open.
#[derive(Debug, Clone)]
pub struct Drives {
    /// One list of directories per pool, in endpoint order.
    pub pools: Vec<Vec<PathBuf>>,
    /// The argument(s) of each pool, as written.
    pub pool_args: Vec<String>,
    /// Drives per erasure set to ask the object layer for (`None`: its own
    /// choice, which equals MinIO's for these pools).
    pub set_drive_count: Option<usize>,
    /// Drives per set of each pool (for the banner).
    pub set_sizes: Vec<usize>,
    /// Whether the endpoints were written as https URLs.
    pub https_urls: bool,
    /// The nodes, when the endpoints name other nodes than this one (then
    /// `pools` holds this node's drives only).
    pub cluster: Option<ClusterNodes>,
}

/// The nodes of a multi-node deployment, as the endpoints name them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNodes {
    /// Each node's `host:port`, in the order the endpoints first name it.
    pub nodes: Vec<String>,
    /// Which of them this node is.
    pub me: usize,
    /// How many of them run on this machine (this one included, at least
    /// 1): they share its memory, and each sizes its memory defaults to
    /// its share.
    pub here: usize,
    /// Every drive endpoint, canonical, in order: what the nodes must
    /// agree on.
    pub endpoints: Vec<String>,
    /// Every drive where MinIO's layout puts it, in layout order (pool,
    /// set, position in the set).
    pub layout: Vec<LaidDrive>,
}

/// One drive of a cluster in its erasure set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaidDrive {
    /// Its endpoint, canonical.
    pub endpoint: String,
    /// The node that serves it (index into [`ClusterNodes::nodes`]).
    pub node: usize,
    /// Its directory on that node.
    pub path: PathBuf,
    /// Its pool, set and position in the set.
    pub pool: usize,
    pub set: usize,
    pub disk: usize,
}

/// Parses, checks and lays out the endpoints: only drives of this machine.
pub fn drives(
    args: &[String],
    listen_port: u16,
    cwd: &Path,
    set_drive_count: Option<usize>,
    standard: Option<StorageClass>,
    rrs: Option<StorageClass>,
    local: &LocalHost,
) -> Result<Drives, ConfigError> {
    let options = ParseOptions {
        working_dir: cwd.to_str().map(str::to_owned),
        default_port: Some(listen_port),
        orchestrated: false,
    };
    if options.working_dir.is_none() {
        return err(format!(
            "the working directory {} is not valid UTF-8",
            cwd.display()
        ));
    }
    let topology = placement::parse_endpoints_with(args, &options)
        .map_err(|e| ConfigError(format!("invalid endpoints: {e}")))?;
    let all: Vec<&Endpoint> = topology
        .pools()
        .iter()
        .flat_map(|p| p.drives().iter())
        .collect();
    let is_local = |e: &Endpoint| {
        e.host().is_some_and(|h| local.is_local(h))
            && e.port().or(Some(DEFAULT_PORT)) == Some(listen_port)
    };
    let cluster = if all.iter().any(|e| e.is_url() && !is_local(e)) {
        Some(cluster_nodes(&all, listen_port, local, &is_local)?)
    } else {
        None
    };
    topology
        .check_local(is_local)
        .map_err(|e| ConfigError(format!("invalid endpoints: {e}")))?;
    let layout = topology
        .layout(set_drive_count)
        .map_err(|e| ConfigError(format!("invalid endpoints: {e}")))?;
    layout
        .storage_class_config(standard, rrs)
        .map_err(|e| ConfigError(format!("storage class: {e}")))?;

    let set_sizes: Vec<usize> = layout.pools().iter().map(|p| p.set_drive_count()).collect();
    let cluster = cluster.map(|mut c| {
        c.layout = layout
            .pools()
            .iter()
            .flat_map(|p| p.sets())
            .flat_map(|set| set.drives())
            .map(|d| {
                let e = d.endpoint();
                let name = format!(
                    "{}:{}",
                    e.host().unwrap_or(""),
                    e.port().unwrap_or(DEFAULT_PORT)
                );
                LaidDrive {
                    endpoint: e.to_string(),
                    node: c.nodes.iter().position(|n| *n == name).unwrap_or(0),
                    path: PathBuf::from(e.path()),
                    pool: d.pool_index(),
                    set: d.set_index(),
                    disk: d.drive_index(),
                }
            })
            .collect();
        c
    });
    let pools: Vec<Vec<PathBuf>> = topology
        .pools()
        .iter()
        .map(|p| {
            p.drives()
                .iter()
                .filter(|d| cluster.is_none() || is_local(d))
                .map(|d| PathBuf::from(d.path()))
                .collect()
        })
        .collect();
    // The object layer takes one set size for every fresh pool; without
    // one it picks MinIO's choice for a pool written without ellipses.
    let layer_choice = |n: usize| {
        if n == 1 {
            Some(1)
        } else {
            placement::choose_set_drive_count(n, None, None).ok()
        }
    };
    let set_drive_count = if cluster.is_some() {
        // The erasure sets span nodes: the set size is the layout's, not
        // what this node's own drives would give.
        set_sizes.first().copied()
    } else if set_sizes.windows(2).all(|w| w[0] == w[1]) {
        set_sizes.first().copied()
    } else if pools
        .iter()
        .zip(&set_sizes)
        .all(|(p, &s)| layer_choice(p.len()) == Some(s))
    {
        None
    } else {
        return err(format!(
            "the pools need different erasure set sizes ({set_sizes:?}) that the object layer \
             cannot yet be given; set TESSERA_ERASURE_SET_DRIVE_COUNT to a size that divides \
             every pool"
        ));
    };
    if cluster.is_none() && topology.style() == DeploymentStyle::SingleDrive && pools[0].len() != 1
    {
        return err("a single-drive deployment has exactly one drive");
    }
    Ok(Drives {
        pools,
        pool_args: topology
            .pools()
            .iter()
            .map(|p| p.cmdline().to_owned())
            .collect(),
        set_drive_count,
        set_sizes,
        https_urls: all
            .iter()
            .any(|e| e.scheme() == Some(placement::Scheme::Https)),
        cluster,
    })
}

/// The nodes the endpoints name, and which one is this node (a host of
/// this machine on the port this server listens on).
fn cluster_nodes(
    all: &[&Endpoint],
    listen_port: u16,
    local: &LocalHost,
    is_local: &dyn Fn(&Endpoint) -> bool,
) -> Result<ClusterNodes, ConfigError> {
    if let Some(path) = all.iter().find(|e| !e.is_url()) {
        return err(format!(
            "endpoint {path} is a local path, but other endpoints name other nodes: a \
             multi-node deployment names every drive by URL"
        ));
    }
    let mut nodes: Vec<String> = Vec::new();
    let mut here: Vec<usize> = Vec::new();
    let mut me = None;
    for e in all {
        let name = format!(
            "{}:{}",
            e.host().unwrap_or(""),
            e.port().unwrap_or(DEFAULT_PORT)
        );
        let i = match nodes.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                nodes.push(name);
                nodes.len() - 1
            }
        };
        if e.host().is_some_and(|h| local.is_local(h)) && !here.contains(&i) {
            here.push(i);
        }
        if is_local(e) {
            match me {
                Some(m) if m != i => {
                    return err(format!(
                        "endpoints name this server as both {} and {}: name each node one way",
                        nodes[m], nodes[i]
                    ));
                }
                _ => me = Some(i),
            }
        }
    }
    let Some(me) = me else {
        let names = local.hostname().unwrap_or("this machine");
        return err(format!(
            "none of the endpoints' nodes ({}) is this server ({names} on port \
             {listen_port}): start each node with its own --address port, or check the \
             host names",
            nodes.join(", ")
        ));
    };
    Ok(ClusterNodes {
        nodes,
        me,
        here: here.len().max(1),
        endpoints: all.iter().map(|e| e.to_string()).collect(),
        layout: Vec::new(),
    })
}
