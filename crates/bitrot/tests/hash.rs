//! HighwayHash: reference vectors, streaming, cross-checks, multi-stream and
//! the kernel API.

mod common;

use bitrot::{HighwayHasher, Kernel, KernelError, KernelStatus, MAGIC_HIGHWAYHASH256_KEY};
use common::{RngExt, kernels, seed};
use highway::HighwayHash;

#[derive(serde::Deserialize)]
struct Case {
    key: String,
    input: String,
    highwayhash256: String,
}

struct Vector {
    key: [u8; 32],
    input: Vec<u8>,
    want: [u8; 32],
}

fn vectors() -> Vec<Vector> {
    let text = include_str!("../testdata/highwayhash.json");
    let cases: Vec<Case> = serde_json::from_str(text).expect("valid JSON");
    cases
        .into_iter()
        .map(|c| Vector {
            key: hex::decode(&c.key).unwrap().try_into().unwrap(),
            input: hex::decode(&c.input).unwrap(),
            want: hex::decode(&c.highwayhash256).unwrap().try_into().unwrap(),
        })
        .collect()
}

fn streamed(k: Kernel, key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut h = HighwayHasher::with_kernel(k, key);
    for p in parts {
        h.update(p);
    }
    h.finalize256()
}

#[test]
fn vector_file_is_as_documented() {
    let v = vectors();
    assert_eq!(v.len(), 72);
    assert_eq!(v[0].key, MAGIC_HIGHWAYHASH256_KEY);
}

#[test]
fn reference_vectors_one_shot() {
    for k in kernels("reference_vectors_one_shot") {
        for (i, v) in vectors().iter().enumerate() {
            assert_eq!(
                k.hash256(&v.key, &v.input),
                v.want,
                "kernel {k}, case {i} ({} bytes)",
                v.input.len()
            );
        }
    }
    for v in vectors() {
        assert_eq!(bitrot::hash256(&v.key, &v.input), v.want);
    }
}

#[test]
fn reference_vectors_streaming_every_split() {
    for k in kernels("reference_vectors_streaming_every_split") {
        for (i, v) in vectors().iter().enumerate() {
            let m = &v.input;
            for cut in 0..=m.len() {
                assert_eq!(
                    streamed(k, &v.key, &[&m[..cut], &m[cut..]]),
                    v.want,
                    "kernel {k}, case {i} ({} bytes), split at {cut}",
                    m.len()
                );
            }
        }
    }
}

#[test]
fn reference_vectors_streaming_three_way_splits() {
    let (mut rng, _g) = seed("reference_vectors_streaming_three_way_splits");
    for k in kernels("reference_vectors_streaming_three_way_splits") {
        for (i, v) in vectors().iter().enumerate() {
            let m = &v.input;
            let n = m.len();
            let check = |a: usize, b: usize| {
                assert_eq!(
                    streamed(k, &v.key, &[&m[..a], &m[a..b], &m[b..]]),
                    v.want,
                    "kernel {k}, case {i} ({n} bytes), splits at {a} and {b}"
                );
            };
            if n <= 300 {
                // Every pair of cut points.
                for a in 0..=n {
                    for b in a..=n {
                        check(a, b);
                    }
                }
            } else {
                for _ in 0..300 {
                    let a = rng.usize(..=n);
                    let b = a + rng.usize(..=n - a);
                    check(a, b);
                }
                // Cuts near both ends and around packet boundaries.
                for a in (0..70).chain(n - 70..=n) {
                    check(a, (a + 33).min(n));
                    check(a, n - (n - a) / 2);
                }
            }
        }
    }
}

#[test]
fn byte_at_a_time_and_reset() {
    for k in kernels("byte_at_a_time_and_reset") {
        let v = &vectors()[50];
        let mut h = HighwayHasher::with_kernel(k, &v.key);
        h.update(b"some garbage that reset must forget");
        h.reset();
        for b in &v.input {
            h.update(std::slice::from_ref(b));
        }
        assert_eq!(h.finalize256(), v.want, "kernel {k}");
        // Finalising does not disturb the hasher.
        assert_eq!(h.finalize256(), v.want, "kernel {k}");
        h.reset();
        h.update(&v.input);
        assert_eq!(h.finalize256(), v.want, "kernel {k}");
        // `std::io::Write` is `update`.
        let mut w = HighwayHasher::with_kernel(k, &v.key);
        std::io::copy(&mut &v.input[..], &mut w).unwrap();
        assert_eq!(w.finalize256(), v.want, "kernel {k}");
    }
}

