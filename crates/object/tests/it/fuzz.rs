//! Seeded mutation testing: damaged xl.meta and .metadata.bin files must
//! decode to a typed error or a value that re-encodes, never panic, and
//! never allocate according to a length field.
//!
//! The seed is printed with any failure; rerun with `TESSERA_TEST_SEED=<n>`.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::support::fixtures::*;
use object::bucketmeta::BucketMetadata;
use object::msgp::Writer;
use object::xlmeta::{Journal, Version, VersionHeader, XlMeta};
use xxhash_rust::xxh64::xxh64;

/// Run `f`, reporting the seed and case if it panics.
fn guarded(seed: u64, case: &str, f: impl FnOnce()) {
    if let Err(p) = catch_unwind(AssertUnwindSafe(f)) {
        eprintln!("failure with TESSERA_TEST_SEED={seed} in case {case}");
        resume_unwind(p);
    }
}

/// Decoding must not panic; if it succeeds, the result must re-encode and
/// decode back to the same versions and inline data.
fn check_xl_meta(buf: &[u8]) {
    let _ = Journal::decode(buf).map(|j| {
        for e in &j.entries {
            let _ = e.decode();
        }
    });
    if let Ok(m) = XlMeta::decode(buf) {
        let out = m.encode().expect("a decoded xl.meta re-encodes");
        let back = XlMeta::decode(&out).expect("our own encoding decodes");
        assert_eq!(back.versions(), m.versions());
        assert_eq!(back.inline(), m.inline());
        assert_eq!(back.encode().unwrap(), out, "encoding is stable");
    }
}

/// Recompute the CRC of a 1.3 file whose metadata length still parses, so
/// mutations reach the parser behind the checksum.
fn fix_crc(buf: &mut [u8]) {
    if buf.len() < 13 || buf[8] != 0xc6 {
        return;
    }
    let len = u32::from_be_bytes([buf[9], buf[10], buf[11], buf[12]]) as usize;
    let end = 13usize.saturating_add(len);
    if end + 5 <= buf.len() && buf[end] == 0xce {
        let crc = xxh64(&buf[13..end], 0) as u32;
        buf[end + 1..end + 5].copy_from_slice(&crc.to_be_bytes());
    }
}

fn mutate(rng: &mut fastrand::Rng, src: &[u8]) -> Vec<u8> {
    let mut b = src.to_vec();
    let edits = 1 + rng.usize(..4);
    for _ in 0..edits {
        if b.is_empty() {
            break;
        }
        let at = rng.usize(..b.len());
        match rng.usize(..6) {
            0 => b[at] ^= 1 << rng.usize(..8),
            1 => b[at] = rng.u8(..),
            2 => {
                b[at] =
                    [0x00, 0x7f, 0x80, 0xc0, 0xc6, 0xdc, 0xdd, 0xde, 0xdf, 0xff][rng.usize(..10)]
            }
            3 => {
                b.remove(at);
            }
            4 => b.insert(at, rng.u8(..)),
            _ => {
                // Overwrite a 4-byte run: hits lengths and counts.
                for i in at..(at + 4).min(b.len()) {
                    b[i] = 0xff;
                }
            }
        }
    }
    b
}

#[test]
fn mutated_and_truncated_xl_meta_never_panics() {
    let seed = seed();
    let mut rng = fastrand::Rng::with_seed(seed);
    let fixtures = all_fixtures();
    let mut decoded_after_mutation = 0usize;
    for (label, bytes) in &fixtures {
        // Every truncation.
        for cut in 0..bytes.len() {
            guarded(seed, &format!("{label} cut at {cut}"), || {
                check_xl_meta(&bytes[..cut]);
            });
        }
        for i in 0..3000 {
            let mut m = mutate(&mut rng, bytes);
            if i % 2 == 1 {
                fix_crc(&mut m);
            }
            guarded(seed, &format!("{label} mutation {i}"), || {
                check_xl_meta(&m);
                if XlMeta::decode(&m).is_ok() {
                    decoded_after_mutation += 1;
                }
            });
        }
    }
    // The CRC-fixed half reaches the parser: some mutations (e.g. in
    // string contents) still decode.
    assert!(decoded_after_mutation > 100, "{decoded_after_mutation}");
}

#[test]
fn mutated_version_bodies_and_headers_never_panic() {
    let seed = seed() ^ 0x5eed;
    let mut rng = fastrand::Rng::with_seed(seed);
    for (label, bytes) in all_fixtures() {
        let j = Journal::decode(&bytes).unwrap();
        for e in &j.entries {
            let hdr = e.header.to_bytes();
            for i in 0..1000 {
                let body = mutate(&mut rng, e.body);
                let h = mutate(&mut rng, &hdr);
                guarded(seed, &format!("{label} body mutation {i}"), || {
                    if let Ok(v) = Version::decode(&body) {
                        let again = v.to_bytes();
                        assert_eq!(Version::decode(&again).unwrap(), v);
                        let _ = v.header();
                    }
                    for hv in 1..=3 {
                        let _ = VersionHeader::decode(hv, &h);
                    }
                });
            }
        }
    }
}

