//! The S3 service: request limits, addressing, authentication, dispatch to
//! the operation handlers, and error documents.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body::Body;
use object::layer::ObjectLayer;
use percent_encoding::percent_decode_str;

use crate::admission::{Admission, AdmissionStats, Slot};
use crate::auth::{
    AuthConfig, Authentication, Credentials, Payload, Principal, StaticCredentials, Verifier,
};
pub use crate::body::ResponseBody;
use crate::error::S3Error;
use crate::handlers;
use crate::xml::XmlWriter;

/// What the gateway serves and how.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The region of credential scopes and `GetBucketLocation`
    /// (`us-east-1`).
    pub region: String,
    /// Access key and secret key pairs allowed to sign requests; the first
    /// is the root user.
    pub credentials: Vec<(String, String)>,
    /// Domains for virtual-host-style requests: a request for
    /// `bucket.<domain>` addresses `bucket`.
    pub domains: Vec<String>,
    /// Size and time bounds.
    pub limits: GatewayLimits,
    /// The `Server` header.
    pub server_name: String,
    /// Server-side encryption: the KMS, auto-encryption, SSE-C transport.
    pub encryption: crate::encryption::EncryptionConfig,
    /// Whether requests signed with Signature Version 2 are accepted (on by
    /// default, as MinIO).
    pub sigv2: bool,
    /// The shortest STS session granted, seconds: MinIO's 900. Only tests
    /// of expiry set it lower.
    pub sts_min_duration_secs: u64,
    /// The OpenID Connect provider of `AssumeRoleWithWebIdentity`, if any.
    pub openid: Option<crate::oidc::OpenIdConfig>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            region: "us-east-1".to_owned(),
            credentials: Vec::new(),
            domains: Vec::new(),
            limits: GatewayLimits::default(),
            server_name: "Tessera".to_owned(),
            encryption: crate::encryption::EncryptionConfig::default(),
            sigv2: true,
            sts_min_duration_secs: crate::iam::temp::MIN_DURATION,
            openid: None,
        }
    }
}

/// Bounds on what one request may send.
#[derive(Debug, Clone, Copy)]
pub struct GatewayLimits {
    /// All request headers together (names and values), bytes.
    pub max_header_bytes: usize,
    /// User metadata (`x-amz-meta-*` names and values), bytes (S3: 2 KiB).
    pub max_user_metadata_bytes: usize,
    /// An XML request document (DeleteObjects of 1000 keys fits).
    pub max_xml_bytes: u64,
    /// One object of a single PUT (S3: 5 GiB; MinIO: 5 TiB).
    pub max_object_bytes: u64,
    /// One part of a multipart upload (S3: 5 GiB).
    pub max_part_bytes: u64,
    /// Longest wait for the next piece of a request body.
    pub body_idle_timeout: Duration,
    /// The floor rate of request bodies, bytes a second averaged from the
    /// body's start, enforced after `body_grace` (0: none; default 4 KiB/s,
    /// so a 5 GiB part has 15 days and a trickled body loses its slot).
    pub body_min_rate: u64,
    /// How long a body may take before the floor rate applies (default
    /// 30 s).
    pub body_grace: Duration,
    /// Requests served at once, from their head to the end of their
    /// response body (0: no bound; default 1024, the daemon's is set from
    /// memory). Health and metrics requests, answered by the daemon before
    /// the gateway, do not count.
    pub max_requests: usize,
    /// Longest wait for a slot when `max_requests` are being served; then
    /// `503 SlowDown` (zero: refused at once; default 10 s).
    pub request_wait: Duration,
    /// Browser POST forms read at once before they are authenticated: their
    /// own share, outside `max_requests`, so unauthenticated clients cannot
    /// take the slots of signed requests (0: a quarter of `max_requests`,
    /// at least 1; unbounded when `max_requests` is).
    pub max_post_forms: usize,
    /// Longest wait for the next piece of a browser POST form before its
    /// file (default 10 s).
    pub post_form_idle: Duration,
    /// Longest time for a browser POST form's fields, up to its file, to
    /// arrive (default 30 s).
    pub post_form_timeout: Duration,
}

