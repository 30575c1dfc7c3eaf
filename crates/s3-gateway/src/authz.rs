//! Authorisation: whether the requester may perform the operation the
//! request resolved to ([`crate::router::Op`]), decided by one exhaustive
//! function of it.
//!
//! - The root user (and every key of the gateway's static credentials)
//!   may do anything.
//! - A user is allowed an action when one of its policies (its own and
//!   its enabled groups') or the bucket's policy allows it and none of
//!   them denies it: an explicit deny anywhere wins.
//! - An anonymous request is allowed only what the bucket's policy allows
//!   to every principal (`"Principal": "*"`), as MinIO and S3 have it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use http_body::Body;
use policy::{Decision, Policy};

use crate::error::S3Error;
use crate::iam::Identity;
use crate::router::{Access, Op};
use crate::service::{Ctx, Gateway};

/// Who a request acts as.
#[derive(Debug, Clone)]
pub(crate) enum Requester {
    /// No signature: only bucket policies can allow it.
    Anonymous,
    /// The root user (a key of the gateway's own credentials).
    Owner,
    /// A user of the IAM store, with its policies.
    User(Arc<Identity>),
}

/// The requester of a request signed with `access_key`.
pub(crate) fn requester_of(gw: &Gateway, access_key: &str) -> Result<Requester, S3Error> {
    if gw.iam.is_root(access_key) {
        return Ok(Requester::Owner);
    }
    // The verifier found the key among the enabled users a moment ago; a
    // user removed or disabled since is refused as an unknown key.
    let st = gw.iam.snapshot();
    if let Some(id) = st.identities.get(access_key) {
        return Ok(Requester::User(Arc::clone(id)));
    }
    // Temporary credentials: the verifier checked their token; they may
    // have expired since.
    if let (Some(t), Some(id)) = (st.temps.get(access_key), st.temp_identities.get(access_key)) {
        if t.expired_at(crate::iam::temp::unix_now()) {
            return Err(S3Error::new("ExpiredToken"));
        }
        return Ok(Requester::User(Arc::clone(id)));
    }
    // Service accounts: expired ones are refused as MinIO refuses them.
    if let (Some(s), Some(id)) = (
        st.svcaccts.get(access_key),
        st.svc_identities.get(access_key),
    ) {
        if s.expired_at(crate::iam::temp::unix_now()) {
            return Err(S3Error::new("ExpiredToken"));
        }
        return Ok(Requester::User(Arc::clone(id)));
    }
    Err(S3Error::new("InvalidAccessKeyId"))
}

/// What an identity's own policies say: everything for temporary
/// credentials of the root user, else its policies combined (a deny
/// wins).
fn identity_decision(id: &Identity, r: &policy::Request<'_>) -> Decision {
    if id.root_parent {
        return Decision::Allow;
    }
    let mut decision = Decision::NotApplicable;
    for p in &id.policies {
        decision = decision.combine(p.evaluate(r));
        if decision == Decision::Deny {
            break;
        }
    }
    decision
}

/// `decision` restricted by the identity's session policy, if it has
/// one: allowed only if the session policy allows too; its deny wins.
fn restrict(id: Option<&Identity>, decision: Decision, r: &policy::Request<'_>) -> Decision {
    let Some(sp) = id.and_then(|i| i.session_policy.as_ref()) else {
        return decision;
    };
    match (decision, sp.evaluate(r)) {
        (Decision::Deny, _) | (_, Decision::Deny) => Decision::Deny,
        (Decision::Allow, Decision::Allow) => Decision::Allow,
        _ => Decision::NotApplicable,
    }
}

/// A bucket policy document and its parsed form.
type ParsedPolicy = (Vec<u8>, Arc<Policy>);

/// Parsed bucket policies, by bucket, with the document they were parsed
/// from (a changed document is parsed again).
#[derive(Default)]
pub(crate) struct BucketPolicies {
    parsed: Mutex<HashMap<String, ParsedPolicy>>,
}

