//! The memory left to the server: read once at start to size the defaults
//! (the read cache, the requests served at once; the sizing rules are
//! here), then every second to keep the read cache out of the way when
//! memory runs short.
//!
//! "Available" is the least of the machine's `MemAvailable` and, for each
//! memory cgroup with a limit that the process is in, that limit less what
//! the cgroup uses, its page cache (`active_file` and `inactive_file`,
//! which the kernel reclaims before it fails an allocation) counted as
//! free, as `MemAvailable` counts the machine's. The cgroups are the
//! process's own (`/proc/self/cgroup`; a systemd unit's `MemoryMax=`) and
//! its ancestors (a slice's), or the root of the hierarchy as a container
//! sees it.

use std::time::Duration;

use object::layer::ObjectLayer;

/// How often the read cache's limit follows the memory available.
pub const WATCH_PERIOD: Duration = Duration::from_secs(1);

/// The memory available now (module documentation); `None` where neither
/// `/proc/meminfo` nor a cgroup limit can be read.
pub fn available() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let meminfo = read("/proc/meminfo");
    let own = read("/proc/self/cgroup");
    let cgroups: Vec<Cgroup> = cgroup_dirs(own.as_deref())
        .into_iter()
        .filter_map(|(dir, v2)| {
            let (limit, usage) = if v2 {
                ("memory.max", "memory.current")
            } else {
                ("memory.limit_in_bytes", "memory.usage_in_bytes")
            };
            Some(Cgroup {
                limit: read(&format!("{dir}/{limit}"))?,
                usage: read(&format!("{dir}/{usage}")),
                stat: read(&format!("{dir}/memory.stat")),
            })
        })
        .collect();
    available_from(meminfo.as_deref(), &cgroups)
}

/// The text of a memory cgroup's files.
struct Cgroup {
    limit: String,
    usage: Option<String>,
    stat: Option<String>,
}

/// Where the files of the memory cgroups the process is in may be, each
/// with whether it is cgroup v2: its own cgroup and every ancestor, in
/// the v1 `memory` hierarchy if it has one, else in the v2 one, down to
/// the mount's root (all that a container sees of it). Files that are not
/// there are passed over.
fn cgroup_dirs(self_cgroup: Option<&str>) -> Vec<(String, bool)> {
    let mut v1 = None;
    let mut v2 = None;
    for line in self_cgroup.unwrap_or("").lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        // A path with ".." would leave the hierarchy: not from the kernel.
        if !path.starts_with('/') || path.split('/').any(|c| c == "..") {
            continue;
        }
        let path = path.trim_end_matches('/');
        if controllers.split(',').any(|c| c == "memory") {
            v1 = Some(path);
        } else if controllers.is_empty() {
            v2 = Some(path);
        }
    }
    // A path and its ancestors under `root`, the deepest first.
    let chain = |root: &str, path: &str, is_v2: bool| {
        let mut out = Vec::new();
        let mut p = path;
        loop {
            out.push((format!("{root}{p}"), is_v2));
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => break,
            }
        }
        out
    };
    let mut dirs = match (v1, v2) {
        (Some(p), _) => chain("/sys/fs/cgroup/memory", p, false),
        (None, Some(p)) => chain("/sys/fs/cgroup", p, true),
        (None, None) => Vec::new(),
    };
    for root in [("/sys/fs/cgroup", true), ("/sys/fs/cgroup/memory", false)] {
        if !dirs.iter().any(|(d, _)| d == root.0) {
            dirs.push((root.0.to_string(), root.1));
        }
    }
    dirs
}

