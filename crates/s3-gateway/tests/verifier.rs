//! The verifier against an independent signer (the `aws-sigv4` crate, as
//! the AWS SDK for Rust uses it for S3), on random requests; every signed
//! component tampered with; clocks; presigned expiry; tokens; and the error
//! each malformed input gets.

mod common;

use std::time::{Duration, SystemTime};

use common::*;
use http::{HeaderValue, Method, StatusCode};
use s3_gateway::auth::{
    AccessDenied, AuthConfig, AuthError, AuthKind, Authentication, ContentSha256,
    MAX_PRESIGNED_EXPIRES, Payload, RequestHead, SignatureMismatch, StaticCredentials, Verifier,
};

const KEY_CHARS: &str = "abcXYZ019-_.~ !$&'()*+,;=:@%/ééñ中文🙂\"<>[]{}^`|\\?#";
const QUERY_CHARS: &str = "abcXYZ019-_.~ !$&'()*+,;=:@%/é中+?#";

/// A random S3-like request: bucket and key (any characters, encoded as
/// clients encode them), query, headers, body; signed with aws-sigv4.
struct RandomRequest {
    request: http::Request<()>,
    body: Vec<u8>,
    signed_body: bool,
    time: SystemTime,
}

fn random_request(rng: &mut Rng, presign: Option<Duration>, token: bool) -> RandomRequest {
    let method = rng
        .pick(&[
            Method::GET,
            Method::PUT,
            Method::POST,
            Method::DELETE,
            Method::HEAD,
        ])
        .clone();
    let bucket = rng.string("abcdefghij0123456789-", 3, 12);
    let key = rng.string(KEY_CHARS, 0, 40);
    let virtual_host = rng.chance(50);
    let mut target = if virtual_host {
        format!("/{}", aws_encode(&key, false))
    } else {
        format!("/{bucket}/{}", aws_encode(&key, false))
    };
    let params = rng.below(5);
    let mut query = Vec::new();
    for _ in 0..params {
        let name = rng.string(QUERY_CHARS, 1, 10);
        let value = rng.string(QUERY_CHARS, 0, 20);
        if rng.chance(20) {
            query.push(aws_encode(&name, true));
        } else {
            query.push(format!(
                "{}={}",
                aws_encode(&name, true),
                aws_encode(&value, true)
            ));
        }
    }
    if !query.is_empty() {
        target = format!("{target}?{}", query.join("&"));
    }
    let host = if virtual_host {
        format!("{bucket}.s3.example.com")
    } else {
        rng.pick(&["localhost:9000", "s3.example.com", "[::1]:9000"])
            .to_string()
    };
    let mut builder = http::Request::builder()
        .method(method)
        .uri(target.as_str())
        .header("host", host);
    for _ in 0..rng.below(6) {
        let name = rng
            .pick(&[
                "x-amz-meta-a",
                "x-amz-meta-long-name",
                "x-amz-storage-class",
                "content-type",
                "cache-control",
                "x-amz-acl",
                "x-custom",
            ])
            .to_string();
        let value = rng.string("abc XYZ 0-9  /;=,\t", 1, 30);
        let value = value.trim_matches([' ', '\t']).to_owned();
        if value.is_empty() {
            continue;
        }
        builder = builder.header(name, value);
    }
    let mut request = builder.body(()).unwrap();
    let body_len = rng.below(300);
    let body = rng.bytes(body_len);
    let signed_body = presign.is_none() && rng.chance(70);
    let time = example_time() + Duration::from_secs(rng.below(10 * 365 * 86_400) as u64);
    let mut options = SignOptions::new(time);
    options.presign = presign;
    if token {
        options.access_key = TEMP_ACCESS_KEY;
        options.secret_key = TEMP_SECRET_KEY;
        options.token = Some(TEMP_TOKEN);
    }
    let signable = if signed_body {
        Body::Bytes(&body)
    } else {
        Body::Unsigned
    };
    sign_with_aws_sigv4(&mut request, signable, &options);
    RandomRequest {
        request,
        body,
        signed_body,
        time,
    }
}

