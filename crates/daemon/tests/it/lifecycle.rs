//! systemd readiness and graceful shutdown: READY=1 once listening,
//! STOPPING=1 at SIGTERM once the listeners are closed, a request in flight
//! finishes, and the process exits 0.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;

use crate::support::{
    Daemon, PATIENCE, clean_command, drive_dirs, get_bytes, parse_response, tessera,
};

/// Receives notification datagrams until one contains `what`.
fn wait_notification(sock: &UnixDatagram, what: &str) -> String {
    let mut buf = vec![0u8; 4096];
    let mut seen = Vec::new();
    loop {
        let n = sock
            .recv(&mut buf)
            .unwrap_or_else(|e| panic!("no {what} notification ({e}); got {seen:?}"));
        let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
        if msg.lines().any(|l| l == what) {
            return msg;
        }
        seen.push(msg);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_request_in_flight_finish() {
    let home = tempfile::tempdir().unwrap();
    let sock_path = home.path().join("notify.sock");
    let notify = UnixDatagram::bind(&sock_path).unwrap();
    notify.set_read_timeout(Some(PATIENCE)).unwrap();

    let mut cmd = tessera(home.path());
    cmd.args(["server", "--address", "127.0.0.1:0"])
        .args(drive_dirs(home.path(), 4))
        .env("TESSERA_ROOT_USER", "drain-user")
        .env("TESSERA_ROOT_PASSWORD", "drain-password")
        .env("NOTIFY_SOCKET", &sock_path);
    let mut d = Daemon::start(cmd);
    let ready = wait_notification(&notify, "READY=1");
    assert!(ready.contains("STATUS=serving S3 on"), "{ready}");

    let s3 = d.s3("drain-user", "drain-password");
    s3.create_bucket().bucket("slow").send().await.unwrap();
    let put = s3
        .put_object()
        .bucket("slow")
        .key("upload")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(600)).unwrap())
        .await
        .unwrap();
    let path = put.uri().trim_start_matches(&d.endpoint).to_owned();

    // A slow upload: the head with Expect: 100-continue, and the body only
    // after the server has begun reading it (the interim 100 proves the
    // request reached the S3 handler).
    let body = vec![b'x'; 256 * 1024];
    let mut head = format!(
        "PUT {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\
         Connection: close\r\n",
        d.addr,
        body.len()
    );
    for (n, v) in put.headers() {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut conn = TcpStream::connect(&d.addr).unwrap();
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    let mut interim = [0u8; 25];
    conn.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    conn.write_all(&body[..1024]).unwrap();

    d.signal("TERM");
    let stopping = wait_notification(&notify, "STOPPING=1");
    assert!(stopping.contains("STATUS="), "{stopping}");
    // The listener is closed once STOPPING=1 is sent.
    assert!(
        TcpStream::connect(&d.addr).is_err(),
        "a new connection was accepted during the drain"
    );

    // The upload in flight completes.
    for chunk in body[1024..].chunks(64 * 1024) {
        conn.write_all(chunk).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut resp = Vec::new();
    conn.read_to_end(&mut resp).unwrap();
    let r = parse_response(&resp);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("etag").is_some(), "{:?}", r.headers);

    let status = d.wait_exit();
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn sigint_on_an_idle_server_exits_zero() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tessera(home.path());
    cmd.args(["server", "--address", "127.0.0.1:0"])
        .arg(home.path().join("d"));
    let mut d = Daemon::start(cmd);
    // An idle keep-alive connection does not hold the shutdown up.
    let mut idle = TcpStream::connect(&d.addr).unwrap();
    idle.write_all(
        format!(
            "GET /minio/health/live HTTP/1.1\r\nHost: {}\r\n\r\n",
            d.addr
        )
        .as_bytes(),
    )
    .unwrap();
    let mut buf = [0u8; 12];
    idle.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"HTTP/1.1 200");
    d.signal("INT");
    assert_eq!(d.wait_exit().code(), Some(0));
}

/// Reads until the server closes the connection; what it sent before. A
/// reset counts as closing (the server may close with bytes of ours unread).
fn read_until_closed(mut s: TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return out,
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
}

