//! The command line, the environment and the first start of `tessera`.

use crate::support::{Daemon, run, tessera};

/// Every variable the operations guide documents.
const VARIABLES: &[&str] = &[
    "TESSERA_ROOT_USER",
    "MINIO_ROOT_USER",
    "MINIO_ACCESS_KEY",
    "TESSERA_ROOT_PASSWORD",
    "MINIO_ROOT_PASSWORD",
    "MINIO_SECRET_KEY",
    "TESSERA_ROOT_USER_FILE",
    "MINIO_ROOT_USER_FILE",
    "MINIO_ACCESS_KEY_FILE",
    "TESSERA_ROOT_PASSWORD_FILE",
    "MINIO_ROOT_PASSWORD_FILE",
    "MINIO_SECRET_KEY_FILE",
    "TESSERA_VOLUMES",
    "MINIO_VOLUMES",
    "TESSERA_ADDRESS",
    "MINIO_ADDRESS",
    "TESSERA_CONSOLE_ADDRESS",
    "MINIO_CONSOLE_ADDRESS",
    "TESSERA_CERTS_DIR",
    "TESSERA_STORAGE_CLASS_STANDARD",
    "MINIO_STORAGE_CLASS_STANDARD",
    "TESSERA_STORAGE_CLASS_RRS",
    "MINIO_STORAGE_CLASS_RRS",
    "TESSERA_ERASURE_SET_DRIVE_COUNT",
    "MINIO_ERASURE_SET_DRIVE_COUNT",
    "TESSERA_DOMAIN",
    "MINIO_DOMAIN",
    "TESSERA_REGION",
    "MINIO_SITE_REGION",
    "MINIO_REGION",
    "TESSERA_PROMETHEUS_AUTH_TYPE",
    "MINIO_PROMETHEUS_AUTH_TYPE",
    "TESSERA_LOG",
    "TESSERA_LOG_FORMAT",
    "TESSERA_SHUTDOWN_TIMEOUT",
    "MINIO_SHUTDOWN_TIMEOUT",
    "TESSERA_READ_HEADER_TIMEOUT",
    "MINIO_READ_HEADER_TIMEOUT",
    "TESSERA_SCANNER_RATE",
    "TESSERA_SCANNER_INTERVAL",
    "TESSERA_API_SIGV2",
    "TESSERA_API_POST_FORMS_MAX",
    "TESSERA_API_POST_FORM_TIMEOUT",
    "TESSERA_API_POST_FORM_IDLE",
    "TESSERA_API_BODY_MIN_RATE",
    "TESSERA_API_BODY_GRACE",
    "TESSERA_API_SEND_TIMEOUT",
    "TESSERA_DRIVE_TIMEOUT",
    "MINIO_DRIVE_MAX_TIMEOUT",
    "TESSERA_DRIVE_PROBE_INTERVAL",
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
];

#[test]
fn help_documents_every_flag_and_variable() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tessera(home.path());
    cmd.arg("--help");
    let out = run(cmd);
    assert!(out.status.success());
    let top = String::from_utf8_lossy(&out.stdout);
    for word in ["server", "prometheus-token", "--version"] {
        assert!(top.contains(word), "tessera --help lacks {word}:\n{top}");
    }
    for v in VARIABLES {
        assert!(top.contains(v), "tessera --help lacks {v}:\n{top}");
    }

    let mut cmd = tessera(home.path());
    cmd.args(["server", "--help"]);
    let out = run(cmd);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--address",
        "--console-address",
        "--certs-dir",
        "-S",
        "--quiet",
        "--anonymous",
        "--json",
        "ENDPOINTS",
    ] {
        assert!(help.contains(flag), "server --help lacks {flag}:\n{help}");
    }
    for v in VARIABLES {
        assert!(help.contains(v), "server --help lacks {v}:\n{help}");
    }

    let mut cmd = tessera(home.path());
    cmd.arg("--version");
    let out = run(cmd);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}

/// Runs `tessera server ARGS` with `env`, expecting it to refuse to start
/// with `code` and a message containing `needle` on stderr.
fn refused(args: &[&str], env: &[(&str, &str)], code: i32, needle: &str) {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tessera(home.path());
    cmd.current_dir(home.path()).arg("server").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?} {env:?}: stderr {stderr}"
    );
    assert!(
        stderr.contains(needle),
        "{args:?} {env:?}: stderr lacks {needle:?}: {stderr}"
    );
    assert!(
        !stderr.contains("panicked"),
        "{args:?} {env:?} panicked: {stderr}"
    );
}

