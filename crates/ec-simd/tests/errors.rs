//! Every error case returns a typed error, never a panic.

mod common;

use common::kernels;
use ec_simd::{Error, Kernel, KernelError, ReedSolomon};

#[test]
fn invalid_shard_counts() {
    for (d, p) in [
        (0, 0),
        (0, 1),
        (1, 0),
        (256, 1),
        (1, 256),
        (200, 57),
        (300, 300),
        (usize::MAX, 2),
    ] {
        assert_eq!(
            ReedSolomon::new(d, p).err(),
            Some(Error::InvalidShardCounts { data: d, parity: p }),
            "{d}+{p}"
        );
    }
    for (d, p) in [(1, 1), (255, 1), (1, 255), (128, 128), (17, 3)] {
        let rs = ReedSolomon::new(d, p).unwrap();
        assert_eq!(
            (rs.data_shards(), rs.parity_shards(), rs.total_shards()),
            (d, p, d + p)
        );
    }
    for kernel in kernels() {
        assert!(ReedSolomon::with_kernel(0, 4, kernel).is_err());
        assert!(ReedSolomon::with_kernel(250, 7, kernel).is_err());
    }
}

#[test]
fn encode_errors() {
    let rs = ReedSolomon::new(4, 2).unwrap();
    let data = vec![vec![0u8; 8]; 4];
    let mut parity = vec![vec![0u8; 8]; 2];

    let too_few: &[Vec<u8>] = &data[..3];
    assert_eq!(
        rs.encode(too_few, &mut parity),
        Err(Error::WrongShardCount {
            what: "data",
            expected: 4,
            got: 3
        })
    );
    let none: &[Vec<u8>] = &[];
    assert_eq!(
        rs.encode(none, &mut parity),
        Err(Error::WrongShardCount {
            what: "data",
            expected: 4,
            got: 0
        })
    );
    assert_eq!(
        rs.encode(&data, &mut parity[..1]),
        Err(Error::WrongShardCount {
            what: "parity",
            expected: 2,
            got: 1
        })
    );
    let mut three = vec![vec![0u8; 8]; 3];
    assert_eq!(
        rs.encode(&data, &mut three),
        Err(Error::WrongShardCount {
            what: "parity",
            expected: 2,
            got: 3
        })
    );

    let mut uneven = data.clone();
    uneven[2].push(1);
    assert_eq!(
        rs.encode(&uneven, &mut parity),
        Err(Error::ShardLengthMismatch {
            expected: 8,
            index: 2,
            got: 9
        })
    );
    let mut short_parity = parity.clone();
    short_parity[1].pop();
    assert_eq!(
        rs.encode(&data, &mut short_parity),
        Err(Error::ShardLengthMismatch {
            expected: 8,
            index: 5,
            got: 7
        })
    );

    let mut shards = vec![vec![0u8; 8]; 5];
    assert_eq!(
        rs.encode_shards(&mut shards),
        Err(Error::WrongShardCount {
            what: "shards",
            expected: 6,
            got: 5
        })
    );
    let mut shards = vec![vec![0u8; 8]; 6];
    shards[4] = vec![0u8; 3];
    assert_eq!(
        rs.encode_shards(&mut shards),
        Err(Error::ShardLengthMismatch {
            expected: 8,
            index: 4,
            got: 3
        })
    );
    let mut shards = vec![vec![0u8; 8]; 6];
    shards[0] = vec![];
    assert_eq!(
        rs.encode_shards(&mut shards),
        Err(Error::ShardLengthMismatch {
            expected: 0,
            index: 1,
            got: 8
        })
    );
}

#[test]
fn verify_errors() {
    let rs = ReedSolomon::new(3, 3).unwrap();
    let shards = vec![vec![0u8; 5]; 6];
    assert_eq!(rs.verify_shards(&shards), Ok(true));
    assert_eq!(
        rs.verify_shards(&shards[..5]),
        Err(Error::WrongShardCount {
            what: "shards",
            expected: 6,
            got: 5
        })
    );
    assert_eq!(
        rs.verify(&shards[..2], &shards[3..]),
        Err(Error::WrongShardCount {
            what: "data",
            expected: 3,
            got: 2
        })
    );
    assert_eq!(
        rs.verify(&shards[..3], &shards[4..]),
        Err(Error::WrongShardCount {
            what: "parity",
            expected: 3,
            got: 2
        })
    );
    let mut bad = shards.clone();
    bad[5] = vec![0u8; 6];
    assert_eq!(
        rs.verify_shards(&bad),
        Err(Error::ShardLengthMismatch {
            expected: 5,
            index: 5,
            got: 6
        })
    );
}