#[test]
fn slow_and_oversized_request_heads_are_cut_off() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tessera(home.path());
    cmd.args(["server", "--address", "127.0.0.1:0"])
        .arg(home.path().join("d"))
        .env("TESSERA_READ_HEADER_TIMEOUT", "300ms");
    let d = Daemon::start(cmd);

    // Nothing sent at all.
    let silent = TcpStream::connect(&d.addr).unwrap();
    assert!(read_until_closed(silent).is_empty());

    // A head that never ends (slowloris).
    let mut slow = TcpStream::connect(&d.addr).unwrap();
    slow.write_all(b"GET /minio/health/live HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    assert!(read_until_closed(slow).is_empty());

    // An idle keep-alive connection is closed after a request.
    let mut idle = TcpStream::connect(&d.addr).unwrap();
    idle.write_all(b"GET /minio/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let answered = read_until_closed(idle);
    assert!(answered.starts_with(b"HTTP/1.1 200"), "{answered:?}");

    // A head over the limit gets 431.
    let mut big = format!("GET /minio/health/live HTTP/1.1\r\nHost: {}\r\n", d.addr);
    for i in 0..40 {
        big.push_str(&format!("x-filler-{i}: {}\r\n", "a".repeat(2000)));
    }
    big.push_str("\r\n");
    let mut s = TcpStream::connect(&d.addr).unwrap();
    // The server may stop reading (and reset) before the whole head is sent.
    let _ = s.write_all(big.as_bytes());
    let r = parse_response(&read_until_closed(s));
    assert_eq!(r.status, 431);
}

/// A `tessera server` under `sh`, with the open-files limit set to
/// `soft`/`hard` first and its log (stderr) written to `log`.
fn tessera_with_fd_limit(
    home: &std::path::Path,
    soft: u32,
    hard: u32,
    log: &std::path::Path,
) -> std::process::Command {
    let mut cmd = clean_command("sh", home);
    cmd.env("TESSERA_TEST_LOG", log)
        .arg("-c")
        .arg(format!(
            "ulimit -S -n {soft} && ulimit -H -n {hard} && exec \"$0\" \"$@\" 2>\"$TESSERA_TEST_LOG\""
        ))
        .arg(env!("CARGO_BIN_EXE_tessera"));
    cmd
}

/// The soft and hard "Max open files" of a process.
fn open_files_limit(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_owned();
    let mut f = line["Max open files".len()..].split_whitespace();
    (f.next().unwrap().to_owned(), f.next().unwrap().to_owned())
}

/// Under a shell's low soft limit, the server raises its open-files limit
/// to the hard one, and a crowd of idle connections larger than the
/// descriptors it may open neither exhausts them nor takes a drive
/// offline: beyond half the limit, connections wait in the listen queue,
/// and an upload queued behind the crowd goes through once the idle ones
/// reach the header timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_of_connections_cannot_exhaust_descriptors() {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("stderr.log");
    let mut cmd = tessera_with_fd_limit(home.path(), 100, 300, &log);
    cmd.args(["server", "--address", "127.0.0.1:0"])
        .args(drive_dirs(home.path(), 4))
        .env("TESSERA_ROOT_USER", "crowd-user")
        .env("TESSERA_ROOT_PASSWORD", "crowd-password")
        .env("TESSERA_READ_HEADER_TIMEOUT", "2s")
        .env("TESSERA_PROMETHEUS_AUTH_TYPE", "public");
    let d = Daemon::start(cmd);
    assert_eq!(
        open_files_limit(d.pid()),
        ("300".to_owned(), "300".to_owned())
    );
    let s3 = d.s3("crowd-user", "crowd-password");
    s3.create_bucket().bucket("crowd").send().await.unwrap();

    // 400 connections that never finish their request head: more than
    // the 150 served at once, and than the 300 descriptors.
    let crowd: Vec<TcpStream> = (0..400)
        .map(|_| {
            let mut s = TcpStream::connect(&d.addr).unwrap();
            s.write_all(b"GET /minio/health/live HTTP/1.1\r\n").unwrap();
            s
        })
        .collect();
    let body: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
    // A new client: its connection queues behind the crowd.
    let queued = d.s3("crowd-user", "crowd-password");
    let started = std::time::Instant::now();
    let put = tokio::time::timeout(
        PATIENCE,
        queued
            .put_object()
            .bucket("crowd")
            .key("behind-the-crowd")
            .body(body.clone().into())
            .send(),
    )
    .await
    .expect("the upload was served in time");
    put.expect("the upload succeeded");
    // It was accepted only once idle connections reached their 2 s
    // header timeout and gave back their slots.
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    drop(crowd);
    let got = get_bytes(&s3, "crowd", "behind-the-crowd").await;
    assert!(got == body, "read back bit for bit");
    // Every drive still online.
    d.wait_for_status("/minio/health/cluster", 200);
    let metrics = d.wait_for_status("/minio/v2/metrics/cluster", 200).text();
    assert!(
        metrics.contains(r#"tessera_drives{state="offline"} 0"#),
        "{metrics}"
    );
    assert!(
        metrics.contains("tessera_http_connections_limit 150"),
        "{metrics}"
    );
    // And no operation ran out of descriptors.
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!log.contains("Too many open files"), "{log}");
}