#[test]
fn mutated_bucket_metadata_never_panics() {
    let seed = seed() ^ 0xb0c4;
    let mut rng = fastrand::Rng::with_seed(seed);
    for bucket in ["fix", "ver"] {
        let raw =
            std::fs::read(testdata().join(format!("extracted/{bucket}.metadata.bin"))).unwrap();
        for cut in 0..raw.len() {
            guarded(seed, &format!("{bucket} cut at {cut}"), || {
                assert!(BucketMetadata::decode(&raw[..cut]).is_err());
            });
        }
        for i in 0..3000 {
            let m = mutate(&mut rng, &raw);
            guarded(seed, &format!("{bucket} mutation {i}"), || {
                if let Ok(b) = BucketMetadata::decode(&m) {
                    let out = b.encode().unwrap();
                    assert_eq!(BucketMetadata::decode(&out).unwrap(), b);
                }
            });
        }
    }
}

/// A 1.3 xl.meta around arbitrary metadata bytes, with a valid CRC.
fn wrap(meta: &[u8], inline: &[u8]) -> Vec<u8> {
    let mut w = Writer::with_buffer(b"XL2 \x01\x00\x03\x00".to_vec());
    w.raw(&[0xc6]);
    w.raw(&(meta.len() as u32).to_be_bytes());
    w.raw(meta);
    w.uint32_fixed(xxh64(meta, 0) as u32);
    w.raw(inline);
    w.into_inner()
}

#[test]
fn hostile_lengths_fail_fast_without_allocating() {
    // Each of these would try to allocate gigabytes if a length field were
    // trusted; they must fail (or succeed trivially) at once.
    let huge_count = {
        let mut w = Writer::new();
        w.uint(3);
        w.uint(3);
        w.int(i64::MAX);
        w.into_inner()
    };
    assert!(XlMeta::decode(&wrap(&huge_count, &[])).is_err());

    let many_versions = {
        let mut w = Writer::new();
        w.uint(3);
        w.uint(3);
        w.int(90_000);
        w.into_inner()
    };
    let e = XlMeta::decode(&wrap(&many_versions, &[])).unwrap_err();
    assert!(e.is_truncated(), "{e:?}");

    // A body whose EcDist / PartNums claim 2^32-1 elements.
    for field in [&b"EcDist"[..], b"PartNums", b"PartETags", b"PartIdx"] {
        let mut w = Writer::new();
        w.map_len(2);
        w.str(b"Type");
        w.uint(1);
        w.str(b"V2Obj");
        w.map_len(1);
        w.str(field);
        w.raw(&[0xdd, 0xff, 0xff, 0xff, 0xff]);
        let body = w.into_inner();
        assert!(Version::decode(&body).unwrap_err().is_truncated());
    }
    // Metadata maps claiming 2^32-1 entries.
    for field in [&b"MetaSys"[..], b"MetaUsr"] {
        let mut w = Writer::new();
        w.map_len(2);
        w.str(b"Type");
        w.uint(1);
        w.str(b"V2Obj");
        w.map_len(1);
        w.str(field);
        w.raw(&[0xdf, 0xff, 0xff, 0xff, 0xff]);
        assert!(Version::decode(&w.into_inner()).unwrap_err().is_truncated());
    }
    // A bin32 metadata section longer than the file.
    let mut f = b"XL2 \x01\x00\x03\x00\xc6\xff\xff\xff\xff".to_vec();
    f.extend_from_slice(&[0; 64]);
    assert!(XlMeta::decode(&f).unwrap_err().is_truncated());
    // Inline data claiming a huge map and a huge value: repaired, not fatal.
    let mut m = XlMeta::new();
    m.add_delete_marker([1; 16], 1, 0).unwrap();
    let mut file = m.encode().unwrap();
    file.extend_from_slice(&[
        1, 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, b'k', 0xc6, 0xff, 0xff, 0xff, 0xff,
    ]);
    let d = XlMeta::decode(&file).unwrap();
    assert!(d.inline_repaired() && d.inline().is_empty());
    // Deeply nested unknown fields are skipped iteratively.
    let mut w = Writer::new();
    w.map_len(3);
    w.str(b"Type");
    w.uint(2);
    w.str(b"DelObj");
    w.map_len(2);
    w.str(b"ID");
    w.bin(&[1; 16]);
    w.str(b"MTime");
    w.int(1);
    w.str(b"Deep");
    let mut body = w.into_inner();
    body.extend(std::iter::repeat_n(0x91, 200_000));
    body.push(0xc0);
    let v = Version::decode(&body).unwrap();
    assert_eq!(v.unknown.len(), 1);
    assert_eq!(v.to_bytes(), body);
}
