//! Conditional writes through the object layer as an embedder calls it:
//! racing writers with a precondition (exactly one commits), and a
//! completed upload completed again (the same version, not a new one).

use std::sync::Arc;

use object::layer::{CompleteOptions, Error, GetOptions, Precondition, PutOptions};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_if_none_match_writers_commit_once() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = Arc::new(open(&ds).await);
    l.make_bucket("cond").await.unwrap();
    let writers = 24;
    let mut tasks = Vec::new();
    for i in 0..writers {
        let l = l.clone();
        tasks.push(tokio::spawn(async move {
            // Inline and streamed bodies both race.
            let body = data(if i % 2 == 0 { 100 } else { 2 << 20 }, i as u64);
            let opts = PutOptions {
                precondition: Some(Precondition::Absent),
                ..Default::default()
            };
            let r = l.put_object("cond", "lock", &mut &body[..], &opts).await;
            (r, body)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            (Ok(info), body) => winners.push((info, body)),
            (Err(Error::PreconditionFailed), _) => {}
            (Err(e), _) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(winners.len(), 1);
    let mut got = Vec::new();
    let info = l
        .get_object("cond", "lock", &GetOptions::default(), &mut got)
        .await
        .unwrap();
    assert_eq!(got, winners[0].1);
    assert_eq!(info.etag, winners[0].0.etag);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completed_upload_completes_again_with_the_same_version() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("mpu").await.unwrap();
    l.set_bucket_versioning("mpu", true).await.unwrap();
    let id = l
        .create_multipart_upload("mpu", "k", &PutOptions::default())
        .await
        .unwrap();
    let part = data(1000, 7);
    let up = l
        .upload_part("mpu", "k", &id, 1, &mut &part[..], Some(1000))
        .await
        .unwrap();
    let parts = vec![(1, up.etag.clone())];
    let first = l
        .complete_multipart_upload("mpu", "k", &id, &parts)
        .await
        .unwrap();
    // A retry under a precondition that the first complete made false
    // still answers the first complete's version.
    let opts = CompleteOptions {
        precondition: Some(Precondition::Absent),
        ..CompleteOptions::default()
    };
    let again = l
        .complete_multipart_upload_with("mpu", "k", &id, &parts, &opts)
        .await
        .unwrap();
    assert_eq!(
        (first.version_id, &first.etag),
        (again.version_id, &again.etag)
    );
    let other = vec![(1, "0".repeat(32))];
    let e = l.complete_multipart_upload("mpu", "k", &id, &other).await;
    assert!(matches!(e, Err(Error::NoSuchUpload(_))), "{e:?}");
}
