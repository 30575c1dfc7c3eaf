//! The load generator against the real `tessera` binary (every operation,
//! compare mode, zero errors), against a fake server that returns wrong
//! bytes (the run fails with exit status 1), and bad command lines.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use common::{Tessera, bench, show};
use serde_json::Value;

fn json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// Runs one operation and checks the JSON result: success, some
/// operations, not a single error.
fn run_ok(op: &str, host: &str, extra: &[&str], dir: &std::path::Path) -> Value {
    let out_path = dir.join(format!("{op}.json"));
    let out_str = out_path.to_str().unwrap().to_owned();
    let mut args = vec![op, "--host", host, "--no-progress", "--json", &out_str];
    args.extend_from_slice(extra);
    let o = bench(&args);
    assert!(o.status.success(), "{op} {extra:?}:\n{}", show(&o));
    let v = json(&out_path);
    assert_eq!(v["errors"], 0, "{op}: {v:#}");
    assert!(v["ops"].as_u64().unwrap() > 0, "{op}: no operation: {v:#}");
    v
}

#[test]
fn every_operation_and_compare_against_tessera() {
    let server = Tessera::start();
    let dir = tempfile::tempdir().unwrap();
    let h = server.addr.as_str();

    let v = run_ok(
        "put",
        h,
        &["--duration", "2s", "-c", "4", "--obj-size", "256KiB..2MiB"],
        dir.path(),
    );
    assert!(v["bytes"].as_u64().unwrap() > 0);
    assert_eq!(v["verified_after"], 2, "{v:#}");
    let v = run_ok(
        "get",
        h,
        &[
            "--duration",
            "2s",
            "-c",
            "4",
            "--obj-size",
            "1KiB..1MiB",
            "--objects",
            "20",
        ],
        dir.path(),
    );
    assert!(v["mib_s"].as_f64().unwrap() > 0.0);
    assert!(v["latency"]["p99_ms"].as_f64().unwrap() >= v["latency"]["p50_ms"].as_f64().unwrap());
    let v = run_ok(
        "mixed",
        h,
        &[
            "--duration",
            "2s",
            "-c",
            "8",
            "--obj-size",
            "64KiB",
            "--cleanup",
        ],
        dir.path(),
    );
    for kind in ["get", "put", "delete", "stat"] {
        assert!(
            v["by_op"][kind]["ops"].as_u64().unwrap() > 0,
            "mixed did no {kind}: {v:#}"
        );
    }
    run_ok(
        "stat",
        h,
        &["--duration", "1s", "-c", "2", "--obj-size", "1KiB"],
        dir.path(),
    );
    let v = run_ok(
        "delete",
        h,
        &["--objects", "40", "-c", "4", "--obj-size", "1KiB"],
        dir.path(),
    );
    assert_eq!(v["ops"], 40);
    let v = run_ok(
        "list",
        h,
        &[
            "--objects",
            "250",
            "--max-keys",
            "100",
            "--duration",
            "1s",
            "-c",
            "1",
        ],
        dir.path(),
    );
    assert_eq!(v["keys_per_listing"], 250);
    let v = run_ok(
        "multipart",
        h,
        &[
            "--objects",
            "2",
            "-c",
            "1",
            "--obj-size",
            "12MiB",
            "--part-size",
            "5MiB",
            "--part-concurrency",
            "2",
        ],
        dir.path(),
    );
    assert_eq!(v["ops"], 2);
    assert_eq!(v["bytes"], 2 * 12 * 1024 * 1024);
    assert_eq!(v["verified_after"], 2);
    // Signed payloads.
    run_ok(
        "put",
        h,
        &[
            "--duration",
            "1s",
            "-c",
            "2",
            "--sign-payload",
            "--obj-size",
            "1MiB",
        ],
        dir.path(),
    );
    // Every way other clients send bodies: the server decodes each framing
    // (chunk signatures, CRC trailers in the SDKs' and minio-go's forms)
    // and stores exactly the data, read back and verified; sizes around
    // the 64 KiB chunk, and parts of a multipart upload.
    for mode in [
        "signed",
        "streaming",
        "crc32-trailer",
        "crc32c-trailer",
        "minio-go",
        "aws-sdk",
    ] {
        let v = run_ok(
            "put",
            h,
            &[
                "--duration",
                "1s",
                "-c",
                "2",
                "--payload",
                mode,
                "--obj-size",
                "1..200KiB",
                "--verify",
                "8",
            ],
            dir.path(),
        );
        assert_eq!(v["verified_after"], 8, "{mode}: {v:#}");
        let v = run_ok(
            "multipart",
            h,
            &[
                "--objects",
                "1",
                "-c",
                "1",
                "--obj-size",
                "6MiB",
                "--part-size",
                "5MiB",
                "--payload",
                mode,
            ],
            dir.path(),
        );
        assert_eq!(v["verified_after"], 1, "{mode}: {v:#}");
    }

    // Compare: the same server on both sides, with its process measured.
    let cmp = dir.path().join("compare.json");
    let pid = server.pid().to_string();
    let o = bench(&[
        "compare",
        "--op",
        "get",
        "--a",
        h,
        "--b",
        h,
        "--label-a",
        "one",
        "--label-b",
        "two",
        "--pid-a",
        &pid,
        "--pid-b",
        &pid,
        "--rounds",
        "2",
        "--duration",
        "1s",
        "-c",
        "2",
        "--obj-size",
        "256KiB",
        "--no-progress",
        "--cleanup",
        "--json",
        cmp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("round 1:") && stdout.contains("round 2:"),
        "{stdout}"
    );
    assert!(stdout.contains("median ratio one / two"), "{stdout}");
    assert!(
        stdout.contains("rounds' ratios: ") && stdout.contains("x per server CPU-second\n"),
        "{stdout}"
    );
    let v = json(&cmp);
    assert_eq!(v["rounds"].as_array().unwrap().len(), 2);
    assert_eq!(v["a"]["errors"], 0);
    assert_eq!(v["b"]["errors"], 0);
    assert!(v["median_ratio"].as_f64().unwrap() > 0.0);
    let usage = &v["rounds"][0]["a"]["server"];
    assert!(usage["cpu_seconds"].as_f64().unwrap() > 0.0, "{usage:#}");
    assert!(usage["peak_rss_mib"].as_f64().unwrap() > 1.0, "{usage:#}");
    // Fresh names every round and side.
    let prefixes: Vec<&str> = v["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| {
            [
                r["a"]["prefix"].as_str().unwrap(),
                r["b"]["prefix"].as_str().unwrap(),
            ]
        })
        .collect();
    let unique: std::collections::HashSet<_> = prefixes.iter().collect();
    assert_eq!(unique.len(), 4, "{prefixes:?}");
}

