//! Versioning: versions, delete markers, and reads and deletes by version.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};

use super::body;
use crate::support::{Server, code};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioning() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("ver").send().await.unwrap();
    let st = c
        .get_bucket_versioning()
        .bucket("ver")
        .send()
        .await
        .unwrap();
    assert!(st.status().is_none());
    c.put_bucket_versioning()
        .bucket("ver")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let st = c
        .get_bucket_versioning()
        .bucket("ver")
        .send()
        .await
        .unwrap();
    assert_eq!(st.status(), Some(&BucketVersioningStatus::Enabled));
    let mut ids = Vec::new();
    for v in [&b"one"[..], b"two"] {
        let out = c
            .put_object()
            .bucket("ver")
            .key("k")
            .body(ByteStream::from(v.to_vec()))
            .send()
            .await
            .unwrap();
        ids.push(out.version_id().unwrap().to_owned());
    }
    assert_ne!(ids[0], ids[1]);
    let got = c
        .get_object()
        .bucket("ver")
        .key("k")
        .version_id(&ids[0])
        .send()
        .await
        .unwrap();
    assert_eq!(got.version_id(), Some(ids[0].as_str()));
    assert_eq!(body(got).await, b"one");
    let del = c
        .delete_object()
        .bucket("ver")
        .key("k")
        .send()
        .await
        .unwrap();
    assert_eq!(del.delete_marker(), Some(true));
    let marker = del.version_id().unwrap().to_owned();
    let e = c
        .get_object()
        .bucket("ver")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    let vs = c.list_object_versions().bucket("ver").send().await.unwrap();
    let got: Vec<_> = vs
        .versions()
        .iter()
        .map(|v| v.version_id().unwrap().to_owned())
        .collect();
    assert_eq!(got, [ids[1].clone(), ids[0].clone()]);
    assert_eq!(vs.delete_markers().len(), 1);
    assert_eq!(vs.delete_markers()[0].version_id(), Some(marker.as_str()));
    assert_eq!(vs.delete_markers()[0].is_latest(), Some(true));
    // Removing the marker brings the object back.
    c.delete_object()
        .bucket("ver")
        .key("k")
        .version_id(&marker)
        .send()
        .await
        .unwrap();
    let got = c.get_object().bucket("ver").key("k").send().await.unwrap();
    assert_eq!(body(got).await, b"two");
    c.delete_object()
        .bucket("ver")
        .key("k")
        .version_id(&ids[1])
        .send()
        .await
        .unwrap();
    let got = c.get_object().bucket("ver").key("k").send().await.unwrap();
    assert_eq!(body(got).await, b"one");
    let e = c
        .get_object()
        .bucket("ver")
        .key("k")
        .version_id("not-a-version")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    // Suspended: PUT replaces the null version.
    c.put_bucket_versioning()
        .bucket("ver")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Suspended)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let st = c
        .get_bucket_versioning()
        .bucket("ver")
        .send()
        .await
        .unwrap();
    assert_eq!(st.status(), Some(&BucketVersioningStatus::Suspended));
}