fn check_body(verified: Box<s3_gateway::auth::Verified>, body: &[u8], signed: bool) {
    match verified.payload {
        Payload::Sha256(mut v) => {
            assert!(signed);
            let mut tampered = v.clone();
            for piece in body.chunks(17) {
                v.update(piece);
            }
            v.finish().unwrap();
            tampered.update(body);
            tampered.update(b"x");
            assert_eq!(
                tampered.finish().unwrap_err().code(),
                "XAmzContentSHA256Mismatch"
            );
        }
        Payload::Unsigned => assert!(!signed),
        Payload::Chunked(_) => panic!("no chunked bodies here"),
    }
}

#[test]
fn requests_signed_by_aws_sigv4_verify() {
    let verifier = verifier();
    let mut rng = Rng::new(1);
    for i in 0..400 {
        let token = i % 5 == 0;
        let r = random_request(&mut rng, None, token);
        let skew = Duration::from_secs(rng.below(14 * 60) as u64);
        let now = if rng.chance(50) {
            r.time + skew
        } else {
            r.time - skew
        };
        let verified = authenticate(&verifier, &r.request, now)
            .unwrap_or_else(|e| panic!("request {i} {:?}: {e:?}", r.request));
        assert_eq!(verified.kind, AuthKind::Header);
        assert_eq!(verified.request_time, r.time);
        assert_eq!(
            verified.security_token.as_deref(),
            token.then_some(TEMP_TOKEN)
        );
        let principal = if token {
            "temporary-user"
        } else {
            "example-user"
        };
        assert_eq!(verified.principal.name(), principal);
        check_body(verified, &r.body, r.signed_body);
    }
}

#[test]
fn presigned_urls_from_aws_sigv4_verify_until_they_expire() {
    let verifier = verifier();
    let mut rng = Rng::new(2);
    for i in 0..300 {
        let expires = Duration::from_secs(rng.range(1, MAX_PRESIGNED_EXPIRES as usize) as u64);
        let r = random_request(&mut rng, Some(expires), i % 4 == 0);
        let within = Duration::from_secs(rng.below(expires.as_secs() as usize + 1) as u64);
        let verified = authenticate(&verifier, &r.request, r.time + within)
            .unwrap_or_else(|e| panic!("request {i} {:?}: {e:?}", r.request));
        assert_eq!(
            verified.kind,
            AuthKind::Presigned {
                expires: r.time + expires
            }
        );
        assert!(matches!(verified.payload, Payload::Unsigned));
        let late = r.time + expires + Duration::from_secs(rng.range(1, 1_000_000) as u64);
        let err = authenticate(&verifier, &r.request, late).unwrap_err();
        assert!(
            matches!(err, AuthError::AccessDenied(AccessDenied::Expired { .. })),
            "{err:?}"
        );
        let early = r.time - Duration::from_secs(rng.range(15 * 60 + 1, 1_000_000) as u64);
        let err = authenticate(&verifier, &r.request, early).unwrap_err();
        assert_eq!(err, AuthError::AccessDenied(AccessDenied::NotYetValid));
    }
}

#[test]
fn a_presigned_url_valid_for_zero_seconds_is_expired_at_once() {
    let verifier = verifier();
    let mut rng = Rng::new(3);
    for i in 0..20 {
        let r = random_request(&mut rng, Some(Duration::ZERO), i % 2 == 0);
        for at in [r.time, r.time + Duration::from_secs(1)] {
            let err = authenticate(&verifier, &r.request, at).unwrap_err();
            assert!(
                matches!(
                    err,
                    AuthError::AccessDenied(AccessDenied::Expired { expires_in: 0, .. })
                ),
                "{err:?}"
            );
        }
    }
}

