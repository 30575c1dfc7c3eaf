//! `tessera`: the Tessera server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use object::layer::{LayerOptions, ObjectLayer};
use s3_gateway::{Gateway, GatewayConfig};

fn usage() -> ! {
    eprintln!("usage: tessera server [--address HOST:PORT] DIR...");
    std::process::exit(2);
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TESSERA_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some("server") {
        usage();
    }
    let mut address = "0.0.0.0:9000".to_owned();
    let mut dirs = Vec::new();
    while let Some(a) = args.next() {
        if a == "--address" {
            address = args.next().unwrap_or_else(|| usage());
        } else {
            dirs.push(a);
        }
    }
    if dirs.is_empty() {
        usage();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(e) = rt.block_on(run(address, dirs)) {
        eprintln!("tessera: {e}");
        std::process::exit(1);
    }
}

async fn run(address: String, args: Vec<String>) -> Result<(), String> {
    let mut dirs = Vec::new();
    for a in &args {
        let expanded = if placement::ellipses::has_ellipses(a) {
            placement::ellipses::expand(a).map_err(|e| format!("{a}: {e}"))?
        } else {
            vec![a.clone()]
        };
        dirs.extend(expanded.into_iter().map(PathBuf::from));
    }
    for d in &dirs {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let layer = ObjectLayer::open_dirs(&dirs, LayerOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    let user = std::env::var("TESSERA_ROOT_USER")
        .or_else(|_| std::env::var("MINIO_ROOT_USER"))
        .unwrap_or_else(|_| "minioadmin".to_owned());
    let password = std::env::var("TESSERA_ROOT_PASSWORD")
        .or_else(|_| std::env::var("MINIO_ROOT_PASSWORD"))
        .unwrap_or_else(|_| "minioadmin".to_owned());
    let gateway = Arc::new(Gateway::new(
        Arc::new(layer),
        GatewayConfig {
            credentials: vec![(user, password)],
            ..GatewayConfig::default()
        },
    ));
    let addr: SocketAddr = address
        .parse()
        .map_err(|e| format!("--address {address}: {e}"))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("listening on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    println!("API: http://{local}");
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("accept: {e}");
                continue;
            }
        };
        let gw = gateway.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let gw = gw.clone();
                async move { Ok::<_, std::convert::Infallible>(gw.handle(req).await) }
            });
            if let Err(e) = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await
            {
                tracing::debug!("connection: {e}");
            }
        });
    }
}
