//! madmin's admin-API payload encryption against madmin-go itself
//! (`testdata/madmin.json`, written by `testdata/madmin-gen`), and
//! tampering.

use std::collections::HashMap;

use ring::aead::{AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use sse::madmin::{
    Algorithm, Argon2Memory, HEADER_LEN, MadminError, SEALED_FRAGMENT_LEN, decrypt, decrypt_with,
    derive_key, encrypt, encrypt_with, encrypted_len, is_encrypted, open_stream, seal_stream,
};

#[derive(Deserialize)]
struct Oracle {
    vectors: Vec<Vector>,
    madmin: Vec<RealVector>,
    cases: Vec<Case>,
}

/// A payload for a fixed salt and nonce.
#[derive(Deserialize)]
struct Vector {
    id: u8,
    password: String,
    salt: String,
    nonce: String,
    key: String,
    plain_len: usize,
    plain_seed: u64,
    cipher_len: usize,
    cipher_sha256: String,
    cipher_hex: Option<String>,
}

/// A payload of madmin.EncryptData with its own randomness.
#[derive(Deserialize)]
struct RealVector {
    id: u8,
    password: String,
    plain_len: usize,
    plain_seed: u64,
    cipher_hex: String,
}

/// A variation of a vector and madmin.DecryptData's verdict on it.
#[derive(Deserialize)]
struct Case {
    base: usize,
    transform: String,
    password: String,
    cipher_sha256: String,
    madmin_ok: bool,
    plain_sha256: Option<String>,
}

fn oracle() -> Oracle {
    serde_json::from_str(include_str!("../testdata/madmin.json")).unwrap()
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

fn sha(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

fn unhex<const N: usize>(s: &str) -> [u8; N] {
    hex::decode(s).unwrap().try_into().unwrap()
}

fn alg(id: u8) -> Algorithm {
    Algorithm::from_id(id).unwrap()
}

/// The vector's payload, built by [`encrypt`], checked byte for byte
/// against madmin's.
fn payload_of(v: &Vector) -> Vec<u8> {
    let plain = plaintext(v.plain_len, v.plain_seed);
    let ours = encrypt(
        &hex::decode(&v.password).unwrap(),
        unhex(&v.salt),
        unhex(&v.nonce),
        alg(v.id),
        &plain,
    );
    assert_eq!(sha(&ours), v.cipher_sha256);
    ours
}

#[test]
fn key_derivation_matches_madmin() {
    let o = oracle();
    let mut groups = HashMap::new();
    for v in &o.vectors {
        groups.insert((v.id, v.password.clone(), v.salt.clone()), v.key.clone());
    }
    assert_eq!(groups.len(), 9);
    let mut memory = Argon2Memory::new();
    for ((id, password, salt), key) in groups {
        let password = hex::decode(&password).unwrap();
        let got = derive_key(alg(id), &password, &unhex(&salt), None).unwrap();
        assert_eq!(hex::encode(*got), key, "id {id}");
        let reused = derive_key(alg(id), &password, &unhex(&salt), Some(&mut memory)).unwrap();
        assert_eq!(hex::encode(*reused), key, "id {id}, reused memory");
    }
}

#[test]
fn streams_match_madmin_byte_for_byte() {
    let o = oracle();
    assert_eq!(o.vectors.len(), 51);
    for v in &o.vectors {
        let key: [u8; 32] = unhex(&v.key);
        let nonce: [u8; 8] = unhex(&v.nonce);
        let plain = plaintext(v.plain_len, v.plain_seed);
        let mut payload = unhex::<32>(&v.salt).to_vec();
        payload.push(v.id);
        payload.extend_from_slice(&nonce);
        payload.extend_from_slice(&seal_stream(alg(v.id), &key, nonce, &plain));
        assert_eq!(
            payload.len(),
            v.cipher_len,
            "id {} len {}",
            v.id,
            v.plain_len
        );
        assert_eq!(payload.len(), encrypted_len(v.plain_len));
        assert_eq!(
            sha(&payload),
            v.cipher_sha256,
            "id {} len {}",
            v.id,
            v.plain_len
        );
        if let Some(h) = &v.cipher_hex {
            assert_eq!(&hex::encode(&payload), h);
            // madmin's own bytes open.
            let theirs = hex::decode(h).unwrap();
            let opened = open_stream(alg(v.id), &key, nonce, &theirs[HEADER_LEN..]).unwrap();
            assert_eq!(opened, plain);
        }
        assert_eq!(
            open_stream(alg(v.id), &key, nonce, &payload[HEADER_LEN..]).unwrap(),
            plain
        );
    }
}

#[test]
fn encrypt_and_decrypt_match_madmin() {
    // The whole path (key derivation included) once per algorithm and
    // password; the other lengths share the key and are checked above.
    let o = oracle();
    let mut seen = std::collections::HashSet::new();
    for v in &o.vectors {
        if v.cipher_hex.is_none() || !seen.insert((v.id, v.password.clone())) {
            continue;
        }
        let ours = payload_of(v);
        let theirs = hex::decode(v.cipher_hex.as_ref().unwrap()).unwrap();
        assert_eq!(ours, theirs);
        assert!(is_encrypted(&theirs));
        let plain = decrypt(&hex::decode(&v.password).unwrap(), &theirs).unwrap();
        assert_eq!(plain, plaintext(v.plain_len, v.plain_seed));
    }
    assert_eq!(seen.len(), 9);
}

#[test]
fn decrypts_madmin_encryptdata() {
    let o = oracle();
    let mut ids = [0usize; 3];
    let mut memory = Argon2Memory::new();
    for (i, v) in o.madmin.iter().enumerate() {
        ids[usize::from(v.id)] += 1;
        let payload = hex::decode(&v.cipher_hex).unwrap();
        assert_eq!(payload[32], v.id);
        let password = hex::decode(&v.password).unwrap();
        let plain = if i % 2 == 0 {
            decrypt(&password, &payload)
        } else {
            decrypt_with(&mut memory, &password, &payload)
        }
        .unwrap();
        assert_eq!(plain, plaintext(v.plain_len, v.plain_seed), "id {}", v.id);
    }
    assert_eq!(ids, [4, 3, 3]);
}

fn aead(id: u8, key: &[u8; 32]) -> LessSafeKey {
    let a = if id == 1 {
        &CHACHA20_POLY1305
    } else {
        &AES_256_GCM
    };
    LessSafeKey::new(UnboundKey::new(a, key).unwrap())
}

fn nonce12(prefix: &[u8; 8], seq: u32) -> Nonce {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(prefix);
    n[8..].copy_from_slice(&seq.to_le_bytes());
    Nonce::assume_unique_for_key(n)
}

/// The generator's hand-built streams: fragments sealed one by one with
/// the AEAD (spec `"<len><n|f>,..."`, sequence numbers from `first`).
fn hand_built(v: &Vector, header: &[u8], first: u32, spec: &str) -> Vec<u8> {
    let key = aead(v.id, &unhex(&v.key));
    let prefix: [u8; 8] = unhex(&v.nonce);
    let t = key
        .seal_in_place_separate_tag(nonce12(&prefix, 0), Aad::empty(), &mut [])
        .unwrap();
    let mut ad = [0u8; 17];
    ad[1..].copy_from_slice(t.as_ref());
    let frags: Vec<(usize, bool)> = spec
        .split(',')
        .map(|f| {
            let (n, kind) = f.split_at(f.len() - 1);
            (n.parse().unwrap(), kind == "f")
        })
        .collect();
    let total = frags.iter().map(|f| f.0).sum();
    let plain = plaintext(total, v.plain_seed);
    let mut out = header.to_vec();
    let mut at = 0;
    for (i, &(n, last)) in frags.iter().enumerate() {
        ad[0] = if last { 0x80 } else { 0 };
        let start = out.len();
        out.extend_from_slice(&plain[at..at + n]);
        let tag = key
            .seal_in_place_separate_tag(
                nonce12(&prefix, first + i as u32),
                Aad::from(ad),
                &mut out[start..],
            )
            .unwrap();
        out.extend_from_slice(tag.as_ref());
        at += n;
    }
    out
}

/// The generator's transforms (see `applyTransform` in madmin-gen).
fn transform(v: &Vector, base: &[u8], t: &str) -> Vec<u8> {
    let mut p = base.to_vec();
    let (op, arg) = t.split_once(':').unwrap_or((t, ""));
    let num = |s: &str| s.parse::<usize>().unwrap();
    match op {
        "none" => p,
        "keep" => {
            p.truncate(num(arg));
            p
        }
        "append" => {
            p.extend_from_slice(&hex::decode(arg).unwrap());
            p
        }
        "flip" => {
            p[num(arg)] ^= 1;
            p
        }
        "set_id" => {
            p[32] = num(arg) as u8;
            p
        }
        "swap" | "drop" | "dup" => {
            let mut fr: Vec<&[u8]> = p[HEADER_LEN..].chunks(SEALED_FRAGMENT_LEN).collect();
            let (a, b) = arg.split_once(',').unwrap_or((arg, ""));
            let i = num(a);
            match op {
                "swap" => fr.swap(i, num(b)),
                "drop" => {
                    fr.remove(i);
                }
                _ => fr.insert(i + 1, fr[i]),
            }
            let mut out = p[..HEADER_LEN].to_vec();
            out.extend(fr.concat());
            out
        }
        "raw" => {
            let (first, spec) = arg.split_once(':').unwrap();
            hand_built(v, &p[..HEADER_LEN], first.parse().unwrap(), spec)
        }
        _ => panic!("unknown transform {t}"),
    }
}

/// Each variation is accepted or refused exactly as madmin.DecryptData
/// did, with the same plaintext.
#[test]
fn accepts_exactly_what_madmin_accepts() {
    let o = oracle();
    assert_eq!(o.cases.len(), 114);
    let mut payloads = HashMap::new();
    let (mut accepted, mut refused) = (0, 0);
    for c in &o.cases {
        let v = &o.vectors[c.base];
        let base = payloads.entry(c.base).or_insert_with(|| payload_of(v));
        let p = transform(v, base, &c.transform);
        assert_eq!(sha(&p), c.cipher_sha256, "{}", c.transform);
        let got = decrypt(&hex::decode(&c.password).unwrap(), &p);
        let what = format!(
            "id {} {} password {:?}: {got:?}",
            v.id, c.transform, c.password
        );
        assert_eq!(got.is_ok(), c.madmin_ok, "{what}");
        match got {
            Ok(plain) => {
                assert_eq!(Some(sha(&plain)), c.plain_sha256, "{what}");
                accepted += 1;
            }
            Err(e) => {
                assert!(
                    matches!(
                        e,
                        MadminError::NotAuthentic
                            | MadminError::UnexpectedHeader
                            | MadminError::UnknownAlgorithm(_)
                    ),
                    "{what}"
                );
                refused += 1;
            }
        }
    }
    // Among the accepted: an empty final fragment after full ones, and
    // PBKDF2 (id 2) with a NUL byte added to the password (HMAC pads keys
    // with zeros).
    assert_eq!((accepted, refused), (19, 95));
}

/// xorshift64 for the random tests (seeded: failures reproduce).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        std::array::from_fn(|_| self.next() as u8)
    }
}

#[test]
fn random_round_trips() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // The whole path: cheap with PBKDF2, once per Argon2id algorithm.
    let mut memory = Argon2Memory::new();
    for i in 0..12 {
        let algorithm = match i {
            0 => Algorithm::Argon2idAes256Gcm,
            1 => Algorithm::Argon2idChaCha20Poly1305,
            _ => Algorithm::Pbkdf2Aes256Gcm,
        };
        let n = rng.below(70_000);
        let plain: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        let password: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
        let payload = if i == 0 {
            encrypt_with(
                &mut memory,
                &password,
                rng.bytes(),
                rng.bytes(),
                algorithm,
                &plain,
            )
        } else {
            encrypt(&password, rng.bytes(), rng.bytes(), algorithm, &plain)
        };
        assert_eq!(payload.len(), encrypted_len(n));
        assert_eq!(payload[32], algorithm.id());
        assert_eq!(decrypt(&password, &payload).unwrap(), plain);
        let mut other = password.clone();
        other.push(1);
        assert_eq!(decrypt(&other, &payload), Err(MadminError::NotAuthentic));
    }
    // The stream under random keys.
    for _ in 0..200 {
        let algorithm = Algorithm::ALL[rng.below(3)];
        let key: [u8; 32] = rng.bytes();
        let nonce: [u8; 8] = rng.bytes();
        let n = match rng.below(4) {
            0 => rng.below(40),
            1 => 16384 * (1 + rng.below(3)) + rng.below(3) - 1,
            _ => rng.below(100_000),
        };
        let plain: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        let s = seal_stream(algorithm, &key, nonce, &plain);
        assert_eq!(open_stream(algorithm, &key, nonce, &s).unwrap(), plain);
    }
}

