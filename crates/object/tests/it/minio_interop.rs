//! The interoperability contract with the real MinIO server (issue 4):
//!
//! (a) objects written by Tessera's object layer on 4 and on 8 directories
//!     (empty, inline, one block, many blocks, odd sizes, multipart, user
//!     metadata) are listed and read back bit for bit by MinIO started on
//!     those directories, through `mc`, with `mc stat` showing the size,
//!     ETag and metadata Tessera reports; MinIO also reads them back with
//!     as many drives' data gone as there are parity shards, so Tessera's
//!     parity is MinIO's;
//! (b) objects written through MinIO (the same shapes, reduced redundancy
//!     and versions too) are read back bit for bit by Tessera's object layer
//!     with the size, ETag and metadata `mc stat` showed, also after one
//!     drive directory is deleted, and after as many as the parity allows.
//!
//! Both directions also run on 18 directories (two erasure sets of 9), where
//! an object is found only if Tessera hashes keys to sets as MinIO does.
//! SSE-S3 objects MinIO encrypted decrypt with Tessera's `sse` crate.
//!
//! Compiled only with the `minio-interop` feature (`cargo xtask ci` turns it
//! on); `support/minio.rs` says where the binaries come from, and a missing
//! one fails the tests.
#![cfg(feature = "minio-interop")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::data;
use crate::support::minio;
use crate::support::minio::{Minio, stat_summary};
use md5::{Digest, Md5};
use object::layer::{GetOptions, LayerOptions, ObjectLayer, PutOptions, VersionSel};

const MIB: usize = 1 << 20;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn drive_dirs(root: &Path, n: usize) -> Vec<PathBuf> {
    (1..=n).map(|i| root.join(format!("d{i}"))).collect()
}

/// Starts MinIO on the drives: as a list for 4, in ellipsis syntax
/// otherwise (both forms get exercised).
fn start_minio(root: &Path, drives: &[PathBuf]) -> minio::MinioBuilder {
    let work = root.join("minio");
    if drives.len() == 4 {
        Minio::on(drives, &work)
    } else {
        let pattern = format!("{}/d{{1...{}}}", root.display(), drives.len());
        Minio::on_args(&[&pattern], &work)
    }
}

/// Headers compared between Tessera's `ObjectInfo::metadata` and
/// `mc stat`, lower-cased: what `mc stat` shows minus what is not stored
/// metadata.
fn stored_headers(stat: &serde_json::Value) -> BTreeMap<String, String> {
    let (_, _, meta) = stat_summary(stat);
    meta.iter()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            k != "content-type" && !k.starts_with("x-amz-tagging")
        })
        .map(|(k, v)| (k.to_ascii_lowercase(), v.as_str().unwrap_or("").to_string()))
        .collect()
}

fn lowercase(meta: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    meta.iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .collect()
}

/// Every `xl.meta` under `<drive>/<bucket>` of every drive, by path.
fn xl_metas(drives: &[PathBuf], bucket: &str) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<PathBuf> = drives.iter().map(|d| d.join(bucket)).collect();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "xl.meta") {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path, bytes);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------
// (a) Tessera writes, MinIO reads.

/// One object Tessera writes.
struct Put {
    key: String,
    body: Vec<u8>,
    content_type: &'static str,
    metadata: Vec<(String, String)>,
}

fn put(key: &str, body: Vec<u8>) -> Put {
    Put {
        key: key.into(),
        body,
        content_type: "application/octet-stream",
        metadata: Vec::new(),
    }
}

