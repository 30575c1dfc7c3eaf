//! MinIO interop: MinIO, started on the same drives with the same static
//! KMS key, reads Tessera's encrypted objects, and Tessera reads MinIO's
//! (feature `minio-interop`; `TESSERA_MINIO` names MinIO's binary).

use std::path::PathBuf;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;
use md5::Digest as _;

use crate::harness::*;

/// Tessera's encrypted objects are MinIO's format: MinIO, started on the
/// same drives with the same static KMS key, reads them; and Tessera reads
/// what MinIO encrypted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minio_reads_tessera_encryption_and_back() {
    let minio = std::env::var("TESSERA_MINIO")
        .expect("TESSERA_MINIO names the MinIO binary (cargo xtask tools installs it)");
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..4).map(|i| tmp.path().join(format!("d{i}"))).collect();
    let d = data(3 * (1 << 16) + 99, 21);
    let small = b"small and secret".to_vec();
    let mp = data((5 << 20) * 2 + 4321, 22);
    let ckey = [9u8; 32];
    let (kb, km) = (b64(&ckey), b64(&md5::Md5::digest(ckey)));
    {
        let tmp2 = tempfile::tempdir().unwrap();
        let srv = serve(dirs.clone(), tmp2, true).await;
        let c = client(&srv.endpoint, AK, SK);
        c.create_bucket().bucket("mix").send().await.unwrap();
        multipart_put(&c, "mix", "mp-s3", &mp, 5 << 20, None, true).await;
        multipart_put(&c, "mix", "mp-c", &mp, 5 << 20, Some((&kb, &km)), false).await;
        for (k, body) in [("big", &d), ("small", &small)] {
            c.put_object()
                .bucket("mix")
                .key(format!("s3-{k}"))
                .server_side_encryption(ServerSideEncryption::Aes256)
                .body(ByteStream::from(body.clone()))
                .send()
                .await
                .unwrap();
            c.put_object()
                .bucket("mix")
                .key(format!("c-{k}"))
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&kb)
                .sse_customer_key_md5(&km)
                .body(ByteStream::from(body.clone()))
                .send()
                .await
                .unwrap();
        }
    }
    // MinIO on the same drives.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    // MinIO takes SSE-C keys only over TLS.
    let certs = tmp.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let ca_pem = ck.cert.pem();
    std::fs::write(certs.join("public.crt"), &ca_pem).unwrap();
    std::fs::write(certs.join("private.key"), ck.signing_key.serialize_pem()).unwrap();
    let mut child = std::process::Command::new(&minio)
        .arg("--certs-dir")
        .arg(&certs)
        .arg("server")
        .arg("--address")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--console-address")
        .arg("127.0.0.1:0")
        .args(&dirs)
        .env("MINIO_CI_CD", "1")
        .env("MINIO_ROOT_USER", AK)
        .env("MINIO_ROOT_PASSWORD", SK)
        .env("MINIO_KMS_SECRET_KEY", KMS_KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start MinIO");
    let endpoint = format!("https://localhost:{port}");
    let mc = client_trusting(&endpoint, AK, SK, Some(&ca_pem));
    let mut ready = false;
    for _ in 0..300 {
        if mc.list_buckets().send().await.is_ok() {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(ready, "MinIO did not start");
    let result = async {
        assert!(
            get(&mc, "mix", "mp-s3").await == mp,
            "MinIO reads Tessera's multipart SSE-S3"
        );
        let got = mc
            .get_object()
            .bucket("mix")
            .key("mp-c")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&kb)
            .sse_customer_key_md5(&km)
            .send()
            .await
            .unwrap_or_else(|e| panic!("MinIO reads Tessera's multipart SSE-C: {e:?}"))
            .body
            .collect()
            .await
            .unwrap()
            .into_bytes();
        assert!(got[..] == mp[..], "MinIO reads Tessera's multipart SSE-C");
        multipart_put(&mc, "mix", "m-mp", &mp, 5 << 20, None, true).await;
        for (k, body) in [("big", &d), ("small", &small)] {
            let got = get(&mc, "mix", &format!("s3-{k}")).await;
            assert!(got == *body, "MinIO reads Tessera's SSE-S3 {k}");
            let head = mc
                .head_object()
                .bucket("mix")
                .key(format!("s3-{k}"))
                .send()
                .await
                .unwrap();
            assert_eq!(head.e_tag().unwrap(), format!("\"{}\"", md5_hex(body)));
            let got = mc
                .get_object()
                .bucket("mix")
                .key(format!("c-{k}"))
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&kb)
                .sse_customer_key_md5(&km)
                .send()
                .await
                .unwrap_or_else(|e| panic!("MinIO reads Tessera's SSE-C {k}: {e:?}"))
                .body
                .collect()
                .await
                .unwrap()
                .into_bytes();
            assert!(got[..] == body[..], "MinIO reads Tessera's SSE-C {k}");
        }
        // MinIO writes encrypted objects for Tessera to read.
        for (k, body) in [("m-big", &d), ("m-small", &small)] {
            mc.put_object()
                .bucket("mix")
                .key(k)
                .server_side_encryption(ServerSideEncryption::Aes256)
                .body(ByteStream::from(body.clone()))
                .send()
                .await
                .unwrap();
            mc.put_object()
                .bucket("mix")
                .key(format!("{k}-c"))
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&kb)
                .sse_customer_key_md5(&km)
                .body(ByteStream::from(body.clone()))
                .send()
                .await
                .unwrap();
        }
        // MinIO's listing of what both wrote: the oracle of the ETags and
        // sizes Tessera lists (encrypted objects list the HEAD ETag and the
        // plaintext size, not what is stored).
        listing_of(&mc, "mix").await
    }
    .await;
    let _ = child.kill();
    let _ = child.wait();
    let minio_listing = result;
    let tmp3 = tempfile::tempdir().unwrap();
    let srv = serve(dirs.clone(), tmp3, true).await;
    let c = client(&srv.endpoint, AK, SK);
    assert_eq!(minio_listing.len(), 11, "{minio_listing:?}");
    assert_eq!(listing_of(&c, "mix").await, minio_listing);
    // And the HEAD ETags of SSE-C objects, written by either, are MinIO's.
    for (k, etag, _) in minio_listing
        .iter()
        .filter(|(k, ..)| k.starts_with("c-") || k.ends_with("-c"))
    {
        let head = c
            .head_object()
            .bucket("mix")
            .key(k)
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&kb)
            .sse_customer_key_md5(&km)
            .send()
            .await
            .unwrap();
        assert_eq!(head.e_tag(), Some(etag.as_str()), "{k}");
    }
    assert!(
        get(&c, "mix", "m-mp").await == mp,
        "Tessera reads MinIO's multipart SSE-S3"
    );
    let lo = (5 << 20) - 100;
    let got = c
        .get_object()
        .bucket("mix")
        .key("m-mp")
        .range(format!("bytes={lo}-{}", lo + 200))
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    assert!(got[..] == mp[lo..=lo + 200], "a range across MinIO's parts");
    for (k, body) in [("m-big", &d), ("m-small", &small)] {
        assert!(
            get(&c, "mix", k).await == *body,
            "Tessera reads MinIO's SSE-S3 {k}"
        );
        let head = c.head_object().bucket("mix").key(k).send().await.unwrap();
        assert_eq!(head.e_tag().unwrap(), format!("\"{}\"", md5_hex(body)));
        let got = c
            .get_object()
            .bucket("mix")
            .key(format!("{k}-c"))
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&kb)
            .sse_customer_key_md5(&km)
            .range("bytes=1-70000")
            .send()
            .await
            .unwrap_or_else(|e| panic!("Tessera reads MinIO's SSE-C {k}: {e:?}"))
            .body
            .collect()
            .await
            .unwrap()
            .into_bytes();
        let hi = 70_000.min(body.len() - 1);
        assert!(got[..] == body[1..=hi], "Tessera reads MinIO's SSE-C {k}");
    }
}