/// Each way of changing a signed request after signing, and what it must
/// give.
fn tamper(
    rng: &mut Rng,
    request: &http::Request<()>,
    what: usize,
) -> (http::Request<()>, &'static str) {
    let mut r = request.clone();
    let headers = r.headers_mut();
    match what {
        0 => {
            *r.method_mut() = if request.method() == Method::PUT {
                Method::POST
            } else {
                Method::PUT
            };
            (r, "SignatureDoesNotMatch")
        }
        1 => {
            let target = format!("{}x", request.uri().path());
            let target = match request.uri().query() {
                Some(q) => format!("{target}?{q}"),
                None => target,
            };
            *r.uri_mut() = target.parse().unwrap();
            (r, "SignatureDoesNotMatch")
        }
        2 => {
            set_query_param(&mut r, "added", &rng.string("abc", 1, 3));
            (r, "SignatureDoesNotMatch")
        }
        3 => {
            let host = format!("{}.evil", request.headers()["host"].to_str().unwrap());
            headers.insert("host", host.parse().unwrap());
            (r, "SignatureDoesNotMatch")
        }
        4 => {
            let date = request.headers()["x-amz-date"].to_str().unwrap();
            // One second later: same day, within the skew.
            let last = date.as_bytes()[14];
            let bumped = if last == b'9' {
                '8'
            } else {
                (last + 1) as char
            };
            let new = format!("{}{bumped}Z", &date[..14]);
            headers.insert("x-amz-date", new.parse().unwrap());
            (r, "SignatureDoesNotMatch")
        }
        5 => {
            let auth = request.headers()["authorization"].to_str().unwrap();
            let pos = auth.len() - 1 - rng.below(64);
            let mut bytes = auth.as_bytes().to_vec();
            bytes[pos] = if bytes[pos] == b'0' { b'1' } else { b'0' };
            headers.insert("authorization", HeaderValue::from_bytes(&bytes).unwrap());
            (r, "SignatureDoesNotMatch")
        }
        6 => {
            headers.insert("x-amz-content-sha256", EMPTY_SHA256_OTHER.parse().unwrap());
            (r, "SignatureDoesNotMatch")
        }
        7 => {
            let auth = request.headers()["authorization"].to_str().unwrap();
            let auth = auth.replacen(ACCESS_KEY, "AKIAUNKNOWNEXAMPLE00", 1);
            headers.insert("authorization", auth.parse().unwrap());
            (r, "InvalidAccessKeyId")
        }
        8 => {
            let auth = request.headers()["authorization"].to_str().unwrap();
            let auth = auth.replacen("/us-east-1/", "/eu-west-1/", 1);
            headers.insert("authorization", auth.parse().unwrap());
            (r, "AuthorizationHeaderMalformed")
        }
        9 => {
            headers.insert("x-amz-meta-injected", "1".parse().unwrap());
            (r, "AccessDenied")
        }
        10 => {
            // A signed header given another value.
            let value = format!("{}x", request.headers()["x-amz-date"].to_str().unwrap());
            headers.append("x-amz-date", value.parse().unwrap());
            (r, "SignatureDoesNotMatch")
        }
        _ => {
            headers.remove("x-amz-date");
            (r, "AccessDenied")
        }
    }
}

const EMPTY_SHA256_OTHER: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[test]
fn tampering_with_any_signed_component_fails() {
    let verifier = verifier();
    let mut rng = Rng::new(3);
    for i in 0..200 {
        let r = random_request(&mut rng, None, false);
        for what in 0..12 {
            let (tampered, code) = tamper(&mut rng, &r.request, what);
            let err = authenticate(&verifier, &tampered, r.time)
                .map(|_| ())
                .expect_err(&format!("request {i}, tampering {what} was accepted"));
            assert_eq!(err.code(), code, "request {i}, tampering {what}: {err:?}");
        }
    }
}

#[test]
fn tampering_with_presigned_urls_fails() {
    let verifier = verifier();
    let mut rng = Rng::new(4);
    for _ in 0..100 {
        let r = random_request(&mut rng, Some(Duration::from_secs(3600)), false);
        let cases: Vec<(http::Request<()>, &str)> = vec![
            {
                let mut t = r.request.clone();
                set_query_param(&mut t, "X-Amz-Expires", "3601");
                (t, "SignatureDoesNotMatch")
            },
            {
                let mut t = r.request.clone();
                set_query_param(&mut t, "extra", "1");
                (t, "SignatureDoesNotMatch")
            },
            {
                let mut t = r.request.clone();
                t.headers_mut()
                    .insert("host", "other.example.com".parse().unwrap());
                (t, "SignatureDoesNotMatch")
            },
            {
                let mut t = r.request.clone();
                set_query_param(&mut t, "X-Amz-Signature", &"0".repeat(64));
                (t, "SignatureDoesNotMatch")
            },
            {
                let mut t = r.request.clone();
                set_query_param(&mut t, "X-Amz-Expires", "604801");
                (t, "AuthorizationQueryParametersError")
            },
            {
                let mut t = r.request.clone();
                t.headers_mut()
                    .insert("x-amz-tagging", "k=v".parse().unwrap());
                (t, "AccessDenied")
            },
            {
                let mut t = r.request.clone();
                t.headers_mut().insert(
                    "authorization",
                    "AWS4-HMAC-SHA256 Credential=x".parse().unwrap(),
                );
                (t, "InvalidArgument")
            },
        ];
        for (i, (request, code)) in cases.into_iter().enumerate() {
            let err = authenticate(&verifier, &request, r.time).unwrap_err();
            assert_eq!(err.code(), code, "case {i}: {err:?}");
        }
    }
}

