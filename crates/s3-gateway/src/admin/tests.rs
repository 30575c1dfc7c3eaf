//! The admin info call: routing, authentication as madmin-go signs, and the
//! document a gateway answers over real local drives.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use object::layer::{LayerOptions, ObjectLayer};
use sha2::Digest;

use super::*;
use crate::GatewayConfig;
use crate::auth::{
    CredentialScope, SecretKey, SigningKey, amz_date, canonical_request, string_to_sign,
};

const ROOT: (&str, &str) = ("admin-root", "admin-root-secret");
const OTHER: (&str, &str) = ("other-user", "other-user-secret");

fn credentials() -> Vec<(String, String)> {
    [ROOT, OTHER]
        .iter()
        .map(|(a, s)| ((*a).to_owned(), (*s).to_owned()))
        .collect()
}

/// `GET path` signed in the header as madmin-go signs it: the credential
/// scope names `region` (madmin-go: none), the body's SHA-256 is signed.
fn signed(
    path: &str,
    region: &str,
    (access, secret): (&str, &str),
    body: &[u8],
) -> Request<Full<Bytes>> {
    let date = amz_date(SystemTime::now());
    let hash = hex::encode(sha2::Sha256::digest(body));
    let mut req = Request::builder()
        .method("GET")
        .uri(path)
        .header("host", "127.0.0.1:9000")
        .header("x-amz-date", &date)
        .header("x-amz-content-sha256", &hash)
        .body(Full::new(Bytes::copy_from_slice(body)))
        .unwrap();
    let names = ["host", "x-amz-content-sha256", "x-amz-date"].map(str::to_owned);
    let canonical = canonical_request(&(&req).into(), &names, &hash, false).unwrap();
    let scope = CredentialScope::new(&date[..8], region, "s3");
    let to_sign = string_to_sign(&date, &scope, &canonical);
    let signature = SigningKey::derive(&SecretKey::new(secret), &scope).sign(to_sign.as_bytes());
    let value = format!(
        "AWS4-HMAC-SHA256 Credential={access}/{scope}, \
         SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature={}",
        signature.to_hex()
    );
    req.headers_mut()
        .insert("authorization", value.parse().unwrap());
    req
}

fn unsigned(method: &str, path: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1:9000")
        .body(Full::new(Bytes::new()))
        .unwrap()
}

fn check(auth: &AdminAuth, req: Request<Full<Bytes>>, body: &[u8]) -> Result<(), &'static str> {
    let (parts, _) = req.into_parts();
    auth.authenticate(&parts, body).map_err(|e| e.code)
}

#[test]
fn routes_the_info_call_and_refuses_the_rest() {
    assert_eq!(route(&Method::GET, INFO_PATH), Some(AdminCall::ServerInfo));
    assert_eq!(
        route(&Method::POST, HEAL_STATUS_PATH),
        Some(AdminCall::HealStatus)
    );
    for (method, path) in [
        (Method::HEAD, INFO_PATH),
        (Method::POST, INFO_PATH),
        (Method::GET, HEAL_STATUS_PATH),
        (Method::GET, "/minio/admin/v3/heal/bucket"),
        (Method::POST, "/minio/admin/v3/heal"),
        (Method::POST, "/minio/admin/v3/set-config-kv"),
        (Method::PUT, "/minio/admin/v3/get-config-kv"),
        (Method::GET, "/minio/admin/v3/list-access-keys-bulk"),
        (Method::POST, "/minio/admin/v3/list-users"),
        (Method::GET, "/minio/admin/v3/info/"),
        (Method::GET, "/minio/admin"),
    ] {
        let Some(AdminCall::Unsupported(e)) = route(&method, path) else {
            panic!("{method} {path} is an unsupported admin call");
        };
        assert_eq!(e.code, "NotImplemented");
        assert_eq!(e.status, http::StatusCode::NOT_IMPLEMENTED);
        assert!(e.message.contains(path), "{}", e.message);
    }
    for (method, path, call) in [
        (
            Method::PUT,
            "/minio/admin/v3/set-config-kv",
            ConfigCall::Set,
        ),
        (
            Method::GET,
            "/minio/admin/v3/get-config-kv",
            ConfigCall::Get,
        ),
        (
            Method::DELETE,
            "/minio/admin/v3/del-config-kv",
            ConfigCall::Del,
        ),
        (
            Method::GET,
            "/minio/admin/v3/help-config-kv",
            ConfigCall::Help,
        ),
    ] {
        assert_eq!(
            route(&method, path),
            Some(AdminCall::Config(call)),
            "{path}"
        );
    }
    for path in [
        "/minio/admin/v3/heal/",
        "/minio/admin/v3/heal/bucket",
        "/minio/admin/v3/heal/bucket/some/prefix",
    ] {
        assert!(
            matches!(route(&Method::POST, path), Some(AdminCall::Heal(_))),
            "{path}"
        );
    }
    assert_eq!(route(&Method::GET, "/minio-admin"), None);
    assert_eq!(route(&Method::GET, "/minio/adminx"), None);
    assert_eq!(route(&Method::GET, "/bucket/minio/admin/v3/info"), None);
}