#[test]
fn every_change_to_a_stream_is_refused() {
    let key = [0x5a; 32];
    let nonce = [0xc3; 8];
    for algorithm in Algorithm::ALL {
        // Two full fragments and a short final one.
        let plain = plaintext(2 * 16384 + 40, 11);
        let s = seal_stream(algorithm, &key, nonce, &plain);
        let open = |s: &[u8]| open_stream(algorithm, &key, nonce, s);
        assert_eq!(open(&s).unwrap(), plain);
        for cut in (0..s.len()).step_by(97).chain(s.len() - 17..s.len()) {
            assert_eq!(open(&s[..cut]), Err(MadminError::NotAuthentic), "cut {cut}");
        }
        for at in (0..s.len()).step_by(61).chain(s.len() - 16..s.len()) {
            let mut t = s.clone();
            t[at] ^= 0x80;
            assert_eq!(open(&t), Err(MadminError::NotAuthentic), "flip {at}");
        }
        for extra in [&[0u8][..], &[0; 16], &s[..SEALED_FRAGMENT_LEN], &s] {
            let mut t = s.clone();
            t.extend_from_slice(extra);
            assert_eq!(open(&t), Err(MadminError::NotAuthentic));
        }
        let fr: Vec<&[u8]> = s.chunks(SEALED_FRAGMENT_LEN).collect();
        for order in [[1, 0, 2], [0, 2, 1], [2, 1, 0]] {
            let t: Vec<u8> = order.iter().flat_map(|&i| fr[i].to_vec()).collect();
            assert_eq!(open(&t), Err(MadminError::NotAuthentic), "{order:?}");
        }
        // Other key, nonce, algorithm.
        assert!(open_stream(algorithm, &[0x5b; 32], nonce, &s).is_err());
        assert!(open_stream(algorithm, &key, [0xc2; 8], &s).is_err());
        let other = Algorithm::ALL[(usize::from(algorithm.id()) + 1) % 3];
        if (algorithm == Algorithm::Argon2idChaCha20Poly1305)
            != (other == Algorithm::Argon2idChaCha20Poly1305)
        {
            assert!(open_stream(other, &key, nonce, &s).is_err());
        }
    }
}