/// The shapes of the contract, with the inline edge placed for `k` data
/// shards (128 KiB shards).
fn tessera_objects(k: usize) -> Vec<Put> {
    let edge = 128 * 1024 * k;
    let mut v = vec![
        put("empty", Vec::new()),
        put("odd/1", vec![0xa5]),
        put("odd/3", b"xyz".to_vec()),
        put("inline/edge-minus-1", data(edge - 1, 1)),
        put("inline/edge", data(edge, 2)),
        put("inline/edge-plus-1", data(edge + 1, 3)),
        put("block/one", data(MIB, 4)),
        put("blocks/odd", data(5 * MIB + 333, 5)),
        put("blocks/3333333", data(3_333_333, 6)),
        put("deep/a/b/c/d/e.bin", data(700_001, 7)),
        put("sp ace/ünï.txt", b"unicode key\n".to_vec()),
    ];
    let mut small = put("inline/small.txt", b"tessera wrote this\n".to_vec());
    small.content_type = "text/plain";
    v.push(small);
    let mut meta = put(
        "meta/with-metadata.json",
        b"{\"hello\":\"metadata\"}\n".to_vec(),
    );
    meta.content_type = "application/json";
    meta.metadata = vec![
        ("X-Amz-Meta-Color".into(), "blue".into()),
        ("X-Amz-Meta-Owner".into(), "tessera".into()),
        ("Cache-Control".into(), "no-cache".into()),
    ];
    v.push(meta);
    let mut big_meta = put("meta/big.bin", data(2 * MIB + 1, 8));
    big_meta.content_type = "application/x-odd";
    big_meta.metadata = vec![("X-Amz-Meta-Size".into(), "big".into())];
    v.push(big_meta);
    v
}

const MULTI_KEY: &str = "multi/part.bin";

fn multipart_parts() -> Vec<Vec<u8>> {
    vec![data(5 * MIB + 1, 21), data(5 * MIB, 22), data(777, 23)]
}

/// Writes `objects` (and a multipart object unless `multipart` is false)
/// into bucket `interop` with the object layer; returns what HEAD says of
/// each key.
fn tessera_write(
    drives: &[PathBuf],
    objects: &[Put],
    multipart: bool,
) -> BTreeMap<String, object::layer::ObjectInfo> {
    rt().block_on(async {
        let l = ObjectLayer::open_dirs(drives, LayerOptions::default())
            .await
            .unwrap();
        l.make_bucket("interop").await.unwrap();
        let mut infos = BTreeMap::new();
        for o in objects {
            let opts = PutOptions {
                size: Some(o.body.len() as u64),
                content_type: Some(o.content_type.into()),
                metadata: o.metadata.clone(),
                ..PutOptions::default()
            };
            l.put_object("interop", &o.key, &mut &o.body[..], &opts)
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", o.key));
        }
        if multipart {
            let opts = PutOptions {
                metadata: vec![("X-Amz-Meta-Parts".into(), "three".into())],
                ..PutOptions::default()
            };
            let id = l
                .create_multipart_upload("interop", MULTI_KEY, &opts)
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
            l.complete_multipart_upload("interop", MULTI_KEY, &id, &parts)
                .await
                .unwrap();
        }
        let keys = objects
            .iter()
            .map(|o| o.key.clone())
            .chain(multipart.then(|| MULTI_KEY.to_string()));
        for key in keys {
            let info = l
                .head_object("interop", &key, None)
                .await
                .unwrap_or_else(|e| panic!("HEAD {key}: {e}"));
            infos.insert(key, info);
        }
        infos
    })
}

/// MinIO on `drives` lists and reads every object bit for bit, and
/// `mc stat` agrees with Tessera's HEAD.
fn minio_reads_all(
    mc: &minio::Mc,
    objects: &[(String, Vec<u8>)],
    infos: &BTreeMap<String, object::layer::ObjectInfo>,
    label: &str,
) {
    let listed = mc.ls_recursive("interop");
    let keys: Vec<&str> = listed.iter().map(|e| e.key.as_str()).collect();
    let want: Vec<&str> = infos.keys().map(String::as_str).collect();
    assert_eq!(keys, want, "{label}: MinIO lists what Tessera wrote");
    for e in &listed {
        let info = &infos[&e.key];
        assert_eq!(
            (e.size, e.etag.as_str()),
            (info.size, info.etag.as_str()),
            "{label}: ls {}",
            e.key
        );
    }
    for (key, body) in objects {
        let path = format!("interop/{key}");
        let got = mc.cat(&path);
        assert!(
            got == *body,
            "{label}: {key}: MinIO returned different bytes ({} bytes, want {})",
            got.len(),
            body.len()
        );
        let stat = mc.stat(&path);
        let (size, etag, meta) = stat_summary(&stat);
        let info = &infos[key];
        assert_eq!(size, Some(info.size), "{label}: {key} size");
        assert_eq!(
            etag.as_deref(),
            Some(info.etag.as_str()),
            "{label}: {key} etag"
        );
        assert_eq!(
            meta.get("Content-Type").and_then(|v| v.as_str()),
            Some(info.content_type.as_str()),
            "{label}: {key} content type: {stat}"
        );
        assert_eq!(
            stored_headers(&stat),
            lowercase(&info.metadata),
            "{label}: {key} metadata: {stat}"
        );
    }
}