#[test]
fn admits_the_root_user_signing_as_madmin_does() {
    let auth = AdminAuth::new("us-east-1", &credentials());
    assert_eq!(check(&auth, signed(INFO_PATH, "", ROOT, b""), b""), Ok(()));
    assert_eq!(
        check(&auth, signed(INFO_PATH, "us-east-1", ROOT, b""), b""),
        Ok(())
    );
    assert_eq!(
        check(&auth, signed(INFO_PATH, "eu-west-1", ROOT, b""), b""),
        Err("AuthorizationHeaderMalformed")
    );
    assert_eq!(
        check(&auth, signed(INFO_PATH, "", OTHER, b""), b""),
        Err("AccessDenied")
    );
    assert_eq!(
        check(
            &auth,
            signed(INFO_PATH, "", ("admin-root", "wrong-secret"), b""),
            b""
        ),
        Err("SignatureDoesNotMatch")
    );
    assert_eq!(
        check(
            &auth,
            signed(INFO_PATH, "", ("nobody", "x-secret"), b""),
            b""
        ),
        Err("InvalidAccessKeyId")
    );
    assert_eq!(
        check(&auth, signed(INFO_PATH, "", ROOT, b"{}"), b"{ }"),
        Err("XAmzContentSHA256Mismatch")
    );
    assert_eq!(
        check(&auth, unsigned("GET", INFO_PATH), b""),
        Err("AccessDenied")
    );
    let v2 = Request::get(INFO_PATH)
        .header("host", "h")
        .header("date", "Tue, 27 Mar 2007 19:36:42 +0000")
        .header("authorization", "AWS admin-root:c2lnbmF0dXJl")
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(check(&auth, v2, b""), Err("AccessDenied"));
}

#[test]
fn s3_requests_must_still_name_the_region() {
    let verifier = Verifier::new(AuthConfig::default(), static_credentials(&credentials()));
    let (parts, _) = signed("/bucket", "", ROOT, b"").into_parts();
    let e = verifier
        .authenticate((&parts).into(), SystemTime::now())
        .unwrap_err();
    assert_eq!(e.code(), "AuthorizationHeaderMalformed");
}

async fn gateway(dir: &std::path::Path) -> Gateway {
    let dirs: Vec<_> = (0..4).map(|i| dir.join(format!("d{i}"))).collect();
    let layer = ObjectLayer::open_dirs(&dirs, LayerOptions::default())
        .await
        .unwrap();
    Gateway::new(
        Arc::new(layer),
        GatewayConfig {
            credentials: credentials(),
            ..GatewayConfig::default()
        },
    )
}

async fn answer(gw: &Gateway, req: Request<Full<Bytes>>) -> (u16, Bytes) {
    let r = gw.handle(req).await;
    let status = r.status().as_u16();
    (status, r.into_body().collect().await.unwrap().to_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_answers_the_info_call() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path()).await;
    gw.layer().make_bucket("photos").await.unwrap();

    let (status, body) = answer(&gw, signed(INFO_PATH, "", ROOT, b"")).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let info: InfoMessage = serde_json::from_slice(&body).unwrap();
    assert_eq!(info.mode, ItemState::Online);
    assert_eq!(info.deployment_id, gw.layer().deployment_id().to_string());
    assert_eq!(info.region, "us-east-1");
    assert_eq!(info.buckets, Count::of(1));
    assert!(info.objects.error.is_some());
    assert_eq!(info.backend.online_disks, 4);
    assert_eq!(info.backend.offline_disks, 0);
    assert_eq!(info.backend.standard_parity, 2);
    assert_eq!(info.backend.total_sets, [1]);
    assert_eq!(info.backend.drives_per_set, [4]);
    let [server] = info.servers.as_slice() else {
        panic!("one server: {:?}", info.servers);
    };
    assert_eq!(server.endpoint, "127.0.0.1:9000");
    assert_eq!(server.scheme, "http");
    assert_eq!(server.pool_number, Some(1));
    for (i, d) in server.drives.iter().enumerate() {
        assert_eq!(d.state, DriveState::Ok, "{d:?}");
        assert_eq!((d.pool_index, d.set_index, d.disk_index), (0, 0, i));
        assert!(d.uuid.is_some() && d.total_bytes.is_some(), "{d:?}");
    }

    let (status, body) = answer(&gw, unsigned("GET", INFO_PATH)).await;
    assert_eq!(status, 403);
    assert!(String::from_utf8_lossy(&body).contains("<Code>AccessDenied</Code>"));
    let (status, body) = answer(&gw, signed("/minio/admin/v3/get-config", "", ROOT, b"")).await;
    assert_eq!(status, 501);
    assert!(String::from_utf8_lossy(&body).contains("<Code>NotImplemented</Code>"));
    // The user list, sealed with the caller's secret key as madmin reads it.
    let (status, body) = answer(&gw, signed("/minio/admin/v3/list-users", "", ROOT, b"")).await;
    assert_eq!(status, 200);
    let plain = sse::madmin::decrypt(ROOT.1.as_bytes(), &body).unwrap();
    assert_eq!(plain, b"{}");
}
