//! AWS STS `AssumeRole` as MinIO serves it: `POST /` with a form body
//! (`Action=AssumeRole&Version=2011-06-15`, optional `DurationSeconds`
//! and `Policy`), SigV4-signed by a user or the root user for service
//! `sts` in the server's region, answered with temporary credentials
//! ([`crate::iam::temp`]). Temporary credentials and service accounts
//! cannot call it, and a request that carries a session token is refused,
//! as MinIO refuses them.
//!
//! `AssumeRoleWithWebIdentity` is the same call unsigned, with the
//! identity token of the configured OpenID Connect provider
//! ([`crate::oidc`]) in `WebIdentityToken`: the token is the proof of
//! identity, its policy claim names the session's policies
//! ([`crate::iam::webid`]). Its form is read in the share of unsigned
//! forms, bounded in size and time like a browser upload's.
//!
//! Errors are STS documents (`ErrorResponse`), not S3's: the AWS SDKs
//! read STS answers with the query protocol's error shape.

use std::time::SystemTime;

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body::Body;

use crate::auth::{AuthConfig, Authentication, ContentSha256};
use crate::authz::Requester;
use crate::error::S3Error;
use crate::iam::{IamError, temp, token};
use crate::service::{Ctx, Gateway, ResponseBody};
use crate::xml::XmlWriter;

/// STS's namespace.
const STS_NS: &str = "https://sts.amazonaws.com/doc/2011-06-15/";
/// The one API version.
const STS_VERSION: &str = "2011-06-15";
/// Largest form body: the policy (2 KiB compacted, more with spaces and
/// percent-encoding) and a few parameters.
const MAX_FORM_BYTES: u64 = 64 * 1024;

/// Whether a request is an STS call as MinIO routes them: `POST /`
/// without a query, a form body, and a SigV4 `Authorization` header or
/// none (a web identity call).
pub(crate) fn is_sts(parts: &http::request::Parts) -> bool {
    let h = |n: &str| parts.headers.get(n).and_then(|v| v.to_str().ok());
    parts.method == Method::POST
        && parts.uri.path() == "/"
        && parts.uri.query().is_none_or(str::is_empty)
        && h("content-type").is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"))
        && parts
            .headers
            .get("authorization")
            .is_none_or(|a| a.as_bytes().starts_with(crate::auth::ALGORITHM.as_bytes()))
}

/// The verifier configuration of STS requests: the S3 one, service `sts`.
pub(crate) fn auth_config(region: &str) -> AuthConfig {
    AuthConfig {
        region: region.to_owned(),
        service: "sts".to_owned(),
        sigv2: false,
        ..AuthConfig::default()
    }
}

/// An STS error: code, status and message.
struct StsError {
    code: &'static str,
    status: StatusCode,
    message: String,
}