/// [`available`] from the files' text.
fn available_from(meminfo: Option<&str>, cgroups: &[Cgroup]) -> Option<u64> {
    let machine = meminfo.and_then(|m| {
        m.lines().find_map(|l| {
            let kib = l.strip_prefix("MemAvailable:")?.trim().strip_suffix("kB")?;
            kib.trim().parse::<u64>().ok().map(|k| k * 1024)
        })
    });
    // "max" (v2) does not parse: no limit. v1 without a limit reads as a
    // number near 2^63, far above what is used.
    let group = cgroups.iter().filter_map(|c| {
        let limit = c.limit.trim().parse::<u64>().ok()?;
        let usage = c
            .usage
            .as_deref()
            .and_then(|u| u.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let droppable = c.stat.as_deref().map_or(0, |s| {
            let field = |name: &str| {
                s.lines().find_map(|l| {
                    let v = l.strip_prefix(name)?.strip_prefix(' ')?;
                    v.trim().parse::<u64>().ok()
                })
            };
            // v1 counts the subtree under total_*; v2's fields already do.
            ["active_file", "inactive_file"]
                .iter()
                .map(|f| {
                    field(&format!("total_{f}"))
                        .or_else(|| field(f))
                        .unwrap_or(0)
                })
                .sum::<u64>()
        });
        Some(limit.saturating_sub(usage.saturating_sub(droppable)))
    });
    match (machine, group.min()) {
        (Some(a), Some(g)) => Some(a.min(g)),
        (a, g) => a.or(g),
    }
}

/// Memory one S3 request may hold, for the default bound on concurrent
/// requests: the erasure block a streamed upload reads into (about 1 MiB
/// for any set), or a GET's read-ahead of three blocks, its 512 KiB of
/// queued response frames and up to 2 MiB in hyper's write buffer (a
/// plain-TCP HTTP/1.1 connection's). A GET served from the read cache
/// holds up to 6 MiB of cached blocks queued (4 MiB, and hyper's 2):
/// memory the cache counts, unless it drops those blocks meanwhile.
pub const MEMORY_PER_REQUEST: u64 = 6 << 20;
/// The most requests the bound allows, however much memory there is.
pub const MAX_REQUESTS_CAP: usize = 1 << 16;
/// The default bound on concurrent S3 requests for `available` bytes of
/// memory: three quarters of it at [`MEMORY_PER_REQUEST`] each, at least
/// 32 and at most [`MAX_REQUESTS_CAP`].
pub fn requests_max_for(available: u64) -> usize {
    let n = available / 4 * 3 / MEMORY_PER_REQUEST;
    usize::try_from(n)
        .unwrap_or(MAX_REQUESTS_CAP)
        .clamp(32, MAX_REQUESTS_CAP)
}

/// The default read cache for `available` bytes of memory: a sixteenth of
/// it, at most [`READ_CACHE_CAP`].
pub fn read_cache_for(available: u64) -> u64 {
    (available / 16).min(READ_CACHE_CAP)
}

/// The largest default read cache.
pub const READ_CACHE_CAP: u64 = 1 << 30;

/// The memory the read cache leaves available to everything else: its
/// budget, at most this.
pub const RESERVE_MAX: u64 = 1 << 30;

/// The read cache's limit while it holds `cached` bytes of a `budget` and
/// `available` bytes of memory are left: as much as leaves a reserve
/// available to everything else, its budget or [`RESERVE_MAX`] if less.
/// When the memory available falls below the reserve, the cache gives
/// back byte for byte what is missing, down to nothing.
pub fn read_cache_limit(budget: u64, cached: u64, available: u64) -> u64 {
    let reserve = budget.min(RESERVE_MAX);
    cached
        .saturating_add(available)
        .saturating_sub(reserve)
        .min(budget)
}

/// What one look at the memory did to the read cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adjusted {
    /// The limit set.
    pub limit: u64,
    /// Bytes dropped to meet it.
    pub shed: u64,
}

/// Sets the read cache's limit from `available` bytes of memory left.
/// `None` when there is no cache or the limit stays as it was.
pub fn adjust_read_cache(layer: &ObjectLayer, available: u64) -> Option<Adjusted> {
    let stats = layer.read_cache_stats().filter(|s| s.budget > 0)?;
    let limit = read_cache_limit(stats.budget, stats.bytes, available);
    if limit == stats.limit {
        return None;
    }
    let shed = layer.set_read_cache_limit(usize::try_from(limit).unwrap_or(usize::MAX));
    Some(Adjusted { limit, shed })
}

/// Whether memory is now to be reported short (`Some(true)`), back
/// (`Some(false)`), or neither: short once the limit is a sixteenth of the
/// budget below it, back when it is the budget again.
fn transition(short: bool, limit: u64, budget: u64) -> Option<bool> {
    if !short && limit < budget - budget / 16 {
        Some(true)
    } else if short && limit >= budget {
        Some(false)
    } else {
        None
    }
}

