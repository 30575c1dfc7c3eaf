//! Reads while drives fail never answer an older version than one that
//! was acknowledged: when the drives that fail may hold the newest
//! version's missing copies, the answer is a read-quorum error until they
//! return. And an edit of a version's metadata (tagging) that misses its
//! quorum is put back, so the version keeps the copies it had.

use object::layer::Error;

use crate::support::faulty::{Fault, faulty_layer};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_never_answers_a_version_older_than_an_acknowledged_one() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let (l, faulty) = faulty_layer(&ds).await;
    l.make_bucket("qvb").await.unwrap();
    l.set_bucket_versioning("qvb", true).await.unwrap();
    let old = data(5000, 1);
    put(&l, "qvb", "k", &old).await;
    // v2 is acknowledged on drives 0, 1 and 2 (2+2: write quorum 3).
    faulty[3].set(Fault::Fail);
    let new = data(7000, 2);
    put(&l, "qvb", "k", &new).await;
    // Drive 3 returns before it is healed; drives 1 and 2 fail. Drives 0
    // and 3 both hold v1 (its read quorum), drive 0 alone holds v2.
    faulty[3].set(Fault::None);
    let head = {
        faulty[1].set(Fault::Fail);
        faulty[2].set(Fault::Fail);
        l.head_object("qvb", "k", None).await
    };
    assert!(matches!(head, Err(Error::ReadQuorum { .. })), "{head:?}");
    // ... and the drives return: v2, as acknowledged.
    unsure_then(&l, &faulty, "k", &new).await;

    // The same for a delete: the key's absence (a delete marker every
    // drive took) is not answered once a newer write may be complete.
    put(&l, "qvb", "back", &old).await;
    l.delete_object("qvb", "back", None).await.unwrap();
    faulty[3].set(Fault::Fail);
    put(&l, "qvb", "back", &new).await;
    faulty[3].set(Fault::None);
    unsure_then(&l, &faulty, "back", &new).await;
}

/// With drives 1 and 2 failing, a GET of `key` is a read-quorum error;
/// once they return, it reads `want`.
async fn unsure_then(
    l: &object::layer::ObjectLayer,
    faulty: &[std::sync::Arc<crate::support::faulty::FaultyDrive>],
    key: &str,
    want: &[u8],
) {
    faulty[1].set(Fault::Fail);
    faulty[2].set(Fault::Fail);
    let got = get(l, "qvb", key).await;
    assert!(
        matches!(got, Err(Error::ReadQuorum { .. })),
        "{key}: {:?}",
        got.map(|b| b.len())
    );
    faulty[1].set(Fault::None);
    faulty[2].set(Fault::None);
    assert_eq!(get(l, "qvb", key).await.unwrap(), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_edit_short_of_its_quorum_is_put_back() {
    let tmp = tempfile::tempdir().unwrap();
    // 16 drives: 12 data and 4 parity shards, write quorum 12 (a
    // majority would be 9).
    let ds = dirs(tmp.path(), 16);
    let (l, faulty) = faulty_layer(&ds).await;
    l.make_bucket("qtb").await.unwrap();
    let body = data(300_000, 3);
    put(&l, "qtb", "obj", &body).await;
    l.update_object_metadata("qtb", "obj", None, &|m| {
        m.insert("X-Amz-Tagging", "v=1".into());
    })
    .await
    .unwrap();
    // Five drives refuse the edit: eleven took it, one short.
    for f in &faulty[..5] {
        f.set(Fault::FailWholeWrites);
    }
    let edit = l
        .update_object_metadata("qtb", "obj", None, &|m| {
            m.insert("X-Amz-Tagging", "v=2".into());
        })
        .await;
    assert!(
        matches!(edit, Err(Error::WriteQuorum { ok: 11, needed: 12 })),
        "{edit:?}"
    );
    for f in &faulty[..5] {
        f.set(Fault::None);
    }
    // The eleven were put back: the object reads with its tags as they
    // were, from any twelve drives.
    let head = l.head_object("qtb", "obj", None).await.unwrap();
    assert_eq!(
        head.metadata.get("X-Amz-Tagging").map(String::as_str),
        Some("v=1")
    );
    for f in &faulty[12..] {
        f.set(Fault::Fail);
    }
    assert_eq!(get(&l, "qtb", "obj").await.unwrap(), body);
    let head = l.head_object("qtb", "obj", None).await.unwrap();
    assert_eq!(
        head.metadata.get("X-Amz-Tagging").map(String::as_str),
        Some("v=1")
    );
}

/// A heal removes the copies of a version only when fewer drives hold it
/// than its read quorum (its data cannot be read back: a failed write's or
/// a missed delete's leftovers). Copies on enough drives that disagree (an
/// edit cut short by a crash, neither group reaching the quorum) are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_that_disagree_on_enough_drives_are_not_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 8);
    let opts = object::layer::LayerOptions {
        parity: Some(2),
        ..Default::default()
    };
    let l = object::layer::ObjectLayer::open_dirs(&ds, opts)
        .await
        .unwrap();
    l.make_bucket("qdb").await.unwrap();
    put(&l, "qdb", "k", &data(300_000, 5)).await;
    // Three of eight drives took an edit, five kept the old copy: neither
    // reaches the read quorum of 6.
    for d in &ds[..3] {
        let path = d.join("qdb/k/xl.meta");
        let bytes = std::fs::read(&path).unwrap();
        let mut m = object::xlmeta::XlMeta::decode(&bytes).unwrap().into_owned();
        m.update_version(&[0; 16], |v| {
            if let Some(o) = v.as_object_mut() {
                o.set_user("X-Amz-Tagging", "cut=short");
            }
        })
        .unwrap();
        std::fs::write(&path, m.encode().unwrap()).unwrap();
    }
    assert!(get(&l, "qdb", "k").await.is_err());
    let h = l
        .heal_object("qdb", "k", Some(object::layer::VersionSel::Null))
        .await;
    assert!(matches!(&h, Err(e) if e.is_not_found()), "{h:?}");
    for d in &ds {
        assert!(d.join("qdb/k/xl.meta").exists(), "{}", d.display());
    }
}