#[test]
fn clock_skew_is_fifteen_minutes_either_way() {
    let verifier = verifier();
    let mut rng = Rng::new(5);
    let r = random_request(&mut rng, None, false);
    for secs in [0, 1, 899, 900] {
        let d = Duration::from_secs(secs);
        authenticate(&verifier, &r.request, r.time + d).unwrap();
        authenticate(&verifier, &r.request, r.time - d).unwrap();
    }
    for secs in [901, 3600, 86_400 * 400] {
        let d = Duration::from_secs(secs);
        for now in [r.time + d, r.time - d] {
            let err = authenticate(&verifier, &r.request, now).unwrap_err();
            assert_eq!(err.code(), "RequestTimeTooSkewed");
            assert_eq!(err.status(), StatusCode::FORBIDDEN);
            let details = err.details();
            assert_eq!(details[0].0, "RequestTime");
            assert_eq!(
                details[2],
                ("MaxAllowedSkewMilliseconds", "900000".to_owned())
            );
        }
    }
    // A verifier configured with another skew.
    let strict = Verifier::new(
        AuthConfig {
            max_clock_skew: Duration::from_secs(60),
            ..AuthConfig::default()
        },
        credentials(),
    );
    authenticate(&strict, &r.request, r.time + Duration::from_secs(60)).unwrap();
    assert_eq!(
        authenticate(&strict, &r.request, r.time + Duration::from_secs(61))
            .unwrap_err()
            .code(),
        "RequestTimeTooSkewed"
    );
}

#[test]
fn http2_requests_take_host_from_the_authority() {
    let verifier = verifier();
    let mut rng = Rng::new(6);
    for _ in 0..50 {
        let r = random_request(&mut rng, None, false);
        let mut h2 = r.request.clone();
        let host = h2.headers_mut().remove("host").unwrap();
        let target = h2.uri().path_and_query().unwrap().as_str().to_owned();
        *h2.uri_mut() = format!("https://{}{target}", host.to_str().unwrap())
            .parse()
            .unwrap();
        authenticate(&verifier, &h2, r.time).unwrap();
        // Without either, the signed host is missing.
        let mut none = r.request.clone();
        none.headers_mut().remove("host");
        let err = authenticate(&verifier, &none, r.time).unwrap_err();
        assert_eq!(
            err,
            AuthError::MissingSecurityHeader {
                header: "host".to_owned()
            }
        );
        // The Host header wins over the authority when both are present.
        let mut both = r.request.clone();
        *both.uri_mut() = format!("https://elsewhere.example{target}")
            .parse()
            .unwrap();
        authenticate(&verifier, &both, r.time).unwrap();
    }
}

