//! The S3 API through the stock Rust client: the real `tessera` binary,
//! aws-sdk-s3 with its default settings (so uploads are `aws-chunked` with
//! CRC trailers, and payloads are checksummed), every operation the
//! gateway serves, and the exact S3 errors. One file per part of the API.

mod auth;
mod checksums;
mod cold_reads;
mod copy;
mod encryption;
mod https;
mod listing;
mod multipart;
mod objects;
mod tagging;
mod versioning;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};

async fn body(out: aws_sdk_s3::operation::get_object::GetObjectOutput) -> Vec<u8> {
    out.body
        .collect()
        .await
        .expect("body")
        .into_bytes()
        .to_vec()
}

/// Uploads `data` as `bucket/key` in a multipart upload of `part_size`
/// parts (the last one shorter), completing it with the parts' ETags.
async fn upload_in_parts(
    c: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    data: &[u8],
    part_size: usize,
) {
    let up = c
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap().to_owned();
    let mut parts = Vec::new();
    for (n, chunk) in data.chunks(part_size).enumerate() {
        let out = c
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(&id)
            .part_number(n as i32 + 1)
            .body(ByteStream::from(chunk.to_vec()))
            .send()
            .await
            .unwrap();
        parts.push(
            CompletedPart::builder()
                .part_number(n as i32 + 1)
                .e_tag(out.e_tag().unwrap())
                .build(),
        );
    }
    c.complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .unwrap();
}