#[test]
fn requests_the_server_refuses_are_counted_not_fatal() {
    let server = Tessera::start();
    // SSE-C over plain HTTP: refused by the server (400), counted by kind,
    // exit status 3, no panic.
    let o = bench(&[
        "put",
        "--host",
        &server.addr,
        "--no-progress",
        "--duration",
        "1s",
        "-c",
        "1",
        "--sse-c",
        "--obj-size",
        "4KiB",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("errors:") && stdout.contains("HTTP 400"),
        "{}",
        show(&o)
    );
}

/// A tiny HTTP/1.1 S3 stand-in: buckets exist, PUTs are acknowledged and
/// forgotten, GETs return zeros of the right length.
fn wrong_bytes_server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let sizes = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let sizes = sizes.clone();
            std::thread::spawn(move || serve(s, &sizes));
        }
    });
    addr
}

fn serve(s: TcpStream, sizes: &Mutex<HashMap<String, usize>>) {
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_owned();
        let path = parts.next().unwrap_or("").to_owned();
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
            if let Some((n, v)) = h.split_once(':')
                && n.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0u8; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let is_object = path.trim_start_matches('/').contains('/');
        let resp = match (method.as_str(), is_object) {
            ("PUT", true) => {
                sizes.lock().unwrap().insert(path.clone(), len);
                "HTTP/1.1 200 OK\r\nETag: \"0\"\r\nContent-Length: 0\r\n\r\n".to_owned()
            }
            ("GET", true) => {
                let n = sizes.lock().unwrap().get(&path).copied().unwrap_or(0);
                let mut head =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").into_bytes();
                head.extend(std::iter::repeat_n(0x5a, n));
                if w.write_all(&head).is_err() {
                    return;
                }
                continue;
            }
            _ => "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_owned(),
        };
        if w.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn wrong_bytes_fail_the_run() {
    let addr = wrong_bytes_server();
    let o = bench(&[
        "get",
        "--host",
        &addr,
        "--no-progress",
        "--obj-size",
        "4KiB",
        "--objects",
        "2",
        "-c",
        "1",
        "--duration",
        "5s",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("content mismatch") && stderr.contains("expected"),
        "{}",
        show(&o)
    );
    assert!(!stderr.contains("panicked"), "{}", show(&o));
}

#[test]
fn bad_command_lines_are_clear_errors() {
    for (args, needle) in [
        (&["put", "--obj-size", "12XB"][..], "unknown unit"),
        (&["put", "--obj-size", "6GiB"][..], "limit of a single PUT"),
        (&["get", "--concurrent", "0"][..], "--concurrent"),
        (&["put", "--duration", "forever"][..], "--duration"),
        (&["multipart", "--part-size", "1MiB"][..], "--part-size"),
        (
            &["multipart", "--obj-size", "1TiB", "--part-size", "5MiB"][..],
            "parts",
        ),
        (&["list", "--max-keys", "5000"][..], "--max-keys"),
        (&["put", "--bucket", "No_Such"][..], "bucket name"),
        (&["put", "--host", "ftp://x"][..], "bad host"),
        (&["put", "--host", "https://127.0.0.1:1"][..], "--insecure"),
        (
            &[
                "mixed", "--get", "0", "--put", "0", "--delete", "0", "--stat", "0",
            ][..],
            "shares",
        ),
        (
            &[
                "compare", "--op", "put", "--a", "x:1", "--b", "y:1", "--rounds", "0",
            ][..],
            "--rounds",
        ),
        (&["harness", "--drives", "2"][..], "--drives"),
        (&["frobnicate"][..], "unrecognized subcommand"),
        (&["put", "--objects", "abc"][..], "invalid value"),
    ] {
        let o = bench(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        assert!(
            stderr.contains(needle),
            "{args:?}: wanted {needle:?}: {}",
            show(&o)
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {}", show(&o));
    }
}
