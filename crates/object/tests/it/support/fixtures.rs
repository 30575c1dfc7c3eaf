//! The files captured from a real MinIO (`testdata/minio/`), and the seed
//! of the randomized tests.

use std::path::PathBuf;

use object::xlmeta::XlMeta;

/// Number of drives in the fixture erasure set (EC 2+2).
pub const DRIVES: usize = 4;

/// Objects captured from MinIO, as `bucket/object` paths.
pub const OBJECTS: [&str; 7] = [
    "fix/empty",
    "fix/small.txt",
    "fix/onemib.bin",
    "fix/twenty.bin",
    "fix/multi.bin",
    "fix/meta.txt",
    "ver/doc.txt",
];

/// Bucket metadata objects captured from MinIO.
pub const BUCKET_METAS: [&str; 2] = [
    ".minio.sys/buckets/fix/.metadata.bin",
    ".minio.sys/buckets/ver/.metadata.bin",
];

pub fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/minio")
}

/// The xl.meta of `object` on drive `drive` (0-based).
pub fn xl_meta(drive: usize, object: &str) -> Vec<u8> {
    let p = testdata()
        .join(format!("d{}", drive + 1))
        .join(object)
        .join("xl.meta");
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every fixture xl.meta: (label, bytes).
pub fn all_fixtures() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for obj in OBJECTS.iter().chain(BUCKET_METAS.iter()) {
        for d in 0..DRIVES {
            out.push((format!("d{}/{obj}", d + 1), xl_meta(d, obj)));
        }
    }
    out
}

/// Reassemble an inline object from the drives' xl.meta files: take the
/// inline shards of the drives holding data shards 1..=M (by `EcIndex`),
/// strip each shard's 32-byte HighwayHash, concatenate, and cut to size.
/// Small (inline) objects are a single erasure block, so each shard is one
/// hash followed by ceil(size / M) bytes.
pub fn reassemble_inline(metas: &[XlMeta<'_>], version_id: &[u8; 16]) -> Vec<u8> {
    let mut shards: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut size = 0;
    let mut m = 0;
    for meta in metas {
        let v = meta.find(version_id).expect("version on every drive");
        let o = v.version().as_object().expect("object version");
        size = usize::try_from(o.size).unwrap();
        m = usize::try_from(o.erasure_m).unwrap();
        if o.erasure_index as usize <= m {
            let shard = meta.inline_data(version_id).expect("inline shard");
            let per_shard = size.div_ceil(m);
            assert_eq!(shard.len(), 32 + per_shard, "one bitrot hash + one block");
            shards.push((o.erasure_index, shard[32..].to_vec()));
        }
    }
    assert_eq!(shards.len(), m, "one data shard per data drive");
    shards.sort_by_key(|(i, _)| *i);
    let mut out: Vec<u8> = shards.into_iter().flat_map(|(_, s)| s).collect();
    out.truncate(size);
    out
}

/// The seed for randomized tests: `TESSERA_TEST_SEED` if set, else fixed.
pub fn seed() -> u64 {
    std::env::var("TESSERA_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7e55_e7a0_0000_0001)
}