#[test]
fn reconstruct_errors() {
    let rs = ReedSolomon::new(4, 2).unwrap();
    let mut shards = vec![vec![0u8; 16]; 6];
    rs.encode_shards(&mut shards).unwrap();

    for f in [
        ReedSolomon::reconstruct::<Vec<u8>>,
        ReedSolomon::reconstruct_data::<Vec<u8>>,
    ] {
        assert_eq!(
            f(&rs, &mut shards, &[true, false, true, false, true, false]),
            Err(Error::TooFewShards {
                needed: 4,
                present: 3
            })
        );
        assert_eq!(
            f(&rs, &mut shards, &[false; 6]),
            Err(Error::TooFewShards {
                needed: 4,
                present: 0
            })
        );
        assert_eq!(
            f(&rs, &mut shards, &[true; 5]),
            Err(Error::WrongShardCount {
                what: "present",
                expected: 6,
                got: 5
            })
        );
        assert_eq!(
            f(&rs, &mut shards[..5], &[true; 6]),
            Err(Error::WrongShardCount {
                what: "shards",
                expected: 6,
                got: 5
            })
        );
        let mut empty: Vec<Vec<u8>> = Vec::new();
        assert_eq!(
            f(&rs, &mut empty, &[]),
            Err(Error::WrongShardCount {
                what: "shards",
                expected: 6,
                got: 0
            })
        );
        let mut uneven = shards.clone();
        uneven[3] = vec![0u8; 15];
        assert_eq!(
            f(&rs, &mut uneven, &[false, true, true, true, true, true]),
            Err(Error::ShardLengthMismatch {
                expected: 16,
                index: 3,
                got: 15
            })
        );
        // A missing shard's buffer must have the right length too.
        let mut short_missing = shards.clone();
        short_missing[0] = Vec::new();
        assert_eq!(
            f(
                &rs,
                &mut short_missing,
                &[false, true, true, true, true, true]
            ),
            Err(Error::ShardLengthMismatch {
                expected: 0,
                index: 1,
                got: 16
            })
        );
    }
    // Nothing was modified by the failed calls.
    assert!(rs.verify_shards(&shards).unwrap());
}

#[test]
fn kernel_errors() {
    assert_eq!(
        Kernel::from_name("").err(),
        Some(KernelError::UnknownName {
            family: "erasure-coding",
            name: String::new(),
            known: Kernel::names(),
        })
    );
    assert!(
        matches!(
            Kernel::from_name("AVX2"),
            Err(KernelError::UnknownName { name, .. }) if name == "AVX2"
        ),
        "names are exact"
    );
    // Kernels of the other architecture are known but unavailable.
    let foreign = if cfg!(target_arch = "x86_64") {
        "neon"
    } else {
        "avx2"
    };
    match Kernel::from_name(foreign) {
        Err(e @ KernelError::Unavailable { name, .. }) => {
            assert_eq!(name, foreign);
            let reason = e.to_string();
            assert!(reason.contains("only"), "{reason}");
        }
        other => panic!("expected Unavailable for {foreign}, got {other:?}"),
    }
}

#[test]
fn errors_display_and_are_std_errors() {
    let errs: Vec<Error> = vec![
        Error::InvalidShardCounts { data: 0, parity: 1 },
        Error::WrongShardCount {
            what: "data",
            expected: 4,
            got: 3,
        },
        Error::ShardLengthMismatch {
            expected: 8,
            index: 2,
            got: 9,
        },
        Error::TooFewShards {
            needed: 4,
            present: 3,
        },
        Error::SingularMatrix,
    ];
    for e in errs {
        let boxed: Box<dyn std::error::Error> = Box::new(e.clone());
        let text = boxed.to_string();
        assert!(!text.is_empty());
        assert_eq!(text, e.to_string());
    }
    assert_eq!(
        Error::TooFewShards {
            needed: 4,
            present: 3
        }
        .to_string(),
        "too few shards to reconstruct: 3 present, 4 needed"
    );
}
