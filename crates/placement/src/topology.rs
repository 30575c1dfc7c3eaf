//! From `minio server` arguments to pools of drives.
//!
//! MinIO's rules (cmd/endpoint-ellipses.go, `mergeDisksLayoutFromArgs` and
//! `GetAllSets`; cmd/endpoint.go, `CreatePoolEndpoints`):
//!
//! * No argument has ellipses: all arguments together form **one** pool (the
//!   "legacy" style, `minio server /d1 /d2 /d3 /d4`). A single such argument is
//!   a single-drive deployment (one pool, one set of one drive, parity 0); it
//!   must be a path.
//! * Every argument has ellipses: **each argument is its own pool** (server
//!   pools, `minio server http://h{1...4}/d{1...4} http://h{5...8}/d{1...4}`).
//! * Some with and some without: refused.
//! * A drive may appear only once in the whole deployment; all drives must be
//!   of one style (paths or URLs) and URLs of one scheme. MinIO checks style
//!   and scheme only inside each erasure set; this crate checks them across
//!   the deployment, since a mix across pools cannot run either.
//! * Within a pool, one host cannot serve the same path under two ports
//!   (MinIO compares resolved IP addresses; this crate compares host names,
//!   and skips the check when [`ParseOptions::orchestrated`], as MinIO does in
//!   containers).

use std::collections::HashMap;

use crate::ellipses::{EllipsisPattern, has_ellipses};
use crate::{Endpoint, Error, Layout};

/// Inputs that MinIO reads from the process or its environment, given here
/// explicitly so that parsing stays pure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// The directory relative paths are resolved against (MinIO uses the
    /// process's working directory). Must be absolute. `None`: relative paths
    /// stay relative.
    pub working_dir: Option<String>,
    /// The port of the server's own address (`--address`, 9000 by default in
    /// MinIO), added to URL endpoints that have none, as MinIO does. `None`:
    /// ports stay as written, and `http://h/d` and `http://h:9000/d` are not
    /// recognized as the same drive.
    pub default_port: Option<u16>,
    /// Running under Kubernetes or Docker (MinIO detects this from the
    /// environment): skips the same-path-on-same-host check, as MinIO does.
    pub orchestrated: bool,
}

/// How the arguments were written, which decides how they form pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeploymentStyle {
    /// One plain path: one drive, no redundancy (MinIO's "single drive XL").
    SingleDrive,
    /// Several arguments without ellipses: one pool of all of them.
    Legacy,
    /// Arguments with ellipses: one pool per argument.
    ServerPools,
}

/// The drives of one pool, in MinIO's order, before they are cut into sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSpec {
    cmdline: String,
    drives: Vec<Endpoint>,
    symmetry_count: Option<usize>,
}

impl PoolSpec {
    /// The argument of an ellipsis pool; the space-joined arguments of a
    /// legacy pool.
    pub fn cmdline(&self) -> &str {
        &self.cmdline
    }

    /// The drives, in expansion order.
    pub fn drives(&self) -> &[Endpoint] {
        &self.drives
    }

    /// For an ellipsis pool, the length of the argument's leftmost range,
    /// which MinIO's set-size choice must divide evenly (see
    /// [`crate::choose_set_drive_count`]).
    pub fn symmetry_count(&self) -> Option<usize> {
        self.symmetry_count
    }
}

/// Parsed and validated drive arguments: pools of drives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    style: DeploymentStyle,
    pools: Vec<PoolSpec>,
    default_port: Option<u16>,
}

/// Parses `minio server` drive arguments with default [`ParseOptions`].
///
/// ```
/// let t = placement::parse_endpoints(&["http://node{1...4}:9000/mnt/disk{1...8}"])?;
/// assert_eq!(t.pools().len(), 1);
/// assert_eq!(t.pools()[0].drives().len(), 32);
/// assert_eq!(t.pools()[0].drives()[1].as_str(), "http://node2:9000/mnt/disk1");
/// # Ok::<(), placement::Error>(())
/// ```
pub fn parse_endpoints<S: AsRef<str>>(args: &[S]) -> Result<Topology, Error> {
    parse_endpoints_with(args, &ParseOptions::default())
}

