//! An OpenID Connect provider, for STS `AssumeRoleWithWebIdentity` as
//! MinIO serves it: configured by its discovery URL
//! (`.../.well-known/openid-configuration`) and the client id the tokens
//! must be issued to. Its `issuer` and key set (`jwks_uri`) are fetched on
//! first use and kept for an hour; a token signed with a key id not in the
//! set fetches it again; fetches are tried at most every 30 seconds,
//! whether they succeed or not (so unsigned requests cannot make the
//! server hammer the provider, nor queue behind a provider that is down).
//!
//! A token is accepted when its signature verifies with the provider's key
//! of its `kid` ([`jwt`]), it has not expired (`exp`) and is already valid
//! (`nbf`), its `iss` is the provider's issuer, the client id is among its
//! `aud` or is its `azp`, and it names a subject (`sub`).

pub mod jwt;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::{Map, Value};

use jwt::{Jwk, JwtError};

/// Longest wait for one document from the provider, connection included.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest document read from the provider.
pub const MAX_DOCUMENT: usize = 1 << 20;
/// How long a fetched key set is used before it is fetched again.
pub const KEYS_TTL: Duration = Duration::from_secs(3600);
/// Shortest time between two fetches for an unknown key id.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// Tolerated clock difference with the provider for `nbf`, seconds.
pub const LEEWAY_SECS: u64 = 60;

/// The provider as configured.
#[derive(Debug, Clone, Default)]
pub struct OpenIdConfig {
    /// The discovery document's URL (http or https).
    pub config_url: String,
    /// The client id tokens must be issued to (`aud` or `azp`).
    pub client_id: String,
    /// The claim naming the policies of the session (MinIO's default
    /// `policy`).
    pub claim_name: String,
    /// PEM files of the authorities trusted for an https provider.
    pub ca_files: Vec<PathBuf>,
}

/// Why a web identity token is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OidcError {
    /// The token expired (`ExpiredTokenException`).
    Expired,
    /// Anything else wrong with the token, with why.
    Invalid(String),
    /// The provider could not be reached or answered nonsense.
    Provider(String),
}

impl std::fmt::Display for OidcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OidcError::Expired => f.write_str("the web identity token has expired"),
            OidcError::Invalid(m) => f.write_str(m),
            OidcError::Provider(m) => write!(f, "the OpenID provider: {m}"),
        }
    }
}

impl From<JwtError> for OidcError {
    fn from(e: JwtError) -> Self {
        OidcError::Invalid(e.to_string())
    }
}

#[derive(Default)]
struct Cache {
    issuer: String,
    keys: HashMap<String, Jwk>,
    /// When the keys held were fetched.
    fetched: Option<Instant>,
    /// When a fetch was last tried, whatever came of it.
    tried: Option<Instant>,
}

/// A configured provider and what was fetched of it.
pub struct Provider {
    config: OpenIdConfig,
    tls: Option<tokio_rustls::TlsConnector>,
    /// Fetches happen one at a time, under this lock.
    cache: tokio::sync::Mutex<Cache>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("config_url", &self.config.config_url)
            .field("client_id", &self.config.client_id)
            .finish_non_exhaustive()
    }
}

impl Provider {
    /// A provider of `config`; fails on a URL that is not http(s) or an
    /// authority file that does not read.
    pub fn new(config: OpenIdConfig) -> Result<Provider, String> {
        let uri: http::Uri = config
            .config_url
            .parse()
            .map_err(|e| format!("the OpenID configuration URL: {e}"))?;
        if config.client_id.is_empty() {
            return Err("the OpenID client id is empty".into());
        }
        let tls = match uri.scheme_str() {
            Some("http") => None,
            Some("https") => Some(tls_connector(&config.ca_files)?),
            _ => return Err("the OpenID configuration URL is not http or https".into()),
        };
        Ok(Provider {
            config,
            tls,
            cache: tokio::sync::Mutex::new(Cache::default()),
        })
    }

    /// The claim naming the session's policies.
    pub fn claim_name(&self) -> &str {
        if self.config.claim_name.is_empty() {
            "policy"
        } else {
            &self.config.claim_name
        }
    }

    /// The claims of `token` if the provider issued it to this client and
    /// it is valid at `now` (Unix seconds).
    pub async fn validate(&self, token: &str, now: u64) -> Result<Map<String, Value>, OidcError> {
        let t = jwt::decode(token)?;
        if t.kid.is_empty() {
            return Err(OidcError::Invalid("the token names no key (kid)".into()));
        }
        let (issuer, key) = self.key(&t.kid).await?;
        let claims = t.verify(&key)?;
        check_claims(&claims, &issuer, &self.config.client_id, now)?;
        Ok(claims)
    }

