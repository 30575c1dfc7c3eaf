//! The node RPC measured on loopback, in one process (caller and callee
//! share its CPU, so CPU figures cover both ends of a call):
//!
//! - small calls (64-byte request, 64-byte answer) one at a time: p50 and
//!   p99 round trip; then 64 at once: calls per second and per CPU-second;
//! - one stream of 1 MiB frames from callee to caller, against the raw
//!   loopback TCP ceiling (1 MiB writes and reads on a plain socket) in the
//!   same run.
//!
//! `cargo run --release -p rpc --example rpc_bench [-- --rounds N]`; each
//! figure is the median of N rounds (default 5).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use rpc::{ClusterKey, Gate, Peer, PeerConfig, Service, full, serve_connection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Bytes each stream round moves.
const STREAM_BYTES: u64 = 2 << 30;

/// Process CPU time (user + system) from /proc/self/stat, in seconds
/// (clock ticks of 1/100 s, Linux's USER_HZ).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    f.iter().sum::<u64>() as f64 / 100.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn start() -> String {
    let key = ClusterKey::derive("bench", "bench-secret").expect("a key");
    let mut s = Service::new(Gate::new(key, "callee", Duration::from_secs(60)));
    s.unary(
        "echo",
        |_, body: Bytes| async move { Ok::<_, String>(body) },
    );
    s.streaming(
        "produce",
        |_, req: http::Request<hyper::body::Incoming>| async move {
            let n: u64 =
                String::from_utf8_lossy(&req.into_body().collect().await.expect("body").to_bytes())
                    .parse()
                    .expect("a length");
            let (tx, body) = rpc::channel(4);
            tokio::spawn(async move {
                let block = Bytes::from(vec![0x5au8; 1 << 20]);
                for _ in 0..n >> 20 {
                    if tx.send(block.clone()).await.is_err() {
                        return;
                    }
                }
            });
            http::Response::new(body)
        },
    );
    let svc = Arc::new(s);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("an address").to_string();
    tokio::spawn(async move {
        loop {
            let (sock, _) = listener.accept().await.expect("accept");
            let _ = sock.set_nodelay(true);
            let svc = Arc::clone(&svc);
            tokio::spawn(async move {
                let _ = serve_connection(sock, svc).await;
            });
        }
    });
    addr
}

async fn latency(peer: &Peer, calls: usize) -> (f64, f64) {
    let body = Bytes::from(vec![1u8; 64]);
    let mut rtts = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        peer.call("echo", body.clone(), None).await.expect("a call");
        rtts.push(t.elapsed().as_secs_f64() * 1e6);
    }
    rtts.sort_by(f64::total_cmp);
    (rtts[calls / 2], rtts[calls * 99 / 100])
}

async fn throughput(peer: &Peer, tasks: usize, per_task: usize) -> (f64, f64) {
    let cpu = cpu_seconds();
    let t = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let p = peer.clone();
            tokio::spawn(async move {
                let body = Bytes::from(vec![1u8; 64]);
                for _ in 0..per_task {
                    p.call("echo", body.clone(), None).await.expect("a call");
                }
            })
        })
        .collect();
    for h in handles {
        h.await.expect("a task");
    }
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    let n = (tasks * per_task) as f64;
    (n / wall, n / cpu.max(0.01))
}

async fn stream(peer: &Peer) -> (f64, f64) {
    let cpu = cpu_seconds();
    let t = Instant::now();
    let resp = peer
        .stream("produce", full(STREAM_BYTES.to_string()), None)
        .await
        .expect("a stream");
    let mut body = resp.into_body();
    let mut got = 0u64;
    while let Some(f) = body.frame().await {
        got += f
            .expect("a frame")
            .into_data()
            .map_or(0, |d| d.len() as u64);
    }
    assert_eq!(got, STREAM_BYTES);
    let wall = t.elapsed().as_secs_f64();
    let mib = STREAM_BYTES as f64 / (1 << 20) as f64;
    (mib / wall, mib / (cpu_seconds() - cpu).max(0.01))
}

async fn raw_tcp() -> (f64, f64) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("an address");
    let writer = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.expect("accept");
        let block = vec![0x5au8; 1 << 20];
        for _ in 0..STREAM_BYTES >> 20 {
            sock.write_all(&block).await.expect("write");
        }
    });
    let cpu = cpu_seconds();
    let t = Instant::now();
    let mut sock = TcpStream::connect(addr).await.expect("connect");
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0u64;
    while got < STREAM_BYTES {
        let n = sock.read(&mut buf).await.expect("read");
        assert!(n > 0);
        got += n as u64;
    }
    writer.await.expect("the writer");
    let wall = t.elapsed().as_secs_f64();
    let mib = STREAM_BYTES as f64 / (1 << 20) as f64;
    (mib / wall, mib / (cpu_seconds() - cpu).max(0.01))
}

fn main() {
    let rounds: usize = std::env::args()
        .skip_while(|a| a != "--rounds")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let addr = start().await;
        let key = ClusterKey::derive("bench", "bench-secret").expect("a key");
        let peer = Peer::new("caller", "callee", addr, Arc::new(key), PeerConfig::default());
        peer.call("echo", Bytes::new(), None).await.expect("a first call");
        let (mut p50, mut p99, mut cps, mut per_cpu) = (vec![], vec![], vec![], vec![]);
        let (mut s_mib, mut s_cpu, mut t_mib, mut t_cpu) = (vec![], vec![], vec![], vec![]);
        if std::env::args().any(|a| a == "--stream-only") {
            for _ in 0..rounds {
                let (e, _) = stream(&peer).await;
                println!("stream {e:.0} MiB/s");
            }
            return;
        }
        for _ in 0..rounds {
            let (a, b) = latency(&peer, 20_000).await;
            p50.push(a);
            p99.push(b);
            let (c, d) = throughput(&peer, 64, 2_000).await;
            cps.push(c);
            per_cpu.push(d);
            let (e, f) = stream(&peer).await;
            s_mib.push(e);
            s_cpu.push(f);
            let (g, h) = raw_tcp().await;
            t_mib.push(g);
            t_cpu.push(h);
        }
        println!("node RPC on loopback, medians of {rounds} rounds (caller and callee in one process, 2 runtime threads)");
        println!("small call, one at a time: p50 {:.1} us, p99 {:.1} us", median(p50), median(p99));
        println!(
            "small calls, 64 at once: {:.0} calls/s, {:.0} calls per CPU-second ({:.1} us of CPU per call, both ends)",
            median(cps.clone()),
            median(per_cpu.clone()),
            1e6 / median(per_cpu)
        );
        let (sm, tm) = (median(s_mib), median(t_mib));
        println!(
            "stream: {sm:.0} MiB/s ({:.0} MiB per CPU-second); raw TCP: {tm:.0} MiB/s ({:.0} MiB per CPU-second); stream/raw {:.2}",
            median(s_cpu),
            median(t_cpu),
            sm / tm
        );
    });
}