/// Buckets whose parsed policy is kept at most.
const MAX_PARSED_POLICIES: usize = 4096;

impl BucketPolicies {
    fn of(&self, bucket: &str, doc: &[u8]) -> Option<Arc<Policy>> {
        let mut m = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((d, p)) = m.get(bucket)
            && d == doc
        {
            return Some(Arc::clone(p));
        }
        let p = Arc::new(Policy::parse_bucket(doc, bucket).ok()?);
        if m.len() >= MAX_PARSED_POLICIES {
            m.clear();
        }
        m.insert(bucket.to_owned(), (doc.to_vec(), Arc::clone(&p)));
        Some(p)
    }
}

/// The bucket's policy, if it has one that parses.
pub(crate) async fn bucket_policy(
    gw: &Gateway,
    bucket: &str,
) -> Result<Option<Arc<Policy>>, S3Error> {
    let doc = gw
        .layer
        .bucket_config(bucket, object::layer::BucketConfig::Policy)
        .await?;
    Ok(doc.and_then(|d| gw.bucket_policies.of(bucket, &d)))
}

/// Decides whether the requester may perform `op`; `AccessDenied` if not.
pub(crate) async fn authorize<B>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    op: Op,
    who: &Requester,
) -> Result<(), S3Error>
where
    B: Body,
{
    if matches!(who, Requester::Owner) {
        return Ok(());
    }
    let bucket = ctx.bucket();
    let key = ctx.key.as_deref();
    // A user not allowed every bucket is shown those it may use (the
    // handler filters); an anonymous requester is never shown any.
    if op == Op::ListBuckets {
        return match who {
            Requester::Anonymous => Err(S3Error::new("AccessDenied")),
            _ => Ok(()),
        };
    }
    match op.access() {
        Access::NotImplemented => match who {
            Requester::Anonymous => Err(S3Error::new("AccessDenied")),
            _ => Ok(()),
        },
        // The form's own signature and policy are checked as it is read;
        // its key is authorised there (`allowed` with the form's key).
        Access::PostForm(_) => Ok(()),
        // Each key is authorised as the handler reads it; an anonymous
        // request is read only where a bucket policy might allow it.
        Access::PerObject(_) => match who {
            Requester::Anonymous if bucket_policy(gw, bucket).await.ok().flatten().is_none() => {
                Err(S3Error::new("AccessDenied"))
            }
            _ => Ok(()),
        },
        Access::Actions(actions) => {
            for a in actions {
                let ok = allowed(gw, ctx, who, a, bucket, key).await?
                    || (op == Op::ListObjectVersions
                        && allowed(gw, ctx, who, "s3:ListBucket", bucket, key).await?);
                if !ok {
                    return Err(S3Error::new("AccessDenied"));
                }
            }
            if op == Op::DeleteObject
                && ctx.q("versionId").is_some()
                && decide(gw, ctx, who, "s3:DeleteObjectVersion", bucket, key).await?
                    == Decision::Deny
            {
                return Err(S3Error::new("AccessDenied"));
            }
            Ok(())
        }
        Access::CopyFrom(action) => {
            if !allowed(gw, ctx, who, action, bucket, key).await? {
                return Err(S3Error::new("AccessDenied"));
            }
            let source = ctx.header("x-amz-copy-source").unwrap_or("");
            let Ok((sb, sk, _)) = crate::handlers::copy_source(source) else {
                // The handler answers the malformed header.
                return Ok(());
            };
            if !allowed(gw, ctx, who, "s3:GetObject", &sb, Some(&sk)).await? {
                return Err(S3Error::new("AccessDenied"));
            }
            Ok(())
        }
    }
}

/// Whether the requester is allowed `action` on `bucket` (and `key`).
pub(crate) async fn allowed<B>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    who: &Requester,
    action: &str,
    bucket: &str,
    key: Option<&str>,
) -> Result<bool, S3Error>
where
    B: Body,
{
    Ok(decide(gw, ctx, who, action, bucket, key).await? == Decision::Allow)
}