    /// The issuer and the key `kid`, fetched if the set is stale or lacks
    /// it (and was not fetched in the last [`REFETCH_INTERVAL`]).
    async fn key(&self, kid: &str) -> Result<(String, Jwk), OidcError> {
        let mut c = self.cache.lock().await;
        let stale = c.fetched.is_none_or(|f| f.elapsed() > KEYS_TTL);
        let missing = !c.keys.contains_key(kid);
        // A provider that is down is tried again at most every interval
        // too, whoever asks.
        let may_fetch = c.tried.is_none_or(|t| t.elapsed() > REFETCH_INTERVAL);
        if may_fetch && (stale || missing) {
            c.tried = Some(Instant::now());
            match self.fetch().await {
                Ok((issuer, keys)) => {
                    c.issuer = issuer;
                    c.keys = keys;
                    c.fetched = Some(Instant::now());
                }
                // Keys fetched before still serve while the provider is
                // down; without any, the caller is told why.
                Err(e) if c.keys.is_empty() => return Err(e),
                Err(e) => tracing::warn!("OpenID provider keys not refreshed: {e}"),
            }
        } else if c.keys.is_empty() {
            return Err(OidcError::Provider(
                "its keys could not be fetched; the next try is at most 30 s away".into(),
            ));
        }
        c.keys
            .get(kid)
            .map(|k| (c.issuer.clone(), k.clone()))
            .ok_or_else(|| JwtError::UnknownKey(kid.to_owned()).into())
    }

    /// The discovery document's issuer and the key set it points to.
    async fn fetch(&self) -> Result<(String, HashMap<String, Jwk>), OidcError> {
        let discovery = self.get_json(&self.config.config_url).await?;
        let text = |k: &str| {
            discovery
                .get(k)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| OidcError::Provider(format!("the discovery document has no {k}")))
        };
        let issuer = text("issuer")?;
        let jwks = self.get_json(&text("jwks_uri")?).await?;
        let keys = jwt::parse_jwks(&jwks);
        if keys.is_empty() {
            return Err(OidcError::Provider("the key set has no usable key".into()));
        }
        Ok((issuer, keys))
    }

    async fn get_json(&self, url: &str) -> Result<Value, OidcError> {
        let fail = |m: String| OidcError::Provider(format!("{url}: {m}"));
        let body = tokio::time::timeout(FETCH_TIMEOUT, self.get(url))
            .await
            .map_err(|_| fail(format!("no answer within {FETCH_TIMEOUT:?}")))?
            .map_err(fail)?;
        serde_json::from_slice(&body).map_err(|e| fail(format!("not JSON: {e}")))
    }

    /// One HTTP/1.1 GET, its body if the status is 200 (redirects are not
    /// followed).
    async fn get(&self, url: &str) -> Result<Bytes, String> {
        let uri: http::Uri = url.parse().map_err(|e| format!("{e}"))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err("not an http or https URL".into()),
        };
        let host = uri.host().ok_or("no host")?.to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
        let path = uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| "/".into());
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let tcp = tokio::net::TcpStream::connect((bare.as_str(), port))
            .await
            .map_err(|e| format!("connecting: {e}"))?;
        let request = http::Request::get(path)
            .header(http::header::HOST, authority)
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::USER_AGENT, "Tessera")
            .body(http_body_util::Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        if https {
            // A connector exists for every https provider URL; the key
            // set's URL may be https under an http discovery URL.
            let connector = match &self.tls {
                Some(c) => c.clone(),
                None => tls_connector(&self.config.ca_files)?,
            };
            let name = rustls::pki_types::ServerName::try_from(bare)
                .map_err(|e| format!("server name: {e}"))?;
            let tls = connector
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS: {e}"))?;
            exchange(tls, request).await
        } else {
            exchange(tcp, request).await
        }
    }
}

async fn exchange<S>(
    io: S,
    request: http::Request<http_body_util::Empty<Bytes>>,
) -> Result<Bytes, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
    let driver = tokio::spawn(conn);
    let result = async {
        let resp = sender
            .send_request(request)
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
        if resp.status() != http::StatusCode::OK {
            return Err(format!("answered {}", resp.status()));
        }
        let limited = http_body_util::Limited::new(resp.into_body(), MAX_DOCUMENT);
        limited
            .collect()
            .await
            .map(|b| b.to_bytes())
            .map_err(|e| format!("reading the answer: {e}"))
    }
    .await;
    driver.abort();
    result
}