/// Every [`WATCH_PERIOD`], fits the read cache to the memory `read` says
/// is available, logging when it starts and stops giving memory back: a
/// warning once the limit is a sixteenth of the budget below it, a line
/// when it is back at the budget (a limit hovering near the budget logs
/// nothing, so a few megabytes coming and going do not fill the log).
pub async fn watch_read_cache(layer: std::sync::Arc<ObjectLayer>, read: impl Fn() -> Option<u64>) {
    let mut tick = tokio::time::interval(WATCH_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut short = false;
    loop {
        tick.tick().await;
        let Some(available) = read() else {
            continue;
        };
        let Some(a) = adjust_read_cache(&layer, available) else {
            continue;
        };
        let budget = layer.read_cache_stats().map_or(0, |s| s.budget);
        let now = transition(short, a.limit, budget);
        short = now.unwrap_or(short);
        if now == Some(true) {
            tracing::warn!(
                available_mib = available >> 20,
                limit_mib = a.limit >> 20,
                budget_mib = budget >> 20,
                shed_mib = a.shed >> 20,
                "memory is short: the read cache gives memory back"
            );
        } else if now == Some(false) {
            tracing::info!(
                available_mib = available >> 20,
                budget_mib = budget >> 20,
                "memory is back: the read cache may use its whole budget again"
            );
        } else {
            tracing::debug!(
                available_mib = available >> 20,
                limit_mib = a.limit >> 20,
                shed_mib = a.shed >> 20,
                "read cache limit"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bound_from_memory() {
        assert_eq!(requests_max_for(0), 32);
        assert_eq!(requests_max_for(1 << 30), 128);
        assert_eq!(requests_max_for(24 << 30), 3072);
        assert_eq!(requests_max_for(u64::MAX), MAX_REQUESTS_CAP);
    }

    #[test]
    fn read_cache_from_memory() {
        assert_eq!(read_cache_for(24 << 30), READ_CACHE_CAP);
        assert_eq!(read_cache_for(2 << 30), 128 << 20);
        assert_eq!(read_cache_for(0), 0);
    }

    #[test]
    fn available_from_meminfo_and_cgroup() {
        let meminfo =
            "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n";
        let machine = 20_000_000 * 1024;
        assert_eq!(available_from(Some(meminfo), &[]), Some(machine));
        let group = |limit: &str, usage: Option<&str>, stat: Option<&str>| Cgroup {
            limit: limit.into(),
            usage: usage.map(Into::into),
            stat: stat.map(Into::into),
        };
        // No limit: v2's "max", v1's number near 2^63.
        let none = group("max\n", Some("4096\n"), None);
        assert_eq!(available_from(Some(meminfo), &[none]), Some(machine));
        let v1_none = group("9223372036854771712\n", Some("4082819072\n"), None);
        assert_eq!(available_from(Some(meminfo), &[v1_none]), Some(machine));
        // A 1 GiB limit with 768 MiB used, of which 512 MiB page cache
        // (shmem, on the anon lists, is not): 768 MiB left.
        let v2 = group(
            "1073741824\n",
            Some("805306368\n"),
            Some(
                "anon 268435456\nfile 603979776\nshmem 67108864\n\
                 inactive_anon 0\nactive_file 134217728\ninactive_file 402653184\n",
            ),
        );
        assert_eq!(available_from(Some(meminfo), &[v2]), Some(768 << 20));
        // v1 reads the subtree's total_*.
        let v1 = group(
            "1073741824\n",
            Some("805306368\n"),
            Some(
                "inactive_file 0\nactive_file 0\n\
                 total_inactive_file 201326592\ntotal_active_file 67108864\n",
            ),
        );
        assert_eq!(available_from(None, &[v1]), Some(512 << 20));
        // Over the limit, nothing left; no usage file, the limit itself.
        let over = group("1073741824", Some("2147483648"), None);
        assert_eq!(available_from(Some(meminfo), &[over]), Some(0));
        let bare = group("1073741824", None, None);
        assert_eq!(available_from(None, &[bare]), Some(1 << 30));
        assert_eq!(available_from(Some("MemTotal: 1 kB\n"), &[]), None);
        assert_eq!(available_from(None, &[]), None);
        // A unit under a slice: the least headroom of the two counts.
        let unit = group("1073741824", Some("536870912"), None);
        let slice = group("2147483648", Some("1879048192"), None);
        assert_eq!(
            available_from(Some(meminfo), &[unit, slice]),
            Some(256 << 20)
        );
    }

    #[test]
    fn the_cgroups_are_the_process_own_and_its_ancestors() {
        let dirs = |text: Option<&str>| -> Vec<String> {
            cgroup_dirs(text).into_iter().map(|(d, _)| d).collect()
        };
        // v1 (this machine's layout): the memory hierarchy, then v2's root.
        let v1 = "9:systemd:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(
            cgroup_dirs(Some(v1)),
            [
                ("/sys/fs/cgroup/memory/process_api/abc".to_string(), false),
                ("/sys/fs/cgroup/memory/process_api".to_string(), false),
                ("/sys/fs/cgroup/memory".to_string(), false),
                ("/sys/fs/cgroup".to_string(), true),
            ]
        );
        // v2: a unit, its slice, the root.
        let v2 = "0::/system.slice/tessera.service\n";
        assert_eq!(
            cgroup_dirs(Some(v2)),
            [
                (
                    "/sys/fs/cgroup/system.slice/tessera.service".to_string(),
                    true
                ),
                ("/sys/fs/cgroup/system.slice".to_string(), true),
                ("/sys/fs/cgroup".to_string(), true),
                ("/sys/fs/cgroup/memory".to_string(), false),
            ]
        );
        // A container's namespaced root, and nothing readable.
        assert_eq!(
            dirs(Some("0::/\n")),
            ["/sys/fs/cgroup", "/sys/fs/cgroup/memory"]
        );
        assert_eq!(dirs(None), ["/sys/fs/cgroup", "/sys/fs/cgroup/memory"]);
        assert_eq!(dirs(Some("0::/../etc\n")).len(), 2);
        let joined = "5:cpu,memory:/a/b/\n";
        assert_eq!(
            dirs(Some(joined))[..3],
            [
                "/sys/fs/cgroup/memory/a/b",
                "/sys/fs/cgroup/memory/a",
                "/sys/fs/cgroup/memory"
            ]
        );
    }

    /// A layer on four fresh drives with an 8 MiB read cache, holding
    /// `n` objects of 1 MiB, each read three times (so cached).
    async fn cached_layer(n: usize) -> (tempfile::TempDir, std::sync::Arc<ObjectLayer>) {
        use object::layer::{GetOptions, LayerOptions, PutOptions};
        let tmp = tempfile::tempdir().unwrap();
        let ds: Vec<_> = (1..=4).map(|i| tmp.path().join(format!("d{i}"))).collect();
        let opts = LayerOptions {
            read_cache_bytes: Some(8 << 20),
            ..LayerOptions::default()
        };
        let l = ObjectLayer::open_dirs(&ds, opts).await.unwrap();
        l.make_bucket("cache").await.unwrap();
        for i in 0..n {
            let body = vec![i as u8; 1 << 20];
            let put = PutOptions {
                size: Some(body.len() as u64),
                ..Default::default()
            };
            l.put_object("cache", &format!("k{i}"), &mut &body[..], &put)
                .await
                .unwrap();
            for _ in 0..3 {
                let mut out = Vec::new();
                l.get_object("cache", &format!("k{i}"), &GetOptions::default(), &mut out)
                    .await
                    .unwrap();
                assert_eq!(out, body);
            }
        }
        (tmp, std::sync::Arc::new(l))
    }

    #[tokio::test]
    async fn short_memory_shrinks_the_read_cache_and_plenty_restores_it() {
        let (_tmp, l) = cached_layer(4).await;
        let stats = || l.read_cache_stats().unwrap();
        assert_eq!((stats().bytes, stats().limit), (4 << 20, 8 << 20));
        // 12 MiB available: the cache may grow by 4 to its budget and
        // leave 8, a budget's worth. Unchanged.
        assert_eq!(adjust_read_cache(&l, 12 << 20), None);
        // 8 MiB available: it may keep its 4 MiB, not grow.
        assert_eq!(
            adjust_read_cache(&l, 8 << 20),
            Some(Adjusted {
                limit: 4 << 20,
                shed: 0
            })
        );
        // 2 MiB available: 6 MiB short of a budget's worth, more than the
        // cache holds, so it gives back all 4 MiB.
        assert_eq!(
            adjust_read_cache(&l, 2 << 20),
            Some(Adjusted {
                limit: 0,
                shed: 4 << 20
            })
        );
        assert_eq!((stats().bytes, stats().shed_bytes), (0, 4 << 20));
        // Memory comes back: the budget again, and reads refill the cache.
        assert_eq!(
            adjust_read_cache(&l, 16 << 20),
            Some(Adjusted {
                limit: 8 << 20,
                shed: 0
            })
        );
        let mut out = Vec::new();
        for _ in 0..2 {
            out.clear();
            l.get_object("cache", "k1", &Default::default(), &mut out)
                .await
                .unwrap();
        }
        assert_eq!(out, vec![1u8; 1 << 20]);
        assert_eq!(stats().bytes, 1 << 20);
        // 7.5 MiB left besides the 1 MiB cached: half a block short of a
        // budget's worth, and the one block goes.
        assert_eq!(adjust_read_cache(&l, 15 << 20), None);
        let a = adjust_read_cache(&l, 15 << 19).unwrap();
        assert_eq!((a.limit, a.shed), (1 << 19, 1 << 20));
    }

    #[tokio::test]
    async fn the_watch_follows_what_it_reads() {
        let (_tmp, l) = cached_layer(2).await;
        // A machine with `free` bytes but for the cache: what the cache
        // gives back becomes available.
        let free = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(64 << 20));
        let (seen, layer) = (free.clone(), l.clone());
        let watch = tokio::spawn(watch_read_cache(l.clone(), move || {
            let cached = layer.read_cache_stats().unwrap().bytes;
            Some(seen.load(std::sync::atomic::Ordering::Relaxed) - cached)
        }));
        let wait_for = |bytes: u64, limit: u64| {
            let l = l.clone();
            async move {
                // Generous: the watch ticks every second, on a machine
                // that may be busy with other work.
                let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                loop {
                    let s = l.read_cache_stats().unwrap();
                    if (s.bytes, s.limit) == (bytes, limit) {
                        return;
                    }
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "cache never reached {bytes} bytes under a limit of {limit}"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        wait_for(2 << 20, 8 << 20).await;
        // 9 MiB free of the cache: it keeps to the 1 MiB that leaves 8,
        // and stays there (what it gave back counts as free).
        free.store(9 << 20, std::sync::atomic::Ordering::Relaxed);
        wait_for(1 << 20, 1 << 20).await;
        tokio::time::sleep(WATCH_PERIOD * 2).await;
        wait_for(1 << 20, 1 << 20).await;
        free.store(1 << 30, std::sync::atomic::Ordering::Relaxed);
        wait_for(1 << 20, 8 << 20).await;
        watch.abort();
    }

    #[test]
    fn short_and_back_are_logged_once_each() {
        let b = 1600u64;
        // A few bytes under the budget: nothing to report.
        assert_eq!(transition(false, b - 1, b), None);
        assert_eq!(transition(false, b - 100, b), None);
        assert_eq!(transition(false, b - 101, b), Some(true));
        assert_eq!(transition(false, 0, b), Some(true));
        // Short, and partly back: still short; all the way: back.
        assert_eq!(transition(true, b - 1, b), None);
        assert_eq!(transition(true, 0, b), None);
        assert_eq!(transition(true, b, b), Some(false));
        assert_eq!(transition(false, b, b), None);
    }

    #[test]
    fn the_cache_leaves_a_budget_of_memory_available() {
        let gib = 1u64 << 30;
        // Plenty left: the whole budget, whatever is cached.
        assert_eq!(read_cache_limit(gib, 0, 8 * gib), gib);
        assert_eq!(read_cache_limit(gib, gib, gib), gib);
        // Room to grow only as far as leaves a budget available.
        assert_eq!(read_cache_limit(gib, 0, gib + gib / 4), gib / 4);
        // Half a budget short: half given back.
        assert_eq!(read_cache_limit(gib, gib, gib / 2), gib / 2);
        assert_eq!(read_cache_limit(gib, gib / 2, gib / 2), 0);
        // Nothing left: nothing kept.
        assert_eq!(read_cache_limit(gib, gib, 0), 0);
        assert_eq!(read_cache_limit(0, 0, 8 * gib), 0);
        // A budget above the largest reserve leaves that much: 12 GiB
        // held with 11 left, all kept; with half a GiB left, half given
        // back.
        assert_eq!(read_cache_limit(12 * gib, 12 * gib, 11 * gib), 12 * gib);
        assert_eq!(
            read_cache_limit(12 * gib, 12 * gib, gib / 2),
            12 * gib - gib / 2
        );
        assert_eq!(read_cache_limit(gib, u64::MAX, u64::MAX), gib);
    }
}
