//! Multipart uploads: parts, listings of uploads and parts, completion
//! and its errors.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};

use super::body;
use crate::support::{Server, code, data, md5_hex};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("mpu").send().await.unwrap();
    let part = 5 << 20;
    let d = data(2 * part + 12345, 3);
    let up = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("big")
        .content_type("video/x-test")
        .metadata("m", "1")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap().to_owned();
    // Part 2 first, then 1, then 3; part 1 is uploaded twice.
    let mut etags = std::collections::BTreeMap::new();
    for (n, range) in [
        (2, part..2 * part),
        (1, 0..part),
        (1, 0..part),
        (3, 2 * part..d.len()),
    ] {
        let out = c
            .upload_part()
            .bucket("mpu")
            .key("big")
            .upload_id(&id)
            .part_number(n)
            .body(ByteStream::from(d[range.clone()].to_vec()))
            .send()
            .await
            .unwrap();
        assert_eq!(out.e_tag().unwrap(), format!("\"{}\"", md5_hex(&d[range])));
        etags.insert(n, out.e_tag().unwrap().to_owned());
    }
    let parts = c
        .list_parts()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .send()
        .await
        .unwrap();
    let nums: Vec<_> = parts
        .parts()
        .iter()
        .map(|p| p.part_number().unwrap())
        .collect();
    assert_eq!(nums, [1, 2, 3]);
    let page = c
        .list_parts()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .max_parts(2)
        .send()
        .await
        .unwrap();
    assert_eq!(page.parts().len(), 2);
    assert_eq!(page.is_truncated(), Some(true));
    assert_eq!(page.next_part_number_marker(), Some("2"));
    let uploads = c
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .unwrap();
    assert_eq!(uploads.uploads().len(), 1);
    assert_eq!(uploads.uploads()[0].upload_id(), Some(id.as_str()));

    let completed = |list: &[(i32, &str)]| {
        CompletedMultipartUpload::builder()
            .set_parts(Some(
                list.iter()
                    .map(|(n, e)| CompletedPart::builder().part_number(*n).e_tag(*e).build())
                    .collect(),
            ))
            .build()
    };
    // Wrong ETag, wrong order.
    let e = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .multipart_upload(completed(&[(1, &etags[&1]), (2, "\"0123\"")]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidPart");
    let e = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .multipart_upload(completed(&[(2, &etags[&2]), (1, &etags[&1])]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidPartOrder");
    let out = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .multipart_upload(completed(&[
            (1, &etags[&1]),
            (2, &etags[&2]),
            (3, &etags[&3]),
        ]))
        .send()
        .await
        .unwrap();
    assert!(out.e_tag().unwrap().ends_with("-3\""), "{:?}", out.e_tag());
    let got = c
        .get_object()
        .bucket("mpu")
        .key("big")
        .send()
        .await
        .unwrap();
    assert_eq!(got.content_type(), Some("video/x-test"));
    assert_eq!(got.metadata().unwrap().get("m").unwrap(), "1");
    assert!(body(got).await == d);
    // One part by number.
    let p2 = c
        .get_object()
        .bucket("mpu")
        .key("big")
        .part_number(2)
        .send()
        .await
        .unwrap();
    assert_eq!(p2.parts_count(), Some(3));
    assert!(body(p2).await == d[part..2 * part]);
    let e = c
        .list_parts()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");

    // EntityTooSmall: a small part that is not the last.
    let id2 = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("small")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let mut small = Vec::new();
    for n in 1..=2 {
        let out = c
            .upload_part()
            .bucket("mpu")
            .key("small")
            .upload_id(&id2)
            .part_number(n)
            .body(ByteStream::from(vec![n as u8; 1000]))
            .send()
            .await
            .unwrap();
        small.push((n, out.e_tag().unwrap().to_owned()));
    }
    let e = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .multipart_upload(completed(&[(1, &small[0].1), (2, &small[1].1)]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "EntityTooSmall");
    // Abort.
    c.abort_multipart_upload()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .send()
        .await
        .unwrap();
    let e = c
        .upload_part()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .part_number(3)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");
    let e = c
        .upload_part()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .part_number(10001)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
}
