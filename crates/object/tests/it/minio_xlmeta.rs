//! `xl.meta` and bucket `.metadata.bin` as the real MinIO writes them today,
//! through Tessera's codecs.
//!
//! A live MinIO (4 and 8 drives, with a static KMS key) stores many object
//! shapes: empty, one byte, inline, at the inline edge, one block, many
//! blocks, odd sizes, a single-part 20 MiB object, multipart uploads, user
//! metadata and standard headers, object tags, reduced redundancy, SSE-S3,
//! versions with a delete marker, object lock, and buckets with tags, a
//! policy, a quota, lifecycle rules, versioning, object lock and default
//! encryption. After a graceful stop, every `xl.meta` on every drive must
//! decode with `object::xlmeta::XlMeta` and re-encode byte for byte, each
//! version's stored header must equal the one derived from its body (MinIO's
//! signature hash included), the decoded fields must say what was uploaded
//! (size, ETag, metadata, erasure layout, the shard file of every part) and
//! every bucket's `.metadata.bin` must round-trip through
//! `object::bucketmeta::BucketMetadata`.
//!
//! The fixture tests (`minio_fixtures.rs`) pin one capture; this test keeps
//! the codecs honest against whatever `cargo xtask tools` installed.
//! Compiled only with the `minio-interop` feature.
#![cfg(feature = "minio-interop")]

use std::path::{Path, PathBuf};

use crate::support::data;
use crate::support::minio;
use crate::support::minio::Minio;
use md5::{Digest, Md5};
use object::bucketmeta::BucketMetadata;
use object::xlmeta::{Journal, ObjectVersion, VersionType, XlMeta};

