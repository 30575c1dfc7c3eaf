//! The harness of the SSE tests: the gateway served over real HTTP
//! in-process with the encryption settings a test needs, aws-sdk-s3
//! clients, and helpers to read objects, list them and look at the bytes
//! on the drives.

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

pub const AK: &str = "sse-access";
pub const SK: &str = "sse-secret-key";
/// The static KMS key `MINIO_KMS_SECRET_KEY` would name.
pub const KMS_KEY: &str = "tessera-kms:MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";

pub fn data(len: usize, seed: u64) -> Vec<u8> {
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

pub fn md5_hex(b: &[u8]) -> String {
    hex::encode(md5::Md5::digest(b))
}

/// Standard padded base64 (SSE-C keys and their MD5s, KMS contexts).
pub fn b64(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

pub struct Server {
    pub endpoint: String,
    pub layer: Arc<ObjectLayer>,
    pub dirs: Vec<PathBuf>,
    _tmp: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn serve(dirs: Vec<PathBuf>, tmp: tempfile::TempDir, kms: bool) -> Server {
    serve_with(dirs, tmp, kms, LayerOptions::default()).await
}

pub async fn serve_with(
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

pub async fn start(kms: bool) -> Server {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = (0..4).map(|i| tmp.path().join(format!("d{i}"))).collect();
    serve(dirs, tmp, kms).await
}

pub fn client(endpoint: &str, ak: &str, sk: &str) -> Client {
    client_trusting(endpoint, ak, sk, None)
}

/// A client; `ca` (PEM) is the only trusted certificate when given.
pub fn client_trusting(endpoint: &str, ak: &str, sk: &str, ca: Option<&str>) -> Client {
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

pub fn code<E: aws_sdk_s3::error::ProvideErrorMetadata, R>(
    e: &aws_sdk_s3::error::SdkError<E, R>,
) -> String {
    match e {
        aws_sdk_s3::error::SdkError::ServiceError(s) => s.err().code().unwrap_or("").to_owned(),
        _ => "not a service error".to_owned(),
    }
}

pub async fn get(c: &Client, b: &str, k: &str) -> Vec<u8> {
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
pub fn disk_bytes(dirs: &[PathBuf]) -> Vec<u8> {
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

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// (key, ETag, size) of every object of a bucket, by ListObjectsV2.
pub async fn listing_of(c: &Client, bucket: &str) -> Vec<(String, String, i64)> {
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

pub async fn multipart_put(
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
