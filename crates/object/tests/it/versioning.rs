//! Versioning: versions and delete markers in an enabled bucket, and S3's
//! suspended state.

use object::layer::{Error, GetOptions, ListOptions, VersionSel, Versioning};
use uuid::Uuid;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioning_and_delete_markers() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("ver").await.unwrap();
    assert!(!l.bucket_versioning("ver").await.unwrap());
    // Unversioned overwrite: one version, the old data dir is gone.
    put(&l, "ver", "plain", &data(2 << 20, 1)).await;
    let v = data(3 << 20, 2);
    put(&l, "ver", "plain", &v).await;
    assert_eq!(get(&l, "ver", "plain").await.unwrap(), v);
    for d in &ds {
        let dirs_left = std::fs::read_dir(d.join("ver/plain"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .count();
        assert_eq!(dirs_left, 1, "old data dir removed on {}", d.display());
    }

    l.set_bucket_versioning("ver", true).await.unwrap();
    assert!(l.bucket_versioning("ver").await.unwrap());
    let a = data(100, 3);
    let b = data((1 << 20) + 1, 4);
    let ia = put(&l, "ver", "doc", &a).await;
    let ib = put(&l, "ver", "doc", &b).await;
    let (va, vb) = (ia.version_id.unwrap(), ib.version_id.unwrap());
    assert_ne!(va, vb);
    assert_eq!(get(&l, "ver", "doc").await.unwrap(), b);
    let mut out = Vec::new();
    l.get_object(
        "ver",
        "doc",
        &GetOptions {
            version_id: Some(VersionSel::Id(va)),
            range: None,
        },
        &mut out,
    )
    .await
    .unwrap();
    assert_eq!(out, a);
    let del = l.delete_object("ver", "doc", None).await.unwrap();
    assert!(del.delete_marker);
    match get(&l, "ver", "doc").await {
        Err(Error::NoSuchKey { delete_marker, .. }) => assert!(delete_marker),
        r => panic!("{r:?}"),
    }
    let listed = l
        .list_objects("ver", &ListOptions::default())
        .await
        .unwrap();
    assert!(
        listed.objects.iter().all(|o| o.key != "doc"),
        "hidden by its delete marker"
    );
    let vers = l
        .list_object_versions(
            "ver",
            &ListOptions {
                prefix: "doc".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let ids: Vec<_> = vers
        .versions
        .iter()
        .map(|v| (v.version_id, v.delete_marker, v.is_latest))
        .collect();
    assert_eq!(
        ids,
        vec![
            (del.version_id, true, true),
            (Some(vb), false, false),
            (Some(va), false, false)
        ]
    );
    // Version listing pages: one entry per page, resuming by markers.
    let mut got = Vec::new();
    let (mut km, mut vm): (Option<String>, Option<String>) = (None, None);
    loop {
        let page = l
            .list_object_versions(
                "ver",
                &ListOptions {
                    prefix: "doc".into(),
                    marker: km.clone(),
                    max_keys: 1,
                    ..Default::default()
                },
                vm.as_deref(),
            )
            .await
            .unwrap();
        got.extend(page.versions.iter().map(|v| v.version_id));
        if !page.is_truncated {
            break;
        }
        km = page.next_key_marker;
        vm = page.next_version_marker;
    }
    assert_eq!(got, vec![del.version_id, Some(vb), Some(va)]);
    // Removing the delete marker brings the object back.
    l.delete_object("ver", "doc", del.version_id.map(VersionSel::Id))
        .await
        .unwrap();
    assert_eq!(get(&l, "ver", "doc").await.unwrap(), b);
    // Removing a version removes its data.
    l.delete_object("ver", "doc", Some(VersionSel::Id(vb)))
        .await
        .unwrap();
    assert_eq!(get(&l, "ver", "doc").await.unwrap(), a);
    let r = l.head_object("ver", "doc", Some(VersionSel::Id(vb))).await;
    assert!(matches!(r, Err(Error::NoSuchVersion { .. })), "{r:?}");
    // Versioning survives a restart (bucket metadata on disk).
    drop(l);
    let l = open(&ds).await;
    assert!(l.bucket_versioning("ver").await.unwrap());
    assert_eq!(get(&l, "ver", "doc").await.unwrap(), a);
}

/// S3's suspended state: PUT replaces the null version and keeps the
/// others; DELETE without a version puts a null delete marker in place of
/// the null version (whose data goes) rather than resurrecting an older
/// version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspended_versioning() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("sus").await.unwrap();
    assert_eq!(
        l.bucket_versioning_state("sus").await.unwrap(),
        Versioning::Unversioned
    );
    l.set_bucket_versioning("sus", true).await.unwrap();
    let v1 = data(2 << 20, 1);
    let i1 = put(&l, "sus", "k", &v1).await;
    let id1 = i1.version_id.expect("versioned PUT has an id");

    l.set_bucket_versioning("sus", false).await.unwrap();
    assert_eq!(
        l.bucket_versioning_state("sus").await.unwrap(),
        Versioning::Suspended
    );
    assert!(!l.bucket_versioning("sus").await.unwrap());
    let n1 = data(3 << 20, 2);
    let i2 = put(&l, "sus", "k", &n1).await;
    assert_eq!(i2.version_id, None, "suspended PUT writes the null version");
    let n2 = data((2 << 20) + 7, 3);
    put(&l, "sus", "k", &n2).await;
    assert_eq!(get(&l, "sus", "k").await.unwrap(), n2);
    assert_eq!(
        get_version(&l, "sus", "k", VersionSel::Id(id1))
            .await
            .unwrap(),
        v1
    );
    for d in &ds {
        assert_eq!(data_dirs(d, "sus", "k").len(), 2, "v1 and the null version");
    }

    let del = l.delete_object("sus", "k", None).await.unwrap();
    assert!(del.delete_marker);
    assert_eq!(del.version_id, None, "a null delete marker");
    match get(&l, "sus", "k").await {
        Err(Error::NoSuchKey { delete_marker, .. }) => assert!(delete_marker),
        r => panic!("an older version came back: {:?}", r.map(|b| b.len())),
    }
    for d in &ds {
        assert_eq!(data_dirs(d, "sus", "k").len(), 1, "the null data is gone");
    }
    let versions = l
        .list_object_versions("sus", &ListOptions::default(), None)
        .await
        .unwrap();
    let seen: Vec<(Option<Uuid>, bool)> = versions
        .versions
        .iter()
        .map(|v| (v.version_id, v.delete_marker))
        .collect();
    assert_eq!(seen, vec![(None, true), (Some(id1), false)]);
    // A second delete replaces the null marker: still two versions.
    l.delete_object("sus", "k", None).await.unwrap();
    let versions = l
        .list_object_versions("sus", &ListOptions::default(), None)
        .await
        .unwrap();
    assert_eq!(versions.versions.len(), 2);
    // PUT replaces the null marker with an object again.
    put(&l, "sus", "k", &n1).await;
    assert_eq!(get(&l, "sus", "k").await.unwrap(), n1);
    // Removing the null version by id leaves v1 the latest.
    l.delete_object("sus", "k", Some(VersionSel::Null))
        .await
        .unwrap();
    assert_eq!(get(&l, "sus", "k").await.unwrap(), v1);
}
