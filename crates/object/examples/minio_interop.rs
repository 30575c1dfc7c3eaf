//! Write xl.meta files of our own into a (stopped) MinIO deployment, to check
//! that MinIO reads what this crate encodes.
//!
//! ```text
//! cargo run -p object --example minio_interop -- D1 D2 D3 D4
//! ```
//!
//! D1..D4 are the drive roots of a 4-drive (EC 2+2) MinIO erasure set, in
//! set order, holding the fixture objects described in
//! `testdata/minio/README.md`. Two edits are made, on every drive:
//!
//! 1. `ver/doc.txt`: the delete marker is removed and a new object version
//!    `7e55e7a0-0000-4000-8000-000000000001`, built from scratch by this
//!    crate, becomes the latest. Its inline shards are those of the oldest
//!    version (content `version one\n`), so no erasure coding is needed here;
//!    it carries the user metadata `X-Amz-Meta-Written-By: tessera`.
//! 2. `fix/tessera.txt`: a new object (null version) that MinIO never wrote,
//!    in a brand-new xl.meta, reusing `fix/small.txt`'s shards and layout.
//!
//! Afterwards start MinIO again and check with `mc`:
//! `mc ls --versions t/ver`, `mc cat t/ver/doc.txt`, `mc stat t/ver/doc.txt`,
//! `mc cat t/fix/tessera.txt`, `mc stat t/fix/tessera.txt`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use object::xlmeta::{
    ErasureParams, META_CONTENT_TYPE, META_ETAG, META_INLINE_DATA, ObjectVersion, Version, XlMeta,
};

const NEW_VERSION: &str = "7e55e7a0-0000-4000-8000-000000000001";
const NEW_DATA_DIR: &str = "7e55e7a0-0000-4000-8000-0000000000dd";

fn main() -> ExitCode {
    let drives: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if drives.len() != 4 {
        eprintln!("usage: minio_interop D1 D2 D3 D4");
        return ExitCode::FAILURE;
    }
    match run(&drives) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn uuid(s: &str) -> [u8; 16] {
    *uuid::Uuid::parse_str(s).expect("valid uuid").as_bytes()
}

fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(1)
}

fn read(p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// A new inline object version copying `src`'s erasure layout, for the
/// drive at `drive`.
fn inline_version(
    src: &ObjectVersion<'_>,
    version_id: [u8; 16],
    mod_time: i64,
    drive: usize,
) -> Result<Version<'static>, String> {
    let mut o = ObjectVersion::new(
        version_id,
        uuid(NEW_DATA_DIR),
        mod_time,
        src.size,
        ErasureParams {
            data_blocks: u8::try_from(src.erasure_m).map_err(|e| e.to_string())?,
            parity_blocks: u8::try_from(src.erasure_n).map_err(|e| e.to_string())?,
            block_size: src.erasure_block_size,
            distribution: src.erasure_dist.clone(),
        },
    );
    o.erasure_index = o
        .ec_index_for_drive(drive)
        .ok_or("drive outside the distribution")?;
    o.push_part(1, src.size, src.size, None);
    let etag = src.etag().ok_or("source has no etag")?.to_string();
    o.set_user(META_ETAG, etag);
    o.set_user(META_CONTENT_TYPE, "text/plain");
    o.set_user("X-Amz-Meta-Written-By", "tessera");
    o.set_sys(META_INLINE_DATA, b"true".to_vec());
    Ok(Version::object(o, 0))
}

fn run(drives: &[PathBuf]) -> Result<(), String> {
    let mod_time = now_nanos();
    let new_id = uuid(NEW_VERSION);
    for (d, root) in drives.iter().enumerate() {
        // 1. A new latest version of ver/doc.txt, delete marker removed.
        let path = root.join("ver/doc.txt/xl.meta");
        let buf = read(&path)?;
        let mut m = XlMeta::decode(&buf).map_err(|e| format!("{}: {e}", path.display()))?;
        let oldest = m.versions().last().ok_or("no versions")?;
        let src = oldest
            .version()
            .as_object()
            .ok_or("oldest is not an object")?;
        let src_id = src.version_id;
        let shard = m
            .inline_data(&src_id)
            .ok_or("oldest version has no inline shard")?
            .to_vec();
        let v = inline_version(src, new_id, mod_time, d)?;
        if let Some(dm) = m
            .versions()
            .iter()
            .find(|e| e.version().as_delete_marker().is_some())
            .map(|e| e.header().version_id)
        {
            m.remove_version(&dm).map_err(|e| e.to_string())?;
        }
        m.add_version(v).map_err(|e| e.to_string())?;
        m.set_inline_data(&new_id, shard);
        let out = m.encode().map_err(|e| e.to_string())?;
        std::fs::write(&path, out).map_err(|e| format!("{}: {e}", path.display()))?;

        // 2. A brand-new object fix/tessera.txt.
        let path = root.join("fix/small.txt/xl.meta");
        let buf = read(&path)?;
        let small = XlMeta::decode(&buf).map_err(|e| format!("{}: {e}", path.display()))?;
        let src = small
            .latest()
            .and_then(|e| e.version().as_object())
            .ok_or("small.txt has no object version")?;
        let null = [0u8; 16];
        let shard = small.inline_data(&null).ok_or("no inline shard")?.to_vec();
        let mut m = XlMeta::new();
        m.add_version(inline_version(src, null, mod_time, d)?)
            .map_err(|e| e.to_string())?;
        m.set_inline_data(&null, shard);
        let dir = root.join("fix/tessera.txt");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let out = m.encode().map_err(|e| e.to_string())?;
        std::fs::write(dir.join("xl.meta"), out).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    println!("wrote ver/doc.txt (new version {NEW_VERSION}) and fix/tessera.txt on 4 drives");
    Ok(())
}
