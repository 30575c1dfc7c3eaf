//! The lock service's admin route, `POST /tessera/cluster/locks`: leases
//! taken, refreshed and released through this node by hand, and a
//! measurement of the service.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{Method, StatusCode};
use serde_json::json;

use super::{Node, futures_join_all};

impl Node {
    /// `POST /tessera/cluster/locks?op=...`: take, refresh or release a
    /// lease through this node (`op=acquire&resource=&mode=&ttl_ms=&holder=`,
    /// `op=refresh|release&owner=&resource=&holder=[&ttl_ms=]`), or measure
    /// the lock service (`op=speedtest&locks=N&concurrency=C`).
    pub(super) async fn lock_admin(
        &self,
        method: &Method,
        query: &str,
    ) -> (StatusCode, serde_json::Value) {
        if method != Method::POST {
            return (
                StatusCode::METHOD_NOT_ALLOWED,
                json!({"error": "POST only"}),
            );
        }
        let q: std::collections::HashMap<String, String> = query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| {
                (
                    k.to_owned(),
                    percent_encoding::percent_decode_str(v)
                        .decode_utf8_lossy()
                        .into_owned(),
                )
            })
            .collect();
        let get = |k: &str| q.get(k).map(String::as_str).unwrap_or("");
        let num = |k: &str, d: u64| get(k).parse().unwrap_or(d);
        let mode = if get("mode") == "shared" {
            consensus::locks::Mode::Shared
        } else {
            consensus::locks::Mode::Exclusive
        };
        match get("op") {
            "acquire" => {
                let timeout = Duration::from_millis(num("timeout_ms", 10_000).min(120_000));
                match self
                    .locks
                    .acquire(
                        get("resource"),
                        mode,
                        get("holder"),
                        num("ttl_ms", 10_000),
                        timeout,
                    )
                    .await
                {
                    Ok(t) => (
                        StatusCode::OK,
                        json!({"lease": t.lease, "owner": t.owner, "owner_node": self.name_of(t.owner)}),
                    ),
                    Err(e) => (StatusCode::CONFLICT, json!({"error": e})),
                }
            }
            op @ ("refresh" | "release") => {
                match self
                    .locks
                    .on_owner(
                        num("owner", 0),
                        op,
                        get("resource"),
                        get("holder"),
                        num("ttl_ms", 10_000),
                    )
                    .await
                {
                    Ok(b) => (
                        StatusCode::OK,
                        json!({"ok": true, "ttl_ms": String::from_utf8_lossy(&b).parse::<u64>().ok()}),
                    ),
                    Err((status, msg)) => (
                        StatusCode::from_u16(status).unwrap_or(StatusCode::CONFLICT),
                        json!({"error": msg}),
                    ),
                }
            }
            "hold" => {
                // Held through the object layer's locker: refreshed while
                // held, released at the end.
                let timeout = Duration::from_millis(num("timeout_ms", 10_000).min(120_000));
                let hold = Duration::from_millis(num("ms", 1_000).min(120_000));
                let resource = get("resource");
                let taken = if mode == consensus::locks::Mode::Shared {
                    object::layer::Locker::read(self.locker.as_ref(), resource, timeout).await
                } else {
                    object::layer::Locker::write(self.locker.as_ref(), resource, timeout).await
                };
                match taken {
                    Ok(guard) => {
                        tokio::time::sleep(hold).await;
                        drop(guard);
                        (StatusCode::OK, json!({"held_ms": hold.as_millis() as u64}))
                    }
                    Err(e) => (StatusCode::CONFLICT, json!({"error": e.to_string()})),
                }
            }
            "speedtest" => {
                let n = num("locks", 10_000).clamp(1, 1_000_000) as usize;
                let c = num("concurrency", 32).clamp(1, 1024) as usize;
                (StatusCode::OK, self.lock_speedtest(n, c).await)
            }
            _ => (
                StatusCode::BAD_REQUEST,
                json!({"error": "op is acquire, refresh, release, hold or speedtest"}),
            ),
        }
    }

    /// `n` exclusive lock-and-release cycles on distinct resources, `c` at
    /// a time, through this node: locks per second and latency, for leases
    /// this node grants itself and for those another node grants.
    async fn lock_speedtest(&self, n: usize, c: usize) -> serde_json::Value {
        let started = std::time::Instant::now();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tag = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let workers = (0..c).map(|_| {
            let locks = Arc::clone(&self.locks);
            let next = Arc::clone(&next);
            async move {
                let mut local = Vec::new();
                let mut remote = Vec::new();
                let mut errors = 0u64;
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let resource = format!("speedtest/{tag}/{i}");
                    let t = std::time::Instant::now();
                    match locks
                        .acquire(
                            &resource,
                            consensus::locks::Mode::Exclusive,
                            "speedtest",
                            10_000,
                            Duration::from_secs(10),
                        )
                        .await
                    {
                        Ok(taken) => {
                            let ok = locks
                                .on_owner(taken.owner, "release", &resource, "speedtest", 0)
                                .await
                                .is_ok();
                            let us = t.elapsed().as_secs_f64() * 1e6;
                            if !ok {
                                errors += 1;
                            } else if taken.owner == locks.me() {
                                local.push(us);
                            } else {
                                remote.push(us);
                            }
                        }
                        Err(_) => errors += 1,
                    }
                }
                (local, remote, errors)
            }
        });
        let results = futures_join_all(workers.collect()).await;
        let wall = started.elapsed().as_secs_f64();
        let (mut local, mut remote, mut errors) = (Vec::new(), Vec::new(), 0);
        for (l, r, e) in results {
            local.extend(l);
            remote.extend(r);
            errors += e;
        }
        let pct = |v: &mut Vec<f64>, p: usize| {
            if v.is_empty() {
                return serde_json::Value::Null;
            }
            v.sort_by(f64::total_cmp);
            json!((v[(v.len() - 1) * p / 100] * 10.0).round() / 10.0)
        };
        json!({
            "cycles": n,
            "concurrency": c,
            "seconds": wall,
            "cycles_per_second": (n as f64 - errors as f64) / wall,
            "errors": errors,
            "local": {"count": local.len(), "p50_us": pct(&mut local, 50), "p99_us": pct(&mut local, 99)},
            "remote": {"count": remote.len(), "p50_us": pct(&mut remote, 50), "p99_us": pct(&mut remote, 99)},
        })
    }
}