const MIB: usize = 1 << 20;
const KMS_KEY_NAME: &str = "tessera-kms";

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= c.len() {
                out.push(A[(n >> shift) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One object uploaded through `mc cp`.
struct Shape {
    bucket: &'static str,
    key: String,
    body: Vec<u8>,
    flags: Vec<String>,
    /// Headers `--attr` set, as MinIO stores them in `MetaUsr`.
    user: Vec<(&'static str, &'static str)>,
    content_type: &'static str,
    reduced_redundancy: bool,
    encrypted: bool,
}

fn shape(bucket: &'static str, key: &str, body: Vec<u8>) -> Shape {
    Shape {
        bucket,
        key: key.to_string(),
        body,
        flags: Vec::new(),
        user: Vec::new(),
        content_type: "application/octet-stream",
        reduced_redundancy: false,
        encrypted: false,
    }
}

/// The objects of the unversioned buckets.
fn shapes(data_shards: usize) -> Vec<Shape> {
    // MinIO inlines a version when its shard is small; bracket the edge for
    // this set's data shard count (128 KiB shards).
    let edge = 128 * 1024 * data_shards;
    let mut v = vec![
        shape("shapes", "empty", Vec::new()),
        shape("shapes", "one-byte", vec![0x5a]),
        shape("shapes", "odd/3", b"abc".to_vec()),
        shape("shapes", "inline/edge-minus-1", data(edge - 1, 1)),
        shape("shapes", "inline/edge", data(edge, 2)),
        shape("shapes", "inline/edge-plus-1", data(edge + 1, 3)),
        shape("shapes", "block/one", data(MIB, 4)),
        shape("shapes", "block/one-plus-1", data(MIB + 1, 5)),
        shape("shapes", "blocks/odd", data(5 * MIB + 333, 6)),
        shape("shapes", "blocks/3333333", data(3_333_333, 7)),
        shape("shapes", "deep/a/b/c/d/e/f.bin", data(700_001, 8)),
        shape("shapes", "sp ace/ünï.txt", b"unicode key\n".to_vec()),
    ];
    let mut single = shape("shapes", "single/twenty", data(20 * MIB, 9));
    single.flags = vec!["--disable-multipart".into()];
    v.push(single);
    // mc uploads files above 16 MiB in parts.
    v.push(shape("shapes", "multi/twenty", data(20 * MIB, 10)));
    v.push(shape("shapes", "multi/forty-odd", data(40 * MIB + 7, 11)));
    let mut meta = shape(
        "shapes",
        "meta/attrs.json",
        b"{\"hello\":\"metadata\"}\n".to_vec(),
    );
    meta.flags = vec![
        "--attr".into(),
        "Content-Type=application/json;Cache-Control=no-cache;Content-Disposition=inline;\
         Content-Encoding=identity;X-Amz-Meta-Color=blue;X-Amz-Meta-Owner=tessera"
            .into(),
    ];
    meta.content_type = "application/json";
    // MinIO keeps standard headers in lower case, user metadata as sent.
    meta.user = vec![
        ("cache-control", "no-cache"),
        ("content-disposition", "inline"),
        ("content-encoding", "identity"),
        ("X-Amz-Meta-Color", "blue"),
        ("X-Amz-Meta-Owner", "tessera"),
    ];
    v.push(meta);
    let mut big_meta = shape("shapes", "meta/big.bin", data(2 * MIB + 1, 12));
    big_meta.flags = vec!["--attr".into(), "X-Amz-Meta-Size=big".into()];
    big_meta.user = vec![("X-Amz-Meta-Size", "big")];
    v.push(big_meta);
    for (key, body) in [
        ("rrs/small", b"reduced redundancy\n".to_vec()),
        ("rrs/big", data(3 * MIB + 3, 13)),
    ] {
        let mut s = shape("shapes", key, body);
        s.flags = vec!["--storage-class".into(), "REDUCED_REDUNDANCY".into()];
        s.reduced_redundancy = true;
        v.push(s);
    }
    for (key, body) in [
        ("small", b"top secret\n".to_vec()),
        ("blocks", data(3 * MIB + 17, 14)),
        ("multi", data(20 * MIB + 1, 15)),
    ] {
        let mut s = shape("enc", key, body);
        s.flags = vec!["--enc-s3".into(), format!("{}/enc", minio::ALIAS)];
        s.encrypted = true;
        v.push(s);
    }
    v.push(shape("locked", "held", b"under legal hold\n".to_vec()));
    v
}

/// Every file named `xl.meta` under `root`.
fn xl_metas(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() && e.file_name() == "xl.meta" {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Bytes of a `part.N` file holding `size` bytes of a part: one 32-byte
/// HighwayHash before each shard block, shard blocks of ceil(block / k).
fn shard_file_size(size: u64, block: u64, k: u64) -> u64 {
    let full = size / block;
    let rest = size % block;
    full * (32 + block.div_ceil(k)) + if rest > 0 { 32 + rest.div_ceil(k) } else { 0 }
}

/// Reassembles a single-block inline version from the drives' xl.meta
/// files: data shards 1..=k, each after its 32-byte hash, cut to size.
fn reassemble_inline(metas: &[XlMeta<'_>], version_id: &[u8; 16]) -> Vec<u8> {
    let mut shards: Vec<(i64, Vec<u8>)> = Vec::new();
    let (mut size, mut k) = (0usize, 0usize);
    for m in metas {
        let o = m
            .find(version_id)
            .and_then(|v| v.version().as_object())
            .expect("object version on every drive");
        size = o.size as usize;
        k = o.erasure_m as usize;
        if (o.erasure_index as usize) <= k {
            let shard = m.inline_data(version_id).expect("inline shard");
            if size == 0 {
                // An empty object has an empty shard: not even a hash.
                assert!(
                    shard.is_empty(),
                    "empty object, {} bytes of shard",
                    shard.len()
                );
                shards.push((o.erasure_index, Vec::new()));
                continue;
            }
            assert_eq!(shard.len(), 32 + size.div_ceil(k), "one frame");
            shards.push((o.erasure_index, shard[32..].to_vec()));
        }
    }
    assert_eq!(shards.len(), k, "one data shard per data drive");
    shards.sort_by_key(|s| s.0);
    let mut out: Vec<u8> = shards.into_iter().flat_map(|s| s.1).collect();
    out.truncate(size);
    out
}

/// S3's ETag of a multipart object whose parts have these sizes.
fn multipart_etag(body: &[u8], part_sizes: &[i64]) -> String {
    let mut md5s = Vec::new();
    let mut at = 0;
    for &s in part_sizes {
        md5s.extend_from_slice(&Md5::digest(&body[at..at + s as usize]));
        at += s as usize;
    }
    assert_eq!(at, body.len(), "parts cover the object");
    format!("{}-{}", hex::encode(Md5::digest(&md5s)), part_sizes.len())
}

fn text(t: Option<&object::Text<'_>>) -> Option<String> {
    t.map(|t| t.to_string_lossy().into_owned())
}

/// `MetaUsr` as (key, value) pairs, in stored order.
fn user_pairs(o: &ObjectVersion<'_>) -> Vec<(String, String)> {
    o.meta_user
        .iter()
        .flat_map(|m| m.iter())
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// Checks one uploaded object on every drive; returns whether it was inline.
fn check_shape(drives: &[PathBuf], s: &Shape, parity: (i64, i64)) -> bool {
    let n = drives.len() as i64;
    let files: Vec<Vec<u8>> = drives
        .iter()
        .map(|d| std::fs::read(d.join(s.bucket).join(&s.key).join("xl.meta")).unwrap())
        .collect();
    let metas: Vec<XlMeta<'_>> = files.iter().map(|b| XlMeta::decode(b).unwrap()).collect();
    let label = format!("{}/{}", s.bucket, s.key);
    let mut inline = None;
    for (i, m) in metas.iter().enumerate() {
        assert_eq!(m.len(), 1, "{label}: one version");
        let entry = &m.versions()[0];
        let o: &ObjectVersion<'_> = entry.version().as_object().expect("an object version");
        let want_parity = if s.reduced_redundancy {
            parity.1
        } else {
            parity.0
        };
        assert_eq!(
            (o.erasure_m, o.erasure_n),
            (n - want_parity, want_parity),
            "{label}: erasure layout"
        );
        assert_eq!(
            (
                i64::from(entry.header().ec_m),
                i64::from(entry.header().ec_n)
            ),
            (o.erasure_m, o.erasure_n)
        );
        assert_eq!(o.ec_index_for_drive(i), Some(o.erasure_index), "{label}");
        assert_eq!(o.erasure_block_size, MIB as i64, "{label}");
        let actual: i64 = o
            .part_actual_sizes
            .as_ref()
            .map(|a| a.iter().sum())
            .unwrap_or(o.size);
        assert_eq!(actual, s.body.len() as i64, "{label}: actual size");
        if !s.encrypted {
            assert_eq!(o.size, s.body.len() as i64, "{label}: size");
            let etag = text(o.etag()).unwrap_or_default();
            if o.part_numbers.len() > 1 {
                assert_eq!(etag, multipart_etag(&s.body, &o.part_sizes), "{label}");
            } else {
                assert_eq!(etag, hex::encode(Md5::digest(&s.body)), "{label}: etag");
            }
            assert_eq!(
                text(o.content_type()).as_deref(),
                Some(s.content_type),
                "{label}"
            );
        } else {
            assert!(
                o.meta_sys.as_ref().is_some_and(|m| m.iter().any(|(k, _)| k
                    .to_string_lossy()
                    .starts_with("X-Minio-Internal-Server-Side-Encryption"))),
                "{label}: no sealed key in MetaSys"
            );
        }
        for (k, v) in &s.user {
            assert_eq!(
                text(o.user(k)).as_deref(),
                Some(*v),
                "{label}: {k} in MetaUsr {:?}",
                user_pairs(o)
            );
        }
        let is_inline = entry.header().flags.inline_data();
        assert_eq!(is_inline, o.inline_data(), "{label}: header and MetaSys");
        assert_eq!(
            is_inline,
            m.inline_data(&o.version_id).is_some(),
            "{label}: inline flag and inline data"
        );
        assert!(*inline.get_or_insert(is_inline) == is_inline, "{label}");
        if !is_inline {
            let dir = drives[i]
                .join(s.bucket)
                .join(&s.key)
                .join(uuid::Uuid::from_bytes(o.data_dir).to_string());
            for (num, size) in o.part_numbers.iter().zip(&o.part_sizes) {
                let part = dir.join(format!("part.{num}"));
                let len = std::fs::metadata(&part)
                    .unwrap_or_else(|e| panic!("{label}: {}: {e}", part.display()))
                    .len();
                assert_eq!(
                    len,
                    shard_file_size(*size as u64, MIB as u64, o.erasure_m as u64),
                    "{label}: {}",
                    part.display()
                );
            }
        }
    }
    let inline = inline.unwrap_or(false);
    if inline && !s.encrypted {
        let id = metas[0].versions()[0].header().version_id;
        assert!(
            reassemble_inline(&metas, &id) == s.body,
            "{label}: inline data differs"
        );
    }
    inline
}

fn minio_xl_meta_round_trips(n: usize) {
    let work = tempfile::tempdir().unwrap();
    let drives: Vec<PathBuf> = (1..=n).map(|i| work.path().join(format!("d{i}"))).collect();
    let master: Vec<u8> = (0..32u8)
        .map(|i| i.wrapping_mul(7).wrapping_add(1))
        .collect();
    let kms = format!("{KMS_KEY_NAME}:{}", base64(&master));
    let pattern = format!("{}/d{{1...{n}}}", work.path().display());
    let server = Minio::on_args(&[&pattern], &work.path().join("minio"))
        .env("MINIO_KMS_SECRET_KEY", &kms)
        .start();
    let mc = server.mc();
    let info: serde_json::Value =
        serde_json::from_slice(&mc.ok(&["admin", "info", "--json", minio::ALIAS])).unwrap();
    let parity = (
        info.pointer("/info/backend/standardSCParity")
            .and_then(|v| v.as_i64())
            .expect("standard parity"),
        info.pointer("/info/backend/rrSCParity")
            .and_then(|v| v.as_i64())
            .expect("RRS parity"),
    );
    assert_eq!(parity.0, placement::default_parity(n) as i64);

    mc.mb("shapes", &[]);
    mc.mb("enc", &[]);
    mc.mb("vers", &[]);
    mc.mb("locked", &["--with-lock"]);
    let t = |p: &str| format!("{}/{p}", minio::ALIAS);
    mc.ok(&["version", "enable", &t("vers")]);
    mc.ok(&["tag", "set", &t("shapes"), "team=storage&tier=gold"]);
    mc.ok(&["anonymous", "set", "download", &t("shapes")]);
    mc.ok(&["quota", "set", &t("shapes"), "--size", "1GiB"]);
    mc.ok(&["ilm", "rule", "add", "--expire-days", "30", &t("shapes")]);
    mc.ok(&["encrypt", "set", "sse-s3", &t("enc")]);

    let shapes = shapes(n - parity.0 as usize);
    for s in &shapes {
        let flags: Vec<&str> = s.flags.iter().map(String::as_str).collect();
        mc.put(&format!("{}/{}", s.bucket, s.key), &s.body, &flags);
    }
    mc.ok(&["tag", "set", &t("shapes/odd/3"), "a=b&c=d"]);
    mc.ok(&["legalhold", "set", &t("locked/held")]);
    mc.ok(&["retention", "set", "governance", "1d", &t("locked/held")]);
    // Versions: small, larger than the versioned inline limit, a delete
    // marker, one byte.
    let versions = [
        b"version one\n".to_vec(),
        data(200_000, 16),
        Vec::new(),
        vec![7],
    ];
    for (i, body) in versions.iter().enumerate() {
        if i == 2 {
            mc.rm("vers/doc");
        } else {
            mc.put("vers/doc", body, &[]);
        }
    }
    // MinIO still reads it all back (a sanity check of the uploads).
    for s in shapes.iter().filter(|s| s.body.len() < 2 * MIB) {
        let path = format!("{}/{}", s.bucket, s.key);
        assert!(mc.cat(&path) == s.body, "{path}: MinIO round trip");
    }
    server.stop();

    // 1. Every xl.meta on every drive, MinIO's own files included.
    let mut count = 0;
    let mut objects_seen = 0;
    for d in &drives {
        for path in xl_metas(d) {
            let bytes = std::fs::read(&path).unwrap();
            let m = XlMeta::decode(&bytes)
                .unwrap_or_else(|e| panic!("{}: decode: {e}", path.display()));
            let again = m.encode().unwrap();
            if again != bytes {
                let at = again
                    .iter()
                    .zip(&bytes)
                    .position(|(a, b)| a != b)
                    .unwrap_or(again.len().min(bytes.len()));
                panic!(
                    "{}: re-encoding differs at byte {at} of {} (ours {} bytes)\n\
                     MinIO: {:02x?}\nours:  {:02x?}",
                    path.display(),
                    bytes.len(),
                    again.len(),
                    &bytes[at.saturating_sub(16)..(at + 32).min(bytes.len())],
                    &again[at.saturating_sub(16)..(at + 32).min(again.len())]
                );
            }
            assert!(m.clone().into_owned().encode().unwrap() == bytes);
            let journal = Journal::decode(&bytes).unwrap();
            assert_eq!(journal.entries.len(), m.len());
            for (je, e) in journal.entries.iter().zip(m.versions()) {
                assert_eq!(je.header, *e.header(), "{}", path.display());
                assert_eq!(
                    *e.header(),
                    e.version().header(),
                    "{}: stored header differs from the derived one",
                    path.display()
                );
            }
            if !path.starts_with(d.join(".minio.sys")) {
                objects_seen += 1;
            }
            count += 1;
        }
    }
    assert_eq!(
        objects_seen,
        (shapes.len() + 1) * n,
        "one xl.meta per object per drive"
    );

    // 2. What each object's xl.meta says.
    let mut inline = 0;
    for s in &shapes {
        inline += usize::from(check_shape(&drives, s, parity));
    }
    assert!(
        inline >= 5 && inline < shapes.len() - 5,
        "{inline} inline objects"
    );
    let edge_inline: Vec<bool> = ["inline/edge-minus-1", "inline/edge", "inline/edge-plus-1"]
        .iter()
        .map(|k| {
            let s = shapes.iter().find(|s| s.key == *k).unwrap();
            check_shape(&drives, s, parity)
        })
        .collect();
    assert!(
        edge_inline[0] && !edge_inline[2],
        "inline edge: {edge_inline:?}"
    );

    // Object tags and object lock live in MetaUsr.
    let first = |key: &str| std::fs::read(drives[0].join(key).join("xl.meta")).unwrap();
    let tagged = first("shapes/odd/3");
    let m = XlMeta::decode(&tagged).unwrap();
    let o = m.versions()[0].version().as_object().unwrap();
    assert_eq!(text(o.user("X-Amz-Tagging")).as_deref(), Some("a=b&c=d"));
    let held = first("locked/held");
    let m = XlMeta::decode(&held).unwrap();
    let o = m.versions()[0].version().as_object().unwrap();
    let user = user_pairs(o);
    assert!(
        user.contains(&("x-amz-object-lock-legal-hold".into(), "ON".into()))
            && user.contains(&("x-amz-object-lock-mode".into(), "GOVERNANCE".into())),
        "object lock in MetaUsr: {user:?}"
    );

    // The versioned key: newest first, a delete marker between.
    let files: Vec<Vec<u8>> = drives
        .iter()
        .map(|d| std::fs::read(d.join("vers/doc/xl.meta")).unwrap())
        .collect();
    let metas: Vec<XlMeta<'_>> = files.iter().map(|b| XlMeta::decode(b).unwrap()).collect();
    for m in &metas {
        let types: Vec<VersionType> = m
            .versions()
            .iter()
            .map(|e| e.header().version_type)
            .collect();
        assert_eq!(
            types,
            [
                VersionType::Object,
                VersionType::DeleteMarker,
                VersionType::Object,
                VersionType::Object
            ]
        );
        let sizes: Vec<i64> = m
            .versions()
            .iter()
            .filter_map(|e| e.version().as_object().map(|o| o.size))
            .collect();
        assert_eq!(sizes, [1, 200_000, 12]);
        assert!(
            m.versions()
                .iter()
                .all(|e| e.header().version_id != [0; 16])
        );
    }
    for (v, body) in [(0, &versions[3]), (3, &versions[0])] {
        let id = metas[0].versions()[v].header().version_id;
        assert!(reassemble_inline(&metas, &id) == *body, "version {v}");
    }
    let big = metas[0].versions()[2].version().as_object().unwrap();
    assert!(
        !big.inline_data(),
        "200 kB in a versioned bucket is not inline"
    );

    // 3. Bucket metadata: `.minio.sys/buckets/<bucket>/.metadata.bin`, an
    // inline object of MinIO's own volume.
    for bucket in ["shapes", "enc", "vers", "locked"] {
        let files: Vec<Vec<u8>> = drives
            .iter()
            .map(|d| {
                std::fs::read(
                    d.join(".minio.sys/buckets")
                        .join(bucket)
                        .join(".metadata.bin/xl.meta"),
                )
                .unwrap()
            })
            .collect();
        let metas: Vec<XlMeta<'_>> = files.iter().map(|b| XlMeta::decode(b).unwrap()).collect();
        let id = metas[0].versions()[0].header().version_id;
        let raw = reassemble_inline(&metas, &id);
        let bm = BucketMetadata::decode(&raw).unwrap_or_else(|e| panic!("{bucket}: {e}"));
        assert_eq!(bm.name.to_string_lossy(), bucket);
        assert!(
            bm.encode().unwrap() == raw,
            "{bucket}: .metadata.bin re-encodes differently"
        );
        assert!(bm.clone().into_owned().encode().unwrap() == raw);
        let has = |b: &[u8]| !b.is_empty();
        match bucket {
            "shapes" => {
                assert!(has(&bm.tagging_config_xml), "tags");
                assert!(has(&bm.policy_config_json), "policy");
                assert!(has(&bm.quota_config_json), "quota");
                assert!(has(&bm.lifecycle_config_xml), "lifecycle");
            }
            "enc" => assert!(has(&bm.encryption_config_xml), "encryption"),
            "vers" => assert!(
                String::from_utf8_lossy(&bm.versioning_config_xml).contains("Enabled"),
                "versioning"
            ),
            _ => assert!(has(&bm.object_lock_config_xml), "object lock"),
        }
    }
    assert!(
        count > objects_seen,
        "MinIO's own xl.meta files were seen too"
    );
}

#[test]
fn minio_xl_meta_round_trips_4_drives() {
    minio_xl_meta_round_trips(4);
}

#[test]
fn minio_xl_meta_round_trips_8_drives() {
    minio_xl_meta_round_trips(8);
}
