//! DARE 2.0 against minio/sio's own ciphertexts, and tampering.

use serde::Deserialize;
use sha2::{Digest, Sha256};
use sse::dare::{
    CipherSuite, DareError, Decryptor, Encryptor, PACKAGE_LEN, PAYLOAD_LEN, encrypted_len,
    package_range,
};

#[derive(Deserialize)]
struct Vector {
    cipher: String,
    key: String,
    nonce: String,
    plain_len: usize,
    plain_seed: u64,
    cipher_len: usize,
    cipher_hex: Option<String>,
    cipher_sha256: String,
    first_package_hex: String,
}

/// The generator's plaintext: xorshift64, low byte of each state.
fn plaintext(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn vectors() -> Vec<Vector> {
    serde_json::from_str(include_str!("../testdata/dare.json")).unwrap()
}

fn suite(name: &str) -> CipherSuite {
    match name {
        "AES-256-GCM" => CipherSuite::Aes256Gcm,
        "CHACHA20-POLY1305" => CipherSuite::ChaCha20Poly1305,
        other => panic!("unknown suite {other}"),
    }
}

fn key_nonce(v: &Vector) -> ([u8; 32], [u8; 12]) {
    (
        hex::decode(&v.key).unwrap().try_into().unwrap(),
        hex::decode(&v.nonce).unwrap().try_into().unwrap(),
    )
}

#[test]
fn matches_minio_sio_byte_for_byte() {
    let vs = vectors();
    assert_eq!(vs.len(), 18);
    for v in &vs {
        let (key, nonce) = key_nonce(v);
        let plain = plaintext(v.plain_len, v.plain_seed);
        let ct = Encryptor::new(&key, nonce, suite(&v.cipher)).seal_all(&plain);
        let ctx = format!("{} {} bytes", v.cipher, v.plain_len);
        assert_eq!(ct.len(), v.cipher_len, "{ctx}");
        assert_eq!(ct.len() as u64, encrypted_len(v.plain_len as u64));
        assert_eq!(hex::encode(Sha256::digest(&ct)), v.cipher_sha256, "{ctx}");
        assert!(hex::encode(&ct).starts_with(&v.first_package_hex), "{ctx}");
        if let Some(h) = &v.cipher_hex {
            assert_eq!(&hex::encode(&ct), h, "{ctx}");
        }
        // And we open what sio sealed (the same bytes).
        assert_eq!(
            Decryptor::new(&key, 0).open_all(&ct).unwrap(),
            plain,
            "{ctx}"
        );
    }
}

#[test]
fn range_reads_open_only_the_packages_they_touch() {
    let key = [3u8; 32];
    let total = 5 * PAYLOAD_LEN + 123;
    let plain = plaintext(total, 9);
    let ct = Encryptor::new(&key, [9; 12], CipherSuite::ChaCha20Poly1305).seal_all(&plain);
    for (off, len) in [
        (0usize, 1usize),
        (PAYLOAD_LEN - 1, 2),
        (PAYLOAD_LEN, PAYLOAD_LEN),
        (3 * PAYLOAD_LEN + 7, 2 * PAYLOAD_LEN + 116),
        (total - 1, 1),
    ] {
        let (first, bytes, skip) = package_range(off as u64, len as u64, total as u64);
        let part = &ct[bytes.start as usize..bytes.end as usize];
        let opened = Decryptor::new(&key, first).open_prefix(part).unwrap();
        assert_eq!(
            &opened[skip..skip + len],
            &plain[off..off + len],
            "{off}+{len}"
        );
        // The same packages opened as the wrong sequence number fail.
        assert!(Decryptor::new(&key, first + 1).open_prefix(part).is_err());
    }
}

#[test]
fn tampering_never_yields_plaintext() {
    let key = [5u8; 32];
    for s in [CipherSuite::Aes256Gcm, CipherSuite::ChaCha20Poly1305] {
        let plain = plaintext(3 * PAYLOAD_LEN + 500, 1);
        let ct = Encryptor::new(&key, [4; 12], s).seal_all(&plain);
        // A flipped bit anywhere: header, ciphertext or tag of any package.
        for pos in (0..ct.len())
            .step_by(4099)
            .chain([0, 1, 2, 4, 15, 16, ct.len() - 1])
        {
            let mut bad = ct.clone();
            bad[pos] ^= 0x10;
            assert!(
                Decryptor::new(&key, 0).open_all(&bad).is_err(),
                "{s:?}: flip at {pos} accepted"
            );
        }
        // Swapped packages.
        let mut swapped = ct.clone();
        let (a, b) = swapped.split_at_mut(PACKAGE_LEN);
        a.swap_with_slice(&mut b[..PACKAGE_LEN]);
        assert!(matches!(
            Decryptor::new(&key, 0).open_all(&swapped),
            Err(DareError::TagMismatch(0))
        ));
        // Truncated: the final package dropped, or cut inside.
        assert_eq!(
            Decryptor::new(&key, 0).open_all(&ct[..3 * PACKAGE_LEN]),
            Err(DareError::Truncated)
        );
        assert!(
            Decryptor::new(&key, 0)
                .open_all(&ct[..ct.len() - 1])
                .is_err()
        );
        // A package repeated.
        let mut dup = ct[..PACKAGE_LEN].to_vec();
        dup.extend_from_slice(&ct);
        assert!(Decryptor::new(&key, 0).open_all(&dup).is_err());
        // Data after the final package.
        let mut extra = ct.clone();
        extra.extend_from_slice(&ct[ct.len() - 100..]);
        assert!(Decryptor::new(&key, 0).open_all(&extra).is_err());
        // A package spliced in from another stream under the same key.
        let other = Encryptor::new(&key, [8; 12], s).seal_all(&plain);
        let mut spliced = ct.clone();
        spliced[PACKAGE_LEN..2 * PACKAGE_LEN].copy_from_slice(&other[PACKAGE_LEN..2 * PACKAGE_LEN]);
        assert!(matches!(
            Decryptor::new(&key, 0).open_all(&spliced),
            Err(DareError::NonceMismatch(1))
        ));
        // The wrong key.
        assert!(matches!(
            Decryptor::new(&[6u8; 32], 0).open_all(&ct),
            Err(DareError::TagMismatch(0))
        ));
        // Garbage never panics.
        let mut x = 1u64;
        for len in [0usize, 1, 15, 16, 17, 32, 33, 100, 70_000] {
            let junk: Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (x >> 33) as u8
                })
                .collect();
            let _ = Decryptor::new(&key, 0).open_all(&junk);
        }
    }
}