/// Parses `minio server` drive arguments.
pub fn parse_endpoints_with<S: AsRef<str>>(
    args: &[S],
    options: &ParseOptions,
) -> Result<Topology, Error> {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    if args.is_empty() {
        return Err(Error::NoArguments);
    }
    if let Some(dir) = &options.working_dir
        && !dir.starts_with('/')
    {
        return Err(Error::InvalidWorkingDir { dir: dir.clone() });
    }
    if let Some(arg) = args.iter().find(|a| a.chars().any(char::is_control)) {
        return Err(Error::ControlCharacter {
            arg: arg.escape_debug().to_string(),
        });
    }
    let parse_all = |list: &[String]| -> Result<Vec<Endpoint>, Error> {
        list.iter().map(|a| Endpoint::parse(a, options)).collect()
    };

    let (style, pools) = if args.iter().all(|a| !has_ellipses(a)) {
        let owned: Vec<String> = args.iter().map(|a| (*a).to_string()).collect();
        let drives = parse_all(&owned)?;
        let style = if drives.len() == 1 {
            if drives[0].is_url() {
                return Err(Error::SingleDriveNotPath {
                    arg: args[0].to_string(),
                });
            }
            DeploymentStyle::SingleDrive
        } else {
            DeploymentStyle::Legacy
        };
        let pool = PoolSpec {
            cmdline: owned.join(" "),
            drives,
            symmetry_count: None,
        };
        (style, vec![pool])
    } else {
        if let Some(plain) = args.iter().find(|a| !has_ellipses(a)) {
            return Err(Error::MixedEllipsisArgs {
                plain_arg: (*plain).to_string(),
            });
        }
        let mut pools = Vec::with_capacity(args.len());
        for arg in &args {
            let pattern = EllipsisPattern::parse(arg)?;
            let drives = parse_all(&pattern.expand())?;
            pools.push(PoolSpec {
                cmdline: (*arg).to_string(),
                drives,
                symmetry_count: pattern.ranges().first().map(|r| r.len()),
            });
        }
        (DeploymentStyle::ServerPools, pools)
    };

    check_uniform(&pools)?;
    check_duplicates(&pools)?;
    if !options.orchestrated {
        for pool in &pools {
            check_same_path_on_host(pool)?;
        }
    }
    Ok(Topology {
        style,
        pools,
        default_port: options.default_port,
    })
}

/// One style (paths or URLs) and one scheme across the deployment.
fn check_uniform(pools: &[PoolSpec]) -> Result<(), Error> {
    let mut drives = pools.iter().flat_map(|p| p.drives.iter());
    let Some(first) = drives.next() else {
        return Ok(());
    };
    for d in drives {
        if d.is_url() != first.is_url() {
            let (path, url) = if first.is_url() {
                (d, first)
            } else {
                (first, d)
            };
            return Err(Error::MixedStyles {
                path_arg: path.arg().to_string(),
                url_arg: url.arg().to_string(),
            });
        }
        if d.scheme() != first.scheme() {
            let (http, https) = if first.scheme() == Some(crate::Scheme::Http) {
                (first, d)
            } else {
                (d, first)
            };
            return Err(Error::MixedSchemes {
                http_arg: http.arg().to_string(),
                https_arg: https.arg().to_string(),
            });
        }
    }
    Ok(())
}

fn check_duplicates(pools: &[PoolSpec]) -> Result<(), Error> {
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for pool in pools {
        for d in &pool.drives {
            if let Some(first_cmdline) = seen.insert(d.as_str(), pool.cmdline.as_str()) {
                return Err(Error::DuplicateDrive {
                    drive: d.as_str().to_string(),
                    first_arg: first_cmdline.to_string(),
                    second_arg: pool.cmdline.clone(),
                });
            }
        }
    }
    Ok(())
}

fn check_same_path_on_host(pool: &PoolSpec) -> Result<(), Error> {
    let mut seen: HashMap<(String, &str), &Endpoint> = HashMap::new();
    for d in &pool.drives {
        let Some(host) = d.host() else { continue };
        if let Some(first) = seen.insert((host.to_ascii_lowercase(), d.path()), d) {
            return Err(Error::SamePathOnHost {
                first: first.as_str().to_string(),
                second: d.as_str().to_string(),
            });
        }
    }
    Ok(())
}

impl Topology {
    /// How the arguments were written.
    pub fn style(&self) -> DeploymentStyle {
        self.style
    }

    /// The pools, in argument order.
    pub fn pools(&self) -> &[PoolSpec] {
        &self.pools
    }