impl StsError {
    fn access_denied(message: impl Into<String>) -> StsError {
        StsError {
            code: "AccessDenied",
            status: StatusCode::FORBIDDEN,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> StsError {
        StsError {
            code: "InvalidParameterValue",
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    fn missing(message: impl Into<String>) -> StsError {
        StsError {
            code: "MissingParameter",
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }
}

impl From<IamError> for StsError {
    fn from(e: IamError) -> StsError {
        match e {
            IamError::Storage(m) => {
                tracing::error!("STS: {m}");
                StsError {
                    code: "InternalError",
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    message: "The temporary credentials could not be stored.".into(),
                }
            }
            other => StsError::invalid(other.to_string()),
        }
    }
}

/// The form of an STS call, whose `Version` must be STS's.
fn parse_form(body: &[u8]) -> Result<Vec<(String, String)>, StsError> {
    let text =
        std::str::from_utf8(body).map_err(|_| StsError::invalid("the form body is not UTF-8"))?;
    let form = crate::service::parse_query(text)
        .map_err(|_| StsError::invalid("the form body does not parse"))?;
    let version = form
        .iter()
        .find(|(k, _)| k == "Version")
        .map_or("", |(_, v)| v.as_str());
    if version != STS_VERSION {
        return Err(StsError::missing(format!(
            "Invalid STS API version {version}, expecting {STS_VERSION}"
        )));
    }
    Ok(form)
}

/// The answer of `action` (`AssumeRole`, ...): the credentials issued,
/// then `extra` elements of its result.
fn credentials_response(
    action: &str,
    issued: &temp::Issued,
    extra: &[(&str, &str)],
    request_id: &str,
) -> Response<ResponseBody> {
    let expiration = crate::iam::store::rfc3339(
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(issued.expires),
    );
    let (root, result) = (format!("{action}Response"), format!("{action}Result"));
    let mut w = XmlWriter::new();
    w.root_ns(&root, STS_NS)
        .open(&result)
        .open("AssumedRoleUser")
        .elem("Arn", "")
        .elem("AssumeRoleId", "")
        .close("AssumedRoleUser")
        .open("Credentials")
        .elem("AccessKeyId", &issued.access_key)
        .elem("SecretAccessKey", &issued.secret_key)
        .elem("SessionToken", &issued.session_token)
        .elem("Expiration", &expiration)
        .close("Credentials");
    for (name, value) in extra {
        w.elem(name, value);
    }
    w.close(&result)
        .open("ResponseMetadata")
        .elem("RequestId", request_id)
        .close("ResponseMetadata")
        .close(&root);
    crate::handlers::xml_response(StatusCode::OK, w.finish())
}

fn error_response(e: &StsError, request_id: &str) -> Response<ResponseBody> {
    let mut w = XmlWriter::new();
    w.root_ns("ErrorResponse", STS_NS)
        .open("Error")
        .elem("Type", "Sender")
        .elem("Code", e.code)
        .elem("Message", &e.message)
        .close("Error")
        .elem("RequestId", request_id)
        .close("ErrorResponse");
    crate::handlers::xml_response(e.status, w.finish())
}

impl Gateway {
    /// Serves an STS call (see [`is_sts`]): always an STS document.
    pub(crate) async fn serve_sts<B>(
        &self,
        ctx: &mut Ctx<B>,
    ) -> Result<Response<ResponseBody>, S3Error>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        if !ctx.parts.headers.contains_key("authorization") {
            ctx.api = "AssumeRoleWithWebIdentity";
            ctx.slot = Some(self.post_admission.admit().await?);
            return Ok(match self.assume_role_with_web_identity(ctx).await {
                Ok(r) => r,
                Err(e) => error_response(&e, &ctx.request_id),
            });
        }
        ctx.api = "AssumeRole";
        ctx.slot = Some(self.admit().await?);
        Ok(match self.assume_role(ctx).await {
            Ok(r) => r,
            Err(e) => error_response(&e, &ctx.request_id),
        })
    }

    async fn assume_role<B>(&self, ctx: &mut Ctx<B>) -> Result<Response<ResponseBody>, StsError>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        // The body is read before the signature can be checked: only a
        // request naming a known access key may make the server wait for
        // it, and for a bounded time.
        let known = ctx
            .header("authorization")
            .and_then(|a| a.split("Credential=").nth(1))
            .and_then(|c| c.split('/').next())
            .is_some_and(|ak| {
                crate::auth::CredentialsProvider::lookup(self.credentials(), ak).is_some()
            });
        if !known {
            return Err(StsError::access_denied(
                "The request is not signed with a known access key.",
            ));
        }
        // AWS SDKs sign STS calls without `x-amz-content-sha256`: the
        // payload hash the signature covers is the body's, as MinIO takes
        // it. The (small, bounded) form is read first to hash it.
        let body = tokio::time::timeout(self.config.limits.post_form_timeout, self.read_form(ctx))
            .await
            .map_err(|_| StsError::invalid("the request body took too long"))??;
        let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&body));
        if !ctx.parts.headers.contains_key("x-amz-content-sha256") {
            let v = http::HeaderValue::from_str(&hash).expect("hex is a header value");
            ctx.parts.headers.insert("x-amz-content-sha256", v);
        }
        let verified = match self
            .sts_verifier
            .authenticate((&ctx.parts).into(), SystemTime::now())
        {
            Ok(Authentication::Signed(v)) => v,
            Ok(Authentication::Anonymous) => {
                return Err(StsError::access_denied("The request is not signed."));
            }
            Err(e) => return Err(StsError::access_denied(e.to_string())),
        };
        // Temporary credentials cannot make more (the verifier accepted
        // their token; MinIO refuses any token here).
        if verified.security_token.is_some() {
            return Err(StsError::access_denied(
                "Temporary credentials cannot request temporary credentials.",
            ));
        }
        let who = crate::authz::requester_of(self, &verified.access_key)
            .map_err(|e| StsError::access_denied(e.message))?;
        let parent = match &who {
            Requester::Owner => verified.access_key.clone(),
            Requester::User(id) if !id.temporary && !id.service => id.name.clone(),
            _ => {
                return Err(StsError::access_denied(
                    "Generating temporary credentials not allowed for this request.",
                ));
            }
        };
        ctx.access_key = verified.access_key.clone();
        match verified.content_sha256 {
            ContentSha256::Sha256(h) if hex::encode(h) == hash => {}
            ContentSha256::Unsigned => {}
            ContentSha256::Sha256(_) => {
                return Err(StsError::access_denied(
                    "The provided 'x-amz-content-sha256' header does not match what was computed.",
                ));
            }
            _ => return Err(StsError::invalid("STS calls cannot be sent aws-chunked")),
        }
        let form = parse_form(&body)?;
        let get = |n: &str| form.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        match get("Action") {
            Some("AssumeRole") => {}
            other => {
                return Err(StsError::invalid(format!(
                    "Unsupported action {}",
                    other.unwrap_or("")
                )));
            }
        }
        let session_policy = match get("Policy").filter(|p| !p.is_empty()) {
            None => None,
            Some(p) => Some(temp::parse_session_policy(p)?),
        };
        let duration = temp::parse_duration(get("DurationSeconds"), self.iam.sts_min_duration())?;
        let issued = self
            .iam
            .assume_role(&parent, duration, session_policy)
            .await?;
        Ok(credentials_response(
            "AssumeRole",
            &issued,
            &[],
            &ctx.request_id,
        ))
    }

    async fn assume_role_with_web_identity<B>(
        &self,
        ctx: &mut Ctx<B>,
    ) -> Result<Response<ResponseBody>, StsError>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        let body = tokio::time::timeout(self.config.limits.post_form_timeout, self.read_form(ctx))
            .await
            .map_err(|_| StsError::invalid("the request body took too long"))??;
        let form = parse_form(&body)?;
        let get = |n: &str| {
            form.iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
                .filter(|v| !v.is_empty())
        };
        match get("Action") {
            Some("AssumeRoleWithWebIdentity") => {}
            Some("AssumeRole") => {
                return Err(StsError::access_denied("The request is not signed."));
            }
            other => {
                return Err(StsError::invalid(format!(
                    "Unsupported action {}",
                    other.unwrap_or("")
                )));
            }
        }
        let provider = self
            .oidc
            .as_ref()
            .ok_or_else(|| StsError::invalid("No OpenID Connect provider is configured."))?;
        let token = get("WebIdentityToken")
            .ok_or_else(|| StsError::missing("WebIdentityToken is required"))?;
        // Parameters are checked before the provider is asked.
        let session_policy = match get("Policy") {
            None => None,
            Some(p) => Some(temp::parse_session_policy(p)?),
        };
        let duration = match get("DurationSeconds") {
            None => None,
            d => Some(temp::parse_duration(d, self.iam.sts_min_duration())?),
        };
        let claims = provider
            .validate(token, temp::unix_now())
            .await
            .map_err(|e| match e {
                crate::oidc::OidcError::Expired => StsError {
                    code: "ExpiredToken",
                    status: StatusCode::BAD_REQUEST,
                    message: "The web identity token that was passed is expired or is not valid."
                        .into(),
                },
                crate::oidc::OidcError::Provider(m) => {
                    tracing::warn!("AssumeRoleWithWebIdentity: {m}");
                    StsError {
                        code: "IDPCommunicationError",
                        status: StatusCode::BAD_REQUEST,
                        message: "The OpenID Connect provider could not be reached or did not answer as expected.".into(),
                    }
                }
                crate::oidc::OidcError::Invalid(m) => StsError::invalid(m),
            })?;
        let issued = self
            .iam
            .assume_role_web(&claims, provider.claim_name(), duration, session_policy)
            .await?;
        let claim = |k: &str| claims.get(k).and_then(|v| v.as_str()).unwrap_or("");
        Ok(credentials_response(
            "AssumeRoleWithWebIdentity",
            &issued,
            &[
                ("SubjectFromWebIdentityToken", claim("sub")),
                ("Provider", claim("iss")),
            ],
            &ctx.request_id,
        ))
    }

