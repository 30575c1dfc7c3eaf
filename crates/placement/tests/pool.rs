//! Pool choice for new objects, case by case, from MinIO's rules
//! (cmd/erasure-server-pool.go `getAvailablePoolIdx`,
//! `getServerPoolsAvailableSpace`, `FilterMaxUsed`; cmd/object-api-utils.go
//! `hasSpaceFor`). Expected values derived by hand.

use placement::{
    DriveSpace, Error, PoolCandidate, PoolChoice, choose_pool, has_space_for, pool_weights,
};

const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

fn drive(total: u64, used: u64) -> DriveSpace {
    DriveSpace {
        total_bytes: total,
        used_bytes: used,
        free_bytes: total - used,
        free_inodes: 1 << 20,
        used_inodes: 100,
    }
}

fn choice(size: i64) -> PoolChoice {
    PoolChoice {
        object_size_bytes: size,
        meta_bucket: false,
        single_drive: false,
        random: 0,
    }
}

fn pool(set_count: usize, drives: &[Option<DriveSpace>]) -> PoolCandidate<'_> {
    PoolCandidate {
        set_count,
        set_drives: drives,
        accepts_new_objects: true,
    }
}

#[test]
fn size_is_doubled_and_shared_over_online_drives() {
    // 4 drives with 1 GiB free each: an object of size S needs more than
    // 2S/4 = S/2 free per drive.
    let d = [Some(drive(100 * GIB, 99 * GIB)); 4];
    // S/2 = 1 GiB - 1 byte < 1 GiB free: fits per drive; 4 GiB free in all
    // and writing 2S = 4 GiB - 4 would leave 4 bytes, below 1% of 400 GiB.
    assert_eq!(has_space_for(&d, (2 * GIB - 2) as i64, false), Ok(false));
    // Per drive: S/2 = 1 GiB is not below 1 GiB free.
    assert_eq!(has_space_for(&d, (2 * GIB) as i64, false), Ok(false));
    let roomy = [Some(drive(100 * GIB, 10 * GIB)); 4];
    assert_eq!(has_space_for(&roomy, (2 * GIB) as i64, false), Ok(true));
}

#[test]
fn a_single_short_drive_refuses() {
    let mut d = [Some(drive(TIB, 0)); 4];
    // Free bytes (not total - used) are compared: this drive reports little
    // free space although little is used (reserved blocks).
    d[2] = Some(DriveSpace {
        free_bytes: GIB / 2,
        ..drive(TIB, 0)
    });
    // Share per drive: 2 GiB * 2 / 4 = 1 GiB > 0.5 GiB free.
    assert_eq!(has_space_for(&d, (2 * GIB) as i64, false), Ok(false));
    assert_eq!(has_space_for(&d, (GIB / 2) as i64, false), Ok(true));
}

#[test]
fn fill_fraction_keeps_one_percent() {
    // 4 x 100 GiB, 98 GiB used each: 8 GiB available, 1% of 400 GiB = 4 GiB
    // must remain.
    let d = [Some(drive(100 * GIB, 98 * GIB)); 4];
    // 2 x 1.9 GiB = 3.8 GiB written leaves 4.2 GiB > 4 GiB.
    assert_eq!(has_space_for(&d, (19 * GIB / 10) as i64, false), Ok(true));
    // 2 x 2.1 GiB = 4.2 GiB written leaves 3.8 GiB.
    assert_eq!(has_space_for(&d, (21 * GIB / 10) as i64, false), Ok(false));
}

#[test]
fn unknown_size_assumes_one_gib_not_doubled() {
    // Per drive share of 1 GiB over 4 drives = 256 MiB; 300 MiB free each.
    let free = 300 << 20;
    let d = [Some(DriveSpace {
        total_bytes: 1000 * GIB,
        used_bytes: 10 * GIB,
        free_bytes: free,
        free_inodes: 1 << 20,
        used_inodes: 1,
    }); 4];
    assert_eq!(has_space_for(&d, -1, false), Ok(true));
    // A known 1 GiB object is doubled: 512 MiB per drive.
    assert_eq!(has_space_for(&d, GIB as i64, false), Ok(false));
}

#[test]
fn inodes_are_checked_unless_single_drive() {
    let low = DriveSpace {
        free_inodes: 999,
        used_inodes: 5,
        ..drive(TIB, 0)
    };
    let d = [Some(low), Some(drive(TIB, 0))];
    assert_eq!(has_space_for(&d, 1, false), Ok(false));
    assert_eq!(has_space_for(&d, 1, true), Ok(true));
    // A filesystem that reports no inodes (used 0) is not judged by them.
    let no_inodes = DriveSpace {
        free_inodes: 0,
        used_inodes: 0,
        ..drive(TIB, 0)
    };
    assert_eq!(has_space_for(&[Some(no_inodes); 2], 1, false), Ok(true));
}

#[test]
fn half_the_drives_must_answer() {
    let ok = Some(drive(TIB, 0));
    // 2 of 4 online: enough (MinIO requires online >= len / 2).
    assert_eq!(has_space_for(&[ok, ok, None, None], 1, false), Ok(true));
    assert_eq!(
        has_space_for(&[ok, None, None, None], 1, false),
        Err(Error::NotEnoughOnlineDrives {
            needed: 3,
            online: 1
        })
    );
    // A drive reporting a zero total is offline.
    let zero = Some(DriveSpace::default());
    assert!(has_space_for(&[ok, zero, zero, zero], 1, false).is_err());
    assert!(has_space_for(&[], 1, false).is_err());
}