#[test]
fn session_tokens_belong_to_their_keys() {
    let verifier = verifier();
    let mut rng = Rng::new(7);
    let r = random_request(&mut rng, None, true);
    authenticate(&verifier, &r.request, r.time).unwrap();

    // Temporary credentials presented without their session token.
    let mut unsigned = http::Request::get("/bucket/key")
        .header("host", "localhost:9000")
        .body(())
        .unwrap();
    let mut options = SignOptions::new(example_time());
    options.access_key = TEMP_ACCESS_KEY;
    options.secret_key = TEMP_SECRET_KEY;
    sign_with_aws_sigv4(&mut unsigned, Body::Unsigned, &options);
    let err = authenticate(&verifier, &unsigned, example_time()).unwrap_err();
    assert_eq!(
        err,
        AuthError::MissingSecurityHeader {
            header: "x-amz-security-token".to_owned()
        }
    );
    assert_eq!(err.status(), StatusCode::BAD_REQUEST);

    // A wrong token, correctly signed.
    let mut wrong = http::Request::get("/bucket/key")
        .header("host", "localhost:9000")
        .body(())
        .unwrap();
    options.token = Some("another-token");
    sign_with_aws_sigv4(&mut wrong, Body::Unsigned, &options);
    assert_eq!(
        authenticate(&verifier, &wrong, example_time()).unwrap_err(),
        AuthError::InvalidToken
    );

    // Long-term keys must not present one.
    let mut extra = http::Request::get("/bucket/key")
        .header("host", "localhost:9000")
        .body(())
        .unwrap();
    let mut options = SignOptions::new(example_time());
    options.token = Some("some-token");
    sign_with_aws_sigv4(&mut extra, Body::Unsigned, &options);
    assert_eq!(
        authenticate(&verifier, &extra, example_time()).unwrap_err(),
        AuthError::InvalidToken
    );

    // Presigned with a token, and with the wrong one.
    let mut presigned = http::Request::get("/bucket/key")
        .header("host", "localhost:9000")
        .body(())
        .unwrap();
    let mut options = SignOptions::new(example_time());
    options.access_key = TEMP_ACCESS_KEY;
    options.secret_key = TEMP_SECRET_KEY;
    options.token = Some(TEMP_TOKEN);
    options.presign = Some(Duration::from_secs(600));
    sign_with_aws_sigv4(&mut presigned, Body::Unsigned, &options);
    let verified = authenticate(&verifier, &presigned, example_time()).unwrap();
    assert_eq!(verified.security_token.as_deref(), Some(TEMP_TOKEN));
    let mut bad = presigned.clone();
    set_query_param(&mut bad, "X-Amz-Security-Token", "forged");
    assert_eq!(
        authenticate(&verifier, &bad, example_time()).unwrap_err(),
        AuthError::InvalidToken
    );
}

fn signed_get(headers: &[(&str, &str)]) -> http::Request<()> {
    let mut builder = http::Request::get("/bucket/key").header("host", "localhost:9000");
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let mut request = builder.body(()).unwrap();
    sign_with_aws_sigv4(
        &mut request,
        Body::Bytes(b""),
        &SignOptions::new(example_time()),
    );
    request
}

#[test]
fn anonymous_and_unsupported_mechanisms() {
    let verifier = verifier();
    let plain = http::Request::get("/bucket/key?prefix=a")
        .header("host", "localhost")
        .body(())
        .unwrap();
    assert!(matches!(
        verifier.authenticate((&plain).into(), example_time()),
        Ok(Authentication::Anonymous)
    ));
    let v2_off = Verifier::new(
        AuthConfig {
            sigv2: false,
            ..AuthConfig::default()
        },
        credentials(),
    );
    let sigv2 = [
        ("/b/k?AWSAccessKeyId=AKID&Signature=abc&Expires=1", None),
        (
            "/b/k",
            Some("AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg="),
        ),
    ];
    let sigv4a = (
        "/b/k",
        Some("AWS4-ECDSA-P256-SHA256 Credential=AKID/20130524/s3/aws4_request"),
    );
    let request = |target: &str, auth: Option<&str>| {
        let mut builder = http::Request::get(target).header("host", "localhost");
        if let Some(auth) = auth {
            builder = builder.header("authorization", auth);
        }
        builder.body(()).unwrap()
    };
    // SigV4a always, and SigV2 when turned off: an unsupported mechanism.
    for (v, (target, auth)) in [
        (&verifier, sigv4a),
        (&v2_off, sigv2[0]),
        (&v2_off, sigv2[1]),
    ] {
        let err = authenticate(v, &request(target, auth), example_time()).unwrap_err();
        assert_eq!(err.code(), "InvalidRequest", "{target} {auth:?}");
        assert!(err.to_string().contains("Please use AWS4-HMAC-SHA256"));
    }
    // SigV2 by default: verified, so an expired URL and a header without a
    // date are refused for what they are.
    for (target, auth) in sigv2 {
        let err = authenticate(&verifier, &request(target, auth), example_time()).unwrap_err();
        assert_eq!(err.code(), "AccessDenied", "{target} {auth:?}: {err}");
    }
}