    /// The request's form body, bounded in size and time.
    async fn read_form<B>(&self, ctx: &mut Ctx<B>) -> Result<Vec<u8>, StsError>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        use http_body_util::BodyExt;
        let Some(mut body) = ctx.body.take() else {
            return Ok(Vec::new());
        };
        let idle = self.config.limits.body_idle_timeout;
        let mut out = Vec::new();
        loop {
            let frame = match tokio::time::timeout(idle, body.frame()).await {
                Err(_) => return Err(StsError::invalid("the request body stalled")),
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(StsError::invalid(format!("the request body: {e}")));
                }
                Ok(Some(Ok(f))) => f,
            };
            if let Ok(data) = frame.into_data() {
                ctx.bytes_in += data.len() as u64;
                if out.len() + data.len() > MAX_FORM_BYTES as usize {
                    return Err(StsError::invalid(format!(
                        "the form body is larger than {MAX_FORM_BYTES} bytes"
                    )));
                }
                out.extend_from_slice(&data);
            }
        }
        Ok(out)
    }

    /// Whether a request refused for an unknown access key presents a
    /// session token of this server for that key that has expired: then
    /// the client is told `ExpiredToken` (the credentials are dropped
    /// once expired, and the token itself proves they existed).
    pub(crate) fn expired_session(&self, parts: &http::request::Parts) -> bool {
        let Some(key) = self.iam.root_secret(self.iam.root_key()) else {
            return false;
        };
        let query =
            crate::service::parse_query(parts.uri.query().unwrap_or("")).unwrap_or_default();
        let q = |n: &str| query.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        let Some(presented) = parts
            .headers
            .get("x-amz-security-token")
            .and_then(|v| v.to_str().ok())
            .or(q("X-Amz-Security-Token"))
        else {
            return false;
        };
        let Ok(claims) = token::verify(presented, key.as_bytes()) else {
            return false;
        };
        if claims.access_key.is_empty() || claims.exp == 0 || temp::unix_now() < claims.exp {
            return false;
        }
        let signed_by = |cred: &str| cred.starts_with(&format!("{}/", claims.access_key));
        let in_header = parts
            .headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|a| a.split_once("Credential="))
            .is_some_and(|(_, rest)| signed_by(rest));
        in_header || q("X-Amz-Credential").is_some_and(signed_by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(method: Method, uri: &str, headers: &[(&str, &str)]) -> http::request::Parts {
        let mut b = http::Request::builder().method(method).uri(uri);
        for (n, v) in headers {
            b = b.header(*n, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn sts_calls_are_told_from_s3_requests() {
        let form = (
            "content-type",
            "application/x-www-form-urlencoded; charset=utf-8",
        );
        let auth = (
            "authorization",
            "AWS4-HMAC-SHA256 Credential=a/b/c/sts/aws4_request",
        );
        assert!(is_sts(&parts(Method::POST, "/", &[form, auth])));
        assert!(!is_sts(&parts(Method::POST, "/?x", &[form, auth])));
        assert!(!is_sts(&parts(Method::POST, "/bucket", &[form, auth])));
        assert!(!is_sts(&parts(Method::GET, "/", &[form, auth])));
        assert!(!is_sts(&parts(Method::POST, "/", &[auth])));
        // Unsigned: a web identity call; signed otherwise: not STS.
        assert!(is_sts(&parts(Method::POST, "/", &[form])));
        let v2 = ("authorization", "AWS a:b");
        assert!(!is_sts(&parts(Method::POST, "/", &[form, v2])));
    }

    #[test]
    fn errors_are_sts_documents() {
        let r = error_response(&StsError::invalid("bad <value>"), "RID");
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        let e: StsError = IamError::Storage("disk".into()).into();
        assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR);
        let e: StsError = IamError::NoSuchUser("x".into()).into();
        assert_eq!(e.code, "InvalidParameterValue");
    }
}