#[test]
fn weights_are_free_bytes_times_set_count() {
    let a = [Some(drive(10 * TIB, 2 * TIB)); 4]; // 32 TiB available
    let b = [Some(drive(4 * TIB, 0)); 16]; // 64 TiB available
    let pools = [pool(3, &a), pool(2, &b)];
    assert_eq!(pool_weights(&pools, &choice(1)), [96 * TIB, 128 * TIB]);
}

#[test]
fn pools_at_85_percent_are_avoided_while_others_are_not() {
    let full = [Some(drive(100 * TIB, 85 * TIB)); 4]; // fullest drive at 85%
    let roomy = [Some(drive(10 * TIB, TIB)); 4];
    let pools = [pool(1, &full), pool(1, &roomy)];
    assert_eq!(pool_weights(&pools, &choice(1)), [0, 36 * TIB]);
    // Even a draw that would land on the big pool picks the other.
    for random in [0, 59 * TIB, u64::MAX] {
        let c = PoolChoice {
            random,
            ..choice(1)
        };
        assert_eq!(choose_pool(&pools, &c), Ok(1));
    }
    // One drive of the set at 85% is enough to avoid the pool.
    let mixed = [
        Some(drive(10 * TIB, 0)),
        Some(drive(10 * TIB, 0)),
        Some(drive(10 * TIB, 0)),
        Some(drive(10 * TIB, 17 * TIB / 2)),
    ];
    let pools = [pool(1, &mixed), pool(1, &roomy)];
    assert_eq!(pool_weights(&pools, &choice(1))[0], 0);
    // 84% is below the limit.
    let below = [Some(drive(100 * TIB, 84 * TIB)); 4];
    let pools = [pool(1, &below), pool(1, &roomy)];
    assert_eq!(pool_weights(&pools, &choice(1)), [64 * TIB, 36 * TIB]);
}

#[test]
fn when_every_pool_is_past_85_percent_all_stay() {
    let a = [Some(drive(100 * TIB, 90 * TIB)); 4];
    let b = [Some(drive(100 * TIB, 95 * TIB)); 4];
    let pools = [pool(1, &a), pool(1, &b)];
    assert_eq!(pool_weights(&pools, &choice(1)), [40 * TIB, 20 * TIB]);
}

#[test]
fn suspended_and_full_pools_weigh_nothing() {
    let d = [Some(drive(TIB, 0)); 4];
    let full = [Some(drive(TIB, TIB)); 4];
    let pools = [
        PoolCandidate {
            accepts_new_objects: false,
            ..pool(1, &d)
        },
        pool(1, &full),
        pool(1, &d),
    ];
    assert_eq!(pool_weights(&pools, &choice(1)), [0, 0, 4 * TIB]);
    assert_eq!(choose_pool(&pools, &choice(1)), Ok(2));
    let pools = [pool(1, &full), pool(1, &full)];
    assert_eq!(choose_pool(&pools, &choice(1)), Err(Error::StorageFull));
}

#[test]
fn meta_bucket_skips_the_space_check() {
    // Little room, but the metadata bucket is always placed by free space.
    let tight = [Some(drive(100 * GIB, 99 * GIB)); 4];
    let c = PoolChoice {
        meta_bucket: true,
        ..choice((10 * GIB) as i64)
    };
    let pools = [pool(1, &tight), pool(1, &tight)];
    assert_eq!(pool_weights(&pools, &c), [4 * GIB, 4 * GIB]);
    assert_eq!(pool_weights(&pools, &choice((10 * GIB) as i64)), [0, 0]);
}

#[test]
fn a_single_pool_is_taken_if_its_set_has_room() {
    let d = [Some(drive(TIB, 0)); 4];
    let full = [Some(drive(TIB, TIB)); 4];
    let offline = [Some(drive(TIB, 0)), None, None, None];
    // Suspension does not matter with one pool (MinIO's SinglePool path).
    let suspended = [PoolCandidate {
        accepts_new_objects: false,
        ..pool(1, &d)
    }];
    assert_eq!(choose_pool(&suspended, &choice(1)), Ok(0));
    assert_eq!(
        choose_pool(&[pool(1, &full)], &choice(1)),
        Err(Error::StorageFull)
    );
    assert!(matches!(
        choose_pool(&[pool(1, &offline)], &choice(1)),
        Err(Error::NotEnoughOnlineDrives { .. })
    ));
    let meta = PoolChoice {
        meta_bucket: true,
        ..choice(1)
    };
    assert_eq!(choose_pool(&[pool(1, &full)], &meta), Ok(0));
    assert_eq!(choose_pool(&[], &choice(1)), Err(Error::StorageFull));
}

#[test]
fn the_draw_walks_the_running_sum() {
    let a = [Some(drive(TIB, 0)); 1];
    let b = [Some(drive(3 * TIB, 0)); 1];
    let pools = [pool(1, &a), pool(1, &b)];
    let at = |random| {
        choose_pool(
            &pools,
            &PoolChoice {
                random,
                ..choice(1)
            },
        )
    };
    // Weights 1 TiB and 3 TiB: total 4 TiB, draws taken modulo 4 TiB.
    assert_eq!(at(0), Ok(0));
    assert_eq!(at(TIB - 1), Ok(0));
    assert_eq!(at(TIB), Ok(1));
    assert_eq!(at(4 * TIB - 1), Ok(1));
    assert_eq!(at(4 * TIB), Ok(0));
    assert_eq!(at(5 * TIB), Ok(1));
}