/// MinIO's `bitrotSelfTest` iteration, reproduced independently of the
/// crate's own self-test code.
#[test]
fn minio_bitrot_self_test() {
    let want =
        hex::decode("39c0407ed3f01b18d22c85db4aeff11e060ca5f43131b0126731ca197cd42313").unwrap();
    for k in kernels("minio_bitrot_self_test") {
        let mut msg = Vec::new();
        let mut sum = [0u8; 32];
        let mut h = HighwayHasher::with_kernel(k, &MAGIC_HIGHWAYHASH256_KEY);
        for _ in 0..32 {
            h.update(&msg);
            sum = h.finalize256();
            msg.extend_from_slice(&sum);
            h.reset();
        }
        assert_eq!(sum.to_vec(), want, "kernel {k}");
    }
}

fn highway_key(key: &[u8; 32]) -> highway::Key {
    let mut k = [0u64; 4];
    for (w, c) in k.iter_mut().zip(key.chunks_exact(8)) {
        *w = u64::from_le_bytes(c.try_into().unwrap());
    }
    highway::Key(k)
}

fn words<const N: usize>(w: [u64; N]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn agrees_with_highway_crate_on_random_inputs() {
    let (mut rng, _g) = seed("agrees_with_highway_crate_on_random_inputs");
    let ks = kernels("agrees_with_highway_crate_on_random_inputs");
    for round in 0..400 {
        let key = rng.key();
        let len = match round % 4 {
            0 => rng.usize(..64),
            1 => rng.usize(..300),
            2 => rng.usize(..5000),
            _ => rng.usize(..70_000),
        };
        let data = rng.bytes(len);
        let hk = highway_key(&key);
        let want256 = words(highway::HighwayHasher::new(hk).hash256(&data));
        let want128 = words(highway::HighwayHasher::new(hk).hash128(&data));
        let want64 = highway::HighwayHasher::new(hk).hash64(&data);
        let cut = rng.usize(..=len);
        for &k in &ks {
            let ctx = format!("kernel {k}, round {round}, {len} bytes");
            assert_eq!(k.hash256(&key, &data).to_vec(), want256, "{ctx}");
            assert_eq!(k.hash128(&key, &data).to_vec(), want128, "{ctx}");
            assert_eq!(k.hash64(&key, &data), want64, "{ctx}");
            let mut h = HighwayHasher::with_kernel(k, &key);
            h.update(&data[..cut]);
            h.update(&data[cut..]);
            assert_eq!(h.finalize256().to_vec(), want256, "{ctx}, split {cut}");
            assert_eq!(h.finalize128().to_vec(), want128, "{ctx}, split {cut}");
            assert_eq!(h.finalize64(), want64, "{ctx}, split {cut}");
        }
    }
}

#[test]
fn sixty_four_and_128_bit_known_answers() {
    // Computed with minio/highwayhash v1.0.3 (Sum64, Sum128, Sum) over the
    // 33-byte pattern (131 i + 7) mod 251 and MinIO's key.
    let msg: Vec<u8> = (0..33).map(|i| ((i * 131 + 7) % 251) as u8).collect();
    for k in kernels("sixty_four_and_128_bit_known_answers") {
        let key = &MAGIC_HIGHWAYHASH256_KEY;
        assert_eq!(k.hash64(key, &msg), 0x223c_65a6_2839_1cc5, "kernel {k}");
        assert_eq!(
            hex::encode(k.hash128(key, &msg)),
            "2480d45e7e19a3ca4d2dd556bd15fcc0",
            "kernel {k}"
        );
        assert_eq!(
            hex::encode(k.hash256(key, &msg)),
            "40dd4671b1350ee0cb8d309279ff453fe5854df615bb67db139a7dd0037c6b8e",
            "kernel {k}"
        );
    }
}

#[test]
fn many_equals_single_on_random_lengths() {
    let (mut rng, _g) = seed("many_equals_single_on_random_lengths");
    let ks = kernels("many_equals_single_on_random_lengths");
    let pool = rng.bytes(300_000);
    for round in 0..200 {
        let key = rng.key();
        let streams = rng.usize(..20);
        let equal = round % 3 == 0;
        let common_len = rng.usize(..20_000);
        let inputs: Vec<&[u8]> = (0..streams)
            .map(|_| {
                let len = if equal {
                    common_len
                } else {
                    match rng.usize(..4) {
                        0 => rng.usize(..40),
                        1 => rng.usize(..1000),
                        _ => rng.usize(..30_000),
                    }
                };
                let at = rng.usize(..pool.len() - len);
                &pool[at..at + len]
            })
            .collect();
        let want: Vec<[u8; 32]> = inputs
            .iter()
            .map(|i| Kernel::portable().hash256(&key, i))
            .collect();
        for &k in &ks {
            let mut got = vec![[0u8; 32]; inputs.len()];
            k.hash256_many(&key, &inputs, &mut got);
            for j in 0..inputs.len() {
                assert_eq!(
                    got[j],
                    want[j],
                    "kernel {k}, round {round}, stream {j} of {}, lengths {:?}",
                    inputs.len(),
                    inputs.iter().map(|i| i.len()).collect::<Vec<_>>()
                );
            }
        }
    }
    // Edge cases: none, one, and stream counts around every lane width.
    for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17] {
        let inputs: Vec<&[u8]> = (0..n).map(|i| &pool[i * 10..i * 10 + 4096]).collect();
        let mut want = vec![[0u8; 32]; n];
        for (w, i) in want.iter_mut().zip(&inputs) {
            *w = bitrot::hash256(&MAGIC_HIGHWAYHASH256_KEY, i);
        }
        for &k in &ks {
            let mut got = vec![[0u8; 32]; n];
            k.hash256_many(&MAGIC_HIGHWAYHASH256_KEY, &inputs, &mut got);
            assert_eq!(got, want, "kernel {k}, {n} equal streams");
        }
        let mut got = vec![[0u8; 32]; n];
        bitrot::hash256_many(&MAGIC_HIGHWAYHASH256_KEY, &inputs, &mut got);
        assert_eq!(got, want, "detected kernel, {n} equal streams");
    }
}