fn tessera_writes_minio_reads(n: usize) {
    let work = tempfile::tempdir().unwrap();
    let drives = drive_dirs(work.path(), n);
    let k = n - placement::default_parity(n);
    let puts = tessera_objects(k);
    let infos = tessera_write(&drives, &puts, true);

    // Tessera's own view first: sizes and ETags are S3's.
    for p in &puts {
        let info = &infos[&p.key];
        assert_eq!(info.size, p.body.len() as u64);
        assert_eq!(info.etag, hex::encode(Md5::digest(&p.body)), "{}", p.key);
    }
    let whole = multipart_parts().concat();
    let md5s: Vec<u8> = multipart_parts()
        .iter()
        .flat_map(|p| Md5::digest(p).to_vec())
        .collect();
    assert_eq!(
        infos[MULTI_KEY].etag,
        format!("{}-3", hex::encode(Md5::digest(&md5s)))
    );

    let mut objects: Vec<(String, Vec<u8>)> = puts
        .iter()
        .map(|p| (p.key.clone(), p.body.clone()))
        .collect();
    objects.push((MULTI_KEY.to_string(), whole));

    let label = format!("{n} drives");
    let before = xl_metas(&drives, "interop");
    let server = start_minio(work.path(), &drives).start();
    let mc = server.mc();
    minio_reads_all(&mc, &objects, &infos, &label);
    // MinIO writes next to Tessera's objects and reads that back too.
    let extra = data(3_000_000, 9);
    mc.put("interop/from-minio.bin", &extra, &[]);
    assert!(mc.cat("interop/from-minio.bin") == extra);
    mc.rm("interop/from-minio.bin");
    server.stop();
    // MinIO found nothing to correct: Tessera's xl.meta files are as they
    // were, byte for byte.
    let after = xl_metas(&drives, "interop");
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "{label}: xl.meta files"
    );
    for (path, bytes) in &before {
        assert!(
            after[path] == *bytes,
            "{label}: MinIO rewrote {}",
            path.display()
        );
    }

    // Parity: with the objects gone from as many drives as there are
    // parity shards, MinIO must decode Tessera's parity.
    let parity = n - k;
    let lost: Vec<usize> = (0..n).step_by(2).take(parity).collect();
    for &i in &lost {
        std::fs::remove_dir_all(drives[i].join("interop")).unwrap();
        std::fs::create_dir(drives[i].join("interop")).unwrap();
    }
    let server = start_minio(work.path(), &drives).start();
    let mc = server.mc();
    for (key, body) in &objects {
        let got = mc.cat(&format!("interop/{key}"));
        assert!(
            got == *body,
            "{label}, drives {lost:?} lost: {key}: MinIO decoded different bytes"
        );
    }
    server.stop();
}

#[test]
fn tessera_writes_minio_reads_4_drives() {
    tessera_writes_minio_reads(4);
}

#[test]
fn tessera_writes_minio_reads_8_drives() {
    tessera_writes_minio_reads(8);
}

/// Keys spread over two sets (18 drives, 2 x 9): MinIO finds each one
/// only if Tessera chose the set MinIO's hash names.
#[test]
fn tessera_writes_minio_reads_two_sets() {
    let work = tempfile::tempdir().unwrap();
    let drives = drive_dirs(work.path(), 18);
    let mut puts: Vec<Put> = (0..24)
        .map(|i| {
            put(
                &format!("spread/key-{i:02}"),
                data(100 + i * 37, 40 + i as u64),
            )
        })
        .collect();
    puts.push(put("spread/big.bin", data(3 * MIB + 1, 39)));
    let infos = tessera_write(&drives, &puts, false);
    let objects: Vec<(String, Vec<u8>)> = puts
        .iter()
        .map(|p| (p.key.clone(), p.body.clone()))
        .collect();
    let server = start_minio(work.path(), &drives).start();
    minio_reads_all(&server.mc(), &objects, &infos, "two sets");
    server.stop();
}

// ---------------------------------------------------------------------
// (b) MinIO writes, Tessera reads.

/// One object MinIO writes: key, body, `mc cp` flags, reduced redundancy.
struct Upload {
    key: String,
    body: Vec<u8>,
    flags: Vec<&'static str>,
    rrs: bool,
}

