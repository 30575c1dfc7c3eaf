//! The command line (clap) and the environment variables it documents.

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

/// One environment variable the daemon reads: its Tessera name, the MinIO
/// names accepted in its place (the Tessera name wins), and what it does.
#[derive(Debug, Clone, Copy)]
pub struct EnvVar {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub help: &'static str,
}

pub const ROOT_USER: EnvVar = EnvVar {
    name: "TESSERA_ROOT_USER",
    aliases: &["MINIO_ROOT_USER", "MINIO_ACCESS_KEY"],
    help: "root access key (at least 3 characters, no '=' or ','); default minioadmin",
};
pub const ROOT_PASSWORD: EnvVar = EnvVar {
    name: "TESSERA_ROOT_PASSWORD",
    aliases: &["MINIO_ROOT_PASSWORD", "MINIO_SECRET_KEY"],
    help: "root secret key (at least 8 characters); default minioadmin",
};
pub const ROOT_USER_FILE: EnvVar = EnvVar {
    name: "TESSERA_ROOT_USER_FILE",
    aliases: &["MINIO_ROOT_USER_FILE", "MINIO_ACCESS_KEY_FILE"],
    help: "file holding the root user (Docker/Kubernetes secrets; a relative name is looked \
           up in /run/secrets first)",
};
pub const ROOT_PASSWORD_FILE: EnvVar = EnvVar {
    name: "TESSERA_ROOT_PASSWORD_FILE",
    aliases: &["MINIO_ROOT_PASSWORD_FILE", "MINIO_SECRET_KEY_FILE"],
    help: "file holding the root password, as TESSERA_ROOT_USER_FILE",
};
pub const VOLUMES: EnvVar = EnvVar {
    name: "TESSERA_VOLUMES",
    aliases: &["MINIO_VOLUMES"],
    help: "drive endpoints, space separated, used when none are given as arguments",
};
pub const ADDRESS: EnvVar = EnvVar {
    name: "TESSERA_ADDRESS",
    aliases: &["MINIO_ADDRESS"],
    help: "listen address HOST:PORT when --address is not given; default :9000",
};
pub const CONSOLE_ADDRESS: EnvVar = EnvVar {
    name: "TESSERA_CONSOLE_ADDRESS",
    aliases: &["MINIO_CONSOLE_ADDRESS"],
    help: "accepted for compatibility and ignored: Tessera has no web console",
};
pub const CERTS_DIR: EnvVar = EnvVar {
    name: "TESSERA_CERTS_DIR",
    aliases: &[],
    help: "certificates directory when --certs-dir is not given; default ${HOME}/.tessera/certs",
};
pub const STORAGE_CLASS_STANDARD: EnvVar = EnvVar {
    name: "TESSERA_STORAGE_CLASS_STANDARD",
    aliases: &["MINIO_STORAGE_CLASS_STANDARD"],
    help: "parity of the STANDARD storage class, EC:n; default from the set size",
};
pub const STORAGE_CLASS_RRS: EnvVar = EnvVar {
    name: "TESSERA_STORAGE_CLASS_RRS",
    aliases: &["MINIO_STORAGE_CLASS_RRS"],
    help: "parity of the REDUCED_REDUNDANCY storage class, EC:n; default EC:1",
};
pub const ERASURE_SET_DRIVE_COUNT: EnvVar = EnvVar {
    name: "TESSERA_ERASURE_SET_DRIVE_COUNT",
    aliases: &["MINIO_ERASURE_SET_DRIVE_COUNT"],
    help: "drives per erasure set of fresh drives (2-16); default chosen as MinIO does",
};
pub const DOMAIN: EnvVar = EnvVar {
    name: "TESSERA_DOMAIN",
    aliases: &["MINIO_DOMAIN"],
    help: "domains of virtual-host-style requests (bucket.DOMAIN), comma separated",
};
pub const REGION: EnvVar = EnvVar {
    name: "TESSERA_REGION",
    aliases: &["MINIO_SITE_REGION", "MINIO_REGION"],
    help: "region of the server (SigV4 scope, GetBucketLocation); default us-east-1",
};
pub const PROMETHEUS_AUTH_TYPE: EnvVar = EnvVar {
    name: "TESSERA_PROMETHEUS_AUTH_TYPE",
    aliases: &["MINIO_PROMETHEUS_AUTH_TYPE"],
    help: "jwt (default: bearer token from `tessera prometheus-token` or \
           `mc admin prometheus generate`) or public",
};
pub const KMS_SECRET_KEY: EnvVar = EnvVar {
    name: "TESSERA_KMS_SECRET_KEY",
    aliases: &["MINIO_KMS_SECRET_KEY"],
    help: "static KMS master key NAME:BASE64-OF-32-BYTES for SSE-S3 and SSE-KMS (MinIO's format: \
           the same key reads MinIO's encrypted objects); unset: those modes are refused",
};
pub const KMS_SECRET_KEY_FILE: EnvVar = EnvVar {
    name: "TESSERA_KMS_SECRET_KEY_FILE",
    aliases: &["MINIO_KMS_SECRET_KEY_FILE"],
    help: "file holding the static KMS master key, as TESSERA_KMS_SECRET_KEY",
};
pub const KMS_AUTO_ENCRYPTION: EnvVar = EnvVar {
    name: "TESSERA_KMS_AUTO_ENCRYPTION",
    aliases: &["MINIO_KMS_AUTO_ENCRYPTION"],
    help: "on: encrypt every new object with SSE-S3 when the request asks for no encryption; \
           default off",
};
pub const INSECURE_SSE_C: EnvVar = EnvVar {
    name: "TESSERA_INSECURE_SSE_C",
    aliases: &[],
    help: "on: accept SSE-C keys over plain HTTP (for tests only: the key crosses the wire in \
           clear); default off, SSE-C needs HTTPS",
};
pub const API_SIGV2: EnvVar = EnvVar {
    name: "TESSERA_API_SIGV2",
    aliases: &[],
    help: "off: refuse requests signed with AWS Signature Version 2 (header, presigned URLs and \
           POST forms); default on, as MinIO",
};
pub const TEST_STS_MIN_DURATION: EnvVar = EnvVar {
    name: "TESSERA_TEST_STS_MIN_DURATION",
    aliases: &[],
    help: "FOR TESTS ONLY: the shortest STS AssumeRole session granted (Go-style duration, at \
           least 1s), so that tests of expiry need not wait; default 15m, MinIO's minimum",
};
pub const OPENID_CONFIG_URL: EnvVar = EnvVar {
    name: "TESSERA_IDENTITY_OPENID_CONFIG_URL",
    aliases: &["MINIO_IDENTITY_OPENID_CONFIG_URL"],
    help: "OpenID Connect discovery URL (.../.well-known/openid-configuration) of the provider \
           whose tokens STS AssumeRoleWithWebIdentity accepts; unset: none",
};
pub const OPENID_CLIENT_ID: EnvVar = EnvVar {
    name: "TESSERA_IDENTITY_OPENID_CLIENT_ID",
    aliases: &["MINIO_IDENTITY_OPENID_CLIENT_ID"],
    help: "client id the provider's tokens must be issued to (their aud or azp claim)",
};
pub const OPENID_CLAIM_NAME: EnvVar = EnvVar {
    name: "TESSERA_IDENTITY_OPENID_CLAIM_NAME",
    aliases: &["MINIO_IDENTITY_OPENID_CLAIM_NAME"],
    help: "token claim naming the policies of the session (comma separated or a list); \
           default policy",
};
pub const LOG: EnvVar = EnvVar {
    name: "TESSERA_LOG",
    aliases: &[],
    help: "log filter, tracing-subscriber syntax (info, debug, s3_gateway=debug,...); default info",
};
pub const LOG_FORMAT: EnvVar = EnvVar {
    name: "TESSERA_LOG_FORMAT",
    aliases: &[],
    help: "text (default) or json (one JSON object per line); --json sets json",
};
pub const SHUTDOWN_TIMEOUT: EnvVar = EnvVar {
    name: "TESSERA_SHUTDOWN_TIMEOUT",
    aliases: &["MINIO_SHUTDOWN_TIMEOUT"],
    help: "longest wait for requests in flight at SIGTERM/SIGINT (Go-style duration); default 30s",
};
pub const DRIVE_TIMEOUT: EnvVar = EnvVar {
    name: "TESSERA_DRIVE_TIMEOUT",
    aliases: &["MINIO_DRIVE_MAX_TIMEOUT"],
    help: "longest any one drive operation may take before it fails and counts against the \
           drive (Go-style duration); 3 faults in a row take the drive offline until a probe \
           succeeds; default 30s",
};
pub const DRIVE_PROBE_INTERVAL: EnvVar = EnvVar {
    name: "TESSERA_DRIVE_PROBE_INTERVAL",
    aliases: &[],
    help: "least time between two probes of an offline drive (Go-style duration); default 5s",
};
pub const READ_HEADER_TIMEOUT: EnvVar = EnvVar {
    name: "TESSERA_READ_HEADER_TIMEOUT",
    aliases: &["MINIO_READ_HEADER_TIMEOUT"],
    help: "longest wait for a request's headers, also the idle keep-alive timeout; default 30s",
};
pub const API_REQUESTS_MAX: EnvVar = EnvVar {
    name: "TESSERA_API_REQUESTS_MAX",
    aliases: &["MINIO_API_REQUESTS_MAX"],
    help: "S3 requests served at once; more wait for a slot (0 or unset: from the memory available at start, 6 MiB per request)",
};
pub const API_REQUESTS_DEADLINE: EnvVar = EnvVar {
    name: "TESSERA_API_REQUESTS_DEADLINE",
    aliases: &["MINIO_API_REQUESTS_DEADLINE"],
    help: "longest wait for a slot, then 503 SlowDown (Go-style duration; 0 or unset: 10s, as MinIO reads it)",
};
pub const API_POST_FORMS_MAX: EnvVar = EnvVar {
    name: "TESSERA_API_POST_FORMS_MAX",
    aliases: &[],
    help: "browser POST forms read at once before they are authenticated, a share of their own \
           (refused with 503 SlowDown when full); default a quarter of the request bound",
};
pub const API_POST_FORM_TIMEOUT: EnvVar = EnvVar {
    name: "TESSERA_API_POST_FORM_TIMEOUT",
    aliases: &[],
    help: "longest time for a browser POST form's fields to arrive, up to its file (Go-style \
           duration); default 30s",
};
pub const API_POST_FORM_IDLE: EnvVar = EnvVar {
    name: "TESSERA_API_POST_FORM_IDLE",
    aliases: &[],
    help: "longest wait for the next piece of a browser POST form's fields (Go-style duration); \
           default 10s, or the form timeout when that is shorter",
};
pub const API_BODY_MIN_RATE: EnvVar = EnvVar {
    name: "TESSERA_API_BODY_MIN_RATE",
    aliases: &[],
    help: "the floor rate of request bodies (bytes a second, averaged from the body's start; \
           sizes like 4KiB), enforced after the grace period: a slower body is refused with \
           RequestTimeout and its slot freed; 0 turns it off; default 4KiB",
};
pub const API_BODY_GRACE: EnvVar = EnvVar {
    name: "TESSERA_API_BODY_GRACE",
    aliases: &[],
    help: "how long a request body may take before its floor rate applies (Go-style duration); \
           default 30s",
};
pub const API_SEND_TIMEOUT: EnvVar = EnvVar {
    name: "TESSERA_API_SEND_TIMEOUT",
    aliases: &[],
    help: "longest time a response may go without a byte taken by a client that stopped \
           reading; then the connection is closed and the request's slot freed (Go-style \
           duration); default 60s",
};
pub const CLUSTER_MAX_CLOCK_SKEW: EnvVar = EnvVar {
    name: "TESSERA_CLUSTER_MAX_CLOCK_SKEW",
    aliases: &[],
    help: "largest clock difference between two nodes of a cluster; a node further apart is \
           refused with the difference named (Go-style duration); default 30s",
};
pub const SPLICE_GET: EnvVar = EnvVar {
    name: "TESSERA_SPLICE_GET",
    aliases: &[],
    help: "on: GETs over HTTP/1.1 without TLS send shard records the page cache holds with splice \
           instead of copying them (faster where memory copies are slow); default off",
};
pub const HUGE_FILL: EnvVar = EnvVar {
    name: "TESSERA_HUGE_FILL",
    aliases: &[],
    help: "on: a GET that misses the page cache fills it in 2 MiB huge folios, which later reads \
           copy out with less CPU; off: the kernel's read-ahead fills it; auto (default): on, \
           unless the kernel reports free memory to a hypervisor (a virtio balloon with free page \
           reporting), where huge fills cost more than they save",
};
pub const READ_CACHE: EnvVar = EnvVar {
    name: "TESSERA_READ_CACHE",
    aliases: &[],
    help: "memory for verified erasure blocks of hot objects, served again without reading or \
           hashing the shards: a size (bytes, or with KiB, MiB, GiB, TiB), off or 0 for none; \
           auto (default): 1/16 of the memory available at start, at most 1 GiB. A part is \
           cached from its second read on, if it fits a quarter of the cache; a full cache \
           takes it only in place of parts read less often. While memory is short it gives \
           memory back, leaving its size (at most 1 GiB) available to everything else",
};
pub const GROUP_COMMIT: EnvVar = EnvVar {
    name: "TESSERA_GROUP_COMMIT",
    aliases: &[],
    help: "on (default): concurrent xl.meta writes on one file system are made durable together by \
           syncfs; off: an fdatasync and a directory fsync per write (for drives on a file system \
           shared with busy writers, whose dirty data a syncfs would wait for)",
};
pub const HUGE_PAGES: EnvVar = EnvVar {
    name: "TESSERA_HUGE_PAGES",
    aliases: &[],
    help: "on (default where the kernel offers transparent huge pages): shard record buffers are \
           carved from 2 MiB huge-page regions, so a direct write pins one page and is one \
           contiguous segment; off: buffers from the heap in 4 KiB pages",
};
pub const SCANNER_RATE: EnvVar = EnvVar {
    name: "TESSERA_SCANNER_RATE",
    aliases: &[],
    help: "object versions the background scanner checks per second (0: unlimited); default 100",
};
pub const SCANNER_INTERVAL: EnvVar = EnvVar {
    name: "TESSERA_SCANNER_INTERVAL",
    aliases: &[],
    help: "pause between two full scanner passes (Go-style duration); default 1h",
};
pub const LIFECYCLE_INTERVAL: EnvVar = EnvVar {
    name: "TESSERA_LIFECYCLE_INTERVAL",
    aliases: &[],
    help: "pause between two lifecycle passes (Go-style duration); default 1h",
};
pub const LIFECYCLE_RATE: EnvVar = EnvVar {
    name: "TESSERA_LIFECYCLE_RATE",
    aliases: &[],
    help: "lifecycle actions (expiries, aborted uploads) per second; 0: unlimited; default 100",
};
pub const TEST_LIFECYCLE_CLOCK_FILE: EnvVar = EnvVar {
    name: "TESSERA_TEST_LIFECYCLE_CLOCK_FILE",
    aliases: &[],
    help: "FOR TESTS ONLY: a file holding seconds added to the time the lifecycle rules see,            read on every pass, so that tests can advance days",
};
pub const NOTIFY_SOCKET: EnvVar = EnvVar {
    name: "NOTIFY_SOCKET",
    aliases: &[],
    help: "set by systemd (Type=notify): READY=1, STATUS=, STOPPING=1 are sent there",
};
pub const WATCHDOG_USEC: EnvVar = EnvVar {
    name: "WATCHDOG_USEC",
    aliases: &[],
    help: "set by systemd (WatchdogSec=): WATCHDOG=1 is sent every half period",
};

