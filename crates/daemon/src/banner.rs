//! The start-up banner on stdout: endpoints, credentials, example commands,
//! and loud warnings, as MinIO prints them.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use crate::config::{CredentialSource, ServerConfig};

/// The URLs clients can use for the listening sockets `addrs`: a wildcard
/// address is shown as the loopback address and the host name.
pub fn api_urls(addrs: &[SocketAddr], https: bool, hostname: Option<&str>) -> Vec<String> {
    let scheme = if https { "https" } else { "http" };
    let mut out = Vec::new();
    let mut push = |u: String| {
        if !out.contains(&u) {
            out.push(u);
        }
    };
    for a in addrs {
        let port = a.port();
        let show = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => format!("{scheme}://{v4}:{port}"),
            IpAddr::V6(v6) => format!("{scheme}://[{v6}]:{port}"),
        };
        if a.ip().is_unspecified() {
            push(show(IpAddr::from([127, 0, 0, 1])));
            if let Some(h) = hostname {
                push(format!("{scheme}://{h}:{port}"));
            }
        } else {
            push(show(a.ip()));
        }
    }
    out
}

/// What the banner says about the deployment.
pub struct Facts<'a> {
    pub urls: &'a [String],
    pub tls_dir: Option<&'a std::path::Path>,
    pub deployment_id: String,
    pub drives: usize,
    pub sets: usize,
    pub standard_parity: usize,
    pub rrs_parity: usize,
}

/// The banner text (the `API:` line alone when quiet).
pub fn render(cfg: &ServerConfig, f: &Facts<'_>) -> String {
    let mut s = String::new();
    let api = f.urls.join("  ");
    if cfg.quiet {
        let _ = writeln!(s, "API: {api}");
        return s;
    }
    let first = f.urls.first().map_or("", String::as_str);
    let c = &cfg.credentials;
    let _ = writeln!(
        s,
        "Tessera {} - S3-compatible erasure-coded object storage",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(s, "API: {api}");
    if !cfg.anonymous {
        let _ = writeln!(s, "   RootUser: {}", c.user);
        match &c.source {
            CredentialSource::Default => {
                let _ = writeln!(s, "   RootPass: {}", c.password);
            }
            CredentialSource::Env { password, .. } => {
                let _ = writeln!(s, "   RootPass: (from {password}, not shown)");
            }
        }
    }
    let _ = writeln!(s);
    let pools = cfg.drives.pools.len();
    let _ = writeln!(
        s,
        "Drives: {} in {} erasure set{} ({} pool{}), parity STANDARD EC:{} RRS EC:{}",
        f.drives,
        f.sets,
        if f.sets == 1 { "" } else { "s" },
        pools,
        if pools == 1 { "" } else { "s" },
        f.standard_parity,
        f.rrs_parity,
    );
    for (i, arg) in cfg.drives.pool_args.iter().enumerate() {
        let _ = writeln!(
            s,
            "   pool {}: {arg} (sets of {})",
            i + 1,
            cfg.drives.set_sizes.get(i).copied().unwrap_or(0)
        );
    }
    let _ = writeln!(s, "Deployment ID: {}", f.deployment_id);
    match f.tls_dir {
        Some(d) => {
            let _ = writeln!(
                s,
                "TLS: on (certificates from {}; SIGHUP reloads them)",
                d.display()
            );
        }
        None => {
            let _ = writeln!(
                s,
                "TLS: off (put public.crt and private.key in the certificates directory)"
            );
        }
    }
    let _ = writeln!(
        s,
        "Health: {first}/minio/health/live  {first}/minio/health/cluster"
    );
    let _ = writeln!(
        s,
        "Metrics: {first}/minio/v2/metrics/cluster ({})",
        if cfg.prometheus_public {
            "public"
        } else {
            "bearer token: tessera prometheus-token"
        }
    );
    let _ = writeln!(s);
    let (user, pass) = if cfg.anonymous {
        ("ACCESS_KEY".to_owned(), "SECRET_KEY".to_owned())
    } else {
        match &c.source {
            CredentialSource::Default => (c.user.clone(), c.password.clone()),
            CredentialSource::Env {
                password_file: Some(f),
                ..
            } => (c.user.clone(), format!("\"$(cat {})\"", f.display())),
            CredentialSource::Env { password, .. } => (c.user.clone(), format!("\"${password}\"")),
        }
    };
    let _ = writeln!(s, "Command-line:");
    let _ = writeln!(
        s,
        "   AWS_ACCESS_KEY_ID={user} AWS_SECRET_ACCESS_KEY={pass} aws --endpoint-url {first} s3 ls"
    );
    let _ = writeln!(s, "   mc alias set tessera {first} {user} {pass}");
    let _ = writeln!(s, "Documentation: docs/operations.md");
    if c.is_default() {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "WARNING: Detected default credentials 'minioadmin:minioadmin'. Anyone who can reach \
             this server can read and write every object. Set TESSERA_ROOT_USER and \
             TESSERA_ROOT_PASSWORD (or MINIO_ROOT_USER and MINIO_ROOT_PASSWORD) before storing \
             anything of value."
        );
    }
    if cfg.drives.pools.iter().map(Vec::len).sum::<usize>() == 1 {
        let _ = writeln!(
            s,
            "WARNING: One drive, no erasure coding: a failing drive loses data. Use 4 or more \
             drives for redundancy."
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_for_wildcards_and_addresses() {
        let a: SocketAddr = "0.0.0.0:9000".parse().unwrap();
        assert_eq!(
            api_urls(&[a], false, Some("node1")),
            ["http://127.0.0.1:9000", "http://node1:9000"]
        );
        let a: SocketAddr = "[::1]:443".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:443".parse().unwrap();
        assert_eq!(
            api_urls(&[a, b], true, None),
            ["https://[::1]:443", "https://127.0.0.1:443"]
        );
    }
}