impl Default for GatewayLimits {
    fn default() -> Self {
        GatewayLimits {
            max_header_bytes: 16 * 1024,
            max_user_metadata_bytes: 2 * 1024,
            max_xml_bytes: 2 << 20,
            max_object_bytes: 5 << 40,
            max_part_bytes: 5 << 30,
            body_idle_timeout: Duration::from_secs(60),
            body_min_rate: 4 * 1024,
            body_grace: Duration::from_secs(30),
            max_requests: 1024,
            request_wait: Duration::from_secs(10),
            max_post_forms: 0,
            post_form_idle: Duration::from_secs(10),
            post_form_timeout: Duration::from_secs(30),
        }
    }
}

/// What the server knows of a request's connection, handed to the
/// gateway as a request extension: the `aws:SourceIp` and
/// `aws:SecureTransport` of policy conditions. (Forwarding headers such as
/// `X-Forwarded-For` are not trusted: any client can send them.)
#[derive(Debug, Clone, Copy)]
pub struct ConnInfo {
    /// The peer's address.
    pub peer: std::net::SocketAddr,
    /// Whether the connection is TLS.
    pub tls: bool,
}

/// What one request did, for metrics and access logs.
#[derive(Debug, Clone)]
pub struct RequestRecord<'a> {
    /// The S3 operation (`GetObject`, ...), or `Unknown`.
    pub api: &'static str,
    /// The HTTP method.
    pub method: &'a Method,
    /// The response status.
    pub status: StatusCode,
    /// Time to the response head.
    pub duration: Duration,
    /// Request body bytes read before the response (on the wire).
    pub bytes_in: u64,
    /// Response body bytes announced (`Content-Length`).
    pub bytes_out: u64,
    /// The request id (`x-amz-request-id`).
    pub request_id: &'a str,
    /// The bucket, if the request named one.
    pub bucket: Option<&'a str>,
}

/// Receives a [`RequestRecord`] for every request.
pub trait RequestObserver: Send + Sync {
    /// Called once per request, when the response head is ready.
    fn observe(&self, record: &RequestRecord<'_>);
}

/// The S3 gateway over one object layer.
pub struct Gateway {
    pub(crate) layer: Arc<ObjectLayer>,
    pub(crate) config: GatewayConfig,
    verifier: Verifier<crate::iam::GatewayCredentials>,
    /// STS calls' verifier: the same keys, service `sts`.
    pub(crate) sts_verifier: Verifier<crate::iam::GatewayCredentials>,
    /// The admin API's verifier: the same keys, MinIO's admin scope.
    pub(crate) admin_verifier: Verifier<crate::iam::GatewayCredentials>,
    /// Users, groups and policies.
    pub(crate) iam: Arc<crate::iam::Iam>,
    /// Bucket policies, parsed.
    pub(crate) bucket_policies: crate::authz::BucketPolicies,
    /// Buckets' lifecycle rules as parsed, with the document they came
    /// from (for `x-amz-expiration`).
    pub(crate) lifecycles: crate::handlers::ParsedConfigs<crate::lifecycle::Lifecycle>,
    /// Buckets' CORS rules as parsed.
    pub(crate) cors_rules: crate::handlers::ParsedConfigs<crate::cors::CorsConfig>,
    observer: Option<Arc<dyn RequestObserver>>,
    admission: Admission,
    /// The share of unauthenticated browser POST forms (and of web
    /// identity STS calls, unsigned too).
    pub(crate) post_admission: Admission,
    /// The OpenID Connect provider, when one is configured.
    pub(crate) oidc: Option<crate::oidc::Provider>,
    /// Authentication of MinIO's admin API.
    pub(crate) admin_auth: crate::admin::AdminAuth,
    /// When the gateway was made: the server's uptime counts from it.
    pub(crate) started: Instant,
    /// The heal sequences started through this gateway.
    pub(crate) heal_seqs: Arc<crate::admin::HealSequences>,
    /// Where polls of other nodes' heal sequences go (a cluster).
    pub(crate) heal_forward: Option<Arc<dyn crate::admin::HealForward>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("config.region", &self.config.region)
            .field("config.domains", &self.config.domains)
            .finish_non_exhaustive()
    }
}