#[test]
#[should_panic(expected = "one output digest per input")]
fn many_rejects_mismatched_output() {
    let mut out = [[0u8; 32]; 1];
    bitrot::hash256_many(&MAGIC_HIGHWAYHASH256_KEY, &[b"a", b"b"], &mut out);
}

#[test]
fn kernel_api() {
    let report = Kernel::detection_report();
    eprintln!("{report}");
    let best = Kernel::detect();
    assert_eq!(report.selected, best.name());
    assert_eq!(Kernel::supported()[0], best);
    assert!(Kernel::supported().contains(&Kernel::portable()));
    assert!(!report.any_self_test_failed(), "{report}");
    assert_eq!(report.kernels.len(), Kernel::names().len());
    for k in Kernel::supported() {
        assert_eq!(Kernel::from_name(k.name()), Ok(*k));
    }
    assert_eq!(Kernel::from_name("portable"), Ok(Kernel::portable()));
    assert!(matches!(
        Kernel::from_name("sse9"),
        Err(KernelError::UnknownName { .. })
    ));
    for r in &report.kernels {
        let (name, status) = (r.name, &r.status);
        if *status != KernelStatus::Passed {
            let e = Kernel::from_name(name).unwrap_err();
            assert_eq!(
                e,
                KernelError::Unavailable {
                    family: "HighwayHash",
                    name,
                    status: status.clone()
                }
            );
            eprintln!("*** kernel `{name}` unavailable here: {e}");
        }
    }
}

/// Every kernel the CPU can run must be usable (and so self-tested and
/// exercised by the tests above) unless a cargo feature removed it: a
/// kernel silently dropped by a failing self-test fails this test.
#[test]
fn detection_matches_the_cpu() {
    #[cfg(target_arch = "x86_64")]
    {
        let names: Vec<&str> = Kernel::supported().iter().map(|k| k.name()).collect();
        let avx2 = std::arch::is_x86_feature_detected!("avx2");
        let avx512 = avx2
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl");
        assert_eq!(
            names.contains(&"avx2"),
            avx2 && !cfg!(feature = "no_avx2"),
            "{names:?}"
        );
        assert_eq!(
            names.contains(&"avx512"),
            avx512 && !cfg!(feature = "no_avx512"),
            "{names:?}"
        );
        if !avx512 {
            eprintln!("*** this CPU has no AVX-512: the avx512 kernel was NOT tested");
        }
        if !avx2 {
            eprintln!("*** this CPU has no AVX2: the avx2 kernel was NOT tested");
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let names: Vec<&str> = Kernel::supported().iter().map(|k| k.name()).collect();
        assert_eq!(
            names.contains(&"neon"),
            !cfg!(feature = "no_neon"),
            "{names:?}"
        );
    }
}

#[test]
fn kernels_agree_on_long_random_data() {
    let (mut rng, _g) = seed("kernels_agree_on_long_random_data");
    let data = rng.bytes(1 << 20);
    let key = rng.key();
    let want = Kernel::portable().hash256(&key, &data);
    for k in kernels("kernels_agree_on_long_random_data") {
        assert_eq!(k.hash256(&key, &data), want, "kernel {k}");
        let mut h = HighwayHasher::with_kernel(k, &key);
        let mut rest = &data[..];
        while !rest.is_empty() {
            let n = rng.usize(..5000).min(rest.len());
            h.update(&rest[..n]);
            rest = &rest[n..];
        }
        assert_eq!(h.finalize256(), want, "kernel {k}");
    }
}
