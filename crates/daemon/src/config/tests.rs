//! The configuration as `tessera server` resolves it from arguments and an
//! environment: credentials and their aliases, endpoints and layout, and
//! every setting's accepted and refused spellings.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

fn args(endpoints: &[&str]) -> ServerArgs {
    ServerArgs {
        address: None,
        console_address: None,
        certs_dir: None,
        quiet: false,
        anonymous: false,
        json: false,
        endpoints: endpoints.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn resolve(endpoints: &[&str], env: &[(&str, &str)]) -> Result<ServerConfig, ConfigError> {
    ServerConfig::resolve(
        &args(endpoints),
        &Env::from_pairs(env.iter().copied()),
        Path::new("/srv"),
        &LocalHost::named("node1"),
    )
}

#[test]
fn credentials_and_aliases() {
    let c = resolve(&["/d"], &[]).unwrap().credentials;
    assert!(c.is_default());
    assert_eq!(c.source, CredentialSource::Default);
    let c = resolve(
        &["/d"],
        &[
            ("MINIO_ROOT_USER", "minio-user"),
            ("MINIO_ROOT_PASSWORD", "minio-secret"),
            ("TESSERA_ROOT_USER", "tessera-user"),
        ],
    )
    .unwrap()
    .credentials;
    assert_eq!(c.user, "tessera-user");
    assert_eq!(c.password, "minio-secret");
    let short = resolve(
        &["/d"],
        &[("MINIO_ROOT_USER", "abc"), ("MINIO_ROOT_PASSWORD", "short")],
    )
    .unwrap_err();
    assert!(short.0.contains("at least 8"), "{short}");
    assert!(resolve(&["/d"], &[("TESSERA_ROOT_USER", "abcd")]).is_err());
    assert!(
        resolve(
            &["/d"],
            &[
                ("TESSERA_ROOT_USER", "ab"),
                ("TESSERA_ROOT_PASSWORD", "12345678")
            ]
        )
        .is_err()
    );
    assert!(
        resolve(
            &["/d"],
            &[
                ("TESSERA_ROOT_USER", "a=b"),
                ("TESSERA_ROOT_PASSWORD", "12345678")
            ]
        )
        .is_err()
    );
}

#[test]
fn endpoints_and_layout() {
    let c = resolve(&["./data"], &[]).unwrap();
    assert_eq!(c.drives.pools, vec![vec![PathBuf::from("/srv/data")]]);
    assert_eq!(c.drives.set_drive_count, Some(1));

    let c = resolve(&[], &[("MINIO_VOLUMES", "/mnt/d{1...8}")]).unwrap();
    assert_eq!(c.drives.pools[0].len(), 8);
    assert_eq!(c.drives.set_sizes, vec![8]);

    let c = resolve(&["http://localhost:9000/mnt/d{1...4}"], &[]).unwrap();
    assert_eq!(c.drives.pools[0][3], PathBuf::from("/mnt/d4"));
    let c = resolve(&["http://node1/mnt/d{1...4}"], &[]).unwrap();
    assert_eq!(c.drives.pools[0].len(), 4);

    // Other nodes: this server (node1, port 9000) is the first of four;
    // then none of the nodes; then the second on one host.
    let c = resolve(&["http://node{1...4}:9000/mnt/d{1...4}"], &[]).unwrap();
    let cluster = c.drives.cluster.unwrap();
    assert_eq!(cluster.nodes.len(), 4);
    assert_eq!((cluster.me, cluster.nodes[0].as_str()), (0, "node1:9000"));
    assert_eq!(cluster.here, 1, "one node per machine");
    // With ellipses, consecutive drives of a set are on different nodes.
    let nodes: Vec<usize> = cluster.layout.iter().take(5).map(|d| d.node).collect();
    assert_eq!(nodes, [0, 1, 2, 3, 0]);
    assert_eq!(c.drives.pools[0].len(), 4);
    let e = resolve(&["http://127.0.0.1:9001/mnt/d{1...4}"], &[]).unwrap_err();
    assert!(e.0.contains("port 9000"), "{e}");
    let args: Vec<String> = (1..=4)
        .flat_map(|n| (1..=4).map(move |d| format!("http://127.0.0.1:{}/srv/n{n}/d{d}", 8998 + n)))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let c = resolve(&args, &[]).unwrap();
    let cluster = c.drives.cluster.as_ref().unwrap();
    assert_eq!(
        cluster.nodes,
        [
            "127.0.0.1:8999",
            "127.0.0.1:9000",
            "127.0.0.1:9001",
            "127.0.0.1:9002"
        ]
    );
    assert_eq!(cluster.me, 1);
    assert_eq!(cluster.here, 4, "four nodes share this machine");
    assert_eq!(cluster.endpoints.len(), 16);
    assert_eq!(c.drives.pools[0].len(), 4);
    assert_eq!(c.drives.pools[0][0], PathBuf::from("/srv/n2/d1"));
    assert_eq!(c.drives.set_sizes, vec![16]);
    // Without ellipses, MinIO lays the set out in argument order.
    let laid: Vec<(usize, usize)> = cluster
        .layout
        .iter()
        .take(5)
        .map(|d| (d.node, d.disk))
        .collect();
    assert_eq!(laid, [(0, 0), (0, 1), (0, 2), (0, 3), (1, 4)]);
    assert_eq!(cluster.layout[4].path, PathBuf::from("/srv/n2/d1"));
    let e = resolve(&["http://127.0.0.1:9001/mnt/d1", "/mnt/d2"], &[]).unwrap_err();
    assert!(
        e.0.contains("invalid endpoints") || e.0.contains("local path"),
        "{e}"
    );

    let e = resolve(&["/a{1...4}"], &[("MINIO_STORAGE_CLASS_STANDARD", "EC:3")]).unwrap_err();
    assert!(e.0.contains("storage class"), "{e}");
    let c = resolve(&["/a{1...4}"], &[("MINIO_STORAGE_CLASS_STANDARD", "EC:1")]).unwrap();
    assert_eq!(c.standard_parity, Some(1));
    assert!(resolve(&["/a{1...4}"], &[("TESSERA_STORAGE_CLASS_RRS", "EC")]).is_err());
    assert!(resolve(&[], &[]).is_err());
}

#[test]
fn other_settings() {
    let c = resolve(
        &["/d"],
        &[
            ("MINIO_DOMAIN", "S3.Example.com, s3.example.org."),
            ("MINIO_REGION", "eu-west-1"),
            ("MINIO_SITE_REGION", "eu-central-1"),
            ("MINIO_PROMETHEUS_AUTH_TYPE", "public"),
            ("TESSERA_ADDRESS", "127.0.0.1:9100"),
            ("MINIO_ADDRESS", ":1"),
            ("TESSERA_SCANNER_RATE", "0"),
        ],
    )
    .unwrap();
    assert_eq!(c.domains, ["s3.example.com", "s3.example.org"]);
    assert_eq!(c.region, "eu-central-1");
    assert!(c.prometheus_public);
    assert_eq!(c.listen.port, 9100);
    assert_eq!(c.scanner.versions_per_sec, None);
    assert!(resolve(&["/d"], &[("TESSERA_DOMAIN", "bad_domain")]).is_err());
    assert!(resolve(&["/d"], &[("TESSERA_LOG_FORMAT", "xml")]).is_err());
    assert!(resolve(&["/d"], &[("TESSERA_SHUTDOWN_TIMEOUT", "soon")]).is_err());
    assert!(resolve(&["/d"], &[("TESSERA_PROMETHEUS_AUTH_TYPE", "none")]).is_err());
}

#[test]
fn request_bound_settings() {
    let c = resolve(&["/d"], &[]).unwrap();
    assert_eq!(c.requests_max, None);
    assert_eq!(c.requests_deadline, Duration::from_secs(10));
    let c = resolve(
        &["/d"],
        &[
            ("MINIO_API_REQUESTS_MAX", "1600"),
            ("MINIO_API_REQUESTS_DEADLINE", "2m"),
        ],
    )
    .unwrap();
    assert_eq!(c.requests_max, Some(1600));
    assert_eq!(c.requests_deadline, Duration::from_secs(120));
    let c = resolve(
        &["/d"],
        &[
            ("TESSERA_API_REQUESTS_MAX", "0"),
            ("MINIO_API_REQUESTS_MAX", "5"),
            ("TESSERA_API_REQUESTS_DEADLINE", "0"),
        ],
    )
    .unwrap();
    assert_eq!(
        c.requests_max, None,
        "the Tessera name wins, 0 is automatic"
    );
    assert_eq!(
        c.requests_deadline,
        Duration::from_secs(10),
        "0 is the default"
    );
    for bad in ["-1", "many", "70000"] {
        assert!(
            resolve(&["/d"], &[("TESSERA_API_REQUESTS_MAX", bad)]).is_err(),
            "{bad}"
        );
    }
    assert!(resolve(&["/d"], &[("TESSERA_API_REQUESTS_DEADLINE", "soon")]).is_err());
}

#[test]
fn post_form_settings() {
    let c = resolve(&["/d"], &[]).unwrap();
    assert_eq!(c.post_forms_max, 0, "0: a quarter of the request bound");
    assert_eq!(c.post_form_timeout, Duration::from_secs(30));
    assert_eq!(c.post_form_idle, Duration::from_secs(10));
    let c = resolve(&["/d"], &[("TESSERA_API_POST_FORM_TIMEOUT", "4s")]).unwrap();
    assert_eq!(
        c.post_form_idle,
        Duration::from_secs(4),
        "never longer than the total"
    );
    let c = resolve(
        &["/d"],
        &[
            ("TESSERA_API_POST_FORMS_MAX", "3"),
            ("TESSERA_API_POST_FORM_IDLE", "2s"),
        ],
    )
    .unwrap();
    assert_eq!(
        (c.post_forms_max, c.post_form_idle),
        (3, Duration::from_secs(2))
    );
    for (var, bad) in [
        ("TESSERA_API_POST_FORMS_MAX", "many"),
        ("TESSERA_API_POST_FORM_TIMEOUT", "0"),
        ("TESSERA_API_POST_FORM_IDLE", "0"),
        ("TESSERA_API_POST_FORM_IDLE", "soon"),
    ] {
        assert!(resolve(&["/d"], &[(var, bad)]).is_err(), "{var}={bad}");
    }
}

#[test]
fn huge_pages_are_on_unless_turned_off() {
    assert!(resolve(&["/d"], &[]).unwrap().huge_pages);
    assert!(
        !resolve(&["/d"], &[("TESSERA_HUGE_PAGES", "off")])
            .unwrap()
            .huge_pages
    );
    assert!(resolve(&["/d"], &[("TESSERA_HUGE_PAGES", "sometimes")]).is_err());
}

#[test]
fn group_commit_is_on_unless_turned_off() {
    assert!(resolve(&["/d"], &[]).unwrap().group_commit);
    for off in ["off", "OFF", "false", "0"] {
        assert!(
            !resolve(&["/d"], &[("TESSERA_GROUP_COMMIT", off)])
                .unwrap()
                .group_commit,
            "{off}"
        );
    }
    assert!(
        resolve(&["/d"], &[("TESSERA_GROUP_COMMIT", "on")])
            .unwrap()
            .group_commit
    );
    assert!(resolve(&["/d"], &[("TESSERA_GROUP_COMMIT", "later")]).is_err());
}

#[test]
fn read_cache_sizes() {
    assert_eq!(resolve(&["/d"], &[]).unwrap().read_cache, None);
    for (v, want) in [
        ("auto", None),
        ("AUTO", None),
        // An empty value is no value: the default.
        ("", None),
        ("off", Some(0)),
        ("0", Some(0)),
        ("4096", Some(4096)),
        ("512MiB", Some(512 << 20)),
        ("2 gib", Some(2 << 30)),
        ("1TiB", Some(1 << 40)),
        ("7B", Some(7)),
    ] {
        assert_eq!(
            resolve(&["/d"], &[("TESSERA_READ_CACHE", v)])
                .unwrap()
                .read_cache,
            want,
            "{v}"
        );
    }
    for bad in [
        "lots",
        "1.5GiB",
        "-1",
        "10MB",
        "2048TiB",
        "99999999999999999999",
    ] {
        let e = resolve(&["/d"], &[("TESSERA_READ_CACHE", bad)]).unwrap_err();
        assert!(e.0.contains("TESSERA_READ_CACHE"), "{bad}: {}", e.0);
    }
}

#[test]
fn huge_fill_is_decided_at_start_unless_set() {
    assert_eq!(resolve(&["/d"], &[]).unwrap().huge_fill, None);
    for (v, want) in [
        ("auto", None),
        ("AUTO", None),
        ("on", Some(true)),
        ("off", Some(false)),
    ] {
        assert_eq!(
            resolve(&["/d"], &[("TESSERA_HUGE_FILL", v)])
                .unwrap()
                .huge_fill,
            want,
            "{v}"
        );
    }
    assert!(resolve(&["/d"], &[("TESSERA_HUGE_FILL", "mostly")]).is_err());
}

#[test]
fn splice_get_is_off_unless_asked_for() {
    assert!(!resolve(&["/d"], &[]).unwrap().splice_get);
    for on in ["on", "ON", "true", "1"] {
        assert!(
            resolve(&["/d"], &[("TESSERA_SPLICE_GET", on)])
                .unwrap()
                .splice_get,
            "{on}"
        );
    }
    assert!(
        !resolve(&["/d"], &[("TESSERA_SPLICE_GET", "off")])
            .unwrap()
            .splice_get
    );
    assert!(resolve(&["/d"], &[("TESSERA_SPLICE_GET", "sometimes")]).is_err());
}

#[test]
fn drive_deadline_settings() {
    let c = resolve(&["/d"], &[]).unwrap();
    assert_eq!(c.drive_deadline.op_timeout, Duration::from_secs(30));
    assert_eq!(c.drive_deadline.probe_interval, Duration::from_secs(5));
    assert_eq!(c.drive_deadline.max_consecutive_failures, 3);
    let c = resolve(
        &["/d"],
        &[
            ("MINIO_DRIVE_MAX_TIMEOUT", "45s"),
            ("TESSERA_DRIVE_PROBE_INTERVAL", "250ms"),
        ],
    )
    .unwrap();
    assert_eq!(c.drive_deadline.op_timeout, Duration::from_secs(45));
    assert_eq!(c.drive_deadline.probe_interval, Duration::from_millis(250));
    let c = resolve(
        &["/d"],
        &[
            ("TESSERA_DRIVE_TIMEOUT", "2s"),
            ("MINIO_DRIVE_MAX_TIMEOUT", "45s"),
        ],
    )
    .unwrap();
    assert_eq!(c.drive_deadline.op_timeout, Duration::from_secs(2));
    assert!(resolve(&["/d"], &[("TESSERA_DRIVE_TIMEOUT", "0s")]).is_err());
    assert!(resolve(&["/d"], &[("TESSERA_DRIVE_TIMEOUT", "forever")]).is_err());
}

/// Nodes of a cluster on this machine share its memory: they are counted
/// by host (any port), this node included.
#[test]
fn nodes_on_this_machine_are_counted() {
    let args: Vec<String> = ["node1:9000", "node1:9001", "node2:9000", "node2:9001"]
        .iter()
        .enumerate()
        .flat_map(|(i, n)| (1..=4).map(move |d| format!("http://{n}/srv/n{i}/d{d}")))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let c = resolve(&args, &[]).unwrap();
    let cluster = c.drives.cluster.unwrap();
    assert_eq!((cluster.nodes.len(), cluster.me, cluster.here), (4, 0, 2));
}
