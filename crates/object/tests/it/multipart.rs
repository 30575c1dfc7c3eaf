//! Multipart uploads: parts uploaded, replaced, listed, completed and
//! aborted, and part ETags given by the caller.

use md5::{Digest, Md5};
use object::layer::{Error, GetOptions, PartOptions, PutOptions, Range};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_uploads() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("mpu").await.unwrap();
    let p1 = data((5 << 20) + 7, 1);
    let p2_old = data(5 << 20, 2);
    let p2 = data(5 << 20, 3);
    let p3 = data(1234, 4);
    let opts = PutOptions {
        content_type: Some("video/mp4".into()),
        metadata: vec![("X-Amz-Meta-Kind".into(), "multi".into())],
        ..Default::default()
    };
    let id = l
        .create_multipart_upload("mpu", "big/file", &opts)
        .await
        .unwrap();
    let ups = l.list_multipart_uploads("mpu", "big/").await.unwrap();
    assert_eq!(ups.len(), 1);
    assert_eq!(
        (ups[0].key.as_str(), ups[0].upload_id.as_str()),
        ("big/file", id.as_str())
    );
    // Out of order, and part 2 replaced.
    let e3 = l
        .upload_part(
            "mpu",
            "big/file",
            &id,
            3,
            &mut &p3[..],
            Some(p3.len() as u64),
        )
        .await
        .unwrap();
    let _old = l
        .upload_part("mpu", "big/file", &id, 2, &mut &p2_old[..], None)
        .await
        .unwrap();
    let e1 = l
        .upload_part(
            "mpu",
            "big/file",
            &id,
            1,
            &mut &p1[..],
            Some(p1.len() as u64),
        )
        .await
        .unwrap();
    let e2 = l
        .upload_part(
            "mpu",
            "big/file",
            &id,
            2,
            &mut &p2[..],
            Some(p2.len() as u64),
        )
        .await
        .unwrap();
    assert_eq!(e1.etag, md5_hex(&p1));
    let listed = l.list_parts("mpu", "big/file", &id).await.unwrap();
    let summary: Vec<(i64, String, u64)> = listed
        .iter()
        .map(|p| (p.number, p.etag.clone(), p.size))
        .collect();
    assert_eq!(
        summary,
        vec![
            (1, e1.etag.clone(), p1.len() as u64),
            (2, e2.etag.clone(), p2.len() as u64),
            (3, e3.etag.clone(), p3.len() as u64)
        ]
    );
    // Errors.
    for n in [0, 10_001] {
        let r = l
            .upload_part("mpu", "big/file", &id, n, &mut &b"x"[..], None)
            .await;
        assert!(matches!(r, Err(Error::InvalidPartNumber(_))), "{r:?}");
    }
    let bad = l
        .complete_multipart_upload(
            "mpu",
            "big/file",
            &id,
            &[(1, e1.etag.clone()), (2, _old.etag.clone())],
        )
        .await;
    assert!(matches!(bad, Err(Error::InvalidPart(_))), "{bad:?}");
    let bad = l
        .complete_multipart_upload(
            "mpu",
            "big/file",
            &id,
            &[(2, e2.etag.clone()), (1, e1.etag.clone())],
        )
        .await;
    assert!(matches!(bad, Err(Error::InvalidPartOrder)), "{bad:?}");
    let bad = l
        .complete_multipart_upload(
            "mpu",
            "big/file",
            &id,
            &[(3, e3.etag.clone()), (4, e3.etag.clone())],
        )
        .await;
    assert!(matches!(bad, Err(Error::InvalidPart(_))), "{bad:?}");
    let small = l
        .complete_multipart_upload(
            "mpu",
            "big/file",
            &id,
            &[(3, e3.etag.clone()), (4, "x".into())],
        )
        .await;
    assert!(small.is_err());
    let r = l
        .complete_multipart_upload("mpu", "big/file", "nope", &[(1, e1.etag.clone())])
        .await;
    assert!(matches!(r, Err(Error::NoSuchUpload(_))), "{r:?}");
    // Complete with parts 1..3 (quoted ETags, as clients send them).
    let parts = vec![
        (1, format!("\"{}\"", e1.etag)),
        (2, e2.etag.clone()),
        (3, e3.etag.clone()),
    ];
    let info = l
        .complete_multipart_upload("mpu", "big/file", &id, &parts)
        .await
        .unwrap();
    let mut cat = Vec::new();
    for p in [&e1, &e2, &e3] {
        cat.extend(hex::decode(&p.etag).unwrap());
    }
    assert_eq!(info.etag, format!("{}-3", md5_hex(&cat)));
    let whole: Vec<u8> = [p1.clone(), p2.clone(), p3.clone()].concat();
    assert_eq!(get(&l, "mpu", "big/file").await.unwrap(), whole);
    let h = l.head_object("mpu", "big/file", None).await.unwrap();
    assert_eq!(h.parts.len(), 3);
    assert_eq!(h.content_type, "video/mp4");
    assert_eq!(
        h.metadata.get("X-Amz-Meta-Kind").map(String::as_str),
        Some("multi")
    );
    assert!(!h.metadata.keys().any(|k| k.contains("tessera-internal")));
    // A range across the part boundaries.
    let mut out = Vec::new();
    let o = p1.len() as u64 - 10;
    l.get_object(
        "mpu",
        "big/file",
        &GetOptions {
            version_id: None,
            range: Some(Range::From {
                offset: o,
                length: Some((5 << 20) + 30),
            }),
        },
        &mut out,
    )
    .await
    .unwrap();
    assert_eq!(out, &whole[o as usize..o as usize + (5 << 20) + 30]);
    // The upload is gone.
    assert!(
        l.list_multipart_uploads("mpu", "")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        l.list_parts("mpu", "big/file", &id).await,
        Err(Error::NoSuchUpload(_))
    ));
    // Survives the loss of two drives, and heals.
    wipe_bucket(&ds[0], "mpu");
    wipe_bucket(&ds[1], "mpu");
    assert_eq!(get(&l, "mpu", "big/file").await.unwrap(), whole);
    assert_eq!(
        l.heal_object("mpu", "big/file", None)
            .await
            .unwrap()
            .healed_drives,
        vec![0, 1]
    );
    wipe_bucket(&ds[2], "mpu");
    wipe_bucket(&ds[3], "mpu");
    assert_eq!(get(&l, "mpu", "big/file").await.unwrap(), whole);

    // Abort removes the parts; a small part before the last is refused.
    let id2 = l
        .create_multipart_upload("mpu", "other", &PutOptions::default())
        .await
        .unwrap();
    let a = l
        .upload_part("mpu", "other", &id2, 1, &mut &p3[..], None)
        .await
        .unwrap();
    let b = l
        .upload_part("mpu", "other", &id2, 2, &mut &p3[..], None)
        .await
        .unwrap();
    let r = l
        .complete_multipart_upload(
            "mpu",
            "other",
            &id2,
            &[(1, a.etag.clone()), (2, b.etag.clone())],
        )
        .await;
    assert!(
        matches!(r, Err(Error::EntityTooSmall { part: 1, .. })),
        "{r:?}"
    );
    // The minimum applies to the size the client uploaded, not to the
    // stored size (an encrypted part is stored larger than its plaintext).
    let id3 = l
        .create_multipart_upload("mpu", "sealed", &PutOptions::default())
        .await
        .unwrap();
    let stored = vec![7u8; 5 << 20];
    let a = l
        .upload_part_with(
            "mpu",
            "sealed",
            &id3,
            1,
            &mut &stored[..],
            &PartOptions {
                size: Some(stored.len() as u64),
                actual_size: Some((5 << 20) - 1000),
                ..PartOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((a.size, a.actual_size), (5 << 20, (5 << 20) - 1000));
    let b = l
        .upload_part("mpu", "sealed", &id3, 2, &mut &p3[..], None)
        .await
        .unwrap();
    let r = l
        .complete_multipart_upload("mpu", "sealed", &id3, &[(1, a.etag), (2, b.etag)])
        .await;
    assert!(
        matches!(
            r,
            Err(Error::EntityTooSmall {
                part: 1,
                size: 5241880
            })
        ),
        "{r:?}"
    );
    l.abort_multipart_upload("mpu", "sealed", &id3)
        .await
        .unwrap();
    l.abort_multipart_upload("mpu", "other", &id2)
        .await
        .unwrap();
    assert!(matches!(
        l.upload_part("mpu", "other", &id2, 3, &mut &p3[..], None)
            .await,
        Err(Error::NoSuchUpload(_))
    ));
    for d in &ds {
        let left = std::fs::read_dir(d.join(".minio.sys/multipart"))
            .unwrap()
            .count();
        assert_eq!(left, 0, "multipart area of {} not cleaned", d.display());
    }
}

/// A part whose ETag the caller's reader gives (an SSE-S3 part's ETag is
/// the MD5 of its plaintext, not of the ciphertext stored): that ETag is
/// answered, listed, checked on completion and goes into the object's
/// ETag; a reader that ends without one fails the part and leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_caller_given_part_etags() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("mpu").await.unwrap();
    let id = l
        .create_multipart_upload("mpu", "given", &PutOptions::default())
        .await
        .unwrap();
    let (p1, p2) = (data(5 << 20, 11), data(4321, 12));
    let given = [
        "0123456789abcdef0123456789abcdef",
        "fedcba9876543210fedcba9876543210",
    ];
    let mut parts = Vec::new();
    for (n, (body, etag)) in [(&p1, given[0]), (&p2, given[1])].into_iter().enumerate() {
        let slot = object::layer::PartEtag::default();
        // The reader sets it when the body ends: here, before the call.
        *slot.lock().unwrap() = Some(etag.to_owned());
        let opts = PartOptions {
            size: Some(body.len() as u64),
            actual_size: None,
            etag: Some(slot),
            checksum: None,
        };
        let p = l
            .upload_part_with("mpu", "given", &id, n as i64 + 1, &mut &body[..], &opts)
            .await
            .unwrap();
        assert_eq!(p.etag, etag);
        assert_eq!(p.size, body.len() as u64);
        parts.push((p.number, p.etag));
    }
    let listed: Vec<String> = l
        .list_parts("mpu", "given", &id)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.etag)
        .collect();
    assert_eq!(listed, given);
    // No ETag from the reader (or not 32 hex digits): the part fails.
    for bad in [None, Some("not-an-etag".to_owned())] {
        let opts = PartOptions {
            etag: Some(std::sync::Arc::new(std::sync::Mutex::new(bad))),
            ..Default::default()
        };
        let r = l
            .upload_part_with("mpu", "given", &id, 3, &mut &p2[..], &opts)
            .await;
        assert!(matches!(r, Err(Error::Internal(_))), "{r:?}");
    }
    // The MD5 of the stored bytes does not complete the upload.
    let wrong = hex::encode(Md5::digest(&p1));
    let r = l
        .complete_multipart_upload("mpu", "given", &id, &[(1, wrong), (2, given[1].into())])
        .await;
    assert!(matches!(r, Err(Error::InvalidPart(_))), "{r:?}");
    let info = l
        .complete_multipart_upload("mpu", "given", &id, &parts)
        .await
        .unwrap();
    let mut md5 = Md5::new();
    for e in given {
        md5.update(hex::decode(e).unwrap());
    }
    assert_eq!(info.etag, format!("{}-2", hex::encode(md5.finalize())));
    let mut got = Vec::new();
    l.get_object("mpu", "given", &GetOptions::default(), &mut got)
        .await
        .unwrap();
    assert_eq!(got, [p1, p2].concat());
    for d in &ds {
        let left = staging_leftovers(d);
        assert!(
            left.is_empty(),
            "tmp area of {} not cleaned: {left:?}",
            d.display()
        );
    }
}

