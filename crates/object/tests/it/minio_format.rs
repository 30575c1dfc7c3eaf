//! `format.json` against the real MinIO, both ways:
//!
//! * drives formatted by Tessera's `drive` crate (`build_formats` +
//!   `save_format`) are accepted by MinIO: it starts on them with the same
//!   deployment id and the same drive layout, leaves the files as they are,
//!   and stores and serves objects on them;
//! * drives MinIO formatted pass Tessera's checks (`from_json`,
//!   `check_format` at the expected position), re-serialise to the same
//!   bytes, equal what `build_formats` makes of the same ids, have the set
//!   layout `placement` computes, and open as an object layer with MinIO's
//!   deployment id.
//!
//! Compiled only with the `minio-interop` feature (see `support/minio.rs`
//! for where the binaries come from).
#![cfg(feature = "minio-interop")]

use std::path::{Path, PathBuf};

use crate::support::data;
use crate::support::minio;
use crate::support::minio::Minio;
use drive::format::{FORMAT_FILE, META_VOLUME};
use drive::{
    DrivePosition, FormatErasureV3, LocalDrive, LocalDriveConfig, build_formats, check_format,
    save_format, verify_format,
};
use md5::{Digest, Md5};
use object::layer::{LayerOptions, ObjectLayer};
use uuid::Uuid;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn dirs(root: &Path, n: usize) -> Vec<PathBuf> {
    (1..=n).map(|i| root.join(format!("d{i}"))).collect()
}

fn format_path(dir: &Path) -> PathBuf {
    dir.join(META_VOLUME).join(FORMAT_FILE)
}

/// Position of the `i`-th endpoint: MinIO fills set 0 first, in endpoint
/// order.
fn position(i: usize, set_size: usize) -> DrivePosition {
    DrivePosition {
        set: i / set_size,
        disk: i % set_size,
    }
}

/// What `mc admin info` says of each drive, by path: (uuid, set, index).
fn minio_drives(info: &serde_json::Value) -> Vec<(String, String, usize, usize)> {
    let mut out = Vec::new();
    for server in info
        .pointer("/info/servers")
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
    {
        for d in server
            .get("drives")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
        {
            let s = |k: &str| d.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let u = |k: &str| d.get(k).and_then(|v| v.as_u64()).unwrap_or(u64::MAX) as usize;
            out.push((s("path"), s("uuid"), u("set_index"), u("disk_index")));
        }
    }
    out.sort();
    out
}

fn admin_info(mc: &minio::Mc) -> serde_json::Value {
    let out = mc.ok(&["admin", "info", "--json", minio::ALIAS]);
    serde_json::from_slice(&out).expect("mc admin info --json")
}

/// Tessera formats `n` directories; MinIO must start on them as they are.
fn tessera_formats_minio_starts(n: usize, ellipsis: bool) {
    let work = tempfile::tempdir().unwrap();
    let drives = dirs(work.path(), n);
    let set_size = placement::choose_set_drive_count(n, None, None).unwrap();
    let deployment = Uuid::new_v4();
    let sets: Vec<Vec<Uuid>> = (0..n / set_size)
        .map(|_| (0..set_size).map(|_| Uuid::new_v4()).collect())
        .collect();
    let formats = build_formats(deployment, &sets).unwrap();
    rt().block_on(async {
        for (dir, format) in drives.iter().zip(&formats) {
            std::fs::create_dir_all(dir).unwrap();
            let d = LocalDrive::open(dir.clone(), LocalDriveConfig::default())
                .await
                .unwrap();
            save_format(&d, format, false).await.unwrap();
        }
    });
    let written: Vec<Vec<u8>> = drives
        .iter()
        .map(|d| std::fs::read(format_path(d)).unwrap())
        .collect();

    let pattern = format!("{}/d{{1...{n}}}", work.path().display());
    let server = if ellipsis {
        Minio::on_args(&[&pattern], &work.path().join("minio"))
    } else {
        Minio::on(&drives, &work.path().join("minio"))
    }
    .start();
    let mc = server.mc();

    // Same deployment, same layout, drive by drive.
    let info = admin_info(&mc);
    assert_eq!(
        info.pointer("/info/deploymentID").and_then(|v| v.as_str()),
        Some(deployment.to_string().as_str()),
        "MinIO's deployment id ({n} drives)"
    );
    assert_eq!(
        info.pointer("/info/backend/onlineDisks")
            .and_then(|v| v.as_u64()),
        Some(n as u64),
        "{info}"
    );
    let mut want: Vec<(String, String, usize, usize)> = drives
        .iter()
        .zip(&formats)
        .enumerate()
        .map(|(i, (dir, f))| {
            let p = position(i, set_size);
            (dir.display().to_string(), f.xl.this.clone(), p.set, p.disk)
        })
        .collect();
    want.sort();
    assert_eq!(minio_drives(&info), want, "drive ids and positions");

    // MinIO stores and serves objects on Tessera's drives.
    mc.mb("onformat", &[]);
    let objects = [
        ("small.txt", b"on a Tessera-formatted drive\n".to_vec()),
        ("big.bin", data(3 * (1 << 20) + 5, n as u64)),
    ];
    for (key, body) in &objects {
        mc.put(&format!("onformat/{key}"), body, &[]);
    }
    for (key, body) in &objects {
        let got = mc.cat(&format!("onformat/{key}"));
        assert!(got == *body, "{key}: MinIO read back different bytes");
        let stat = mc.stat(&format!("onformat/{key}"));
        let (size, etag, _) = minio::stat_summary(&stat);
        assert_eq!(size, Some(body.len() as u64));
        assert_eq!(etag, Some(hex::encode(Md5::digest(body))));
    }
    server.stop();

    // MinIO had nothing to correct: the files are byte for byte ours.
    for (i, dir) in drives.iter().enumerate() {
        let now = std::fs::read(format_path(dir)).unwrap();
        assert!(
            now == written[i],
            "d{}: MinIO rewrote format.json\nours:  {}\nMinIO: {}",
            i + 1,
            String::from_utf8_lossy(&written[i]),
            String::from_utf8_lossy(&now)
        );
    }
}

