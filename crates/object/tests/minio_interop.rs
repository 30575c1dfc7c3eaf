//! The interoperability contract with the real MinIO server:
//!
//! (a) objects written by Tessera's object layer on 4 and on 8 directories
//!     are listed and read back bit for bit by MinIO started on those
//!     directories, through `mc`;
//! (b) objects written through MinIO are read back bit for bit by Tessera's
//!     object layer, also after one drive directory is deleted.
//!
//! Needs the `minio` and `mc` binaries: `cargo xtask tools` installs them
//! into `target/tools/bin` (`cargo xtask ci` does it first); `TESSERA_MINIO`
//! and `TESSERA_MC` override. Compiled only with the `minio-interop`
//! feature, so a plain `cargo test` does not need Go; with the feature, a
//! missing binary fails the test.
#![cfg(feature = "minio-interop")]

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use md5::{Digest, Md5};
use object::layer::{GetOptions, LayerOptions, ObjectLayer, PutOptions};
use support::data;

const USER: &str = "tesseraadmin";
const PASS: &str = "tesseraadmin-secret";

fn tool(env: &str, name: &str) -> PathBuf {
    if let Ok(p) = std::env::var(env) {
        return PathBuf::from(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let local = root.join("target/tools/bin").join(name);
    if local.exists() {
        return local;
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        if dir.join(name).exists() {
            return dir.join(name);
        }
    }
    panic!("`{name}` not found: run `cargo xtask tools` (or set {env})");
}

/// A MinIO server on loopback over the given drive directories; killed on
/// drop.
struct Minio {
    child: Child,
    port: u16,
    log: PathBuf,
    mc_config: tempfile::TempDir,
}

impl Minio {
    fn start(drives: &[PathBuf], work: &Path) -> Minio {
        Self::start_with(drives, work, &[])
    }

    fn start_with(drives: &[PathBuf], work: &Path, env: &[(&str, &str)]) -> Minio {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = work.join(format!("minio-{port}.log"));
        let home = work.join("minio-home");
        std::fs::create_dir_all(&home).unwrap();
        let child = Command::new(tool("TESSERA_MINIO", "minio"))
            .arg("server")
            .arg("--address")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--console-address")
            .arg(format!("127.0.0.1:{}", free_port()))
            .args(drives)
            .env("MINIO_ROOT_USER", USER)
            .env("MINIO_ROOT_PASSWORD", PASS)
            .env("MINIO_CI_CD", "1")
            .env("MINIO_BROWSER", "off")
            .env("HOME", &home)
            .envs(env.iter().copied())
            .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
            .stderr(Stdio::from(
                std::fs::OpenOptions::new().append(true).open(&log).unwrap(),
            ))
            .spawn()
            .expect("start minio");
        let m = Minio {
            child,
            port,
            log,
            mc_config: tempfile::tempdir().unwrap(),
        };
        m.wait_ready();
        m.mc(&[
            "alias",
            "set",
            "t",
            &format!("http://127.0.0.1:{port}"),
            USER,
            PASS,
        ]);
        m
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if http_status(self.port, "/minio/health/ready") == Some(200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("minio not ready in 60 s; log:\n{}", self.log_text());
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn mc_raw(&self, args: &[&str]) -> std::process::Output {
        Command::new(tool("TESSERA_MC", "mc"))
            .args([
                "--config-dir",
                self.mc_config.path().to_str().unwrap(),
                "--no-color",
            ])
            .args(args)
            .output()
            .expect("run mc")
    }

    fn mc(&self, args: &[&str]) -> Vec<u8> {
        let out = self.mc_raw(args);
        assert!(
            out.status.success(),
            "mc {args:?} failed: {}\n{}\nminio log:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log_text()
        );
        out.stdout
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Minio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).ok()?;
    let head = String::from_utf8_lossy(&buf[..n]);
    head.split_whitespace().nth(1)?.parse().ok()
}

fn json_field<'a>(v: &'a serde_json::Value, path: &[&str]) -> Option<&'a serde_json::Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    Some(cur)
}

/// (key, body, content type, user metadata)
type Fixture = (String, Vec<u8>, &'static str, Vec<(String, String)>);

fn fixtures() -> Vec<Fixture> {
    vec![
        (
            "empty".into(),
            Vec::new(),
            "application/octet-stream",
            vec![],
        ),
        (
            "inline/small.txt".into(),
            b"tessera wrote this\n".to_vec(),
            "text/plain",
            vec![],
        ),
        (
            "inline/edge".into(),
            data(262_144, 1),
            "application/octet-stream",
            vec![],
        ),
        (
            "block/one".into(),
            data(1 << 20, 2),
            "application/octet-stream",
            vec![],
        ),
        (
            "blocks/odd".into(),
            data(5 * (1 << 20) + 333, 3),
            "application/x-odd",
            vec![],
        ),
        (
            "meta/with-metadata.json".into(),
            b"{\"hello\":\"metadata\"}\n".to_vec(),
            "application/json",
            vec![
                ("X-Amz-Meta-Color".into(), "blue".into()),
                ("X-Amz-Meta-Owner".into(), "tessera".into()),
            ],
        ),
        (
            "deep/a/b/c/d/e.bin".into(),
            data(700_001, 4),
            "application/octet-stream",
            vec![],
        ),
    ]
}

const MULTI_KEY: &str = "multi/part.bin";

fn multipart_parts() -> Vec<Vec<u8>> {
    vec![data((5 << 20) + 1, 21), data(5 << 20, 22), data(777, 23)]
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn tessera_writes_minio_reads(n: usize) {
    let work = tempfile::tempdir().unwrap();
    let drives: Vec<PathBuf> = (1..=n).map(|i| work.path().join(format!("d{i}"))).collect();
    let fx = fixtures();
    let multi_etag = std::sync::Mutex::new(String::new());
    rt().block_on(async {
        let l = ObjectLayer::open_dirs(&drives, LayerOptions::default())
            .await
            .unwrap();
        l.make_bucket("interop").await.unwrap();
        for (key, body, ct, meta) in &fx {
            let opts = PutOptions {
                size: Some(body.len() as u64),
                content_type: Some((*ct).into()),
                metadata: meta.clone(),
                parity: None,
            };
            l.put_object("interop", key, &mut &body[..], &opts)
                .await
                .unwrap();
        }
        // A multipart object: 5 MiB + 1, 5 MiB, 777 bytes.
        let id = l
            .create_multipart_upload("interop", MULTI_KEY, &PutOptions::default())
            .await
            .unwrap();
        let mut parts = Vec::new();
        for (i, p) in multipart_parts().iter().enumerate() {
            let n = i as i64 + 1;
            let up = l
                .upload_part(
                    "interop",
                    MULTI_KEY,
                    &id,
                    n,
                    &mut &p[..],
                    Some(p.len() as u64),
                )
                .await
                .unwrap();
            parts.push((n, up.etag));
        }
        let info = l
            .complete_multipart_upload("interop", MULTI_KEY, &id, &parts)
            .await
            .unwrap();
        *multi_etag.lock().unwrap() = info.etag;
    });
    let minio = Minio::start(&drives, work.path());
    // Listing.
    let ls = minio.mc(&["ls", "--recursive", "--json", "t/interop"]);
    let mut listed: Vec<String> = String::from_utf8_lossy(&ls)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("key").and_then(|k| k.as_str()).map(String::from))
        .collect();
    listed.sort();
    let mut want: Vec<String> = fx.iter().map(|f| f.0.clone()).collect();
    want.push(MULTI_KEY.to_string());
    want.sort();
    assert_eq!(listed, want, "MinIO lists what Tessera wrote ({n} drives)");
    let whole = multipart_parts().concat();
    assert!(
        minio.mc(&["cat", &format!("t/interop/{MULTI_KEY}")]) == whole,
        "multipart object: MinIO returned different bytes ({n} drives)"
    );
    let stat: serde_json::Value =
        serde_json::from_slice(&minio.mc(&["stat", "--json", &format!("t/interop/{MULTI_KEY}")]))
            .unwrap();
    assert_eq!(
        json_field(&stat, &["etag"]).and_then(|v| v.as_str()),
        Some(multi_etag.lock().unwrap().as_str()),
        "multipart etag: {stat}"
    );
    assert_eq!(
        json_field(&stat, &["size"]).and_then(|v| v.as_u64()),
        Some(whole.len() as u64)
    );
    for (key, body, ct, meta) in &fx {
        let got = minio.mc(&["cat", &format!("t/interop/{key}")]);
        assert!(
            got == *body,
            "{key}: MinIO returned different bytes ({n} drives)"
        );
        let stat: serde_json::Value =
            serde_json::from_slice(&minio.mc(&["stat", "--json", &format!("t/interop/{key}")]))
                .unwrap();
        assert_eq!(
            json_field(&stat, &["size"]).and_then(|v| v.as_u64()),
            Some(body.len() as u64),
            "{key} size"
        );
        assert_eq!(
            json_field(&stat, &["etag"]).and_then(|v| v.as_str()),
            Some(hex::encode(Md5::digest(body)).as_str()),
            "{key} etag"
        );
        let meta_json = json_field(&stat, &["metadata"])
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            meta_json.get("Content-Type").and_then(|v| v.as_str()),
            Some(*ct),
            "{key} content type: {stat}"
        );
        for (k, v) in meta {
            assert_eq!(
                meta_json.get(k.as_str()).and_then(|x| x.as_str()),
                Some(v.as_str()),
                "{key} metadata {k}: {stat}"
            );
        }
    }
    // MinIO can also write next to Tessera's objects and read them back.
    let extra = work.path().join("extra.bin");
    std::fs::write(&extra, data(3_000_000, 9)).unwrap();
    minio.mc(&["cp", extra.to_str().unwrap(), "t/interop/from-minio.bin"]);
    assert_eq!(
        minio.mc(&["cat", "t/interop/from-minio.bin"]),
        data(3_000_000, 9)
    );
    minio.stop();
}

#[test]
fn tessera_writes_minio_reads_4_drives() {
    tessera_writes_minio_reads(4);
}

#[test]
fn tessera_writes_minio_reads_8_drives() {
    tessera_writes_minio_reads(8);
}

#[test]
fn minio_writes_tessera_reads() {
    let work = tempfile::tempdir().unwrap();
    let drives: Vec<PathBuf> = (1..=4).map(|i| work.path().join(format!("d{i}"))).collect();
    for d in &drives {
        std::fs::create_dir_all(d).unwrap();
    }
    let minio = Minio::start(&drives, work.path());
    minio.mc(&["mb", "t/fromminio"]);
    let files: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        ("empty", Vec::new(), vec![]),
        ("small.txt", b"written by minio\n".to_vec(), vec![]),
        ("onemib", data((1 << 20) + 1, 11), vec![]),
        ("twenty", data(20 << 20, 12), vec!["--disable-multipart"]),
        // mc uploads this in parts (16 MiB + 4 MiB): a multipart object.
        ("multi", data(20 << 20, 13), vec![]),
        ("dir/nested/odd", data(3_333_333, 14), vec![]),
    ];
    for (key, body, flags) in &files {
        let src = work.path().join("upload.bin");
        std::fs::write(&src, body).unwrap();
        let mut args = vec!["cp"];
        args.extend(flags.iter().copied());
        let dst = format!("t/fromminio/{key}");
        args.push(src.to_str().unwrap());
        args.push(&dst);
        minio.mc(&args);
    }
    minio.stop();

    let read_all = |drives: Vec<PathBuf>| {
        let files = &files;
        rt().block_on(async move {
            let l = ObjectLayer::open_dirs(&drives, LayerOptions::default())
                .await
                .unwrap_or_else(|e| panic!("open MinIO's drives: {e}"));
            let names: Vec<String> = l
                .list_buckets()
                .await
                .unwrap()
                .into_iter()
                .map(|b| b.name)
                .collect();
            assert!(names.contains(&"fromminio".to_string()), "{names:?}");
            for (key, body, _) in files {
                let mut out = Vec::new();
                let info = l
                    .get_object("fromminio", key, &GetOptions::default(), &mut out)
                    .await
                    .unwrap_or_else(|e| panic!("{key}: {e}"));
                assert!(out == *body, "{key}: Tessera read different bytes");
                assert_eq!(info.size, body.len() as u64);
            }
            let listed = l
                .list_objects("fromminio", &Default::default())
                .await
                .unwrap();
            let mut keys: Vec<&str> = listed.objects.iter().map(|o| o.key.as_str()).collect();
            keys.sort();
            let mut want: Vec<&str> = files.iter().map(|f| f.0).collect();
            want.sort();
            assert_eq!(keys, want);
        });
    };
    read_all(drives.clone());
    // Lose a drive entirely: Tessera formats the empty directory into its
    // slot and still reads every object.
    std::fs::remove_dir_all(&drives[1]).unwrap();
    read_all(drives.clone());
}

/// SSE-S3 and SSE-KMS objects encrypted by MinIO (static KMS key) open with
/// Tessera's `sse` crate: the metadata entries, the KMS data key, the
/// sealed object key and the DARE packages are all MinIO's format.
#[test]
fn minio_sse_objects_decrypt_with_tessera() {
    use sse::dare::Decryptor;
    use sse::kms::{StaticKms, base64_encode};
    use sse::meta::Sealed;

    let work = tempfile::tempdir().unwrap();
    let drives: Vec<PathBuf> = (1..=4).map(|i| work.path().join(format!("d{i}"))).collect();
    for d in &drives {
        std::fs::create_dir_all(d).unwrap();
    }
    let master: Vec<u8> = (0..32u8)
        .map(|i| i.wrapping_mul(9).wrapping_add(3))
        .collect();
    let secret = format!("tessera-kms:{}", base64_encode(&master));
    let minio = Minio::start_with(&drives, work.path(), &[("MINIO_KMS_SECRET_KEY", &secret)]);
    minio.mc(&["mb", "t/sse"]);
    let files = [
        (
            "s3/secret.bin",
            data(3 * (1 << 20) + 17, 31),
            "--enc-s3",
            "t/sse",
        ),
        ("s3/tiny.txt", b"top secret\n".to_vec(), "--enc-s3", "t/sse"),
        (
            "kms/ledger.bin",
            data(200_001, 32),
            "--enc-kms",
            "t/sse/kms/=tessera-kms",
        ),
    ];
    for (key, body, flag, value) in &files {
        let src = work.path().join("plain.bin");
        std::fs::write(&src, body).unwrap();
        minio.mc(&[
            "cp",
            flag,
            value,
            src.to_str().unwrap(),
            &format!("t/sse/{key}"),
        ]);
        assert!(
            minio.mc(&["cat", &format!("t/sse/{key}")]) == *body,
            "MinIO round trip"
        );
    }
    minio.stop();

    let kms = StaticKms::parse(&secret).unwrap();
    rt().block_on(async {
        let l = ObjectLayer::open_dirs(&drives, LayerOptions::default())
            .await
            .unwrap();
        for (key, body, flag, _) in &files {
            let mut raw = Vec::new();
            let info = l
                .get_object("sse", key, &GetOptions::default(), &mut raw)
                .await
                .unwrap();
            assert!(raw != *body, "{key}: stored in clear");
            let get = |k: &str| {
                info.internal
                    .get(k)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            };
            let sealed = Sealed::from_metadata(get)
                .unwrap_or_else(|e| panic!("{key}: {e}"))
                .unwrap_or_else(|| panic!("{key}: not encrypted? {:?}", info.internal.keys()));
            match (flag, &sealed) {
                (&"--enc-s3", Sealed::SseS3 { .. }) | (&"--enc-kms", Sealed::SseKms { .. }) => {}
                other => panic!("{key}: unexpected kind {other:?}"),
            }
            let object_key = sealed
                .object_key(Some(&kms), None, "sse", key)
                .unwrap_or_else(|e| panic!("{key}: object key: {e}"));
            let plain = Decryptor::new(&object_key.0, 0)
                .open_all(&raw)
                .unwrap_or_else(|e| panic!("{key}: DARE: {e}"));
            assert!(plain == *body, "{key}: decrypted bytes differ");
        }
    });
}