    /// Total number of drives.
    pub fn drive_count(&self) -> usize {
        self.pools.iter().map(|p| p.drives.len()).sum()
    }

    /// Cuts every pool into erasure sets as MinIO does.
    ///
    /// `set_drive_count_override` is MinIO's `MINIO_ERASURE_SET_DRIVE_COUNT`
    /// (read by the caller, not here): it must divide every pool's drive count
    /// and lie in 2..=16; `Some(0)` means no override, as `0` does in MinIO.
    /// A single-drive deployment ignores it, as MinIO does.
    ///
    /// ```
    /// let t = placement::parse_endpoints(&["/mnt/disk{1...64}"])?;
    /// let layout = t.layout(None)?;
    /// assert_eq!(layout.pools()[0].set_drive_count(), 16);
    /// assert_eq!(t.layout(Some(8))?.pools()[0].sets().len(), 8);
    /// assert!(t.layout(Some(7)).is_err());
    /// # Ok::<(), placement::Error>(())
    /// ```
    pub fn layout(&self, set_drive_count_override: Option<usize>) -> Result<Layout, Error> {
        Layout::new(self, set_drive_count_override)
    }

    /// MinIO's start-up checks that need to know which endpoints are on this
    /// machine (cmd/endpoint.go, `CreatePoolEndpoints`). Deciding that takes
    /// DNS and interface lookups, so the caller answers: `is_local` is asked
    /// about URL endpoints only (path endpoints are local by definition) and
    /// should answer as MinIO's `isLocalHost`: the host resolves to an address
    /// of this machine and, if the endpoint names a port, it is this server's
    /// port. As in MinIO, one local endpoint of a node (`host:port`) makes all
    /// endpoints of that node local.
    ///
    /// Refused, per pool:
    /// * the same path used by two local endpoints (one directory cannot be
    ///   served by different addresses of one server);
    /// * all endpoints local and on one port (a missing port counts as
    ///   [`ParseOptions::default_port`]), but named by several host names or
    ///   addresses.
    ///
    /// ```
    /// let t = placement::parse_endpoints(&["http://localhost:9000/d{1...4}"])?;
    /// assert!(t.check_local(|_| true).is_ok());
    /// let t = placement::parse_endpoints(&["http://127.0.0.{1...2}/d{1...2}"])?;
    /// assert!(t.check_local(|_| true).is_err()); // one machine, two names, same paths
    /// assert!(t.check_local(|e| e.host() == Some("127.0.0.1")).is_ok());
    /// # Ok::<(), placement::Error>(())
    /// ```
    pub fn check_local<F: Fn(&Endpoint) -> bool>(&self, is_local: F) -> Result<(), Error> {
        let mut local_nodes: HashMap<&str, bool> = HashMap::new();
        for d in self.pools.iter().flat_map(|p| p.drives.iter()) {
            if let Some(node) = d.node() {
                let entry = local_nodes.entry(node).or_insert(false);
                *entry = *entry || is_local(d);
            }
        }
        let node_is_local = |d: &Endpoint| d.node().is_none_or(|n| local_nodes[n]);
        for pool in &self.pools {
            let mut local_paths: HashMap<&str, &Endpoint> = HashMap::new();
            for d in pool.drives.iter().filter(|d| node_is_local(d)) {
                if let Some(first) = local_paths.insert(d.path(), d) {
                    return Err(Error::LocalEndpoints {
                        reason: format!(
                            "path '{}' is used by two local drives, {first} and {d}: one \
                             directory cannot be served by different addresses of one server",
                            d.path()
                        ),
                    });
                }
            }
            let all_local_urls = pool.drives.iter().all(|d| d.is_url() && node_is_local(d));
            if all_local_urls {
                let mut ports: Vec<Option<u16>> = pool
                    .drives
                    .iter()
                    .map(|d| d.port().or(self.default_port))
                    .collect();
                ports.sort_unstable();
                ports.dedup();
                let mut hosts: Vec<&str> = pool.drives.iter().filter_map(Endpoint::host).collect();
                hosts.sort_unstable();
                hosts.dedup();
                if ports.len() == 1 && hosts.len() > 1 {
                    return Err(Error::LocalEndpoints {
                        reason: format!(
                            "all drives of pool '{}' are on this machine but named by different \
                             hosts {hosts:?}; name this machine one way",
                            pool.cmdline
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}