#[test]
fn header_errors_map_to_s3_codes() {
    let verifier = verifier();
    let good = signed_get(&[]);
    let with = |f: &dyn Fn(&mut http::HeaderMap)| {
        let mut r = good.clone();
        f(r.headers_mut());
        authenticate(&verifier, &r, example_time()).unwrap_err()
    };
    let auth = good.headers()["authorization"].to_str().unwrap().to_owned();

    let err = with(&|h| {
        h.remove("x-amz-content-sha256");
    });
    assert_eq!(err.code(), "InvalidRequest");
    assert_eq!(
        err.to_string(),
        "Missing required header for this request: x-amz-content-sha256"
    );

    let err = with(&|h| {
        h.insert(
            "x-amz-content-sha256",
            "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD".parse().unwrap(),
        );
    });
    assert_eq!(err.code(), "InvalidArgument");
    assert_eq!(
        err.details()[0],
        ("ArgumentName", "x-amz-content-sha256".to_owned())
    );

    let err = with(&|h| {
        h.insert("x-amz-date", "2013-05-24T00:00:00Z".parse().unwrap());
    });
    assert_eq!(err, AuthError::AccessDenied(AccessDenied::MissingDate));
    assert_eq!(
        err.to_string(),
        "AWS authentication requires a valid Date or x-amz-date header"
    );

    let err = with(&|h| {
        h.insert("x-amz-meta-b", "1".parse().unwrap());
        h.insert("x-amz-meta-a", "1".parse().unwrap());
    });
    assert_eq!(
        err,
        AuthError::AccessDenied(AccessDenied::HeadersNotSigned(vec![
            "x-amz-meta-a".to_owned(),
            "x-amz-meta-b".to_owned()
        ]))
    );
    assert_eq!(
        err.details(),
        vec![("HeadersNotSigned", "x-amz-meta-a, x-amz-meta-b".to_owned())]
    );

    let err = with(&|h| {
        h.append("authorization", auth.parse().unwrap());
    });
    assert_eq!(err.code(), "AuthorizationHeaderMalformed");

    let err = with(&|h| {
        h.insert(
            "authorization",
            HeaderValue::from_bytes(b"AWS4-HMAC-SHA256 \xff").unwrap(),
        );
    });
    assert_eq!(err.code(), "AuthorizationHeaderMalformed");

    let err = with(&|h| {
        h.insert(
            "authorization",
            auth.replace("/s3/", "/ec2/").parse().unwrap(),
        );
    });
    assert_eq!(
        err.to_string(),
        "The authorization header is malformed; incorrect service \"ec2\". This endpoint belongs to \"s3\"."
    );

    let err = with(&|h| {
        h.insert(
            "authorization",
            auth.replace("/us-east-1/", "/us-west-2/").parse().unwrap(),
        );
    });
    assert_eq!(
        err.to_string(),
        "The authorization header is malformed; the region 'us-west-2' is wrong; expecting 'us-east-1'"
    );
    assert_eq!(err.details(), vec![("Region", "us-east-1".to_owned())]);

    let err = with(&|h| {
        h.insert(
            "authorization",
            auth.replace("/20130524/", "/20130523/").parse().unwrap(),
        );
    });
    assert_eq!(err.code(), "AuthorizationHeaderMalformed");
    assert!(
        err.to_string()
            .contains("Invalid credential date \"20130523\""),
        "{err}"
    );

    let err = with(&|h| {
        h.insert(
            "authorization",
            auth.replace("SignedHeaders=host;", "SignedHeaders=")
                .parse()
                .unwrap(),
        );
    });
    assert_eq!(err.code(), "AuthorizationHeaderMalformed");
    assert!(err.to_string().contains("must include host"), "{err}");

    let err = with(&|h| {
        h.insert(
            "authorization",
            auth.replace("x-amz-date", "x-amz-date;x-amz-missing")
                .parse()
                .unwrap(),
        );
    });
    assert_eq!(
        err,
        AuthError::MissingSecurityHeader {
            header: "x-amz-missing".to_owned()
        }
    );

    // A request dated by `Date` alone must sign `date`.
    let mut dated = http::Request::get("/bucket/key")
        .header("host", "localhost:9000")
        .header("date", "Fri, 24 May 2013 00:00:00 GMT")
        .header("x-amz-content-sha256", s3_gateway::auth::EMPTY_SHA256)
        .body(())
        .unwrap();
    let auth_date = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
         SignedHeaders=host;x-amz-content-sha256, Signature=0000000000000000000000000000000000000000000000000000000000000000";
    dated
        .headers_mut()
        .insert("authorization", auth_date.parse().unwrap());
    let err = authenticate(&verifier, &dated, example_time()).unwrap_err();
    assert_eq!(
        err,
        AuthError::AccessDenied(AccessDenied::HeadersNotSigned(vec!["date".to_owned()]))
    );

    // The error carries what S3 shows of a signature mismatch.
    let err = with(&|h| {
        h.insert("x-amz-content-sha256", EMPTY_SHA256_OTHER.parse().unwrap());
    });
    let AuthError::SignatureDoesNotMatch(mismatch) = &err else {
        panic!("{err:?}")
    };
    let SignatureMismatch {
        access_key,
        canonical_request,
        string_to_sign,
        signature_provided,
    } = mismatch.as_ref();
    assert_eq!(access_key, ACCESS_KEY);
    assert!(canonical_request.ends_with(EMPTY_SHA256_OTHER));
    assert!(string_to_sign.starts_with("AWS4-HMAC-SHA256\n20130524T000000Z\n"));
    assert_eq!(signature_provided.len(), 64);
    assert_eq!(err.status(), StatusCode::FORBIDDEN);
    let names: Vec<&str> = err.details().iter().map(|(k, _)| *k).collect();
    assert_eq!(
        names,
        [
            "AWSAccessKeyId",
            "StringToSign",
            "SignatureProvided",
            "CanonicalRequest"
        ]
    );
}