/// A TLS client trusting the certificates of `files` (PEM bundles).
fn tls_connector(files: &[PathBuf]) -> Result<tokio_rustls::TlsConnector, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for path in files {
        let Ok(pem) = std::fs::read(path) else {
            continue;
        };
        for cert in CertificateDer::pem_slice_iter(&pem).flatten() {
            // A bundle's odd certificate does not spoil the others.
            let _ = roots.add(cert);
        }
    }
    if roots.is_empty() {
        return Err("no trusted certificate authority for an https OpenID provider".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// A numeric claim in seconds (JSON number, possibly with a fraction).
fn seconds(claims: &Map<String, Value>, name: &str) -> Result<Option<u64>, OidcError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .map(Some)
            .ok_or_else(|| OidcError::Invalid(format!("the {name} claim is not a time"))),
        Some(_) => Err(OidcError::Invalid(format!(
            "the {name} claim is not a number"
        ))),
    }
}

/// The strings of a claim that is a string or an array of strings.
pub fn claim_values(claims: &Map<String, Value>, name: &str) -> Vec<String> {
    match claims.get(name) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// The checks of a verified token's claims.
pub fn check_claims(
    claims: &Map<String, Value>,
    issuer: &str,
    client_id: &str,
    now: u64,
) -> Result<(), OidcError> {
    let exp = seconds(claims, "exp")?
        .ok_or_else(|| OidcError::Invalid("the token has no exp claim".into()))?;
    if now >= exp {
        return Err(OidcError::Expired);
    }
    if let Some(nbf) = seconds(claims, "nbf")?
        && nbf > now + LEEWAY_SECS
    {
        return Err(OidcError::Invalid(
            "the token is not valid yet (nbf)".into(),
        ));
    }
    if claims.get("iss").and_then(Value::as_str) != Some(issuer) {
        return Err(OidcError::Invalid(format!(
            "the token's issuer is not the provider's ({issuer})"
        )));
    }
    let aud = claim_values(claims, "aud");
    let azp = claim_values(claims, "azp");
    if !aud.iter().chain(&azp).any(|a| a == client_id) {
        return Err(OidcError::Invalid(
            "the token's aud and azp claims do not name the configured client id".into(),
        ));
    }
    if claims
        .get("sub")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(OidcError::Invalid(
            "the token has no sub claim, which is required".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn claims_are_checked_as_openid_connect_requires() {
        let ok = serde_json::json!({"iss": "https://idp", "aud": "tessera", "sub": "alice", "exp": 2000});
        assert_eq!(
            check_claims(&claims(ok.clone()), "https://idp", "tessera", 1000),
            Ok(())
        );
        // Expiry, inclusive.
        assert_eq!(
            check_claims(&claims(ok.clone()), "https://idp", "tessera", 2000),
            Err(OidcError::Expired)
        );
        let with = |k: &str, v: Value| {
            let mut m = claims(ok.clone());
            if v.is_null() {
                m.remove(k);
            } else {
                m.insert(k.into(), v);
            }
            m
        };
        let refused = |m: Map<String, Value>| {
            matches!(
                check_claims(&m, "https://idp", "tessera", 1000),
                Err(OidcError::Invalid(_))
            )
        };
        assert!(refused(with("iss", "https://other".into())));
        assert!(refused(with("iss", Value::Null)));
        assert!(refused(with("aud", "someone-else".into())));
        assert!(refused(with("sub", "".into())));
        assert!(refused(with("sub", Value::Null)));
        assert!(refused(with("exp", Value::Null)));
        assert!(refused(with("exp", "soon".into())));
        assert!(refused(with("nbf", (1000 + LEEWAY_SECS + 1).into())));
        assert!(!refused(with("nbf", (1000 + LEEWAY_SECS).into())));
        // The client among several audiences, or as the authorised party.
        assert!(!refused(with("aud", serde_json::json!(["x", "tessera"]))));
        let mut m = with("aud", "x".into());
        m.insert("azp".into(), "tessera".into());
        assert!(!refused(m));
    }

    #[test]
    fn configurations_are_checked() {
        let cfg = |url: &str, client: &str| OpenIdConfig {
            config_url: url.into(),
            client_id: client.into(),
            ..OpenIdConfig::default()
        };
        assert!(Provider::new(cfg("http://idp/.well-known/openid-configuration", "c")).is_ok());
        assert!(Provider::new(cfg("ftp://idp/x", "c")).is_err());
        assert!(Provider::new(cfg("http://idp/x", "")).is_err());
        // https without any trusted authority.
        assert!(Provider::new(cfg("https://idp/x", "c")).is_err());
        assert_eq!(
            Provider::new(cfg("http://idp/x", "c"))
                .unwrap()
                .claim_name(),
            "policy"
        );
    }
}
