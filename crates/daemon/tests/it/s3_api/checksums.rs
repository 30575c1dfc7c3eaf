//! Checksums: the SDK's CRC trailers and checksum headers verified,
//! stored and returned.

use aws_sdk_s3::primitives::ByteStream;

use super::body;
use crate::support::{Server, data};

/// The SDK's default upload sends a CRC32 trailer; the server verifies it,
/// stores it, and returns it in checksum mode (the SDK then validates the
/// download against it). A checksum given as a header is kept the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksums_stored_and_returned() {
    use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode};
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("sums").send().await.unwrap();
    let d = data((1 << 20) + 99, 12);
    let put = c
        .put_object()
        .bucket("sums")
        .key("crc")
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let crc = put
        .checksum_crc32()
        .expect("the server echoes the verified CRC32")
        .to_owned();
    let got = c
        .get_object()
        .bucket("sums")
        .key("crc")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap();
    assert_eq!(got.checksum_crc32(), Some(crc.as_str()));
    assert!(body(got).await == d);
    let head = c
        .head_object()
        .bucket("sums")
        .key("crc")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap();
    assert_eq!(head.checksum_crc32(), Some(crc.as_str()));
    // Other algorithms, computed by the SDK.
    for alg in [
        ChecksumAlgorithm::Crc32C,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Sha256,
        ChecksumAlgorithm::Crc64Nvme,
    ] {
        let key = format!("k-{}", alg.as_str());
        let put = c
            .put_object()
            .bucket("sums")
            .key(&key)
            .checksum_algorithm(alg.clone())
            .body(ByteStream::from(d.clone()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{alg:?}: {e:?}"));
        let got = c
            .get_object()
            .bucket("sums")
            .key(&key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap();
        let (sent, back) = match alg {
            ChecksumAlgorithm::Crc32C => (put.checksum_crc32_c(), got.checksum_crc32_c()),
            ChecksumAlgorithm::Sha1 => (put.checksum_sha1(), got.checksum_sha1()),
            ChecksumAlgorithm::Sha256 => (put.checksum_sha256(), got.checksum_sha256()),
            _ => (put.checksum_crc64_nvme(), got.checksum_crc64_nvme()),
        };
        assert!(sent.is_some(), "{alg:?} echoed");
        assert_eq!(sent, back, "{alg:?}");
        assert!(body(got).await == d);
    }
    // A ranged read returns no full-object checksum.
    let part = c
        .get_object()
        .bucket("sums")
        .key("crc")
        .range("bytes=0-9")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap();
    assert!(part.checksum_crc32().is_none());
}
