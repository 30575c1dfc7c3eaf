//! MinIO's per-version signature: an order-independent combination of
//! xxh3 hashes of a version's metadata keys and values
//! (`hashDeterministicString` / `hashDeterministicBytes`), folded to four
//! bytes.

use xxhash_rust::xxh3::xxh3_64;

use super::version::{SysMeta, UserMeta};

const USER_META_SEED: u64 = 0xc2b4_0bba_c11a_7295;
const SYS_META_SEED: u64 = 0x1bbc_7e1d_de65_4743;
const KEY_MIX: u64 = 0x4ee3_bbaf_7ab2_506b;
const VALUE_MIX: u64 = 0x8da4_c8da_6619_4257;

fn hash_pairs<'x>(seed: u64, pairs: impl Iterator<Item = (&'x [u8], &'x [u8])>) -> u64 {
    pairs.fold(seed, |crc, (k, v)| {
        crc ^ (xxh3_64(k) ^ KEY_MIX).wrapping_add(xxh3_64(v) ^ VALUE_MIX)
    })
}

pub(super) fn hash_user_meta(m: Option<&UserMeta<'_>>) -> u64 {
    let it = m
        .into_iter()
        .flat_map(|m| m.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())));
    hash_pairs(USER_META_SEED, it)
}

pub(super) fn hash_sys_meta(m: Option<&SysMeta<'_>>) -> u64 {
    let it = m
        .into_iter()
        .flat_map(|m| m.iter().map(|(k, v)| (k.as_bytes(), &v[..])));
    hash_pairs(SYS_META_SEED, it)
}

pub(super) fn fold_signature(crc: u64) -> [u8; 4] {
    ((crc ^ (crc >> 32)) as u32).to_le_bytes()
}