/// Part checksums the body's reader records are kept with the parts,
/// listed, recorded on the completed object in part order, and handed to
/// the completion hook, whose entries the object stores; a hook that
/// refuses leaves the upload in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_part_checksums_and_the_completion_hook() {
    use object::layer::{CompleteOptions, PartsChecksum, TrailingMetadata, multipart};
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("mpu").await.unwrap();
    let id = l
        .create_multipart_upload("mpu", "ck", &PutOptions::default())
        .await
        .unwrap();
    let bodies = [data(5 << 20, 21), data(777, 22)];
    let mut parts = Vec::new();
    for (n, body) in bodies.iter().enumerate() {
        let record = TrailingMetadata::default();
        // What the gateway's reader does when the body's checksum checks.
        record
            .lock()
            .unwrap()
            .push(("x-amz-checksum-crc32".into(), format!("value{n}==")));
        let opts = PartOptions {
            size: Some(body.len() as u64),
            checksum: Some(record),
            ..PartOptions::default()
        };
        let p = l
            .upload_part_with("mpu", "ck", &id, n as i64 + 1, &mut &body[..], &opts)
            .await
            .unwrap();
        parts.push((p.number, p.etag));
    }
    let listed = l.list_parts("mpu", "ck", &id).await.unwrap();
    let sums: Vec<_> = listed
        .iter()
        .map(|p| p.checksum.clone().unwrap().1)
        .collect();
    assert_eq!(sums, ["value0==", "value1=="]);
    let refuse = CompleteOptions {
        checksum: Some(PartsChecksum(std::sync::Arc::new(|_: &[_]| {
            Err("no".into())
        }))),
        ..CompleteOptions::default()
    };
    let r = l
        .complete_multipart_upload_with("mpu", "ck", &id, &parts, &refuse)
        .await;
    assert!(matches!(r, Err(Error::Rejected(_))), "{r:?}");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let hook_seen = seen.clone();
    let accept = CompleteOptions {
        checksum: Some(PartsChecksum(std::sync::Arc::new(
            move |chosen: &[object::layer::UploadedPart]| {
                *hook_seen.lock().unwrap() = chosen.iter().map(|p| p.number).collect::<Vec<_>>();
                Ok(vec![(
                    "x-amz-checksum-crc32".to_owned(),
                    "whole-2".to_owned(),
                )])
            },
        ))),
        ..CompleteOptions::default()
    };
    let info = l
        .complete_multipart_upload_with("mpu", "ck", &id, &parts, &accept)
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), [1, 2]);
    let head = l.head_object("mpu", "ck", None).await.unwrap();
    for i in [&info, &head] {
        assert_eq!(
            i.metadata.get("x-amz-checksum-crc32").map(String::as_str),
            Some("whole-2")
        );
        assert_eq!(
            multipart::part_checksums(i),
            Some(("x-amz-checksum-crc32", vec!["value0==", "value1=="]))
        );
    }
}