#[test]
fn tessera_formatted_4_drives_minio_starts() {
    tessera_formats_minio_starts(4, false);
}

#[test]
fn tessera_formatted_8_drives_minio_starts() {
    tessera_formats_minio_starts(8, true);
}

/// MinIO formats `n` fresh directories; Tessera must accept them as they
/// are and agree on the layout.
fn minio_formats_tessera_checks(n: usize) {
    let work = tempfile::tempdir().unwrap();
    let drives = dirs(work.path(), n);
    let pattern = format!("{}/d{{1...{n}}}", work.path().display());
    let server = Minio::on_args(&[&pattern], &work.path().join("minio")).start();
    let info = admin_info(&server.mc());
    server.stop();

    let deployment = info
        .pointer("/info/deploymentID")
        .and_then(|v| v.as_str())
        .unwrap_or_else(|| panic!("no deployment id: {info}"))
        .to_string();
    let raw: Vec<Vec<u8>> = drives
        .iter()
        .map(|d| std::fs::read(format_path(d)).unwrap())
        .collect();
    let formats: Vec<FormatErasureV3> = raw
        .iter()
        .enumerate()
        .map(|(i, b)| {
            FormatErasureV3::from_json(b)
                .unwrap_or_else(|e| panic!("d{}: {e}: {}", i + 1, String::from_utf8_lossy(b)))
        })
        .collect();

    // The set layout placement computes is MinIO's.
    let set_size = placement::choose_set_drive_count(n, None, None).unwrap();
    let reference = &formats[0];
    assert_eq!(reference.id, deployment);
    assert_eq!(
        reference.xl.sets.len(),
        n / set_size,
        "set count ({n} drives)"
    );
    assert!(reference.xl.sets.iter().all(|s| s.len() == set_size));
    for (i, (f, bytes)) in formats.iter().zip(&raw).enumerate() {
        // Every drive passes Tessera's check at its endpoint position.
        let at = check_format(reference, f, Some(position(i, set_size)))
            .unwrap_or_else(|e| panic!("d{}: {e}", i + 1));
        assert_eq!(at, position(i, set_size));
        // Tessera writes exactly MinIO's bytes for the same value.
        assert!(
            f.to_json() == *bytes,
            "d{}: re-serialised format.json differs\nMinIO:   {}\nTessera: {}",
            i + 1,
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(&f.to_json())
        );
    }
    // build_formats over MinIO's ids makes MinIO's files.
    let sets: Vec<Vec<Uuid>> = reference
        .xl
        .sets
        .iter()
        .map(|s| s.iter().map(|id| Uuid::parse_str(id).unwrap()).collect())
        .collect();
    let built = build_formats(Uuid::parse_str(&deployment).unwrap(), &sets).unwrap();
    for (i, (b, bytes)) in built.iter().zip(&raw).enumerate() {
        assert!(
            b.to_json() == *bytes,
            "d{}: build_formats differs from MinIO\nMinIO:   {}\nTessera: {}",
            i + 1,
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(&b.to_json())
        );
    }
    // And MinIO's own view of the drives agrees with the files.
    let mut want: Vec<(String, String, usize, usize)> = drives
        .iter()
        .zip(&formats)
        .map(|(dir, f)| {
            let p = f.position().unwrap();
            (dir.display().to_string(), f.xl.this.clone(), p.set, p.disk)
        })
        .collect();
    want.sort();
    assert_eq!(minio_drives(&info), want);

    rt().block_on(async {
        for (i, dir) in drives.iter().enumerate() {
            let d = LocalDrive::open(dir.clone(), LocalDriveConfig::default())
                .await
                .unwrap();
            let f = verify_format(&d, reference, Some(position(i, set_size)))
                .await
                .unwrap_or_else(|e| panic!("d{}: {e}", i + 1));
            assert_eq!(f, formats[i]);
        }
        // The object layer opens MinIO's deployment as it is.
        let layer = ObjectLayer::open_dirs(&drives, LayerOptions::default())
            .await
            .unwrap_or_else(|e| panic!("open MinIO's {n} drives: {e}"));
        assert_eq!(layer.deployment_id().to_string(), deployment);
        assert_eq!(layer.sets().len(), n / set_size);
    });
    // Opening wrote nothing over MinIO's formats.
    for (i, dir) in drives.iter().enumerate() {
        assert!(
            std::fs::read(format_path(dir)).unwrap() == raw[i],
            "d{}",
            i + 1
        );
    }
}

#[test]
fn minio_formatted_4_drives_pass_tessera_checks() {
    minio_formats_tessera_checks(4);
}

#[test]
fn minio_formatted_8_drives_pass_tessera_checks() {
    minio_formats_tessera_checks(8);
}

/// Two erasure sets (18 drives: 2 x 9): the layout of several sets, and
/// the drive order within each, agree too.
#[test]
fn minio_formatted_18_drives_two_sets_pass_tessera_checks() {
    minio_formats_tessera_checks(18);
}