fn upload(key: &str, body: Vec<u8>, flags: &[&'static str]) -> Upload {
    Upload {
        key: key.into(),
        body,
        flags: flags.to_vec(),
        rrs: flags.contains(&"REDUCED_REDUNDANCY"),
    }
}

fn minio_objects(k: usize) -> Vec<Upload> {
    let edge = 128 * 1024 * k;
    vec![
        upload("empty", Vec::new(), &[]),
        upload("odd/1", vec![0x42], &[]),
        upload("small.txt", b"written by minio\n".to_vec(), &[]),
        upload("inline/edge-minus-1", data(edge - 1, 10), &[]),
        upload("inline/edge-plus-1", data(edge + 1, 11), &[]),
        upload("onemib", data(MIB + 1, 12), &[]),
        upload("twenty", data(20 * MIB, 13), &["--disable-multipart"]),
        // mc uploads files above 16 MiB in parts: 16 MiB + 4 MiB.
        upload("multi", data(20 * MIB, 14), &[]),
        upload("dir/nested/odd", data(3_333_333, 15), &[]),
        upload(
            "meta.json",
            b"{\"hello\":\"metadata\"}\n".to_vec(),
            &[
                "--attr",
                "Content-Type=application/json;Cache-Control=no-cache;X-Amz-Meta-Color=blue;\
                 X-Amz-Meta-Owner=tessera",
            ],
        ),
        upload(
            "rrs/small",
            b"reduced redundancy\n".to_vec(),
            &["--storage-class", "REDUCED_REDUNDANCY"],
        ),
        upload(
            "rrs/big",
            data(2 * MIB + 5, 16),
            &["--storage-class", "REDUCED_REDUNDANCY"],
        ),
    ]
}

/// Reads every object of `uploads` (skipping reduced-redundancy ones when
/// `skip_rrs`) and the versions of `vers/doc` with the object layer, and
/// compares with what MinIO said.
fn tessera_reads_all(
    drives: &[PathBuf],
    uploads: &[Upload],
    stats: &BTreeMap<String, serde_json::Value>,
    versions: &[(String, Vec<u8>)],
    skip_rrs: bool,
    label: &str,
) {
    rt().block_on(async {
        let l = ObjectLayer::open_dirs(drives, LayerOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{label}: open MinIO's drives: {e}"));
        let names: Vec<String> = l
            .list_buckets()
            .await
            .unwrap()
            .into_iter()
            .map(|b| b.name)
            .collect();
        assert!(
            names.contains(&"fromminio".to_string()),
            "{label}: {names:?}"
        );
        let listed = l
            .list_objects("fromminio", &Default::default())
            .await
            .unwrap();
        let keys: Vec<&str> = listed.objects.iter().map(|o| o.key.as_str()).collect();
        // Reduced-redundancy objects below their read quorum are not listed.
        let mut want: Vec<&str> = uploads
            .iter()
            .filter(|u| !(skip_rrs && u.rrs))
            .map(|u| u.key.as_str())
            .collect();
        want.sort();
        assert_eq!(keys, want, "{label}: listing");
        for u in uploads.iter().filter(|u| !(skip_rrs && u.rrs)) {
            let mut out = Vec::new();
            let info = l
                .get_object("fromminio", &u.key, &GetOptions::default(), &mut out)
                .await
                .unwrap_or_else(|e| panic!("{label}: GET {}: {e}", u.key));
            assert!(
                out == u.body,
                "{label}: {}: Tessera read different bytes ({} bytes, want {})",
                u.key,
                out.len(),
                u.body.len()
            );
            let stat = &stats[&u.key];
            let (size, etag, meta) = stat_summary(stat);
            assert_eq!(Some(info.size), size, "{label}: {} size", u.key);
            assert_eq!(Some(&info.etag), etag.as_ref(), "{label}: {} etag", u.key);
            assert_eq!(
                Some(info.content_type.as_str()),
                meta.get("Content-Type").and_then(|v| v.as_str()),
                "{label}: {} content type",
                u.key
            );
            assert_eq!(
                lowercase(&info.metadata),
                stored_headers(stat),
                "{label}: {} metadata; mc stat: {stat}",
                u.key
            );
        }
        // Versions: the latest, then each by id.
        let mut out = Vec::new();
        l.get_object("vers", "doc", &GetOptions::default(), &mut out)
            .await
            .unwrap_or_else(|e| panic!("{label}: GET vers/doc: {e}"));
        assert!(out == versions.last().unwrap().1, "{label}: latest version");
        for (id, body) in versions {
            let mut out = Vec::new();
            let opts = GetOptions {
                version_id: Some(VersionSel::parse(id).unwrap()),
                ..GetOptions::default()
            };
            let info = l
                .get_object("vers", "doc", &opts, &mut out)
                .await
                .unwrap_or_else(|e| panic!("{label}: GET vers/doc?versionId={id}: {e}"));
            assert!(out == *body, "{label}: version {id}");
            assert_eq!(
                info.version_id.map(|v| v.to_string()).as_deref(),
                Some(id.as_str())
            );
        }
    });
}

fn minio_writes_tessera_reads(n: usize) {
    let work = tempfile::tempdir().unwrap();
    let drives = drive_dirs(work.path(), n);
    let parity = placement::default_parity(n);
    let uploads = minio_objects(n - parity);

    let server = start_minio(work.path(), &drives).start();
    let mc = server.mc();
    mc.mb("fromminio", &[]);
    mc.mb("vers", &[]);
    mc.ok(&["version", "enable", "t/vers"]);
    let mut stats = BTreeMap::new();
    for u in &uploads {
        let path = format!("fromminio/{}", u.key);
        mc.put(&path, &u.body, &u.flags);
        stats.insert(u.key.clone(), mc.stat(&path));
    }
    // Three versions, oldest first, each paired with the id MinIO gave it
    // (the one `mc ls --versions` did not list before).
    let mut versions: Vec<(String, Vec<u8>)> = Vec::new();
    for body in [b"version one\n".to_vec(), data(200_000, 17), vec![7]] {
        mc.put("vers/doc", &body, &[]);
        let out = mc.ok(&["ls", "--versions", "--json", "t/vers/doc"]);
        let new: Vec<String> = minio::json_lines(&out)
            .iter()
            .filter_map(|v| v.get("versionId").and_then(|id| id.as_str()))
            .filter(|id| !versions.iter().any(|(known, _)| known == id))
            .map(String::from)
            .collect();
        assert_eq!(new.len(), 1, "{}", String::from_utf8_lossy(&out));
        versions.push((new[0].clone(), body));
    }
    server.stop();

    let label = format!("{n} drives");
    tessera_reads_all(&drives, &uploads, &stats, &versions, false, &label);
    // Lose a drive entirely: Tessera formats the empty directory into its
    // slot and still reads every object.
    std::fs::remove_dir_all(&drives[1]).unwrap();
    tessera_reads_all(
        &drives,
        &uploads,
        &stats,
        &versions,
        false,
        &format!("{label}, d2 lost"),
    );
    // Lose as many as the parity allows: every standard object still reads
    // (reduced redundancy has a single parity shard).
    let lost: Vec<usize> = (1..n).step_by(2).take(parity).collect();
    for &i in &lost[1..] {
        std::fs::remove_dir_all(&drives[i]).unwrap();
    }
    let lost_names: Vec<String> = lost.iter().map(|i| format!("d{}", i + 1)).collect();
    tessera_reads_all(
        &drives,
        &uploads,
        &stats,
        &versions,
        true,
        &format!("{label}, {lost_names:?} lost"),
    );
}

#[test]
fn minio_writes_tessera_reads_4_drives() {
    minio_writes_tessera_reads(4);
}

#[test]
fn minio_writes_tessera_reads_8_drives() {
    minio_writes_tessera_reads(8);
}

/// MinIO spreads keys over two sets (18 drives, 2 x 9); Tessera finds
/// each one only if it hashes keys to sets as MinIO does.
#[test]
fn minio_writes_tessera_reads_two_sets() {
    let work = tempfile::tempdir().unwrap();
    let drives = drive_dirs(work.path(), 18);
    let keys: Vec<(String, Vec<u8>)> = (0..24)
        .map(|i| {
            (
                format!("spread/key-{i:02}"),
                data(50 + i * 41, 60 + i as u64),
            )
        })
        .chain([("spread/big.bin".to_string(), data(3 * MIB + 7, 59))])
        .collect();
    let server = start_minio(work.path(), &drives).start();
    let mc = server.mc();
    mc.mb("spread", &[]);
    for (key, body) in &keys {
        mc.put(&format!("spread/{key}"), body, &[]);
    }
    server.stop();
    rt().block_on(async {
        let l = ObjectLayer::open_dirs(&drives, LayerOptions::default())
            .await
            .unwrap();
        assert_eq!(l.sets().len(), 2);
        for (key, body) in &keys {
            let mut out = Vec::new();
            l.get_object("spread", key, &GetOptions::default(), &mut out)
                .await
                .unwrap_or_else(|e| panic!("GET {key}: {e}"));
            assert!(out == *body, "{key}: Tessera read different bytes");
        }
        let listed = l.list_objects("spread", &Default::default()).await.unwrap();
        let got: Vec<&str> = listed.objects.iter().map(|o| o.key.as_str()).collect();
        let mut want: Vec<&str> = keys.iter().map(|k| k.0.as_str()).collect();
        want.sort();
        assert_eq!(got, want);
    });
}

/// SSE-S3 objects encrypted by MinIO (static KMS key) open with Tessera's
/// `sse` crate: the KMS data key, the sealed object key and the DARE
/// packages are all MinIO's format.
#[test]
fn minio_sse_s3_objects_decrypt_with_tessera() {
    use sse::dare::Decryptor;
    use sse::key::{Domain, ObjectKey, SealedKey};
    use sse::kms::{Context, Kms, StaticKms, base64_decode, base64_encode};

    let work = tempfile::tempdir().unwrap();
    let drives = drive_dirs(work.path(), 4);
    let master: Vec<u8> = (0..32u8)
        .map(|i| i.wrapping_mul(9).wrapping_add(3))
        .collect();
    let secret = format!("tessera-kms:{}", base64_encode(&master));
    let server = start_minio(work.path(), &drives)
        .env("MINIO_KMS_SECRET_KEY", &secret)
        .start();
    let mc = server.mc();
    mc.mb("sse", &[]);
    let files = [
        ("secret.bin", data(3 * MIB + 17, 31)),
        ("tiny.txt", b"top secret\n".to_vec()),
    ];
    for (key, body) in &files {
        mc.put(&format!("sse/{key}"), body, &["--enc-s3", "t/sse"]);
        assert!(mc.cat(&format!("sse/{key}")) == *body, "MinIO round trip");
    }
    server.stop();

    let kms = StaticKms::parse(&secret).unwrap();
    rt().block_on(async {
        let l = ObjectLayer::open_dirs(&drives, LayerOptions::default())
            .await
            .unwrap();
        for (key, body) in &files {
            let mut raw = Vec::new();
            let info = l
                .get_object("sse", key, &GetOptions::default(), &mut raw)
                .await
                .unwrap();
            assert!(raw != *body, "{key}: stored in clear");
            let meta = |k: &str| -> String {
                let v = info
                    .internal
                    .get(&format!("X-Minio-Internal-Server-Side-Encryption-{k}"))
                    .unwrap_or_else(|| panic!("{key}: no {k} in {:?}", info.internal.keys()));
                String::from_utf8(v.clone()).unwrap()
            };
            let key_id = meta("S3-Kms-Key-Id");
            assert_eq!(key_id, "tessera-kms");
            let dek = kms
                .decrypt(
                    &key_id,
                    &base64_decode(&meta("S3-Kms-Sealed-Key")).unwrap(),
                    &Context::single("sse", &format!("sse/{key}")),
                )
                .unwrap_or_else(|e| panic!("{key}: KMS data key: {e}"));
            let sealed = SealedKey {
                key: base64_decode(&meta("S3-Sealed-Key"))
                    .unwrap()
                    .try_into()
                    .unwrap(),
                iv: base64_decode(&meta("Iv")).unwrap().try_into().unwrap(),
                algorithm: meta("Seal-Algorithm"),
            };
            let object_key = ObjectKey::unseal(&dek, &sealed, Domain::SseS3, "sse", key)
                .unwrap_or_else(|e| panic!("{key}: object key: {e}"));
            let plain = Decryptor::new(&object_key.0, 0)
                .open_all(&raw)
                .unwrap_or_else(|e| panic!("{key}: DARE: {e}"));
            assert!(plain == *body, "{key}: decrypted bytes differ");
        }
    });
}