#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let auth = [
        ("TESSERA_ROOT_USER", "admin"),
        ("TESSERA_ROOT_PASSWORD", "long-enough"),
    ];
    refused(
        &["d"],
        &[
            ("MINIO_ROOT_USER", "admin"),
            ("MINIO_ROOT_PASSWORD", "short"),
        ],
        1,
        "MINIO_ROOT_PASSWORD: the root password must be at least 8 characters long",
    );
    refused(
        &["d"],
        &[
            ("TESSERA_ROOT_USER", "ab"),
            ("TESSERA_ROOT_PASSWORD", "long-enough"),
        ],
        1,
        "at least 3 characters",
    );
    refused(
        &["d"],
        &[("TESSERA_ROOT_USER", "admin")],
        1,
        "root password is not",
    );
    refused(&["--no-such-flag", "d"], &[], 2, "--no-such-flag");
    refused(&[], &auth, 1, "no drives given");
    // Other nodes, none of which is this machine (`.invalid` never
    // resolves, whatever addresses the machine has).
    refused(
        &["http://node{1...4}.invalid:9000/mnt/d{1...4}"],
        &auth,
        1,
        "none of the endpoints' nodes",
    );
    refused(
        &["d{1...4}"],
        &[("MINIO_STORAGE_CLASS_STANDARD", "EC:3")],
        1,
        "storage class",
    );
    refused(
        &["--address", "9000", "d"],
        &auth,
        1,
        "--address '9000' is not HOST:PORT",
    );
    refused(
        &["d"],
        &[("TESSERA_LOG_FORMAT", "xml")],
        1,
        "TESSERA_LOG_FORMAT",
    );
    refused(
        &["d"],
        &[("TESSERA_SHUTDOWN_TIMEOUT", "soon")],
        1,
        "TESSERA_SHUTDOWN_TIMEOUT",
    );
    refused(
        &["--certs-dir", "no-such-dir", "d"],
        &auth,
        1,
        "does not exist",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_start_needs_no_configuration() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tessera(home.path());
    cmd.current_dir(home.path())
        .args(["server", "--address", "127.0.0.1:0", "./data"]);
    let d = Daemon::start(cmd);
    let banner = d.stdout_until("WARNING");
    assert!(d.endpoint.starts_with("http://127.0.0.1:"), "{banner}");
    for needle in [
        "RootUser: minioadmin",
        "RootPass: minioadmin",
        "WARNING: Detected default credentials",
        &format!("aws --endpoint-url {} s3 ls", d.endpoint),
        &format!("mc alias set tessera {} minioadmin minioadmin", d.endpoint),
        "TLS: off",
    ] {
        assert!(
            banner.contains(needle),
            "banner lacks {needle:?}:\n{banner}"
        );
    }
    assert!(
        home.path().join("data/.minio.sys/format.json").is_file(),
        "the drive was created and formatted"
    );
    let s3 = d.s3("minioadmin", "minioadmin");
    s3.create_bucket().bucket("first").send().await.unwrap();
    let buckets = s3.list_buckets().send().await.unwrap();
    assert_eq!(buckets.buckets()[0].name(), Some("first"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minio_environment_works_and_tessera_names_win() {
    let home = tempfile::tempdir().unwrap();
    let volumes = format!("{}/disk{{1...4}}", home.path().display());
    let mut cmd = tessera(home.path());
    cmd.args(["server", "--address", "127.0.0.1:0"])
        .env("MINIO_VOLUMES", &volumes)
        .env("MINIO_ROOT_USER", "minio-user")
        .env("MINIO_ROOT_PASSWORD", "minio-password")
        .env("TESSERA_ROOT_USER", "tessera-user")
        .env("MINIO_REGION", "eu-west-1");
    let d = Daemon::start(cmd);
    let banner = d.stdout_until("Command-line");
    assert!(banner.contains("RootUser: tessera-user"), "{banner}");
    assert!(
        !banner.contains("minio-password"),
        "a configured password is not printed:\n{banner}"
    );
    assert!(!banner.contains("WARNING: Detected default"), "{banner}");
    assert!(banner.contains("Drives: 4 in 1 erasure set"), "{banner}");
    for i in 1..=4 {
        assert!(
            home.path()
                .join(format!("disk{i}/.minio.sys/format.json"))
                .is_file()
        );
    }
    // TESSERA_ROOT_USER won over MINIO_ROOT_USER; the password came from
    // MINIO_ROOT_PASSWORD.
    let ok = s3_in_region(&d.endpoint, "tessera-user", "minio-password", "eu-west-1");
    ok.create_bucket()
        .bucket("tessera-wins")
        .send()
        .await
        .unwrap();
    let loser = s3_in_region(&d.endpoint, "minio-user", "minio-password", "eu-west-1");
    let e = loser.list_buckets().send().await.unwrap_err();
    let code = e.into_service_error().meta().code().map(str::to_owned);
    assert_eq!(code.as_deref(), Some("InvalidAccessKeyId"));
}

fn s3_in_region(endpoint: &str, access: &str, secret: &str, region: &str) -> aws_sdk_s3::Client {
    use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region.to_owned()))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(access, secret, None, None, "test"))
        .http_client(
            aws_smithy_http_client::Builder::new()
                .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                    aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
                ))
                .build_https(),
        )
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}
