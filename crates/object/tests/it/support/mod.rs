//! What the integration tests share: deterministic data, drive
//! directories, an object layer opened on them, PUT and GET shorthands,
//! and what a drive directory holds (temp leftovers, data directories,
//! part files). `faulty` has drives that fail on demand, `fixtures` the
//! files captured from MinIO, `minio` the real MinIO server as an oracle.

pub mod faulty;
pub mod fixtures;
#[cfg(feature = "minio-interop")]
pub mod minio;

use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use object::layer::{
    Error, GetOptions, LayerOptions, ObjectInfo, ObjectLayer, PutOptions, VersionSel,
};
use uuid::Uuid;

pub use faulty::{CommitFault, Fault, FaultyDrive, faulty_layer, faulty_layer_with};

/// `len` deterministic pseudo-random bytes: the same for the same `seed`.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut out = vec![0u8; len];
    fastrand::Rng::with_seed(seed).fill(&mut out);
    out
}

/// `root/d1` .. `root/dN`.
pub fn dirs(root: &Path, n: usize) -> Vec<PathBuf> {
    (1..=n).map(|i| root.join(format!("d{i}"))).collect()
}

/// The hex MD5 of `b`, from an implementation independent of the layer's.
pub fn md5_hex(b: &[u8]) -> String {
    hex::encode(Md5::digest(b))
}

/// An object layer over local directories, default options.
pub async fn open(dirs: &[PathBuf]) -> ObjectLayer {
    ObjectLayer::open_dirs(dirs, LayerOptions::default())
        .await
        .expect("open")
}

/// PUT options announcing a body of `len` bytes.
pub fn sized(len: usize) -> PutOptions {
    PutOptions {
        size: Some(len as u64),
        ..Default::default()
    }
}

/// PUTs `body` as `b/k`, its size announced; panics on an error.
pub async fn put(l: &ObjectLayer, b: &str, k: &str, body: &[u8]) -> ObjectInfo {
    l.put_object(b, k, &mut &body[..], &sized(body.len()))
        .await
        .unwrap_or_else(|e| panic!("put {k}: {e}"))
}

/// The whole object `b/k`.
pub async fn get(l: &ObjectLayer, b: &str, k: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    l.get_object(b, k, &GetOptions::default(), &mut out).await?;
    Ok(out)
}

/// The whole version `v` of `b/k`.
pub async fn get_version(
    l: &ObjectLayer,
    b: &str,
    k: &str,
    v: VersionSel,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let opts = GetOptions {
        version_id: Some(v),
        range: None,
    };
    l.get_object(b, k, &opts, &mut out).await?;
    Ok(out)
}

/// Files and directories left in a drive's temporary area: everything but
/// the trash and the spread staging directories, plus whatever those hold
/// (they exist between writes, empty).
pub fn staging_leftovers(drive: &Path) -> Vec<String> {
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let tmp = drive.join(".minio.sys/tmp");
    let mut left: Vec<String> = names(&tmp)
        .into_iter()
        .filter(|n| n != ".trash" && n != ".spread")
        .collect();
    for dir in names(&tmp.join(".spread")) {
        for name in names(&tmp.join(".spread").join(&dir)) {
            left.push(format!(".spread/{dir}/{name}"));
        }
    }
    left.sort();
    left
}

/// Removes everything of `bucket` on one drive directory (a lost drive's
/// data, the drive itself still formatted).
pub fn wipe_bucket(dir: &Path, bucket: &str) {
    let p = dir.join(bucket);
    std::fs::remove_dir_all(&p).unwrap();
    std::fs::create_dir_all(&p).unwrap();
}

/// The files under the data directories of `bucket/key` on one drive
/// directory, sorted.
pub fn part_files(dir: &Path, bucket: &str, key: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let obj = dir.join(bucket).join(key);
    if let Ok(rd) = std::fs::read_dir(&obj) {
        for e in rd.flatten() {
            if e.path().is_dir() {
                for f in std::fs::read_dir(e.path()).unwrap().flatten() {
                    out.push(f.path());
                }
            }
        }
    }
    out.sort();
    out
}

/// Data directories (UUID-named) of an object on one drive.
pub fn data_dirs(drive: &Path, bucket: &str, key: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(drive.join(bucket).join(key))
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| Uuid::parse_str(n).is_ok())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