/// Every variable, in the order the help lists them.
pub const ENV_VARS: &[EnvVar] = &[
    ROOT_USER,
    ROOT_PASSWORD,
    ROOT_USER_FILE,
    ROOT_PASSWORD_FILE,
    VOLUMES,
    ADDRESS,
    CONSOLE_ADDRESS,
    CERTS_DIR,
    STORAGE_CLASS_STANDARD,
    STORAGE_CLASS_RRS,
    ERASURE_SET_DRIVE_COUNT,
    DOMAIN,
    REGION,
    PROMETHEUS_AUTH_TYPE,
    KMS_SECRET_KEY,
    KMS_SECRET_KEY_FILE,
    KMS_AUTO_ENCRYPTION,
    INSECURE_SSE_C,
    API_SIGV2,
    TEST_STS_MIN_DURATION,
    OPENID_CONFIG_URL,
    OPENID_CLIENT_ID,
    OPENID_CLAIM_NAME,
    LOG,
    LOG_FORMAT,
    SHUTDOWN_TIMEOUT,
    DRIVE_TIMEOUT,
    DRIVE_PROBE_INTERVAL,
    READ_HEADER_TIMEOUT,
    API_REQUESTS_MAX,
    API_REQUESTS_DEADLINE,
    API_POST_FORMS_MAX,
    API_POST_FORM_TIMEOUT,
    API_POST_FORM_IDLE,
    API_BODY_MIN_RATE,
    API_BODY_GRACE,
    API_SEND_TIMEOUT,
    CLUSTER_MAX_CLOCK_SKEW,
    SPLICE_GET,
    HUGE_FILL,
    READ_CACHE,
    GROUP_COMMIT,
    HUGE_PAGES,
    SCANNER_RATE,
    SCANNER_INTERVAL,
    LIFECYCLE_INTERVAL,
    LIFECYCLE_RATE,
    TEST_LIFECYCLE_CLOCK_FILE,
    NOTIFY_SOCKET,
    WATCHDOG_USEC,
];