/// A request on its way through the handlers.
pub(crate) struct Ctx<B> {
    pub parts: http::request::Parts,
    pub body: Option<B>,
    pub payload: Option<Payload>,
    pub bucket: Option<String>,
    pub key: Option<String>,
    pub query: Vec<(String, String)>,
    pub request_id: String,
    pub access_key: String,
    pub api: &'static str,
    pub bytes_in: u64,
    /// The request's admission slot, handed to its response body.
    pub slot: Option<Slot>,
    /// Who the request acts as, once authorised.
    pub requester: crate::authz::Requester,
    /// The condition keys' values, filled at the first policy decision
    /// (the requester does not change within a request).
    pub conditions: std::sync::OnceLock<std::collections::HashMap<String, Vec<String>>>,
}

impl<B> Ctx<B> {
    /// The first value of a query parameter.
    pub(crate) fn q(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether a query parameter is present (with or without a value).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.query.iter().any(|(n, _)| n == name)
    }

    /// A request header as text (`None` if absent or not visible ASCII).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.parts.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn bucket(&self) -> &str {
        self.bucket.as_deref().unwrap_or("")
    }

    pub(crate) fn key(&self) -> &str {
        self.key.as_deref().unwrap_or("")
    }

    /// The resource named in error documents.
    fn resource(&self) -> String {
        match (&self.bucket, &self.key) {
            (Some(b), Some(k)) => format!("/{b}/{k}"),
            (Some(b), None) => format!("/{b}"),
            _ => "/".to_owned(),
        }
    }
}

impl Gateway {
    /// A gateway serving `layer`.
    pub fn new(layer: Arc<ObjectLayer>, config: GatewayConfig) -> Gateway {
        let iam = crate::iam::Iam::new(
            Arc::clone(&layer),
            &config.credentials,
            config.encryption.kms.clone(),
        );
        iam.set_sts_min_duration(config.sts_min_duration_secs);
        let creds = crate::iam::GatewayCredentials {
            iam: Arc::clone(&iam),
        };
        let auth = AuthConfig {
            region: config.region.clone(),
            sigv2: config.sigv2,
            ..AuthConfig::default()
        };
        Gateway {
            layer,
            verifier: Verifier::new(auth, creds),
            sts_verifier: Verifier::new(
                crate::sts::auth_config(&config.region),
                crate::iam::GatewayCredentials {
                    iam: Arc::clone(&iam),
                },
            ),
            admin_verifier: Verifier::new(
                AuthConfig {
                    region: config.region.clone(),
                    sigv2: false,
                    accept_empty_region: true,
                    ..AuthConfig::default()
                },
                crate::iam::GatewayCredentials {
                    iam: Arc::clone(&iam),
                },
            ),
            iam,
            bucket_policies: crate::authz::BucketPolicies::default(),
            lifecycles: crate::handlers::ParsedConfigs::new(object::layer::BucketConfig::Lifecycle),
            cors_rules: crate::handlers::ParsedConfigs::new(object::layer::BucketConfig::Cors),
            admission: Admission::new(config.limits.max_requests, config.limits.request_wait),
            post_admission: Admission::new(post_forms_bound(&config.limits), Duration::ZERO),
            admin_auth: crate::admin::AdminAuth::new(&config.region, &config.credentials),
            oidc: config.openid.clone().and_then(|c| {
                crate::oidc::Provider::new(c)
                    .map_err(|e| tracing::error!("OpenID provider not usable: {e}"))
                    .ok()
            }),
            started: Instant::now(),
            heal_seqs: Arc::default(),
            heal_forward: None,
            config,
            observer: None,
        }
    }

    /// Heal sequences kept in `seqs` (which the node RPC also answers
    /// polls from), their tokens naming this node, polls of other nodes'
    /// sequences relayed through `forward`.
    pub fn with_heal_forward(
        mut self,
        seqs: Arc<crate::admin::HealSequences>,
        forward: Arc<dyn crate::admin::HealForward>,
    ) -> Gateway {
        self.heal_seqs = seqs;
        self.heal_forward = Some(forward);
        self
    }

