//! Health endpoints and Prometheus metrics of a running `tessera server`.

use crate::support::{Daemon, drive_dirs, get_bytes, metric_value, run, tessera};

const USER: &str = "metrics-admin";
const PASSWORD: &str = "metrics-secret";

/// The bearer token `tessera prometheus-token` prints for USER/PASSWORD.
fn token(home: &std::path::Path) -> String {
    let mut cmd = tessera(home);
    cmd.arg("prometheus-token")
        .env("MINIO_ROOT_USER", USER)
        .env("MINIO_ROOT_PASSWORD", PASSWORD);
    let out = run(cmd);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("bearer_token: "))
        .unwrap_or_else(|| panic!("no bearer_token in {text}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_follows_the_drives_and_metrics_count_requests() {
    let home = tempfile::tempdir().unwrap();
    let dirs = drive_dirs(home.path(), 4);
    let mut cmd = tessera(home.path());
    cmd.args(["server", "--address", "127.0.0.1:0"])
        .args(&dirs)
        .env("TESSERA_ROOT_USER", USER)
        .env("TESSERA_ROOT_PASSWORD", PASSWORD)
        .env("TESSERA_SPLICE_GET", "on");
    let d = Daemon::start(cmd);

    for path in [
        "/minio/health/live",
        "/minio/health/ready",
        "/minio/health/cluster",
        "/minio/health/cluster/read",
        "/tessera/health/live",
        "/tessera/health/ready",
    ] {
        let r = d.get(path, &[]);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    // 4 drives, EC:2: 2 data shards, write quorum 3 (k == m).
    let r = d.get("/minio/health/cluster", &[]);
    assert_eq!(r.header("x-minio-write-quorum"), Some("3"));
    let r = d.get("/tessera/health/cluster", &[]);
    assert!(r.text().contains(r#""drives_online":4"#), "{}", r.text());

    // Metrics need a token signed with the root credentials.
    let r = d.get("/minio/v2/metrics/cluster", &[]);
    assert_eq!(r.status, 401, "{}", r.text());
    let bad = "Bearer eyJhbGciOiJIUzUxMiJ9.eyJzdWIiOiJtZXRyaWNzLWFkbWluIn0.AAAA";
    let r = d.get("/minio/v2/metrics/cluster", &[("Authorization", bad)]);
    assert_eq!(r.status, 403, "{}", r.text());
    let auth = format!("Bearer {}", token(home.path()));

    let s3 = d.s3(USER, PASSWORD);
    s3.create_bucket().bucket("metered").send().await.unwrap();
    s3.put_object()
        .bucket("metered")
        .key("k")
        .body(b"0123456789".to_vec().into())
        .send()
        .await
        .unwrap();
    assert!(
        s3.get_object()
            .bucket("metered")
            .key("nope")
            .send()
            .await
            .is_err()
    );

    for path in ["/minio/v2/metrics/cluster", "/tessera/metrics"] {
        let r = d.get(path, &[("Authorization", &auth)]);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let m = r.text();
        for needle in [
            r#"tessera_s3_requests_total{api="CreateBucket",status="200"} 1"#,
            r#"tessera_s3_requests_total{api="PutObject",status="200"} 1"#,
            r#"tessera_s3_requests_total{api="GetObject",status="404"} 1"#,
            r#"tessera_s3_request_duration_seconds_count{api="PutObject"} 1"#,
            r#"tessera_drives{state="online"} 4"#,
            r#"tessera_drives{state="offline"} 0"#,
            "tessera_cluster_write_quorum 1",
            "tessera_heal_queue_length 0",
            "tessera_heal_journal_healed_versions_total 0",
            "tessera_scanner_checked_versions_total",
            // TESSERA_SCANNER_RATE's default, no speed set.
            "tessera_scanner_rate 100\n",
            "tessera_http_connections_open",
        ] {
            assert!(m.contains(needle), "{path} lacks {needle}:\n{m}");
        }
        let free = m
            .lines()
            .find(|l| l.starts_with("tessera_drive_free_bytes{"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no drive space in\n{m}"));
        assert!(free > 0, "{free}");
        // The body of the PUT (10 bytes, possibly aws-chunked with a
        // checksum trailer) was counted.
        let received = metric_value(&m, r#"tessera_s3_received_bytes_total{api="PutObject"}"#)
            .unwrap_or_else(|| panic!("no PutObject bytes in\n{m}"));
        assert!(received >= 10, "{received}");
    }

    // With TESSERA_SPLICE_GET on, GETs of an object whose shard files are
    // in the page cache (the first GET reads them there) send its records
    // from pipes (`splice`) over HTTP/1.1 in the clear, and every byte
    // arrives right.
    let body: Vec<u8> = (0..3 * (1 << 20) + 4321u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    s3.put_object()
        .bucket("metered")
        .key("big")
        .body(body.clone().into())
        .send()
        .await
        .unwrap();
    for _ in 0..3 {
        let got = get_bytes(&s3, "metered", "big").await;
        assert!(got == body, "GET of big: wrong bytes");
    }
    let m = d
        .get("/tessera/metrics", &[("Authorization", &auth)])
        .text();
    let spliced = metric_value(&m, "tessera_http_spliced_bytes_total")
        .unwrap_or_else(|| panic!("no spliced bytes in\n{m}"));
    assert!(
        (1 << 20..=3 * body.len() as u64).contains(&spliced),
        "spliced {spliced} bytes of three GETs of {}",
        body.len()
    );
    // The PUT's body went through the ETag's MD5, whichever code hashed
    // it (alone here: one upload has no one to share lanes with).
    let md5_blocks: u64 = ["lanes", "combiner", "caller"]
        .iter()
        .map(|p| {
            metric_value(&m, &format!(r#"tessera_md5_blocks_total{{path="{p}"}}"#)).unwrap_or(0)
        })
        .sum();
    assert!(
        md5_blocks >= body.len() as u64 / 64,
        "MD5 blocks {md5_blocks} for a body of {} bytes:\n{m}",
        body.len()
    );
    // The PUT's and GETs' record buffers came from pools, carved from
    // huge-page regions where the kernel has transparent huge pages.
    let huge = metric_value(&m, "tessera_buffer_huge_page_bytes")
        .unwrap_or_else(|| panic!("no huge-page bytes in\n{m}"));
    if drive::huge_pages() {
        assert!(huge >= 2 << 20, "{huge} bytes in huge-page regions");
        assert_eq!(huge % (2 << 20), 0);
    } else {
        assert_eq!(huge, 0);
    }
    // One upload has no one to share lanes with: no lane steps, but the
    // counter is there.
    assert_eq!(
        metric_value(&m, "tessera_md5_lane_steps_total"),
        Some(0),
        "lane steps in\n{m}"
    );
    // Group commit is on by default: the PUTs' xl.meta writes were made
    // durable by syncfs calls.
    let group_syncs = metric_value(&m, "tessera_drive_group_syncs_total")
        .unwrap_or_else(|| panic!("no group syncs in\n{m}"));
    assert!(group_syncs >= 2, "{group_syncs} group syncs");

    // Three of four drives disappear: no write (nor read) quorum.
    for dir in &dirs[1..] {
        std::fs::remove_dir_all(dir).unwrap();
    }
    d.wait_for_status("/minio/health/cluster", 503);
    d.wait_for_status("/minio/health/ready", 503);
    let r = d.get("/tessera/health/cluster", &[]);
    assert_eq!(r.status, 503);
    assert!(r.text().contains(r#""drives_online":1"#), "{}", r.text());
    assert_eq!(d.get("/minio/health/live", &[]).status, 200);
    let m = d
        .get("/tessera/metrics", &[("Authorization", &auth)])
        .text();
    assert!(m.contains(r#"tessera_drives{state="offline"} 3"#), "{m}");
    assert!(m.contains("tessera_cluster_write_quorum 0"), "{m}");
}

#[test]
fn metrics_can_be_public() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tessera(home.path());
    cmd.args(["server", "--address", "127.0.0.1:0", "--quiet"])
        .arg(home.path().join("d"))
        .env("MINIO_PROMETHEUS_AUTH_TYPE", "public")
        .env("TESSERA_GROUP_COMMIT", "off");
    let d = Daemon::start(cmd);
    let r = d.get("/minio/v2/metrics/cluster", &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("tessera_build_info"));
    // With group commit off, the writes of the start (format.json, the
    // config) synced on their own.
    assert!(
        r.text().contains("\ntessera_drive_group_syncs_total 0\n"),
        "{}",
        r.text()
    );
    // --quiet: the API line and nothing of the banner.
    let out = d.stdout.lock().unwrap().join("\n");
    assert!(!out.contains("RootUser"), "{out}");
}

/// The read cache through the real server: a hot object's blocks are
/// served from memory from its third GET (the second admits them), an
/// overwrite is read right at once and the old blocks leave with the old
/// data, and `TESSERA_READ_CACHE=off` keeps nothing. (Giving memory back
/// when it runs short: `memory.rs`'s tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_objects_are_served_from_the_read_cache() {
    let metric = |d: &Daemon, name: &str| {
        let m = d.get("/tessera/metrics", &[]).text();
        metric_value(&m, name).unwrap_or_else(|| panic!("no {name} in\n{m}"))
    };
    let body = |seed: u32, len: u32| -> Vec<u8> {
        (0..len)
            .map(|i| (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect()
    };
    for (setting, budget) in [("64MiB", 64u64 << 20), ("off", 0)] {
        let home = tempfile::tempdir().unwrap();
        let mut cmd = tessera(home.path());
        cmd.args(["server", "--address", "127.0.0.1:0", "--quiet"])
            .args(drive_dirs(home.path(), 4))
            .env("TESSERA_ROOT_USER", USER)
            .env("TESSERA_ROOT_PASSWORD", PASSWORD)
            .env("TESSERA_PROMETHEUS_AUTH_TYPE", "public")
            .env("TESSERA_READ_CACHE", setting);
        let d = Daemon::start(cmd);
        assert_eq!(metric(&d, "tessera_read_cache_budget_bytes"), budget);
        // Far more memory available than a 64 MiB budget needs: the
        // limit is the whole budget.
        assert_eq!(metric(&d, "tessera_read_cache_limit_bytes"), budget);
        let s3 = d.s3(USER, PASSWORD);
        s3.create_bucket().bucket("hot").send().await.unwrap();
        // 3 MiB and 4 bytes: four erasure blocks, the last of 4 bytes.
        let old = body(1, (3 << 20) + 4);
        s3.put_object()
            .bucket("hot")
            .key("k")
            .body(old.clone().into())
            .send()
            .await
            .unwrap();
        for _ in 0..3 {
            assert!(
                get_bytes(&s3, "hot", "k").await == old,
                "{setting}: GET of k"
            );
        }
        let (hits, cached) = (
            metric(&d, "tessera_read_cache_hits_total"),
            metric(&d, "tessera_read_cache_bytes"),
        );
        if budget == 0 {
            assert_eq!((hits, cached), (0, 0), "{setting}");
            continue;
        }
        assert_eq!(hits, 4, "the third GET's four blocks");
        assert_eq!(cached, old.len() as u64);
        assert_eq!(metric(&d, "tessera_read_cache_misses_total"), 8);
        // A range across two cached blocks, sent from them.
        let (from, to) = ((1u64 << 20) - 6, (2u64 << 20) + 9);
        let r = s3
            .get_object()
            .bucket("hot")
            .key("k")
            .range(format!("bytes={from}-{to}"))
            .send()
            .await
            .unwrap();
        let want = format!("bytes {from}-{to}/{}", old.len());
        assert_eq!(r.content_range(), Some(want.as_str()));
        let got = r.body.collect().await.unwrap().into_bytes();
        assert!(
            got[..] == old[from as usize..=to as usize],
            "the range's bytes"
        );
        assert_eq!(metric(&d, "tessera_read_cache_hits_total"), 4 + 3);

        let new = body(2, 5 << 20);
        s3.put_object()
            .bucket("hot")
            .key("k")
            .body(new.clone().into())
            .send()
            .await
            .unwrap();
        assert_eq!(
            metric(&d, "tessera_read_cache_bytes"),
            0,
            "old blocks dropped"
        );
        for _ in 0..3 {
            assert!(get_bytes(&s3, "hot", "k").await == new, "GET of the new k");
        }
        assert_eq!(metric(&d, "tessera_read_cache_bytes"), 5 << 20);
        assert_eq!(metric(&d, "tessera_read_cache_hits_total"), 4 + 3 + 5);
        s3.delete_object()
            .bucket("hot")
            .key("k")
            .send()
            .await
            .unwrap();
        assert_eq!(metric(&d, "tessera_read_cache_bytes"), 0, "deleted");
        assert_eq!(metric(&d, "tessera_read_cache_evicted_bytes_total"), 0);
        assert_eq!(metric(&d, "tessera_read_cache_shed_bytes_total"), 0);
    }
}
