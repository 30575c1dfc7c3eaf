//! Object locks: copies onto themselves or in opposite directions never
//! deadlock, and a slow upload never blocks readers of the object.

use std::sync::Arc;
use std::time::Duration;

use object::layer::PutOptions;
use tokio::io::AsyncWriteExt;

use crate::support::*;

/// Copying an object onto itself (a metadata replace) and two copies in
/// opposite directions at once, with objects larger than the copy pipe,
/// finish promptly: no lock is held across the other side's wait.
/// How long an operation that must not block may take before it counts as
/// blocked: far beyond its time on a loaded machine, so only a real wait
/// (a deadlock, a lock held across an upload) reaches it.
const BLOCKED: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_do_not_deadlock() {
    let tmp = tempfile::tempdir().unwrap();
    let l = open(&dirs(tmp.path(), 4)).await;
    l.make_bucket("cpy").await.unwrap();
    let a = data(9 << 20, 1);
    let b = data((7 << 20) + 3, 2);
    put(&l, "cpy", "a", &a).await;
    put(&l, "cpy", "b", &b).await;
    let replace = PutOptions {
        content_type: Some("text/plain".into()),
        metadata: vec![("X-Amz-Meta-New".into(), "yes".into())],
        ..Default::default()
    };
    let info = tokio::time::timeout(
        BLOCKED,
        l.copy_object("cpy", "a", None, "cpy", "a", Some(&replace)),
    )
    .await
    .expect("copy onto itself deadlocked")
    .unwrap();
    assert_eq!(info.etag, md5_hex(&a));
    let head = l.head_object("cpy", "a", None).await.unwrap();
    assert_eq!(head.content_type, "text/plain");
    assert_eq!(
        head.metadata.get("X-Amz-Meta-New").map(String::as_str),
        Some("yes")
    );
    assert_eq!(get(&l, "cpy", "a").await.unwrap(), a);

    let (x, y) = tokio::time::timeout(BLOCKED, async {
        tokio::join!(
            l.copy_object("cpy", "a", None, "cpy", "b", None),
            l.copy_object("cpy", "b", None, "cpy", "a", None),
        )
    })
    .await
    .expect("crosswise copies deadlocked");
    x.unwrap();
    y.unwrap();
    // Each copy read one consistent version of its source.
    let (na, nb) = (
        get(&l, "cpy", "a").await.unwrap(),
        get(&l, "cpy", "b").await.unwrap(),
    );
    assert!(na == a || na == b);
    assert!(nb == a || nb == b);
    // Metadata copied with the bytes (the REPLACEd headers travel with a).
    let hb = l.head_object("cpy", "b", None).await.unwrap();
    assert_eq!(hb.content_type == "text/plain", nb == a);
}

/// A PUT waiting on a slow client holds no lock: the object's current
/// version stays readable (and deletable keys stay deletable) meanwhile,
/// and the new version appears only once the upload is complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_uploads_do_not_block_readers() {
    let tmp = tempfile::tempdir().unwrap();
    let l = Arc::new(open(&dirs(tmp.path(), 4)).await);
    l.make_bucket("slow").await.unwrap();
    let old = data(3 << 20, 1);
    put(&l, "slow", "k", &old).await;
    let new = data(4 << 20, 2);
    let (mut tx, mut rx) = tokio::io::duplex(64 << 10);
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let (half_tx, half_rx) = tokio::sync::oneshot::channel::<()>();
    let feeder = {
        let new = new.clone();
        tokio::spawn(async move {
            tx.write_all(&new[..(3 << 20) / 2]).await.unwrap();
            half_tx.send(()).unwrap();
            go_rx.await.unwrap();
            tx.write_all(&new[(3 << 20) / 2..]).await.unwrap();
        })
    };
    let writer = {
        let l = l.clone();
        let len = new.len();
        tokio::spawn(async move { l.put_object("slow", "k", &mut rx, &sized(len)).await })
    };
    // The upload has read all but the duplex's 64 KiB of the first half:
    // it is in progress, and stays so until `go`.
    tokio::time::timeout(BLOCKED, half_rx)
        .await
        .expect("the upload did not read its body")
        .unwrap();
    let read = tokio::time::timeout(BLOCKED, get(&l, "slow", "k"))
        .await
        .expect("GET blocked behind an upload in progress")
        .unwrap();
    assert_eq!(read, old, "the upload is not visible before it completes");
    let h = tokio::time::timeout(BLOCKED, l.head_object("slow", "k", None))
        .await
        .expect("HEAD blocked")
        .unwrap();
    assert_eq!(h.etag, md5_hex(&old));
    go_tx.send(()).unwrap();
    feeder.await.unwrap();
    let info = writer.await.unwrap().unwrap();
    assert_eq!(info.etag, md5_hex(&new));
    assert_eq!(get(&l, "slow", "k").await.unwrap(), new);
}