    /// Reports every request to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn RequestObserver>) -> Gateway {
        self.observer = Some(observer);
        self
    }

    pub(crate) fn credentials(&self) -> &crate::iam::GatewayCredentials {
        self.verifier.credentials()
    }

    /// Reads the users, groups and policies stored on the drives (the
    /// gateway serves the root user only until this is done). When they
    /// cannot be read, a task tries again every few seconds until they
    /// are, and the error is returned.
    pub async fn load_iam(&self) -> Result<(), String> {
        let Err(e) = self.iam.reload().await else {
            return Ok(());
        };
        let iam = Arc::clone(&self.iam);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                match iam.reload().await {
                    Ok(()) => {
                        tracing::info!("IAM documents read");
                        break;
                    }
                    Err(e) => tracing::debug!("IAM documents still unreadable: {e}"),
                }
            }
        });
        Err(e.to_string())
    }

    /// The object layer served.
    pub fn layer(&self) -> &Arc<ObjectLayer> {
        &self.layer
    }

    /// How the bound on concurrent requests stands.
    /// A slot of the server's bound (browser POST uploads take theirs once
    /// authenticated).
    pub(crate) async fn admit(&self) -> Result<Slot, S3Error> {
        self.admission.admit().await
    }

    pub fn admission_stats(&self) -> AdmissionStats {
        self.admission.stats()
    }

    /// Serves one S3 request. Never panics on any input and never fails:
    /// every problem becomes an S3 error response.
    pub async fn handle<B>(&self, req: Request<B>) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        let started = Instant::now();
        let request_id = new_request_id();
        let (parts, body) = req.into_parts();
        let mut ctx = Ctx {
            parts,
            body: Some(body),
            payload: None,
            bucket: None,
            key: None,
            query: Vec::new(),
            request_id,
            access_key: String::new(),
            api: "Unknown",
            bytes_in: 0,
            slot: None,
            requester: crate::authz::Requester::Anonymous,
            conditions: std::sync::OnceLock::new(),
        };
        let head = ctx.parts.method == Method::HEAD;
        let served = self.serve(&mut ctx).await;
        // Only an admitted request costs the bucket's CORS rules a look.
        let admitted = ctx.slot.is_some();
        let mut resp = match served {
            // The slot is given back once the response body is sent.
            Ok(r) => match ctx.slot.take() {
                Some(slot) => r.map(|b| b.holding(slot)),
                None => r,
            },
            Err(e) => {
                let mut r = error_response(&e, &ctx.resource(), &ctx.request_id, head);
                // A refused request may leave its body unread on the
                // connection: an HTTP/1 client must not reuse it.
                let has_body = ctx
                    .parts
                    .headers
                    .get(http::header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.trim() != "0")
                    || ctx
                        .parts
                        .headers
                        .contains_key(http::header::TRANSFER_ENCODING);
                if has_body && ctx.parts.version < http::Version::HTTP_2 {
                    r.headers_mut()
                        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                }
                r
            }
        };
        if admitted
            && ctx.parts.method != Method::OPTIONS
            && let Some(bucket) = ctx.bucket.as_deref()
            && ctx.parts.headers.contains_key(http::header::ORIGIN)
        {
            crate::handlers::cors::decorate(
                self,
                bucket,
                &ctx.parts.headers,
                &ctx.parts.method,
                resp.headers_mut(),
            )
            .await;
        }
        let h = resp.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&ctx.request_id) {
            h.insert("x-amz-request-id", v);
        }
        if let Ok(v) = HeaderValue::from_str(&self.config.server_name) {
            h.insert(http::header::SERVER, v);
        }
        if let Some(obs) = &self.observer {
            let bytes_out = resp.body().size_hint().exact().unwrap_or(0);
            obs.observe(&RequestRecord {
                api: ctx.api,
                method: &ctx.parts.method,
                status: resp.status(),
                duration: started.elapsed(),
                bytes_in: ctx.bytes_in,
                bytes_out,
                request_id: &ctx.request_id,
                bucket: ctx.bucket.as_deref(),
            });
        }
        tracing::debug!(
            request_id = %ctx.request_id,
            api = ctx.api,
            method = %ctx.parts.method,
            status = resp.status().as_u16(),
            elapsed_us = started.elapsed().as_micros() as u64,
            "request"
        );
        resp
    }

    async fn serve<B>(&self, ctx: &mut Ctx<B>) -> Result<Response<ResponseBody>, S3Error>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        self.check_headers(ctx)?;
        // MinIO's admin API (what `mc admin` sends) before routing and S3's
        // authentication, which would read its path as bucket `minio` and
        // refuse the scope madmin-go signs with.
        if let Some(call) = crate::admin::route(&ctx.parts.method, ctx.parts.uri.path()) {
            return self.serve_admin(ctx, call).await;
        }
        if crate::sts::is_sts(&ctx.parts) {
            return self.serve_sts(ctx).await;
        }
        self.route(ctx)?;
        // A browser's preflight carries no credentials: it is answered
        // from the bucket's CORS rules alone.
        if ctx.parts.method == Method::OPTIONS && ctx.bucket.is_some() {
            ctx.api = "PreflightCors";
            ctx.slot = Some(self.admission.admit().await?);
            return crate::handlers::cors::preflight(self, ctx).await;
        }
        let boundary =
            (ctx.parts.method == Method::POST && ctx.bucket.is_some() && ctx.key.is_none())
                .then(|| {
                    ctx.header("content-type")
                        .and_then(crate::handlers::post_boundary)
                })
                .flatten();
        let op = crate::router::resolve(&crate::router::RequestView {
            method: &ctx.parts.method,
            has_bucket: ctx.bucket.is_some(),
            has_key: ctx.key.is_some(),
            query: &ctx.query,
            copy_source: ctx.parts.headers.contains_key("x-amz-copy-source"),
            form_upload: boundary.is_some(),
        })?;
        ctx.api = op.name();
        // Browser uploads carry their signature in the form, not the head:
        // the form is read in the small share of unauthenticated forms
        // (refused at once when it is full), and the upload takes a slot of
        // the server's bound once the form's signature holds.
        if let Some(b) = boundary {
            let _form_slot = self.post_admission.admit().await?;
            return crate::handlers::post_object(self, ctx, b).await;
        }
        // Before the body is read or the signature checked: both cost
        // memory and CPU that the bound is there to limit.
        ctx.slot = Some(self.admission.admit().await?);
        let authenticated = self
            .verifier
            .authenticate((&ctx.parts).into(), SystemTime::now())
            .map_err(|e| {
                if e.code() == "InvalidAccessKeyId" && self.expired_session(&ctx.parts) {
                    S3Error::new("ExpiredToken")
                } else {
                    S3Error::from(e)
                }
            })?;
        let who = match authenticated {
            Authentication::Anonymous => crate::authz::Requester::Anonymous,
            Authentication::Signed(v) => {
                ctx.payload = Some(v.payload);
                let who = crate::authz::requester_of(self, &v.access_key)?;
                ctx.access_key = v.access_key;
                who
            }
        };
        crate::authz::authorize(self, ctx, op, &who).await?;
        ctx.requester = who;
        handlers::dispatch(self, ctx, op).await
    }

    fn check_headers<B>(&self, ctx: &Ctx<B>) -> Result<(), S3Error> {
        let limits = &self.config.limits;
        let mut total = 0usize;
        let mut meta = 0usize;
        for (name, value) in &ctx.parts.headers {
            let n = name.as_str().len() + value.len();
            total += n;
            if let Some(m) = name.as_str().strip_prefix("x-amz-meta-") {
                meta += m.len() + value.len();
            }
        }
        if total > limits.max_header_bytes {
            return Err(S3Error::new("RequestHeaderSectionTooLarge"));
        }
        if meta > limits.max_user_metadata_bytes {
            return Err(S3Error::new("MetadataTooLarge")
                .detail("MaxSizeAllowed", limits.max_user_metadata_bytes.to_string()));
        }
        Ok(())
    }

    /// Splits the request into bucket, key and query (path-style, or
    /// virtual-host style under a configured domain).
    fn route<B>(&self, ctx: &mut Ctx<B>) -> Result<(), S3Error> {
        let uri = &ctx.parts.uri;
        let raw_path = uri.path();
        let path = percent_decode_str(raw_path)
            .decode_utf8()
            .map_err(|_| S3Error::new("InvalidURI"))?
            .into_owned();
        if !path.starts_with('/') {
            return Err(S3Error::new("InvalidURI"));
        }
        let host = ctx
            .parts
            .headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .or(uri.authority().map(|a| a.as_str()))
            .unwrap_or("");
        let host = host.rsplit_once(':').map_or(host, |(h, p)| {
            if p.bytes().all(|c| c.is_ascii_digit()) {
                h
            } else {
                host
            }
        });
        let vhost_bucket = self.config.domains.iter().find_map(|d| {
            host.strip_suffix(d.as_str())
                .and_then(|b| b.strip_suffix('.'))
                .filter(|b| !b.is_empty())
        });
        let rest = &path[1..];
        let (bucket, key) = match vhost_bucket {
            Some(b) => (
                Some(b.to_owned()),
                (!rest.is_empty()).then(|| rest.to_owned()),
            ),
            None => match rest.split_once('/') {
                Some((b, k)) => (Some(b.to_owned()), (!k.is_empty()).then(|| k.to_owned())),
                None if rest.is_empty() => (None, None),
                None => (Some(rest.to_owned()), None),
            },
        };
        if let Some(k) = &key
            && k.len() > 1024
        {
            ctx.bucket = bucket;
            return Err(S3Error::new("KeyTooLongError"));
        }
        ctx.bucket = bucket;
        ctx.key = key;
        ctx.query = parse_query(uri.query().unwrap_or(""))?;
        Ok(())
    }
}