/// What the policies that apply say about the requester doing `action`
/// on `bucket` (and `key`): an explicit deny anywhere wins, then an allow.
pub(crate) async fn decide<B>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    who: &Requester,
    action: &str,
    bucket: &str,
    key: Option<&str>,
) -> Result<Decision, S3Error>
where
    B: Body,
{
    let identity = match who {
        Requester::Owner => return Ok(Decision::Allow),
        Requester::Anonymous => None,
        Requester::User(id) => Some(id.as_ref()),
    };
    let bucket_policy = if bucket.is_empty() {
        None
    } else {
        // An anonymous requester learns nothing of buckets it cannot
        // use; a user's request goes on to the handler's answer.
        bucket_policy(gw, bucket).await.unwrap_or_default()
    };
    // The request's values (a dozen strings) are made only when a policy
    // in play reads them; most policies (the built-in ones, plain
    // grants) read none.
    let reads_values = identity.is_some_and(|i| {
        i.policies.iter().any(|p| p.reads_request_values())
            || i.session_policy
                .as_ref()
                .is_some_and(|p| p.reads_request_values())
    }) || bucket_policy
        .as_ref()
        .is_some_and(|p| p.reads_request_values());
    static NO_VALUES: std::sync::LazyLock<HashMap<String, Vec<String>>> =
        std::sync::LazyLock::new(HashMap::new);
    if reads_values && ctx.conditions.get().is_none() {
        let mut values = condition_values(ctx, identity);
        // `s3:ExistingObjectTag/<key>`: the addressed object's tags, read
        // only when a policy in play tests them (it costs a metadata read).
        const TAGS: &str = "s3:existingobjecttag/";
        let reads_tags = identity.is_some_and(|i| {
            i.policies.iter().any(|p| p.uses_condition_key(TAGS))
                || i.session_policy
                    .as_ref()
                    .is_some_and(|p| p.uses_condition_key(TAGS))
        }) || bucket_policy
            .as_ref()
            .is_some_and(|p| p.uses_condition_key(TAGS));
        if reads_tags
            && let Some(k) = key
            && bucket == ctx.bucket()
            && Some(k) == ctx.key.as_deref()
        {
            for (tag, value) in existing_tags(gw, ctx, bucket, k).await {
                values
                    .entry(format!("{TAGS}{}", tag.to_lowercase()))
                    .or_default()
                    .push(value);
            }
        }
        let _ = ctx.conditions.set(values);
    }
    let conditions = if reads_values {
        ctx.conditions
            .get_or_init(|| condition_values(ctx, identity))
    } else {
        &NO_VALUES
    };
    let mut decision = Decision::NotApplicable;
    let request = |as_bucket_policy: bool| policy::Request {
        action,
        bucket,
        object: key,
        account: identity.map_or("", |i| i.name.as_str()),
        groups: identity.map_or(&[][..], |i| i.groups.as_slice()),
        principal_arn: identity.map(|i| i.arn.clone()),
        anonymous: identity.is_none(),
        bucket_policy: as_bucket_policy,
        conditions,
    };
    if let Some(id) = identity {
        decision = identity_decision(id, &request(false));
        if decision == Decision::Deny {
            return Ok(decision);
        }
    }
    if let Some(p) = bucket_policy
        && !identity.is_some_and(|i| i.root_parent)
    {
        decision = decision.combine(p.evaluate(&request(true)));
    }
    // A session policy bounds what temporary credentials may do, whoever
    // else allows it.
    Ok(restrict(identity, decision, &request(false)))
}

/// The tags of the object a request addresses (its `versionId`'s, or the
/// latest), none when it has none or cannot be read (the handler answers
/// for a missing object).
async fn existing_tags<B>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    bucket: &str,
    key: &str,
) -> Vec<(String, String)> {
    let version = match ctx.q("versionId") {
        None => None,
        Some(v) => match object::layer::VersionSel::parse(v) {
            Some(v) => Some(v),
            None => return Vec::new(),
        },
    };
    let Ok(info) = gw.layer.head_object(bucket, key, version).await else {
        return Vec::new();
    };
    info.metadata
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(crate::handlers::TAGGING_KEY))
        .and_then(|(_, v)| crate::handlers::parse_tags(v).ok())
        .unwrap_or_default()
}

