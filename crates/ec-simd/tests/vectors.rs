//! The reference vectors computed with klauspost/reedsolomon v1.12.4 (see
//! testdata/README.md), against every kernel this host runs.

mod common;

use common::{coder, first_diff, kernels};
use serde::Deserialize;

#[derive(Deserialize)]
struct Case {
    data_shards: usize,
    parity_shards: usize,
    shard_size: usize,
    data: Vec<String>,
    parity: Vec<String>,
}

struct Decoded {
    k: usize,
    m: usize,
    data: Vec<Vec<u8>>,
    parity: Vec<Vec<u8>>,
}

fn cases() -> Vec<Decoded> {
    let text = include_str!("../testdata/reed-solomon.json");
    let cases: Vec<Case> = serde_json::from_str(text).expect("valid JSON");
    cases
        .into_iter()
        .map(|c| {
            let data: Vec<Vec<u8>> = c.data.iter().map(|h| hex::decode(h).unwrap()).collect();
            let parity: Vec<Vec<u8>> = c.parity.iter().map(|h| hex::decode(h).unwrap()).collect();
            assert_eq!(data.len(), c.data_shards);
            assert_eq!(parity.len(), c.parity_shards);
            assert!(data.iter().chain(&parity).all(|s| s.len() == c.shard_size));
            Decoded {
                k: c.data_shards,
                m: c.parity_shards,
                data,
                parity,
            }
        })
        .collect()
}

#[test]
fn all_162_vectors_encode_on_every_kernel() {
    let cases = cases();
    assert_eq!(cases.len(), 162, "the vector file has 162 cases");
    for kernel in kernels() {
        for (n, c) in cases.iter().enumerate() {
            let rs = coder(c.k, c.m, kernel);
            let mut parity = vec![vec![0xeeu8; c.data[0].len()]; c.m];
            rs.encode(&c.data, &mut parity).unwrap();
            for (j, (got, want)) in parity.iter().zip(&c.parity).enumerate() {
                assert!(
                    got == want,
                    "kernel {kernel} case {n} ({}+{}, {} bytes): parity {j} differs at byte {:?}",
                    c.k,
                    c.m,
                    want.len(),
                    first_diff(got, want)
                );
            }
            assert!(
                rs.verify(&c.data, &c.parity).unwrap(),
                "kernel {kernel} case {n}: verify"
            );
        }
    }
}

#[test]
fn vectors_reconstruct_after_losing_parity_count_shards() {
    let cases = cases();
    for kernel in kernels() {
        for (n, c) in cases.iter().enumerate() {
            let rs = coder(c.k, c.m, kernel);
            let total = c.k + c.m;
            let original: Vec<Vec<u8>> = c.data.iter().chain(&c.parity).cloned().collect();
            // Lose the first `m` data shards where possible (the heaviest
            // case), then wrap into parity; also the last `m` shards.
            let patterns = [
                (0..c.m).collect::<Vec<_>>(),
                (total - c.m..total).collect::<Vec<_>>(),
            ];
            for lost in patterns {
                let mut shards = original.clone();
                let mut present = vec![true; total];
                for &l in &lost {
                    present[l] = false;
                    shards[l].fill(0);
                }
                rs.reconstruct(&mut shards, &present).unwrap();
                assert!(
                    shards == original,
                    "kernel {kernel} case {n} ({}+{}): reconstruct after losing {lost:?}",
                    c.k,
                    c.m
                );
            }
        }
    }
}