#[test]
fn presigned_query_errors_map_to_s3_codes() {
    let verifier = verifier();
    let mut good = http::Request::get("/bucket/key")
        .header("host", "localhost:9000")
        .body(())
        .unwrap();
    let mut options = SignOptions::new(example_time());
    options.presign = Some(Duration::from_secs(3600));
    sign_with_aws_sigv4(&mut good, Body::Unsigned, &options);
    authenticate(&verifier, &good, example_time()).unwrap();

    let query = good.uri().query().unwrap().to_owned();
    let with_query = |q: &str| {
        let mut r = good.clone();
        *r.uri_mut() = format!("/bucket/key?{q}").parse().unwrap();
        authenticate(&verifier, &r, example_time()).unwrap_err()
    };
    let remove = |name: &str| {
        query
            .split('&')
            .filter(|p| !p.starts_with(&format!("{name}=")))
            .collect::<Vec<_>>()
            .join("&")
    };
    for name in [
        "X-Amz-Algorithm",
        "X-Amz-Credential",
        "X-Amz-Date",
        "X-Amz-Expires",
        "X-Amz-SignedHeaders",
        "X-Amz-Signature",
    ] {
        let err = with_query(&remove(name));
        assert_eq!(err.code(), "AuthorizationQueryParametersError", "{name}");
        assert!(
            err.to_string()
                .starts_with("Query-string authentication version 4 requires"),
            "{name}: {err}"
        );
    }
    let cases = [
        (
            query.replace(
                "X-Amz-Algorithm=AWS4-HMAC-SHA256",
                "X-Amz-Algorithm=AWS4-HMAC-SHA1",
            ),
            "X-Amz-Algorithm only supports",
        ),
        (
            query.replace("X-Amz-Date=20130524T000000Z", "X-Amz-Date=20130524"),
            "ISO8601 Long Format",
        ),
        (
            query.replace("X-Amz-Expires=3600", "X-Amz-Expires=604801"),
            "less than a week",
        ),
        (
            query.replace("X-Amz-Expires=3600", "X-Amz-Expires=-1"),
            "non-negative",
        ),
        (
            query.replace("X-Amz-Expires=3600", "X-Amz-Expires=soon"),
            "should be a number",
        ),
        (
            query.replace("%2Fus-east-1%2F", "%2Feu-west-1%2F"),
            "the region 'eu-west-1' is wrong",
        ),
        (
            query.replace("%2F20130524%2F", "%2F20130525%2F"),
            "Invalid credential date",
        ),
        (
            query.replace("X-Amz-Credential=AKIAIOSFODNN7EXAMPLE", "X-Amz-Credential="),
            "the Credential is mal-formed",
        ),
        (
            query.replace("X-Amz-SignedHeaders=host", "X-Amz-SignedHeaders=range"),
            "must include host",
        ),
        (
            query.replace("X-Amz-SignedHeaders=host", "X-Amz-SignedHeaders=Host"),
            "X-Amz-SignedHeaders",
        ),
        (
            format!("{query}&X-Amz-Date=20130524T000000Z"),
            "is repeated",
        ),
        (
            query.replace("X-Amz-Signature=", "X-Amz-Signature=zz"),
            "64 hexadecimal digits",
        ),
        (format!("{query}&X-Amz-Security-Token=%FF"), "is not text"),
    ];
    for (q, message) in &cases {
        let err = with_query(q);
        assert_eq!(err.code(), "AuthorizationQueryParametersError", "{q}");
        assert!(err.to_string().contains(message), "{q}: {err}");
    }
    // A presigned URL can name a signed payload hash, but no streaming one.
    let err = with_query(&format!(
        "{query}&X-Amz-Content-Sha256=STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    ));
    assert_eq!(err.code(), "InvalidRequest");
    let err = with_query(&format!("{query}&X-Amz-Content-Sha256=bad"));
    assert_eq!(err.code(), "InvalidArgument");
    assert_eq!(
        with_query(&format!("{query}&bad=%zz")),
        AuthError::InvalidUri
    );
}

#[test]
fn presigned_urls_may_sign_a_payload_hash() {
    // Some presigners put X-Amz-Content-Sha256 in the query; it is then the
    // last line of the canonical request and binds the body.
    let verifier = verifier();
    let body = b"presigned body";
    let hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(body))
    };
    let mut request = http::Request::put(format!("/bucket/key?X-Amz-Content-Sha256={hash}"))
        .header("host", "localhost:9000")
        .body(())
        .unwrap();
    // aws-sigv4 presigns with UNSIGNED-PAYLOAD; sign by hand on the
    // crate's primitives with the hash as the payload line instead.
    let mut options = SignOptions::new(example_time());
    options.presign = Some(Duration::from_secs(60));
    sign_with_aws_sigv4(&mut request, Body::Unsigned, &options);
    let head = RequestHead::from(&request);
    let signed_headers = vec!["host".to_owned()];
    let canonical =
        s3_gateway::auth::canonical_request(&head, &signed_headers, &hash, true).unwrap();
    let scope = s3_gateway::auth::CredentialScope::new("20130524", "us-east-1", "s3");
    let to_sign = s3_gateway::auth::string_to_sign("20130524T000000Z", &scope, &canonical);
    let key =
        s3_gateway::auth::SigningKey::derive(&s3_gateway::auth::SecretKey::new(SECRET_KEY), &scope);
    let signature = key.sign(to_sign.as_bytes());
    set_query_param(&mut request, "X-Amz-Signature", &signature.to_hex());
    let verified = authenticate(&verifier, &request, example_time()).unwrap();
    let ContentSha256::Sha256(expected) = verified.content_sha256 else {
        panic!()
    };
    assert_eq!(hex::encode(expected), hash);
    let Payload::Sha256(mut v) = verified.payload else {
        panic!()
    };
    v.update(body);
    v.finish().unwrap();
}

