//! The PUT's streamed shard files (records encoded behind a carried tail so
//! that the drive writers get whole `O_DIRECT` blocks): sizes around the
//! erasure block, set shapes whose records cross the 4 KiB blocks at every
//! offset, announced and unannounced sizes, shard writers failing in the
//! middle of an object, and concurrent uploads sharing a small PUT queue.

use std::path::PathBuf;

use crate::support::{data, dirs, faulty_layer, faulty_layer_with, get, staging_leftovers};
use md5::{Digest, Md5};
use object::layer::{Error, LayerOptions, ObjectLayer, PutOptions};

async fn put(
    l: &ObjectLayer,
    k: &str,
    body: &[u8],
    announce: bool,
    parity: Option<usize>,
) -> Result<object::layer::ObjectInfo, Error> {
    l.put_object(
        "pstream",
        k,
        &mut &body[..],
        &PutOptions {
            size: announce.then_some(body.len() as u64),
            parity,
            ..Default::default()
        },
    )
    .await
}

/// Size of every `part.1` under `dir/ps/key` (one per drive).
fn part_sizes(ds: &[PathBuf], key: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for d in ds {
        for e in std::fs::read_dir(d.join("pstream").join(key))
            .unwrap()
            .flatten()
        {
            let p = e.path().join("part.1");
            if p.exists() {
                out.push(std::fs::metadata(&p).unwrap().len());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_sizes_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let (l, _) = faulty_layer(&ds).await;
    l.make_bucket("pstream").await.unwrap();
    const MIB: usize = 1 << 20;
    // EC 2+2: records of 32 + 512 KiB (the carry grows 32 bytes a block);
    // EC 3+1: records of 32 + 349,526 bytes (the carry takes many values
    // and wraps past 4 KiB within a few blocks).
    for parity in [None, Some(1)] {
        let k = 4 - parity.unwrap_or(2);
        for (i, len) in [
            (400 << 10) + 1,
            MIB - 1,
            MIB,
            MIB + 1,
            3 * MIB,
            3 * MIB + 4097,
            9 * MIB + 12_345,
        ]
        .into_iter()
        .enumerate()
        {
            let body = data(len, i as u64 + 100);
            for announce in [true, false] {
                let key = format!("o{k}-{i}-{announce}");
                let info = put(&l, &key, &body, announce, parity)
                    .await
                    .unwrap_or_else(|e| panic!("{key}: {e}"));
                assert_eq!(info.etag, hex::encode(Md5::digest(&body)), "{key}");
                assert!(get(&l, "pstream", &key).await.unwrap() == body, "{key}");
                // Every shard file holds exactly its records: one 32-byte
                // hash per block plus the shard data (no padding left).
                let blocks = len.div_ceil(MIB) as u64;
                let shard: u64 = (0..len)
                    .step_by(MIB)
                    .map(|s| (len - s).min(MIB).div_ceil(k) as u64)
                    .sum();
                let sizes = part_sizes(&ds, &key);
                assert_eq!(sizes.len(), 4, "{key}");
                assert!(
                    sizes.iter().all(|&s| s == shard + 32 * blocks),
                    "{key}: {sizes:?}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_failing_mid_object() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let (l, faulty) = faulty_layer(&ds).await;
    l.make_bucket("pstream").await.unwrap();
    let old = data((2 << 20) + 3, 7);
    put(&l, "k", &old, true, None).await.unwrap();
    // One drive's writer fails after three writes: the PUT goes on with
    // the write quorum of 3, and heal rebuilds that drive's shard.
    faulty[1].fail_writes_after(Some(3));
    let v2 = data((5 << 20) + 77, 8);
    put(&l, "k", &v2, true, None).await.unwrap();
    faulty[1].fail_writes_after(None);
    assert_eq!(get(&l, "pstream", "k").await.unwrap(), v2);
    let h = l.heal_object("pstream", "k", None).await.unwrap();
    assert_eq!(h.healed_drives, vec![1]);
    // Two drives' writers fail mid-object, announced size or not: below
    // the quorum, nothing changes and the temp areas are left empty.
    for announce in [true, false] {
        faulty[0].fail_writes_after(Some(2));
        faulty[3].fail_writes_after(Some(4));
        let r = put(&l, "k", &data(6 << 20, 9), announce, None).await;
        assert!(matches!(r, Err(Error::WriteQuorum { .. })), "{r:?}");
        faulty[0].fail_writes_after(None);
        faulty[3].fail_writes_after(None);
        assert_eq!(get(&l, "pstream", "k").await.unwrap(), v2);
    }
    for d in &ds {
        let left = staging_leftovers(d);
        assert!(left.is_empty(), "{}: {left:?}", d.display());
    }
}

/// Uploads at once through a set whose PUT queue holds one block's records
/// (600 KiB per drive: EC 2+2 records are 512 KiB), or less than one (4 KiB
/// per drive): every upload waits its turn for each block, none starves or
/// deadlocks, a writer failing mid-object gives its queue share back, and
/// every object reads back whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_uploads_share_a_small_put_queue() {
    for per_drive in [600 << 10, 4 << 10] {
        let tmp = tempfile::tempdir().unwrap();
        let ds = dirs(tmp.path(), 4);
        let opts = LayerOptions {
            put_queue_bytes_per_drive: Some(per_drive),
            ..Default::default()
        };
        let (l, faulty) = faulty_layer_with(&ds, opts).await;
        let l = std::sync::Arc::new(l);
        l.make_bucket("pstream").await.unwrap();
        let sizes = [
            (3 << 20) + 4097,
            5 << 20,
            (1 << 20) + 1,
            (7 << 20) + 12_345,
            2 << 20,
            (4 << 20) - 1,
        ];
        for round in 0..2 {
            // In the second round one drive's writers fail after a few
            // writes: the uploads go on with the write quorum (3 of 4), and
            // the records that drive never wrote leave the queue.
            faulty[2].fail_writes_after((round == 1).then_some(5));
            let mut tasks = tokio::task::JoinSet::new();
            for (i, &len) in sizes.iter().enumerate() {
                let l = l.clone();
                tasks.spawn(async move {
                    let body = data(len, (round * 10 + i) as u64);
                    let key = format!("c{round}-{i}");
                    let info = put(&l, &key, &body, i % 2 == 0, None).await.unwrap();
                    assert_eq!(info.size, len as u64);
                    assert_eq!(info.etag, hex::encode(Md5::digest(&body)), "{key}");
                    (key, body)
                });
            }
            let done = tokio::time::timeout(std::time::Duration::from_secs(120), async {
                let mut done = Vec::new();
                while let Some(r) = tasks.join_next().await {
                    done.push(r.unwrap());
                }
                done
            })
            .await
            .expect("uploads sharing the queue stalled");
            faulty[2].fail_writes_after(None);
            assert_eq!(done.len(), sizes.len());
            for (key, body) in done {
                let got = get(&l, "pstream", &key).await.unwrap();
                assert!(got == body, "{per_drive} {key}");
            }
        }
    }
}