/// Whether a user's policies allow the admin API action `action`
/// (`admin:CreateUser`, ...) and none denies it.
pub(crate) fn admin_allowed(id: &Identity, action: &str) -> bool {
    admin_decision(id, action) == Decision::Allow
}

/// What a user's policies say of the admin API action `action`.
pub(crate) fn admin_decision(id: &Identity, action: &str) -> Decision {
    let conditions = HashMap::new();
    let r = policy::Request {
        action,
        bucket: "",
        object: None,
        account: &id.name,
        groups: &id.groups,
        principal_arn: None,
        anonymous: false,
        bucket_policy: false,
        conditions: &conditions,
    };
    restrict(Some(id), identity_decision(id, &r), &r)
}

/// The condition keys' values of a request (lower-case keys), as S3 and
/// MinIO define them.
fn condition_values<B>(ctx: &Ctx<B>, identity: Option<&Identity>) -> HashMap<String, Vec<String>> {
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    let mut put = |k: &str, v: String| m.entry(k.to_owned()).or_default().push(v);
    let conn = ctx.parts.extensions.get::<crate::ConnInfo>();
    if let Some(c) = conn {
        put("aws:sourceip", c.peer.ip().to_canonical().to_string());
    }
    put(
        "aws:securetransport",
        conn.is_some_and(|c| c.tls).to_string(),
    );
    let now = SystemTime::now();
    put("aws:currenttime", crate::iam::store::rfc3339(now));
    put(
        "aws:epochtime",
        now.duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
            .to_string(),
    );
    if let Some(id) = identity {
        put("aws:username", id.name.clone());
        put("aws:userid", id.name.clone());
        put("aws:principaltype", "User".to_owned());
    } else {
        put("aws:principaltype", "Anonymous".to_owned());
    }
    if let Some(v) = ctx.header("referer") {
        put("aws:referer", v.to_owned());
    }
    if let Some(v) = ctx.header("user-agent") {
        put("aws:useragent", v.to_owned());
    }
    for (name, v) in &ctx.parts.headers {
        let n = name.as_str();
        if n.starts_with("x-amz-")
            && n != "x-amz-tagging"
            && let Ok(v) = v.to_str()
        {
            put(&format!("s3:{n}"), v.to_owned());
        }
    }
    for (q, key) in [
        ("prefix", "s3:prefix"),
        ("delimiter", "s3:delimiter"),
        ("max-keys", "s3:max-keys"),
        ("versionId", "s3:versionid"),
    ] {
        if let Some(v) = ctx.q(q) {
            put(key, v.to_owned());
        }
    }
    let (sigver, auth_type) = if ctx
        .header("authorization")
        .is_some_and(|a| a.starts_with("AWS "))
    {
        ("AWS", "REST-HEADER")
    } else if ctx.header("authorization").is_some() {
        ("AWS4-HMAC-SHA256", "REST-HEADER")
    } else if ctx.q("X-Amz-Signature").is_some() {
        ("AWS4-HMAC-SHA256", "REST-QUERY-STRING")
    } else if ctx.q("Signature").is_some() {
        ("AWS", "REST-QUERY-STRING")
    } else {
        ("", "")
    };
    if !sigver.is_empty() {
        put("s3:signatureversion", sigver.to_owned());
        put("s3:authtype", auth_type.to_owned());
    }
    if let Some(tags) = ctx.header("x-amz-tagging") {
        let mut keys = Vec::new();
        for pair in tags.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let dec = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            let k = dec(k);
            put(&format!("s3:requestobjecttag/{}", k.to_lowercase()), dec(v));
            keys.push(k);
        }
        for k in keys {
            put("s3:requestobjecttagkeys", k);
        }
    }
    m
}