#[test]
fn empty_stream_is_zero_bytes() {
    let ct = Encryptor::new(&[1; 32], [2; 12], CipherSuite::Aes256Gcm).seal_all(b"");
    assert!(ct.is_empty());
    assert_eq!(Decryptor::new(&[1; 32], 0).open_all(&ct).unwrap(), b"");
}

#[derive(Deserialize)]
struct KeyVector {
    external: String,
    random: String,
    iv: String,
    nonce: String,
    cipher: String,
    domain: String,
    bucket: String,
    object: String,
    object_key: String,
    sealed_key: String,
    part_key_7: String,
    etag: String,
    sealed_etag: String,
}

fn arr<const N: usize>(h: &str) -> [u8; N] {
    hex::decode(h).unwrap().try_into().unwrap()
}

/// Object keys, sealed keys, part keys and sealed ETags against an
/// independent Go derivation (standard library SHA-256/HMAC, minio/sio).
#[test]
fn key_hierarchy_matches_the_go_derivation() {
    use sse::key::{Domain, ObjectKey, SealedKey};
    let vs: Vec<KeyVector> = serde_json::from_str(include_str!("../testdata/keys.json")).unwrap();
    assert_eq!(vs.len(), 3);
    for v in vs {
        let domain = match v.domain.as_str() {
            "SSE-C" => Domain::SseC,
            "SSE-S3" => Domain::SseS3,
            _ => Domain::SseKms,
        };
        let ext = arr::<32>(&v.external);
        let ok = ObjectKey::generate(&ext, &arr::<32>(&v.random));
        assert_eq!(hex::encode(ok.0), v.object_key);
        let sealed = ok.seal(
            &ext,
            sse::key::Fresh {
                iv: arr::<32>(&v.iv),
                nonce: arr::<12>(&v.nonce),
            },
            suite(&v.cipher),
            domain,
            &v.bucket,
            &v.object,
        );
        assert_eq!(hex::encode(sealed.key), v.sealed_key, "{}", v.object);
        let opened = ObjectKey::unseal(
            &ext,
            &SealedKey {
                key: arr::<64>(&v.sealed_key),
                iv: arr::<32>(&v.iv),
                algorithm: sse::key::SEAL_ALGORITHM.into(),
            },
            domain,
            &v.bucket,
            &v.object,
        )
        .unwrap();
        assert_eq!(opened, ok);
        assert_eq!(hex::encode(ok.part_key(7)), v.part_key_7);
        let tag = ok.seal_etag(v.etag.as_bytes(), arr::<12>(&v.nonce), suite(&v.cipher));
        assert_eq!(hex::encode(&tag), v.sealed_etag);
        assert_eq!(ok.unseal_etag(&tag).unwrap(), v.etag.as_bytes());
    }
}

#[derive(Deserialize)]
struct KmsVector {
    config: String,
    context: std::collections::BTreeMap<String, String>,
    plaintext: String,
    ciphertext: String,
    form: String,
}

/// Data keys sealed as MinIO's builtin KMS seals them (binary form, and the
/// legacy JSON envelopes with AES-256-GCM and ChaCha20-Poly1305).
#[test]
fn static_kms_opens_minio_shaped_data_keys() {
    use sse::kms::{Context, Kms, StaticKms};
    let vs: Vec<KmsVector> = serde_json::from_str(include_str!("../testdata/kms.json")).unwrap();
    assert_eq!(vs.len(), 9);
    for v in vs {
        let kms = StaticKms::parse(&v.config).unwrap();
        let ctx = Context(v.context.clone());
        let ct = hex::decode(&v.ciphertext).unwrap();
        let got = kms
            .decrypt("tessera-key", &ct, &ctx)
            .unwrap_or_else(|e| panic!("{} {:?}: {e}", v.form, v.context));
        assert_eq!(hex::encode(got), v.plaintext, "{}", v.form);
        if v.form == "binary" {
            // Sealing the same key with the same IV and nonce gives the
            // same bytes: the context text is canonical.
            let mut random = [0u8; 60];
            random[..32].copy_from_slice(&hex::decode(&v.plaintext).unwrap());
            random[32..].copy_from_slice(&ct[ct.len() - 28..]);
            let dek = kms.generate_key("tessera-key", &ctx, &random).unwrap();
            assert_eq!(hex::encode(&dek.ciphertext), v.ciphertext);
        }
    }
}