#[test]
fn limits_are_enforced_before_parsing() {
    let config = AuthConfig {
        limits: s3_gateway::auth::AuthLimits {
            max_query_len: 64,
            max_query_params: 3,
            ..Default::default()
        },
        ..AuthConfig::default()
    };
    let verifier = Verifier::new(config, StaticCredentials::new());
    let long = http::Request::get(format!("/b?{}", "a".repeat(65)))
        .body(())
        .unwrap();
    assert_eq!(
        verifier
            .authenticate((&long).into(), example_time())
            .unwrap_err(),
        AuthError::InvalidUri
    );
    let many = http::Request::get("/b?a&b&c&d").body(()).unwrap();
    assert_eq!(
        verifier
            .authenticate((&many).into(), example_time())
            .unwrap_err(),
        AuthError::InvalidUri
    );
    let fine = http::Request::get("/b?a&b&c").body(()).unwrap();
    assert!(
        verifier
            .authenticate((&fine).into(), example_time())
            .is_ok()
    );
    assert_eq!(verifier.config().limits.max_query_params, 3);
}

#[test]
fn request_head_from_parts() {
    let request = signed_get(&[("x-amz-meta-k", "v")]);
    let (parts, ()) = request.into_parts();
    let verifier = verifier();
    let Authentication::Signed(verified) = verifier
        .authenticate(RequestHead::from(&parts), example_time())
        .unwrap()
    else {
        panic!()
    };
    assert!(verified.signed_headers.contains(&"x-amz-meta-k".to_owned()));
}
