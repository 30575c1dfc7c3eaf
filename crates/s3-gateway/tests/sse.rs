//! Server-side encryption through the stock Rust client: the gateway is
//! served over real HTTP in-process (with the encryption settings a test
//! needs), aws-sdk-s3 talks to it. SSE-S3, SSE-KMS and SSE-C round trips,
//! ranges across package boundaries, copies between modes, wrong and
//! missing keys, and the bytes on disk are never the plaintext.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use md5::Digest as _;
use object::layer::{LayerOptions, ObjectLayer};
use s3_gateway::{EncryptionConfig, Gateway, GatewayConfig};

const AK: &str = "sse-access";
const SK: &str = "sse-secret-key";
/// The static KMS key `MINIO_KMS_SECRET_KEY` would name.
pub const KMS_KEY: &str = "tessera-kms:MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";

fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn md5_hex(b: &[u8]) -> String {
    hex::encode(md5::Md5::digest(b))
}

fn b64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let v = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(v[0]) << 16) | (u32::from(v[1]) << 8) | u32::from(v[2]);
        for i in 0..4 {
            out.push(if i <= c.len() {
                A[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

struct Server {
    endpoint: String,
    layer: Arc<ObjectLayer>,
    dirs: Vec<PathBuf>,
    _tmp: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(dirs: Vec<PathBuf>, tmp: tempfile::TempDir, kms: bool) -> Server {
    serve_with(dirs, tmp, kms, LayerOptions::default()).await
}

async fn serve_with(
    dirs: Vec<PathBuf>,
    tmp: tempfile::TempDir,
    kms: bool,
    opts: LayerOptions,
) -> Server {
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let layer = Arc::new(ObjectLayer::open_dirs(&dirs, opts).await.unwrap());
    let gw = Arc::new(Gateway::new(
        Arc::clone(&layer),
        GatewayConfig {
            credentials: vec![(AK.into(), SK.into())],
            encryption: EncryptionConfig {
                kms: kms.then(|| {
                    Arc::new(sse::kms::StaticKms::parse(KMS_KEY).unwrap()) as Arc<dyn sse::kms::Kms>
                }),
                auto_encryption: false,
                tls: false,
                insecure_sse_c: true,
            },
            ..GatewayConfig::default()
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let gw = gw.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| {
                    let gw = gw.clone();
                    async move { Ok::<_, std::convert::Infallible>(gw.handle(req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Server {
        endpoint: format!("http://{addr}"),
        layer,
        dirs,
        _tmp: tmp,
        task,
    }
}

async fn start(kms: bool) -> Server {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = (0..4).map(|i| tmp.path().join(format!("d{i}"))).collect();
    serve(dirs, tmp, kms).await
}

fn client(endpoint: &str, ak: &str, sk: &str) -> Client {
    client_trusting(endpoint, ak, sk, None)
}

/// A client; `ca` (PEM) is the only trusted certificate when given.
fn client_trusting(endpoint: &str, ak: &str, sk: &str, ca: Option<&str>) -> Client {
    use aws_smithy_http_client::tls::{TlsContext, TrustStore};
    let mut builder = aws_smithy_http_client::Builder::new().tls_provider(
        aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ),
    );
    if let Some(pem) = ca {
        builder = builder.tls_context(
            TlsContext::builder()
                .with_trust_store(TrustStore::empty().with_pem_certificate(pem.as_bytes().to_vec()))
                .build()
                .unwrap(),
        );
    }
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(ak, sk, None, None, "test"))
        .http_client(builder.build_https())
        .build();
    Client::from_conf(conf)
}

fn code<E: aws_sdk_s3::error::ProvideErrorMetadata, R>(
    e: &aws_sdk_s3::error::SdkError<E, R>,
) -> String {
    match e {
        aws_sdk_s3::error::SdkError::ServiceError(s) => s.err().code().unwrap_or("").to_owned(),
        _ => "not a service error".to_owned(),
    }
}

async fn get(c: &Client, b: &str, k: &str) -> Vec<u8> {
    c.get_object()
        .bucket(b)
        .key(k)
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes()
        .to_vec()
}

/// Every file under the drives, concatenated: the plaintext must not be
/// found in it.
fn disk_bytes(dirs: &[PathBuf]) -> Vec<u8> {
    fn walk(p: &std::path::Path, out: &mut Vec<u8>) {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                let path = e.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if let Ok(b) = std::fs::read(&path) {
                    out.extend_from_slice(&b);
                }
            }
        }
    }
    let mut out = Vec::new();
    for d in dirs {
        walk(d, &mut out);
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_s3_and_kms_round_trips_and_ranges() {
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("enc").send().await.unwrap();
    let p = 1 << 16;
    for len in [0usize, 1, 100, p - 1, p, p + 1, 3 * p + 17, (1 << 20) + 5] {
        let d = data(len, len as u64);
        let key = format!("s3-{len}");
        let put = c
            .put_object()
            .bucket("enc")
            .key(&key)
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from(d.clone()))
            .send()
            .await
            .unwrap();
        assert_eq!(
            put.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        assert_eq!(
            put.e_tag().unwrap(),
            format!("\"{}\"", md5_hex(&d)),
            "{len}"
        );
        let head = c
            .head_object()
            .bucket("enc")
            .key(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(head.content_length(), Some(len as i64));
        assert_eq!(head.e_tag().unwrap(), format!("\"{}\"", md5_hex(&d)));
        assert_eq!(
            head.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        assert!(get(&c, "enc", &key).await == d, "{len}");
    }
    // Ranges across package boundaries.
    let d = data(3 * p + 17, (3 * p + 17) as u64);
    for (lo, hi) in [
        (0, 0),
        (p - 1, p),
        (p - 5, 2 * p + 5),
        (2 * p, 3 * p - 1),
        (3 * p, 3 * p + 16),
        (5, 3 * p + 16),
    ] {
        let got = c
            .get_object()
            .bucket("enc")
            .key(format!("s3-{}", d.len()))
            .range(format!("bytes={lo}-{hi}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.content_range(),
            Some(format!("bytes {lo}-{hi}/{}", d.len()).as_str())
        );
        let b = got.body.collect().await.unwrap().into_bytes();
        assert!(b[..] == d[lo..=hi], "range {lo}-{hi}");
    }
    // SSE-KMS with a key id and a context.
    let d = data(200_000, 77);
    let ctx = b64(br#"{"project":"tessera"}"#);
    let put = c
        .put_object()
        .bucket("enc")
        .key("kms")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .ssekms_key_id("tessera-kms")
        .ssekms_encryption_context(&ctx)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::AwsKms)
    );
    assert!(get(&c, "enc", "kms").await == d);
    let e = c
        .put_object()
        .bucket("enc")
        .key("kms2")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .ssekms_key_id("no-such-key")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert!(!code(&e).is_empty());
    // The plaintext is nowhere on the drives.
    let disk = disk_bytes(&srv.dirs);
    assert!(
        !contains(&disk, &d[1000..1064]),
        "SSE-KMS plaintext on disk"
    );
    let big = data((1 << 20) + 5, (1 << 20) + 5);
    assert!(
        !contains(&disk, &big[5000..5064]),
        "SSE-S3 plaintext on disk"
    );
}

/// Encrypted objects read through the read cache: it holds what the
/// drives hold (ciphertext), and decrypting a GET's bytes in place must
/// not change the cached copy the next GET gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypted_objects_through_the_read_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = (0..4).map(|i| tmp.path().join(format!("d{i}"))).collect();
    let opts = LayerOptions {
        read_cache_bytes: Some(64 << 20),
        ..LayerOptions::default()
    };
    let srv = serve_with(dirs, tmp, true, opts).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("encc").send().await.unwrap();
    let d = data((3 << 20) + 17, 41);
    c.put_object()
        .bucket("encc")
        .key("s3")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let key = [9u8; 32];
    let (key_b64, key_md5) = (b64(&key), b64(&md5::Md5::digest(key)));
    c.put_object()
        .bucket("encc")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key_b64)
        .sse_customer_key_md5(&key_md5)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let ranges = [
        (0, d.len() - 1),
        (65_530, 131_080),
        ((1 << 20) - 3, (2 << 20) + 3),
    ];
    for round in 0..4 {
        assert!(get(&c, "encc", "s3").await == d, "SSE-S3, round {round}");
        for (lo, hi) in ranges {
            let got = c
                .get_object()
                .bucket("encc")
                .key("c")
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&key_b64)
                .sse_customer_key_md5(&key_md5)
                .range(format!("bytes={lo}-{hi}"))
                .send()
                .await
                .unwrap();
            let b = got.body.collect().await.unwrap().into_bytes();
            assert!(b[..] == d[lo..=hi], "SSE-C {lo}-{hi}, round {round}");
        }
    }
    let s = srv.layer.read_cache_stats().expect("a cache");
    assert!(s.hits >= 8, "{s:?}");
    // Ciphertext: a little more than the plaintext, for both objects.
    assert!(s.bytes > 2 * d.len() as u64, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_c_keys() {
    let srv = start(false).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("ssec").send().await.unwrap();
    let key = [7u8; 32];
    let key_b64 = b64(&key);
    let key_md5 = b64(&md5::Md5::digest(key));
    let d = data(300_000, 9);
    c.put_object()
        .bucket("ssec")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key_b64)
        .sse_customer_key_md5(&key_md5)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let got = c
        .get_object()
        .bucket("ssec")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key_b64)
        .sse_customer_key_md5(&key_md5)
        .range("bytes=65530-131080")
        .send()
        .await
        .unwrap();
    assert_eq!(got.sse_customer_algorithm(), Some("AES256"));
    let b = got.body.collect().await.unwrap().into_bytes();
    assert!(b[..] == d[65530..=131_080]);
    // Missing key, wrong key, key given for an unencrypted object.
    let e = c
        .get_object()
        .bucket("ssec")
        .key("obj")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    let wrong = [8u8; 32];
    let e = c
        .head_object()
        .bucket("ssec")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(b64(&wrong))
        .sse_customer_key_md5(b64(&md5::Md5::digest(wrong)))
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(e, aws_sdk_s3::error::SdkError::ServiceError(_)),
        "{e:?}"
    );
    let e = c
        .get_object()
        .bucket("ssec")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(b64(&wrong))
        .sse_customer_key_md5(b64(&md5::Md5::digest(wrong)))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    // A key MD5 that does not match the key.
    let e = c
        .put_object()
        .bucket("ssec")
        .key("bad")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key_b64)
        .sse_customer_key_md5(b64(&[0u8; 16]))
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    // SSE-S3 without a KMS is refused.
    let e = c
        .put_object()
        .bucket("ssec")
        .key("nokms")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NotImplemented");
    assert!(!contains(&disk_bytes(&srv.dirs), &d[100..164]));
}

/// ETags of encrypted objects through aws-sdk-s3: SSE-S3 gives the MD5 of
/// the plaintext, SSE-KMS and SSE-C an opaque 32-digit value, the same from
/// PUT, HEAD and ListObjectsV2, and the listing gives the plaintext size;
/// an SSE-S3 part's ETag is the MD5 of its plaintext.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etags_of_encrypted_objects() {
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("etag").send().await.unwrap();
    let d = data(200_003, 31);
    let (kb, km) = (b64(&[3u8; 32]), b64(&md5::Md5::digest([3u8; 32])));
    let mut put_etags = std::collections::BTreeMap::new();
    for mode in ["s3", "kms", "c"] {
        let mut put = c
            .put_object()
            .bucket("etag")
            .key(mode)
            .body(ByteStream::from(d.clone()));
        put = match mode {
            "s3" => put.server_side_encryption(ServerSideEncryption::Aes256),
            "kms" => put.server_side_encryption(ServerSideEncryption::AwsKms),
            _ => put
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&kb)
                .sse_customer_key_md5(&km),
        };
        let etag = put.send().await.unwrap().e_tag().unwrap().to_owned();
        let mut head = c.head_object().bucket("etag").key(mode);
        if mode == "c" {
            head = head
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&kb)
                .sse_customer_key_md5(&km);
        }
        assert_eq!(
            head.send().await.unwrap().e_tag(),
            Some(etag.as_str()),
            "{mode}"
        );
        assert_eq!(etag.len(), 34, "{mode}: {etag}");
        assert_eq!(
            etag == format!("\"{}\"", md5_hex(&d)),
            mode == "s3",
            "{mode}: {etag}"
        );
        put_etags.insert(mode.to_owned(), etag);
    }
    let listed: std::collections::BTreeMap<String, (String, i64)> = listing_of(&c, "etag")
        .await
        .into_iter()
        .map(|(k, e, s)| (k, (e, s)))
        .collect();
    for (mode, etag) in &put_etags {
        assert_eq!(listed[mode], (etag.clone(), d.len() as i64), "{mode}");
    }
    // A multipart SSE-S3 upload: part ETags are the parts' MD5s, the
    // object's is the MD5 of theirs.
    let body = data((5 << 20) + 999, 32);
    let (parts, done) = multipart_put(&c, "etag", "mp", &body, 5 << 20, None, true).await;
    let want: Vec<String> = body
        .chunks(5 << 20)
        .map(|p| format!("\"{}\"", md5_hex(p)))
        .collect();
    assert_eq!(parts, want);
    let mut md5 = md5::Md5::new();
    for p in body.chunks(5 << 20) {
        md5.update(md5::Md5::digest(p));
    }
    assert_eq!(done, format!("\"{}-2\"", hex::encode(md5.finalize())));
}

/// (key, ETag, size) of every object of a bucket, by ListObjectsV2.
async fn listing_of(c: &Client, bucket: &str) -> Vec<(String, String, i64)> {
    let out = c.list_objects_v2().bucket(bucket).send().await.unwrap();
    out.contents()
        .iter()
        .map(|o| {
            (
                o.key().unwrap().to_owned(),
                o.e_tag().unwrap().to_owned(),
                o.size().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_between_modes() {
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("cpy").send().await.unwrap();
    let d = data(500_000, 3);
    let key = [1u8; 32];
    let (kb, km) = (b64(&key), b64(&md5::Md5::digest(key)));
    c.put_object()
        .bucket("cpy")
        .key("plain")
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    // plain -> SSE-S3
    c.copy_object()
        .bucket("cpy")
        .key("s3")
        .copy_source("cpy/plain")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap();
    assert!(get(&c, "cpy", "s3").await == d);
    // SSE-S3 -> SSE-C
    c.copy_object()
        .bucket("cpy")
        .key("c")
        .copy_source("cpy/s3")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap();
    // SSE-C -> plain needs the source key.
    let e = c
        .copy_object()
        .bucket("cpy")
        .key("back")
        .copy_source("cpy/c")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    c.copy_object()
        .bucket("cpy")
        .key("back")
        .copy_source("cpy/c")
        .copy_source_sse_customer_algorithm("AES256")
        .copy_source_sse_customer_key(&kb)
        .copy_source_sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap();
    let head = c
        .head_object()
        .bucket("cpy")
        .key("back")
        .send()
        .await
        .unwrap();
    assert!(head.server_side_encryption().is_none());
    assert!(get(&c, "cpy", "back").await == d);
    // Key rotation in place: SSE-S3 onto itself.
    c.copy_object()
        .bucket("cpy")
        .key("s3")
        .copy_source("cpy/s3")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap();
    assert!(get(&c, "cpy", "s3").await == d);
}

/// Tessera's encrypted objects are MinIO's format: MinIO, started on the
/// same drives with the same static KMS key, reads them; and Tessera reads
/// what MinIO encrypted.
#[cfg(feature = "minio-interop")]
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

async fn multipart_put(
    c: &Client,
    bucket: &str,
    key: &str,
    body: &[u8],
    part: usize,
    ssec: Option<(&str, &str)>,
    sse_s3: bool,
) -> (Vec<String>, String) {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let mut create = c.create_multipart_upload().bucket(bucket).key(key);
    if sse_s3 {
        create = create.server_side_encryption(ServerSideEncryption::Aes256);
    }
    if let Some((k, m)) = ssec {
        create = create
            .sse_customer_algorithm("AES256")
            .sse_customer_key(k)
            .sse_customer_key_md5(m);
    }
    let id = create.send().await.unwrap().upload_id().unwrap().to_owned();
    let mut parts = Vec::new();
    for (i, chunk) in body.chunks(part).enumerate() {
        let n = i as i32 + 1;
        let mut up = c
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(&id)
            .part_number(n)
            .body(ByteStream::from(chunk.to_vec()));
        if let Some((k, m)) = ssec {
            up = up
                .sse_customer_algorithm("AES256")
                .sse_customer_key(k)
                .sse_customer_key_md5(m);
        }
        let out = up.send().await.unwrap();
        parts.push(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(out.e_tag().unwrap())
                .build(),
        );
    }
    let done = c
        .complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts.clone()))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let etags = parts
        .iter()
        .map(|p| p.e_tag().unwrap().to_owned())
        .collect();
    (etags, done.e_tag().unwrap().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypted_multipart_and_bucket_default() {
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("mpenc").send().await.unwrap();
    let part = 5 << 20;
    let d = data(2 * part + 300_000, 88);
    multipart_put(&c, "mpenc", "s3", &d, part, None, true).await;
    let head = c
        .head_object()
        .bucket("mpenc")
        .key("s3")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_length(), Some(d.len() as i64));
    assert_eq!(
        head.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert!(get(&c, "mpenc", "s3").await == d);
    // Ranges inside a part and across part boundaries.
    for (lo, hi) in [
        (0usize, 10usize),
        (part - 3, part + 3),
        (part - 70_000, 2 * part + 70_000),
        (d.len() - 1, d.len() - 1),
    ] {
        let got = c
            .get_object()
            .bucket("mpenc")
            .key("s3")
            .range(format!("bytes={lo}-{hi}"))
            .send()
            .await
            .unwrap()
            .body
            .collect()
            .await
            .unwrap()
            .into_bytes();
        assert!(got[..] == d[lo..=hi], "range {lo}-{hi}");
    }
    // SSE-C multipart: every part carries the key.
    let key = [5u8; 32];
    let (kb, km) = (b64(&key), b64(&md5::Md5::digest(key)));
    multipart_put(&c, "mpenc", "c", &d, part, Some((&kb, &km)), false).await;
    let got = c
        .get_object()
        .bucket("mpenc")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .range(format!("bytes={}-{}", part - 10, part + 10))
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    assert!(got[..] == d[part - 10..=part + 10]);
    let disk = disk_bytes(&srv.dirs);
    assert!(
        !contains(&disk, &d[part + 1000..part + 1064]),
        "multipart plaintext on disk"
    );

    // Bucket default encryption: objects PUT without headers are SSE-S3.
    let e = c
        .get_bucket_encryption()
        .bucket("mpenc")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "ServerSideEncryptionConfigurationNotFoundError");
    use aws_sdk_s3::types::{
        ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration, ServerSideEncryptionRule,
    };
    c.put_bucket_encryption()
        .bucket("mpenc")
        .server_side_encryption_configuration(
            ServerSideEncryptionConfiguration::builder()
                .rules(
                    ServerSideEncryptionRule::builder()
                        .apply_server_side_encryption_by_default(
                            ServerSideEncryptionByDefault::builder()
                                .sse_algorithm(ServerSideEncryption::Aes256)
                                .build()
                                .unwrap(),
                        )
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let got = c
        .get_bucket_encryption()
        .bucket("mpenc")
        .send()
        .await
        .unwrap();
    let rule = &got.server_side_encryption_configuration().unwrap().rules()[0];
    assert_eq!(
        rule.apply_server_side_encryption_by_default()
            .unwrap()
            .sse_algorithm(),
        &ServerSideEncryption::Aes256
    );
    let small = data(10_000, 4);
    let put = c
        .put_object()
        .bucket("mpenc")
        .key("by-default")
        .body(ByteStream::from(small.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    multipart_put(
        &c,
        "mpenc",
        "mp-by-default",
        &d[..part + 5],
        part,
        None,
        false,
    )
    .await;
    let head = c
        .head_object()
        .bucket("mpenc")
        .key("mp-by-default")
        .send()
        .await
        .unwrap();
    assert_eq!(
        head.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert!(get(&c, "mpenc", "mp-by-default").await == d[..part + 5]);
    c.delete_bucket_encryption()
        .bucket("mpenc")
        .send()
        .await
        .unwrap();
    let put = c
        .put_object()
        .bucket("mpenc")
        .key("after")
        .body(ByteStream::from(small.clone()))
        .send()
        .await
        .unwrap();
    assert!(put.server_side_encryption().is_none());
}

/// UploadPartCopy from and into encrypted objects: the source is decrypted
/// with its key (an SSE-C source's key in the copy-source headers), the
/// part is encrypted as the upload says (an SSE-C upload's key with the
/// request), ranges are of the plaintext.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_part_copy_from_and_into_encrypted_objects() {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("upc").send().await.unwrap();
    let (part, p) = (5usize << 20, 1usize << 16);
    let d = data(part + 2 * p + 77, 41);
    let src_key = [3u8; 32];
    let (sk, sm) = (b64(&src_key), b64(&md5::Md5::digest(src_key)));
    c.put_object()
        .bucket("upc")
        .key("src-c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&sk)
        .sse_customer_key_md5(&sm)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();

    // SSE-C source -> SSE-S3 upload, in two ranges cut at a package boundary.
    let id = c
        .create_multipart_upload()
        .bucket("upc")
        .key("s3")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let cut = part + p;
    let mut parts = Vec::new();
    for (n, (lo, hi)) in [(0, cut - 1), (cut, d.len() - 1)].into_iter().enumerate() {
        let out = c
            .upload_part_copy()
            .bucket("upc")
            .key("s3")
            .upload_id(&id)
            .part_number(n as i32 + 1)
            .copy_source("upc/src-c")
            .copy_source_range(format!("bytes={lo}-{hi}"))
            .copy_source_sse_customer_algorithm("AES256")
            .copy_source_sse_customer_key(&sk)
            .copy_source_sse_customer_key_md5(&sm)
            .send()
            .await
            .unwrap();
        assert_eq!(
            out.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        parts.push(
            CompletedPart::builder()
                .part_number(n as i32 + 1)
                .e_tag(out.copy_part_result().unwrap().e_tag().unwrap())
                .build(),
        );
    }
    let listed = c
        .list_parts()
        .bucket("upc")
        .key("s3")
        .upload_id(&id)
        .send()
        .await
        .unwrap();
    let sizes: Vec<i64> = listed.parts().iter().map(|p| p.size().unwrap()).collect();
    assert_eq!(sizes, [cut as i64, (d.len() - cut) as i64]);
    c.complete_multipart_upload()
        .bucket("upc")
        .key("s3")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert!(get(&c, "upc", "s3").await == d);

    // The SSE-S3 multipart object -> SSE-C upload with another key: a range
    // across the source's part boundary, then an uploaded part.
    let key = [4u8; 32];
    let (kb, km) = (b64(&key), b64(&md5::Md5::digest(key)));
    let id = c
        .create_multipart_upload()
        .bucket("upc")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let (lo, hi) = (p + 3, cut + 10);
    let copied = c
        .upload_part_copy()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .part_number(1)
        .copy_source("upc/s3")
        .copy_source_range(format!("bytes={lo}-{hi}"))
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap();
    assert_eq!(copied.sse_customer_algorithm(), Some("AES256"));
    assert_eq!(copied.sse_customer_key_md5(), Some(km.as_str()));
    let tail = b"the tail".to_vec();
    let uploaded = c
        .upload_part()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .part_number(2)
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .body(ByteStream::from(tail.clone()))
        .send()
        .await
        .unwrap();
    // Without the upload's key, or without the source's, nothing is copied.
    let e = c
        .upload_part_copy()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .part_number(3)
        .copy_source("upc/s3")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    let e = c
        .upload_part_copy()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .part_number(3)
        .copy_source("upc/src-c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .copy_source_sse_customer_algorithm("AES256")
        .copy_source_sse_customer_key(&kb)
        .copy_source_sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    c.complete_multipart_upload()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(copied.copy_part_result().unwrap().e_tag().unwrap())
                        .build(),
                )
                .parts(
                    CompletedPart::builder()
                        .part_number(2)
                        .e_tag(uploaded.e_tag().unwrap())
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    let got = c
        .get_object()
        .bucket("upc")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    let mut want = d[lo..=hi].to_vec();
    want.extend_from_slice(&tail);
    assert!(got[..] == want[..]);
    let disk = disk_bytes(&srv.dirs);
    assert!(
        !contains(&disk, &d[part + 500..part + 564]),
        "plaintext on disk"
    );
}