/// The credentials provider of `pairs` (access key, secret key), each
/// acting as the principal of its access key.
pub(crate) fn static_credentials(pairs: &[(String, String)]) -> StaticCredentials {
    let mut creds = StaticCredentials::new();
    for (access, secret) in pairs {
        creds.insert(
            access.clone(),
            Credentials::new(secret.clone(), Principal::new(access.clone())),
        );
    }
    creds
}

/// Decodes a query string (`+` is a space, as Go's `url.ParseQuery`, which
/// MinIO uses, reads it).
pub(crate) fn parse_query(raw: &str) -> Result<Vec<(String, String)>, S3Error> {
    let mut out = Vec::new();
    for seg in raw.split('&').filter(|s| !s.is_empty()) {
        if out.len() >= 1000 {
            return Err(S3Error::new("InvalidURI"));
        }
        let (n, v) = seg.split_once('=').unwrap_or((seg, ""));
        let dec = |s: &str| -> Result<String, S3Error> {
            let s = s.replace('+', " ");
            percent_decode_str(&s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| S3Error::new("InvalidURI"))
        };
        out.push((dec(n)?, dec(v)?));
    }
    Ok(out)
}

fn new_request_id() -> String {
    let u = uuid::Uuid::new_v4();
    hex::encode_upper(&u.as_bytes()[..8])
}

