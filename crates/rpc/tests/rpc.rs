//! The node RPC over real loopback sockets: calls, deadlines, streams and
//! their back-pressure, authentication refusals, and a peer that dies
//! (its traffic black-holed, as a partition does) and comes back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rpc::auth::{AUTH_HEADER, hello};
use rpc::{
    ClusterKey, Gate, PATH_PREFIX, Peer, PeerConfig, PeerState, RpcBody, RpcError, Service, full,
    serve_connection,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SECRET: &str = "cluster-secret-1";

fn key() -> ClusterKey {
    ClusterKey::derive("admin", SECRET).unwrap()
}

/// Bytes a streaming method has produced, and consumed.
#[derive(Default)]
struct Counters {
    produced: AtomicU64,
    consumed: AtomicU64,
}

fn service(gate: Gate, counters: Arc<Counters>) -> Service {
    let mut s = Service::new(gate);
    s.unary("echo", |from, body: Bytes| async move {
        let mut out = from.into_bytes();
        out.push(b'|');
        out.extend_from_slice(&body);
        Ok::<_, String>(Bytes::from(out))
    });
    s.unary("fail", |_, _| async { Err("it failed".to_owned()) });
    s.unary("slow", |_, _| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok::<_, String>(Bytes::new())
    });
    // Streams `n` MiB (the request's text) as fast as the caller takes them.
    let c = Arc::clone(&counters);
    s.streaming("produce", move |_, req: Request<hyper::body::Incoming>| {
        let c = Arc::clone(&c);
        async move {
            let n: u64 =
                String::from_utf8_lossy(&req.into_body().collect().await.unwrap().to_bytes())
                    .parse()
                    .unwrap();
            let (tx, body) = rpc::channel(2);
            tokio::spawn(async move {
                let block = Bytes::from(vec![7u8; 1 << 20]);
                for _ in 0..n {
                    if tx.send(block.clone()).await.is_err() {
                        return;
                    }
                    c.produced.fetch_add(1 << 20, Ordering::Relaxed);
                }
            });
            Response::new(body)
        }
    });
    // Reads 8 MiB of the request, pauses a second, reads the rest, and
    // answers its length.
    let c = Arc::clone(&counters);
    s.streaming("consume", move |_, req: Request<hyper::body::Incoming>| {
        let c = Arc::clone(&c);
        async move {
            let mut body = req.into_body();
            let mut total = 0u64;
            while let Some(frame) = body.frame().await {
                let Ok(data) = frame.unwrap().into_data() else {
                    continue;
                };
                let before = total;
                total += data.len() as u64;
                c.consumed.store(total, Ordering::Relaxed);
                if before < 8 << 20 && total >= 8 << 20 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            Response::new(full(total.to_string()))
        }
    });
    s
}

struct Node {
    addr: String,
    counters: Arc<Counters>,
    accept: tokio::task::JoinHandle<()>,
}

async fn start_node(gate: Gate) -> Node {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let counters = Arc::new(Counters::default());
    let svc = Arc::new(service(gate, Arc::clone(&counters)));
    let accept = tokio::spawn(async move {
        loop {
            let (sock, _) = listener.accept().await.unwrap();
            let _ = sock.set_nodelay(true);
            let svc = Arc::clone(&svc);
            tokio::spawn(async move {
                let _ = serve_connection(sock, svc).await;
            });
        }
    });
    Node {
        addr,
        counters,
        accept,
    }
}

fn quick() -> PeerConfig {
    PeerConfig {
        connect_timeout: Duration::from_millis(500),
        ping_interval: Duration::from_millis(200),
        ping_timeout: Duration::from_millis(400),
        backoff: (Duration::from_millis(50), Duration::from_millis(400)),
        ..PeerConfig::default()
    }
}

#[tokio::test]
async fn calls_carry_the_callers_name_errors_and_deadlines() {
    let node = start_node(Gate::new(key(), "n2", Duration::from_secs(60))).await;
    let peer = Peer::new("n1", "n2", &node.addr, Arc::new(key()), quick());
    assert_eq!(peer.state(), PeerState::Unknown);
    let got = peer
        .call("echo", Bytes::from_static(b"ping"), None)
        .await
        .unwrap();
    assert_eq!(&got[..], b"n1|ping");
    assert_eq!(peer.state(), PeerState::Up);
    // Many calls at once share the one connection.
    let calls = (0..200).map(|i| {
        let p = peer.clone();
        tokio::spawn(async move { p.call("echo", Bytes::from(i.to_string()), None).await })
    });
    for (i, c) in calls.enumerate() {
        assert_eq!(c.await.unwrap().unwrap(), Bytes::from(format!("n1|{i}")));
    }
    assert_eq!(peer.stats().connects, 1);
    match peer.call("fail", Bytes::new(), None).await {
        Err(RpcError::Remote {
            status: 500,
            message,
            ..
        }) => assert_eq!(message, "it failed"),
        other => panic!("{other:?}"),
    }
    match peer.call("nope", Bytes::new(), None).await {
        Err(RpcError::Remote { status: 404, .. }) => {}
        other => panic!("{other:?}"),
    }
    let started = Instant::now();
    match peer
        .call("slow", Bytes::new(), Some(Duration::from_millis(300)))
        .await
    {
        Err(RpcError::Timeout { after_ms: 300, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    // The connection survives a timed-out call.
    assert!(peer.call("echo", Bytes::new(), None).await.is_ok());
    let stats = peer.stats();
    assert_eq!((stats.connects, stats.failures), (1, 3));
    node.accept.abort();
}

#[tokio::test]
async fn streams_move_under_back_pressure_both_ways() {
    let node = start_node(Gate::new(key(), "n2", Duration::from_secs(60))).await;
    let peer = Peer::new("n1", "n2", &node.addr, Arc::new(key()), quick());

    // Down: the caller reads 8 MiB, then stops; the producer stops too,
    // a flow-control window (4 MiB) and a few blocks ahead.
    let resp = peer.stream("produce", full("256"), None).await.unwrap();
    let mut body = resp.into_body();
    let mut read = 0u64;
    while read < 8 << 20 {
        read += body
            .frame()
            .await
            .unwrap()
            .unwrap()
            .into_data()
            .unwrap()
            .len() as u64;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ahead = node.counters.produced.load(Ordering::Relaxed) - read;
    assert!(
        ahead <= 24 << 20,
        "the producer ran {ahead} bytes ahead of the reader"
    );
    while let Some(f) = body.frame().await {
        read += f.unwrap().into_data().map_or(0, |d| d.len() as u64);
    }
    assert_eq!(read, 256 << 20);

    // Up: the caller offers 64 MiB to a callee that reads slowly; the
    // caller's producer waits for it.
    let sent = Arc::new(AtomicU64::new(0));
    let (tx, body) = rpc::channel(2);
    let s = Arc::clone(&sent);
    let producer = tokio::spawn(async move {
        let block = Bytes::from(vec![1u8; 1 << 20]);
        for _ in 0..64 {
            if tx.send(block.clone()).await.is_err() {
                return;
            }
            s.fetch_add(1 << 20, Ordering::Relaxed);
        }
    });
    let p = peer.clone();
    let call = tokio::spawn(async move { p.stream("consume", body, None).await });
    tokio::time::sleep(Duration::from_millis(600)).await;
    let ahead = sent.load(Ordering::Relaxed) - node.counters.consumed.load(Ordering::Relaxed);
    assert!(
        ahead <= 24 << 20,
        "the caller ran {ahead} bytes ahead of the callee"
    );
    assert!(sent.load(Ordering::Relaxed) < 64 << 20);
    let resp = call.await.unwrap().unwrap();
    let total = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&total[..], (64u64 << 20).to_string().as_bytes());
    producer.await.unwrap();
    node.accept.abort();
}

#[tokio::test]
async fn other_keys_names_clocks_and_replays_are_refused() {
    let node = start_node(Gate::new(key(), "n2", Duration::from_secs(60))).await;
    // Another secret.
    let other = Arc::new(ClusterKey::derive("admin", "another-secret").unwrap());
    let peer = Peer::new("n1", "n2", &node.addr, other, quick());
    match peer.call("echo", Bytes::new(), None).await {
        Err(RpcError::Remote {
            status: 401,
            message,
            ..
        }) => {
            assert!(message.contains("other root credentials"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(peer.state(), PeerState::Down);
    // Calls within the backoff fail at once.
    let started = Instant::now();
    assert!(matches!(
        peer.call("echo", Bytes::new(), None).await,
        Err(RpcError::Unreachable { .. })
    ));
    assert!(started.elapsed() < Duration::from_millis(100));

    // The node answers to its own name only.
    let peer = Peer::new("n1", "n3", &node.addr, Arc::new(key()), quick());
    match peer.call("echo", Bytes::new(), None).await {
        Err(RpcError::Remote {
            status: 401,
            message,
            ..
        }) => {
            assert!(message.contains("for node n3, this is n2"), "{message}")
        }
        other => panic!("{other:?}"),
    }

    // A node whose clock is 5 minutes ahead is named in the refusal.
    let ahead = Gate::new(key(), "n4", Duration::from_secs(60))
        .with_clock(Arc::new(|| SystemTime::now() + Duration::from_secs(300)));
    let skewed = start_node(ahead).await;
    let peer = Peer::new("n1", "n4", &skewed.addr, Arc::new(key()), quick());
    match peer.call("echo", Bytes::new(), None).await {
        Err(RpcError::Remote {
            status: 401,
            message,
            ..
        }) => {
            assert!(message.contains("clock skew: node n1 is"), "{message}");
            assert!(message.contains("behind"), "{message}");
        }
        other => panic!("{other:?}"),
    }

    // No call without a hello; a hello replayed on a new connection is
    // refused.
    let mut send = raw_connection(&node.addr).await;
    let call = Request::post(format!("http://{}{PATH_PREFIX}call/echo", node.addr))
        .body(full("x"))
        .unwrap();
    assert_eq!(
        send.send_request(call).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    let (h, _) = hello(&key(), "n1", "n2", SystemTime::now());
    let say = |h: String| {
        Request::post(format!("http://{}{PATH_PREFIX}hello", node.addr))
            .header(AUTH_HEADER, h)
            .body(full(""))
            .unwrap()
    };
    assert_eq!(
        send.send_request(say(h.clone())).await.unwrap().status(),
        StatusCode::OK
    );
    let mut again = raw_connection(&node.addr).await;
    let resp = again.send_request(say(h)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let msg = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&msg[..], b"replayed node hello");
    node.accept.abort();
    skewed.accept.abort();
}

async fn raw_connection(addr: &str) -> hyper::client::conn::http2::SendRequest<RpcBody> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    send
}

/// A TCP relay that can black-hole traffic (a partition: the sockets stay
/// open, nothing gets through).
async fn relay(to: String, open: Arc<AtomicBool>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let (client, _) = listener.accept().await.unwrap();
            let Ok(server) = TcpStream::connect(&to).await else {
                continue;
            };
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::spawn(pump(cr, sw, Arc::clone(&open)));
            tokio::spawn(pump(sr, cw, Arc::clone(&open)));
        }
    });
    addr
}

async fn pump<R, W>(mut r: R, mut w: W, open: Arc<AtomicBool>)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let Ok(n) = r.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        if open.load(Ordering::Relaxed) && w.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn a_partitioned_peer_is_down_within_seconds_and_comes_back() {
    let node = start_node(Gate::new(key(), "n2", Duration::from_secs(60))).await;
    let open = Arc::new(AtomicBool::new(true));
    let via = relay(node.addr.clone(), Arc::clone(&open)).await;
    let peer = Peer::new("n1", "n2", &via, Arc::new(key()), quick());
    let _monitor = peer.spawn_monitor();
    assert!(peer.call("echo", Bytes::new(), None).await.is_ok());
    assert_eq!(peer.state(), PeerState::Up);

    open.store(false, Ordering::Relaxed);
    let cut = Instant::now();
    while peer.state() != PeerState::Down {
        assert!(cut.elapsed() < Duration::from_secs(5), "not detected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let detected = cut.elapsed();
    // Ping interval 200 ms + ping timeout 400 ms, and the monitor's round.
    assert!(detected < Duration::from_millis(1500), "{detected:?}");
    // Calls fail fast while it is down, never hang.
    let started = Instant::now();
    assert!(
        peer.call("echo", Bytes::new(), Some(Duration::from_secs(10)))
            .await
            .is_err()
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );

    open.store(true, Ordering::Relaxed);
    let healed = Instant::now();
    while peer.state() != PeerState::Up {
        assert!(healed.elapsed() < Duration::from_secs(5), "not back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(peer.call("echo", Bytes::new(), None).await.is_ok());
    assert!(peer.stats().connects >= 2);
    node.accept.abort();
}