/// The environment section of `tessera server --help`.
pub fn env_help() -> String {
    let mut s = String::from(
        "ENVIRONMENT:\n  Command-line flags win over the environment; a TESSERA_* variable wins over\n  \
         the MinIO names listed after it, so a MinIO environment file works unchanged.\n\n",
    );
    for v in ENV_VARS {
        s.push_str("  ");
        s.push_str(v.name);
        for a in v.aliases {
            s.push_str(", ");
            s.push_str(a);
        }
        s.push_str("\n      ");
        s.push_str(v.help);
        s.push('\n');
    }
    s.push_str(
        "\nENDPOINTS:\n  A directory, several directories (one erasure set pool), or MinIO's ellipsis\n  \
         syntax, one pool per argument: /mnt/disk{1...8}, http://host{1...4}:9000/mnt/disk{1...8}.\n  \
         Only drives of this machine are served today (URLs naming this host are accepted).\n\n\
         EXAMPLES:\n  tessera server ./data\n  tessera server --address :9000 /mnt/disk{1...8}\n  \
         TESSERA_ROOT_USER=admin TESSERA_ROOT_PASSWORD=change-me-now tessera server /srv/d{1...4}\n",
    );
    s
}

/// Tessera, an S3-compatible erasure-coded object store.
#[derive(Debug, Parser)]
#[command(
    name = "tessera",
    version,
    about = "Tessera: S3-compatible, erasure-coded object storage (MinIO drive format)",
    long_about = None,
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the object storage server.
    Server(ServerArgs),
    /// Print a bearer token for Prometheus to scrape the metrics endpoint
    /// (signed with the root credentials, as `mc admin prometheus generate`).
    PrometheusToken(TokenArgs),
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Bind to HOST:PORT; HOST may be empty (all interfaces), an IP or a host name
    /// [env: TESSERA_ADDRESS, MINIO_ADDRESS] [default: :9000]
    #[arg(long, value_name = "HOST:PORT")]
    pub address: Option<String>,

    /// Accepted for compatibility with MinIO and ignored (there is no web console)
    #[arg(long, value_name = "HOST:PORT")]
    pub console_address: Option<String>,

    /// Certificates directory: public.crt and private.key enable HTTPS, CAs/ holds
    /// trusted CAs [env: TESSERA_CERTS_DIR] [default: ${HOME}/.tessera/certs]
    #[arg(short = 'S', long, value_name = "DIR")]
    pub certs_dir: Option<PathBuf>,

    /// Print only the API endpoint line at start, not the banner
    #[arg(long)]
    pub quiet: bool,

    /// Hide credentials in the start-up banner
    #[arg(long)]
    pub anonymous: bool,

    /// Log in JSON, one object per line (same as TESSERA_LOG_FORMAT=json)
    #[arg(long)]
    pub json: bool,

    /// Drives: directories or http(s)://HOST[:PORT]/PATH URLs of this machine, with
    /// MinIO's {1...n} ellipses [env: TESSERA_VOLUMES, MINIO_VOLUMES]
    #[arg(value_name = "ENDPOINTS")]
    pub endpoints: Vec<String>,
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    /// How long the token is valid (Go-style duration: 8760h, 90m, ...) [default: 100 years]
    #[arg(long, value_name = "DURATION")]
    pub expiry: Option<String>,
}

/// Parses the command line; on a usage error or `--help` clap prints and exits
/// (code 2 for errors, 0 for help and version).
pub fn parse() -> Cli {
    let cmd = Cli::command()
        .after_help(format!(
            "Run `tessera server --help` for the flags of the server.\n\n{}",
            env_help()
        ))
        .mut_subcommand("server", |s| s.after_help(env_help()))
        .mut_subcommand("prometheus-token", |s| {
            s.after_help(
                "Reads the root credentials as the server does (TESSERA_ROOT_USER,\n\
                 TESSERA_ROOT_PASSWORD or their MinIO names) and prints a bearer token and a\n\
                 Prometheus scrape configuration.",
            )
        });
    let matches = cmd.get_matches();
    match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_variable() {
        let help = env_help();
        for v in ENV_VARS {
            assert!(help.contains(v.name), "{}", v.name);
            for a in v.aliases {
                assert!(help.contains(a), "{a}");
            }
        }
    }

    #[test]
    fn clap_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