/// The XML error document of `e` for `resource`, with a fresh request
/// id (no body for HEAD): how a server built around the gateway answers
/// what it does not hand to the gateway.
pub fn error_document(e: &S3Error, resource: &str, head: bool) -> Response<ResponseBody> {
    error_response(e, resource, &new_request_id(), head)
}

/// The XML error document (no body for HEAD).
pub(crate) fn error_response(
    e: &S3Error,
    resource: &str,
    request_id: &str,
    head: bool,
) -> Response<ResponseBody> {
    let mut w = XmlWriter::new();
    w.open("Error")
        .elem("Code", e.code)
        .elem("Message", &e.message);
    for (n, v) in &e.details {
        w.elem(n, v);
    }
    w.elem("Resource", resource)
        .elem("RequestId", request_id)
        .elem("HostId", "tessera")
        .close("Error");
    let doc = w.finish();
    let mut b = Response::builder()
        .status(e.status)
        .header(http::header::CONTENT_TYPE, "application/xml");
    for (n, v) in &e.headers {
        b = b.header(*n, v.as_str());
    }
    let body = if head {
        ResponseBody::empty()
    } else {
        ResponseBody::full(doc)
    };
    b.body(body).unwrap_or_else(|_| {
        let mut r = Response::new(ResponseBody::empty());
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}

/// The bound of unauthenticated browser POST forms read at once.
fn post_forms_bound(limits: &GatewayLimits) -> usize {
    match (limits.max_requests, limits.max_post_forms) {
        (0, n) => n,
        (_, 0) => (limits.max_requests / 4).max(1),
        (_, n) => n,
    }
}
