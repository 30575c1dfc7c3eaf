//! Bucket CORS: the `CORSConfiguration` document of PutBucketCors and
//! GetBucketCors, and the evaluation of a request against its rules, as
//! Amazon S3 does both.
//!
//! The document: 1 to 100 `CORSRule`s, each with an optional `ID` (at most
//! 255 characters), at least one `AllowedMethod` (GET, PUT, HEAD, POST or
//! DELETE, case-sensitive) and one `AllowedOrigin`, any `AllowedHeader`s and
//! `ExposeHeader`s, and an optional `MaxAgeSeconds`. An origin or an allowed
//! header holds at most one `*`; an exposed header none. S3 validates the
//! document against a schema, so an unknown element, a repeated `ID` or
//! `MaxAgeSeconds`, or an element inside a value is `MalformedXML`. Values
//! are kept as sent (no trimming, cases kept), as GetBucketCors gives them
//! back. Tessera's own bounds: at most 100 values in each list of a rule
//! (`MalformedXML`), no character XML 1.0 cannot carry (`MalformedXML`),
//! and an exposed header of visible ASCII only (`InvalidRequest`), since it
//! is sent back as a header value.
//!
//! Evaluation: the first rule, in document order, whose `AllowedMethod`s
//! hold the method, one of whose `AllowedOrigin`s matches the `Origin`, and
//! whose `AllowedHeader`s cover every name in `Access-Control-Request-Headers`
//! decides the answer. Origins match case-sensitively, header names without
//! regard to ASCII case; a `*` matches any run of characters, the empty one
//! too, and a pattern is anchored at both ends. A rule without
//! `AllowedHeader` allows no requested header.
//!
//! The headers of a match, as S3 sends them:
//! - `Access-Control-Allow-Origin`: `*` when the origin that matched is the
//!   bare `*`, else the request's origin;
//! - `Access-Control-Allow-Methods`: all the rule's methods, in its order,
//!   joined by `, `, not only the one requested;
//! - `Access-Control-Allow-Headers`: the requested names, lowercased, in the
//!   order requested, joined by `, `, when any was requested;
//! - `Access-Control-Expose-Headers` (joined by `, `, cases kept) and
//!   `Access-Control-Max-Age`, when the rule has them;
//! - `Access-Control-Allow-Credentials: true` unless the origin is the bare
//!   `*`, since browsers refuse credentials with a `*` origin;
//! - `Vary: Origin, Access-Control-Request-Headers,
//!   Access-Control-Request-Method`.
//!
//! S3 answers an actual request exactly as a preflight: when it carries
//! `Access-Control-Request-Method`, that method is matched instead of the
//! request's own, and its `Access-Control-Request-Headers` must be allowed
//! too; without a match it gets no CORS header and no `Vary`, and is served
//! as usual. So [`CorsConfig::actual`] takes those two headers.
//!
//! A preflight (`OPTIONS`) is answered in this order, as
//! [`answer_preflight`] does: no `Origin` is 400 `BadRequest`; a missing
//! bucket is 403 [`bucket_not_found`] (the caller's check); a bucket without
//! configuration is 403 [`not_enabled`], with or without
//! `Access-Control-Request-Method`; a missing or unknown
//! `Access-Control-Request-Method` is 400 `BadRequest`; no matching rule is
//! 403 [`not_allowed`]. The 403s carry S3's `Method` and `ResourceType`
//! elements.
//!
//! Sources: AWS's PutBucketCors, CORSRule and user-guide pages; S3's answers
//! as recorded by LocalStack's AWS-validated tests and described in
//! minio-go's functional tests; the missing-method 400 and the 100-rule
//! message from S3-compatible servers (Scality CloudServer, Huawei OBS).

use http::StatusCode;

use crate::error::S3Error;
use crate::xml::{self, Element, XmlWriter};

/// S3's bound on the rules of a configuration.
const MAX_RULES: usize = 100;
/// Tessera's bound on each list of a rule (origins, methods, allowed and
/// exposed headers); S3 bounds them only by the 64 KiB document.
const MAX_VALUES: usize = 100;
/// S3's bound on a rule's `ID`, in characters.
const MAX_ID_CHARS: usize = 255;
/// `MaxAgeSeconds` is an XML Schema `int`.
const MAX_AGE_LIMIT: u32 = i32::MAX as u32;
/// The methods a rule may allow.
const METHODS: [&str; 5] = ["GET", "PUT", "HEAD", "POST", "DELETE"];
/// S3's `Vary` on every answer a rule matched.
const VARY: &str = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method";
/// S3's message when no rule matches a preflight ("evalution" is S3's
/// spelling).
const NOT_ALLOWED: &str = "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.";

/// Response headers to add, in the order S3 lists them.
pub(crate) type CorsHeaders = Vec<(&'static str, String)>;

/// A bucket's validated CORS configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CorsConfig {
    rules: Vec<CorsRule>,
}

/// One `CORSRule`, its lists in document order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct CorsRule {
    id: Option<String>,
    allowed_headers: Vec<String>,
    allowed_methods: Vec<String>,
    allowed_origins: Vec<String>,
    expose_headers: Vec<String>,
    max_age_seconds: Option<u32>,
}

/// What a preflight names, for the `ResourceType` of S3's 403s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resource {
    /// The bucket itself (no key in the URL).
    Bucket,
    /// A key in the bucket.
    Object,
}

impl Resource {
    fn as_str(self) -> &'static str {
        match self {
            Resource::Bucket => "BUCKET",
            Resource::Object => "OBJECT",
        }
    }
}

fn malformed() -> S3Error {
    S3Error::new("MalformedXML")
}

fn invalid(message: String) -> S3Error {
    S3Error::with_message("InvalidRequest", message)
}

impl CorsConfig {
    /// Parses and validates a PutBucketCors document (bounded in size by
    /// the caller), answering the error S3 gives for the first fault:
    /// structure (`MalformedXML`) before values (`InvalidRequest`).
    pub(crate) fn parse(doc: &[u8]) -> Result<CorsConfig, S3Error> {
        let root = xml::parse(doc)?;
        if root.name != "CORSConfiguration" || !root.text.trim().is_empty() {
            return Err(malformed());
        }
        if root.children.is_empty() || root.children.iter().any(|c| c.name != "CORSRule") {
            return Err(malformed());
        }
        if root.children.len() > MAX_RULES {
            return Err(invalid(
                "The number of CORS rules should not exceed allowed limit of 100 rules.".to_owned(),
            ));
        }
        let rules = root
            .children
            .iter()
            .map(parse_rule)
            .collect::<Result<Vec<_>, _>>()?;
        for rule in &rules {
            rule.validate()?;
        }
        Ok(CorsConfig { rules })
    }

    /// The GetBucketCors document: declaration, S3's namespace, the rules
    /// in order, each rule's elements in S3's order.
    pub(crate) fn to_xml(&self) -> String {
        let mut w = XmlWriter::new();
        w.root("CORSConfiguration");
        for r in &self.rules {
            w.open("CORSRule").opt("ID", r.id.as_deref());
            for (name, values) in [
                ("AllowedHeader", &r.allowed_headers),
                ("AllowedMethod", &r.allowed_methods),
                ("AllowedOrigin", &r.allowed_origins),
                ("ExposeHeader", &r.expose_headers),
            ] {
                for v in values {
                    w.elem(name, v);
                }
            }
            if let Some(age) = r.max_age_seconds {
                w.elem("MaxAgeSeconds", &age.to_string());
            }
            w.close("CORSRule");
        }
        w.close("CORSConfiguration");
        w.finish()
    }

    /// The headers of a 200 answer to a preflight from `origin` for
    /// `method` (the `Access-Control-Request-Method`), with the request's
    /// `Access-Control-Request-Headers`; `None` when no rule allows it, and
    /// the answer is [`not_allowed`].
    pub(crate) fn preflight(
        &self,
        origin: &str,
        method: &str,
        request_headers: Option<&str>,
    ) -> Option<CorsHeaders> {
        let requested = requested_headers(request_headers);
        self.rules.iter().find_map(|rule| {
            let wildcard = rule.matches(origin, method, &requested)?;
            Some(rule.headers(origin, wildcard, &requested))
        })
    }

    /// The headers to add to an actual (not `OPTIONS`) request that carries
    /// `Origin`; `None` when no rule matches, and the request is served
    /// without CORS headers. `request_method` and `request_headers` are the
    /// request's `Access-Control-Request-Method` and
    /// `Access-Control-Request-Headers`, which S3 evaluates when present.
    pub(crate) fn actual(
        &self,
        origin: &str,
        method: &str,
        request_method: Option<&str>,
        request_headers: Option<&str>,
    ) -> Option<CorsHeaders> {
        self.preflight(origin, request_method.unwrap_or(method), request_headers)
    }
}

/// Reads one `CORSRule`'s structure; its values are checked afterwards.
fn parse_rule(el: &Element) -> Result<CorsRule, S3Error> {
    if !el.text.trim().is_empty() {
        return Err(malformed());
    }
    let mut rule = CorsRule::default();
    for c in &el.children {
        if !c.children.is_empty() || !xml_representable(&c.text) {
            return Err(malformed());
        }
        let text = c.text.clone();
        match c.name.as_str() {
            "ID" if rule.id.is_none() => rule.id = Some(text),
            "AllowedHeader" => rule.allowed_headers.push(text),
            "AllowedMethod" => rule.allowed_methods.push(text),
            "AllowedOrigin" => rule.allowed_origins.push(text),
            "ExposeHeader" => rule.expose_headers.push(text),
            "MaxAgeSeconds" if rule.max_age_seconds.is_none() => {
                rule.max_age_seconds = Some(parse_max_age(&text)?);
            }
            _ => return Err(malformed()),
        }
    }
    let r = &rule;
    let lists = [
        &r.allowed_headers,
        &r.allowed_methods,
        &r.allowed_origins,
        &r.expose_headers,
    ];
    let long_id =
        r.id.as_ref()
            .is_some_and(|id| id.chars().count() > MAX_ID_CHARS);
    if r.allowed_methods.is_empty()
        || r.allowed_origins.is_empty()
        || lists.iter().any(|l| l.len() > MAX_VALUES)
        || long_id
    {
        return Err(malformed());
    }
    Ok(rule)
}

/// A non-negative XML Schema `int`; surrounding whitespace is allowed, as
/// the schema's type collapses it.
fn parse_max_age(text: &str) -> Result<u32, S3Error> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed());
    }
    match t.parse::<u32>() {
        Ok(v) if v <= MAX_AGE_LIMIT => Ok(v),
        _ => Err(malformed()),
    }
}

/// Whether XML 1.0 can carry `s`: a character reference to anything else
/// makes a document S3 refuses as not well-formed, and `to_xml` could not
/// give it back.
fn xml_representable(s: &str) -> bool {
    s.chars().all(|c| {
        !matches!(c, '\u{0}'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}')
    })
}

fn many_wildcards(s: &str) -> bool {
    s.bytes().filter(|&b| b == b'*').count() > 1
}

impl CorsRule {
    /// S3's checks of the values, in its order and with its messages.
    fn validate(&self) -> Result<(), S3Error> {
        if let Some(m) = self
            .allowed_methods
            .iter()
            .find(|m| !METHODS.contains(&m.as_str()))
        {
            return Err(invalid(format!(
                "Found unsupported HTTP method in CORS config. Unsupported method is {m}"
            )));
        }
        if let Some(o) = self.allowed_origins.iter().find(|o| many_wildcards(o)) {
            return Err(invalid(format!(
                "AllowedOrigin \"{o}\" can not have more than one wildcard."
            )));
        }
        if let Some(h) = self.allowed_headers.iter().find(|h| many_wildcards(h)) {
            return Err(invalid(format!(
                "AllowedHeader \"{h}\" can not have more than one wildcard."
            )));
        }
        if let Some(h) = self.expose_headers.iter().find(|h| h.contains('*')) {
            return Err(invalid(format!(
                "ExposeHeader \"{h}\" contains wildcard. We currently do not support wildcard for ExposeHeader."
            )));
        }
        // An exposed header is sent back as a header value: only visible
        // ASCII and spaces can be one.
        if let Some(h) = self
            .expose_headers
            .iter()
            .find(|h| !h.bytes().all(|b| (0x20..0x7f).contains(&b)))
        {
            return Err(invalid(format!(
                "ExposeHeader \"{h}\" contains invalid character."
            )));
        }
        Ok(())
    }

    /// `Some(wildcard)` when the rule allows the request, `wildcard` telling
    /// whether the origin that matched first is the bare `*`.
    fn matches(&self, origin: &str, method: &str, requested: &[String]) -> Option<bool> {
        if !self.allowed_methods.iter().any(|m| m == method) {
            return None;
        }
        let allowed = self
            .allowed_origins
            .iter()
            .find(|o| wildcard_match(o, origin, false))?;
        let headers_ok = requested.iter().all(|h| {
            self.allowed_headers
                .iter()
                .any(|a| wildcard_match(a, h, true))
        });
        headers_ok.then_some(allowed == "*")
    }

    fn headers(&self, origin: &str, wildcard: bool, requested: &[String]) -> CorsHeaders {
        let mut out = Vec::with_capacity(7);
        let allow_origin = if wildcard { "*" } else { origin };
        out.push(("Access-Control-Allow-Origin", allow_origin.to_owned()));
        out.push((
            "Access-Control-Allow-Methods",
            self.allowed_methods.join(", "),
        ));
        if !requested.is_empty() {
            out.push(("Access-Control-Allow-Headers", requested.join(", ")));
        }
        if !self.expose_headers.is_empty() {
            out.push((
                "Access-Control-Expose-Headers",
                self.expose_headers.join(", "),
            ));
        }
        if let Some(age) = self.max_age_seconds {
            out.push(("Access-Control-Max-Age", age.to_string()));
        }
        if !wildcard {
            out.push(("Access-Control-Allow-Credentials", "true".to_owned()));
        }
        out.push(("Vary", VARY.to_owned()));
        out
    }
}

/// The names of `Access-Control-Request-Headers`: split at commas, trimmed
/// of HTTP whitespace, empty items dropped (RFC 9110 §5.6.1), lowercased
/// as S3 echoes them.
fn requested_headers(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or("")
        .split(',')
        .map(|h| h.trim_matches([' ', '\t']))
        .filter(|h| !h.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Whether `value` matches `pattern`, whose first `*` stands for any run of
/// bytes (the empty one too); validated patterns have no other `*`.
/// `fold` compares ASCII letters without regard to case.
fn wildcard_match(pattern: &str, value: &str, fold: bool) -> bool {
    let eq = |a: &[u8], b: &[u8]| {
        if fold {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    let (p, v) = (pattern.as_bytes(), value.as_bytes());
    let Some(star) = p.iter().position(|&b| b == b'*') else {
        return eq(p, v);
    };
    let (prefix, suffix) = (&p[..star], &p[star + 1..]);
    v.len() >= prefix.len() + suffix.len()
        && eq(&v[..prefix.len()], prefix)
        && eq(&v[v.len() - suffix.len()..], suffix)
}

/// 400 `BadRequest` for a preflight without `Origin`.
pub(crate) fn insufficient_information() -> S3Error {
    S3Error::with_message(
        "BadRequest",
        "Insufficient information. Origin request header needed.",
    )
}

/// 400 `BadRequest` for a preflight to a configured bucket whose
/// `Access-Control-Request-Method` is missing (written `null`) or is none
/// of the five methods.
pub(crate) fn invalid_request_method(request_method: Option<&str>) -> S3Error {
    S3Error::with_message(
        "BadRequest",
        format!(
            "Invalid Access-Control-Request-Method: {}",
            request_method.unwrap_or("null")
        ),
    )
}

/// S3's 403 `AccessForbidden` with its `Method` (the requested method, or
/// `OPTIONS` when none was) and `ResourceType`.
fn forbidden(message: &str, request_method: Option<&str>, resource: Resource) -> S3Error {
    let mut e = S3Error::with_message("AccessForbidden", message)
        .detail("Method", request_method.unwrap_or("OPTIONS"))
        .detail("ResourceType", resource.as_str());
    e.status = StatusCode::FORBIDDEN;
    e
}

/// 403 for a preflight to a bucket without CORS configuration; S3 names
/// the bucket as the resource even when the URL names a key.
pub(crate) fn not_enabled(request_method: Option<&str>) -> S3Error {
    forbidden(
        "CORSResponse: CORS is not enabled for this bucket.",
        request_method,
        Resource::Bucket,
    )
}

/// 403 for a preflight no rule allows.
pub(crate) fn not_allowed(request_method: &str, resource: Resource) -> S3Error {
    forbidden(NOT_ALLOWED, Some(request_method), resource)
}

/// 403 for a preflight (with `Origin`) to a bucket that does not exist.
pub(crate) fn bucket_not_found(request_method: Option<&str>) -> S3Error {
    forbidden(
        "CORSResponse: Bucket not found",
        request_method,
        Resource::Bucket,
    )
}

/// Answers a preflight to an existing bucket: its configuration (if any),
/// the request's `Origin`, `Access-Control-Request-Method` and
/// `Access-Control-Request-Headers`. An empty `Origin` counts as none.
pub(crate) fn answer_preflight(
    config: Option<&CorsConfig>,
    origin: Option<&str>,
    request_method: Option<&str>,
    request_headers: Option<&str>,
    resource: Resource,
) -> Result<CorsHeaders, S3Error> {
    let origin = origin
        .filter(|o| !o.is_empty())
        .ok_or_else(insufficient_information)?;
    let config = config.ok_or_else(|| not_enabled(request_method))?;
    let method = request_method
        .filter(|m| METHODS.contains(m))
        .ok_or_else(|| invalid_request_method(request_method))?;
    config
        .preflight(origin, method, request_headers)
        .ok_or_else(|| not_allowed(method, resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(rules: &str) -> String {
        format!(
            "<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{rules}</CORSConfiguration>"
        )
    }

    fn cfg(rules: &str) -> CorsConfig {
        CorsConfig::parse(doc(rules).as_bytes()).unwrap()
    }

    fn err(rules: &str) -> (&'static str, String) {
        let e = CorsConfig::parse(doc(rules).as_bytes()).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        (e.code, e.message)
    }

    const MIN: &str = "<AllowedMethod>GET</AllowedMethod><AllowedOrigin>*</AllowedOrigin>";

    fn h(pairs: &[(&'static str, &str)]) -> CorsHeaders {
        pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
    }

    #[test]
    fn parses_a_full_document() {
        let c = cfg(
            "<CORSRule>
              <ID>r1</ID>
              <AllowedOrigin>http://www.example1.com</AllowedOrigin>
              <AllowedMethod>PUT</AllowedMethod><AllowedMethod>DELETE</AllowedMethod>
              <AllowedHeader>*</AllowedHeader>
              <MaxAgeSeconds> 3000 </MaxAgeSeconds>
              <ExposeHeader>x-amz-server-side-encryption</ExposeHeader>
            </CORSRule>
            <CORSRule><AllowedOrigin></AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>",
        );
        assert_eq!(
            c.rules,
            vec![
                CorsRule {
                    id: Some("r1".into()),
                    allowed_headers: vec!["*".into()],
                    allowed_methods: vec!["PUT".into(), "DELETE".into()],
                    allowed_origins: vec!["http://www.example1.com".into()],
                    expose_headers: vec!["x-amz-server-side-encryption".into()],
                    max_age_seconds: Some(3000),
                },
                CorsRule {
                    allowed_methods: vec!["GET".into()],
                    allowed_origins: vec![String::new()],
                    ..CorsRule::default()
                },
            ]
        );
        // Without the namespace too, as S3's own samples write it.
        let bare = format!("<CORSConfiguration><CORSRule>{MIN}</CORSRule></CORSConfiguration>");
        assert_eq!(CorsConfig::parse(bare.as_bytes()).unwrap().rules.len(), 1);
    }

    #[test]
    fn refuses_malformed_documents() {
        let rule = format!("<CORSRule>{MIN}</CORSRule>");
        for bad in [
            "<CORSConfiguration>".to_owned(),
            format!("<Other>{rule}</Other>"),
            doc(""),
            doc(&format!("{rule}<Extra/>")),
            doc(&format!("text{rule}")),
            doc("<CORSRule/>"),
            doc("<CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"),
            doc("<CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule>"),
            doc(&format!("<CORSRule>{MIN}<Bogus>1</Bogus></CORSRule>")),
            doc(&format!("<CORSRule>{MIN}<ID>a</ID><ID>b</ID></CORSRule>")),
            doc(&format!(
                "<CORSRule>{MIN}<MaxAgeSeconds>1</MaxAgeSeconds><MaxAgeSeconds>2</MaxAgeSeconds></CORSRule>"
            )),
            doc(&format!(
                "<CORSRule>{MIN}<ID>{}</ID></CORSRule>",
                "é".repeat(256)
            )),
            doc(
                "<CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin><x/></AllowedOrigin></CORSRule>",
            ),
            doc(&format!(
                "<CORSRule>{MIN}<AllowedOrigin>a&#x1;b</AllowedOrigin></CORSRule>"
            )),
            doc(&format!(
                "<CORSRule>{MIN}{}</CORSRule>",
                "<AllowedOrigin>o</AllowedOrigin>".repeat(100)
            )),
        ] {
            let e = CorsConfig::parse(bad.as_bytes()).unwrap_err();
            assert_eq!(e.code, "MalformedXML", "{bad}");
            assert_eq!(e.status, StatusCode::BAD_REQUEST);
        }
        for age in ["-1", "", "1.5", "+3", "2147483648", "99999999999", "0x10"] {
            let r = format!("<CORSRule>{MIN}<MaxAgeSeconds>{age}</MaxAgeSeconds></CORSRule>");
            assert_eq!(err(&r).0, "MalformedXML", "{age}");
        }
    }

    #[test]
    fn bounds() {
        let id = "é".repeat(255);
        let c = cfg(&format!(
            "<CORSRule>{MIN}<ID>{id}</ID><MaxAgeSeconds>2147483647</MaxAgeSeconds></CORSRule>"
        ));
        assert_eq!(c.rules[0].id.as_deref(), Some(id.as_str()));
        assert_eq!(c.rules[0].max_age_seconds, Some(2_147_483_647));
        let origins = "<AllowedOrigin>o</AllowedOrigin>".repeat(99);
        assert_eq!(
            cfg(&format!("<CORSRule>{MIN}{origins}</CORSRule>")).rules[0]
                .allowed_origins
                .len(),
            100
        );

        let hundred = format!("<CORSRule>{MIN}</CORSRule>").repeat(100);
        assert_eq!(cfg(&hundred).rules.len(), 100);
        let many = format!("<CORSRule>{MIN}</CORSRule>").repeat(101);
        assert_eq!(
            err(&many),
            (
                "InvalidRequest",
                "The number of CORS rules should not exceed allowed limit of 100 rules.".to_owned()
            )
        );
    }

    #[test]
    fn refuses_invalid_values_with_s3_messages() {
        let unsupported = "Found unsupported HTTP method in CORS config. Unsupported method is";
        let mut cases: Vec<(String, String)> = ["MYMETHOD", "get", "OPTIONS", ""]
            .iter()
            .map(|m| {
                let rule = format!("{MIN}<AllowedMethod>{m}</AllowedMethod>");
                (rule, format!("{unsupported} {m}"))
            })
            .collect();
        for (extra, message) in [
            (
                "<AllowedOrigin>*example*.com</AllowedOrigin>",
                "AllowedOrigin \"*example*.com\" can not have more than one wildcard.",
            ),
            (
                "<AllowedHeader>x-amz-*</AllowedHeader><AllowedHeader>**</AllowedHeader>",
                "AllowedHeader \"**\" can not have more than one wildcard.",
            ),
            (
                "<ExposeHeader>x-amz-meta-*</ExposeHeader>",
                "ExposeHeader \"x-amz-meta-*\" contains wildcard. We currently do not support wildcard for ExposeHeader.",
            ),
            (
                "<ExposeHeader>a\tb</ExposeHeader>",
                "ExposeHeader \"a\tb\" contains invalid character.",
            ),
        ] {
            cases.push((format!("{MIN}{extra}"), message.to_owned()));
        }
        for (rule, message) in cases {
            let got = err(&format!("<CORSRule>{rule}</CORSRule>"));
            assert_eq!(got, ("InvalidRequest", message), "{rule}");
        }
        // A structural fault in a later rule wins over a value fault.
        let mixed = "<CORSRule><AllowedMethod>BAD</AllowedMethod><AllowedOrigin>*</AllowedOrigin></CORSRule><CORSRule/>";
        assert_eq!(err(mixed).0, "MalformedXML");
    }

    #[test]
    fn writes_the_get_document() {
        let c = cfg(
            "<CORSRule><MaxAgeSeconds>10</MaxAgeSeconds><ExposeHeader>ETag</ExposeHeader>\
            <AllowedOrigin>http://a&amp;b</AllowedOrigin><AllowedMethod>GET</AllowedMethod>\
            <AllowedHeader>x-*</AllowedHeader><ID>one</ID></CORSRule>\
            <CORSRule><AllowedMethod>PUT</AllowedMethod><AllowedOrigin>*</AllowedOrigin></CORSRule>",
        );
        assert_eq!(
            c.to_xml(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <CORSRule><ID>one</ID><AllowedHeader>x-*</AllowedHeader><AllowedMethod>GET</AllowedMethod>\
             <AllowedOrigin>http://a&amp;b</AllowedOrigin><ExposeHeader>ETag</ExposeHeader>\
             <MaxAgeSeconds>10</MaxAgeSeconds></CORSRule>\
             <CORSRule><AllowedMethod>PUT</AllowedMethod><AllowedOrigin>*</AllowedOrigin></CORSRule>\
             </CORSConfiguration>"
        );
    }

    #[test]
    fn round_trips() {
        let c = cfg("<CORSRule><ID>ünï &lt;&quot;x&apos;&gt;</ID>\
            <AllowedHeader>X-Amz-*</AllowedHeader><AllowedHeader>content-type</AllowedHeader>\
            <AllowedMethod>GET</AllowedMethod><AllowedMethod>HEAD</AllowedMethod>\
            <AllowedOrigin>http://*.example.com</AllowedOrigin><AllowedOrigin>a\tb\nc</AllowedOrigin>\
            <AllowedOrigin></AllowedOrigin><ExposeHeader>ETag</ExposeHeader>\
            <MaxAgeSeconds>0</MaxAgeSeconds></CORSRule>\
            <CORSRule><AllowedMethod>POST</AllowedMethod><AllowedOrigin>*</AllowedOrigin></CORSRule>");
        let again = CorsConfig::parse(c.to_xml().as_bytes()).unwrap();
        assert_eq!(again, c);
        assert_eq!(again.rules[0].allowed_origins[1], "a\tb\nc");
        assert_eq!(again.rules[0].max_age_seconds, Some(0));
        assert!(!xml_representable("a\u{1}b") && xml_representable("a\tb\r\n"));
    }

    #[test]
    fn wildcards() {
        let m = |p: &str, v: &str| wildcard_match(p, v, false);
        assert!(m("*", "anything at all"));
        assert!(m("*", ""));
        assert!(m("http://*.example.com", "http://www.example.com"));
        assert!(m("http://*.example.com", "http://a.b.example.com"));
        assert!(!m("http://*.example.com", "http://example.com"));
        assert!(!m("http://*.example.com", "https://www.example.com"));
        assert!(!m("http://*.example.com", "http://www.example.com/"));
        assert!(m("*suffix", "foo.suffix"));
        assert!(m("*suffix", "suffix"));
        assert!(!m("*suffix", "foo.suffix.get"));
        assert!(m("prefix*", "prefix"));
        assert!(m("prefix*", "prefix.suffix"));
        assert!(!m("prefix*", "bla.prefix"));
        assert!(m("start*end", "startend"));
        assert!(m("start*end", "start12end"));
        assert!(!m("start*end", "0start12end"));
        assert!(!m("ab*ba", "aba"), "prefix and suffix may not overlap");
        assert!(m("http://exact.com", "http://exact.com"));
        assert!(!m("http://exact.com", "http://exact.com:80"));
        assert!(!m("http://UPPER.com", "http://upper.com"));
        assert!(!m("http://*.Example.com", "http://www.example.com"));
        assert!(!m("X-AMZ-*", "x-amz-meta-a"));
        assert!(wildcard_match("X-AMZ-*", "x-amz-meta-a", true));
        assert!(wildcard_match(
            "x-AMZ-server-SIDE-encryption",
            "x-amz-server-side-encryption",
            true
        ));
        assert!(!wildcard_match("x-abc-*", "x-abd-1", true));
        // Multi-byte characters are compared as bytes, without panics.
        assert!(m("é*ü", "éaü"));
        assert!(!m("éé*", "é"));
    }

    #[test]
    fn preflight_answers_like_s3() {
        let c = cfg(
            "<CORSRule><AllowedOrigin>https://localhost:4200</AllowedOrigin>\
            <AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod>\
            <MaxAgeSeconds>3000</MaxAgeSeconds><AllowedHeader>*</AllowedHeader></CORSRule>",
        );
        let vary = (
            "Vary",
            "Origin, Access-Control-Request-Headers, Access-Control-Request-Method",
        );
        assert_eq!(
            c.preflight("https://localhost:4200", "PUT", None),
            Some(h(&[
                ("Access-Control-Allow-Origin", "https://localhost:4200"),
                ("Access-Control-Allow-Methods", "GET, PUT"),
                ("Access-Control-Max-Age", "3000"),
                ("Access-Control-Allow-Credentials", "true"),
                vary,
            ]))
        );
        assert_eq!(
            c.preflight(
                "https://localhost:4200",
                "GET",
                Some("x-amz-request-payer, X-Amz-Expected-Bucket-Owner")
            ),
            Some(h(&[
                ("Access-Control-Allow-Origin", "https://localhost:4200"),
                ("Access-Control-Allow-Methods", "GET, PUT"),
                (
                    "Access-Control-Allow-Headers",
                    "x-amz-request-payer, x-amz-expected-bucket-owner"
                ),
                ("Access-Control-Max-Age", "3000"),
                ("Access-Control-Allow-Credentials", "true"),
                vary,
            ]))
        );
        assert_eq!(c.preflight("http://localhost:4200", "PUT", None), None);
        assert_eq!(c.preflight("https://localhost:4200", "DELETE", None), None);
        assert_eq!(c.preflight("https://localhost:4200", "get", None), None);
        // An empty list requests no header.
        let empty = c
            .preflight("https://localhost:4200", "GET", Some(" , "))
            .unwrap();
        assert!(
            empty
                .iter()
                .all(|(k, _)| *k != "Access-Control-Allow-Headers")
        );

        // The bare `*`: no credentials; exposed headers are listed.
        let star = cfg(
            "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>\
            <ExposeHeader>x-amz-id-2</ExposeHeader><ExposeHeader>X-Amz-Request-Id</ExposeHeader></CORSRule>",
        );
        assert_eq!(
            star.preflight("localhost:4566", "GET", None),
            Some(h(&[
                ("Access-Control-Allow-Origin", "*"),
                ("Access-Control-Allow-Methods", "GET"),
                (
                    "Access-Control-Expose-Headers",
                    "x-amz-id-2, X-Amz-Request-Id"
                ),
                vary,
            ]))
        );
        // A rule without AllowedHeader allows no requested header.
        assert_eq!(
            star.preflight("localhost:4566", "GET", Some("x-amz-request-payer")),
            None
        );
    }

    #[test]
    fn headers_are_matched_without_case_and_all_must_be_allowed() {
        let c = cfg(
            "<CORSRule><AllowedOrigin>https://*</AllowedOrigin><AllowedMethod>DELETE</AllowedMethod>\
            <AllowedHeader>x-abc-*</AllowedHeader><AllowedHeader>X-DEF-*</AllowedHeader>\
            <AllowedHeader>x-AMZ-server-SIDE-encryption</AllowedHeader></CORSRule>",
        );
        let allowed = c
            .preflight(
                "https://www.secureexample.com",
                "DELETE",
                Some("x-abc-1,X-ABC-Second,\tx-def-1 ,x-amz-server-side-encryption"),
            )
            .unwrap();
        assert_eq!(
            allowed[2],
            (
                "Access-Control-Allow-Headers",
                "x-abc-1, x-abc-second, x-def-1, x-amz-server-side-encryption".to_owned()
            )
        );
        assert_eq!(
            allowed[0],
            (
                "Access-Control-Allow-Origin",
                "https://www.secureexample.com".to_owned()
            )
        );
        assert_eq!(
            c.preflight(
                "https://www.secureexample.com",
                "DELETE",
                Some("x-abc-1,x-does-not-match")
            ),
            None
        );
        assert_eq!(
            c.preflight("http://www.notsecure.com", "DELETE", None),
            None
        );
    }

    #[test]
    fn the_first_matching_rule_wins() {
        let c = cfg(
            "<CORSRule><AllowedOrigin>http://www.example1.com</AllowedOrigin>\
              <AllowedMethod>PUT</AllowedMethod><MaxAgeSeconds>1</MaxAgeSeconds></CORSRule>\
            <CORSRule><AllowedOrigin>http://*.com</AllowedOrigin><AllowedMethod>PUT</AllowedMethod>\
              <AllowedMethod>GET</AllowedMethod><MaxAgeSeconds>2</MaxAgeSeconds></CORSRule>\
            <CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>\
              <MaxAgeSeconds>3</MaxAgeSeconds></CORSRule>",
        );
        let age = |origin: &str, method: &str| {
            c.preflight(origin, method, None).map(|hs| {
                hs.into_iter()
                    .find(|(k, _)| *k == "Access-Control-Max-Age")
                    .map(|(_, v)| v)
            })
        };
        assert_eq!(
            age("http://www.example1.com", "PUT"),
            Some(Some("1".into()))
        );
        assert_eq!(
            age("http://www.example1.com", "GET"),
            Some(Some("2".into()))
        );
        assert_eq!(age("http://other.com", "PUT"), Some(Some("2".into())));
        assert_eq!(age("http://other.org", "GET"), Some(Some("3".into())));
        assert_eq!(age("http://other.org", "PUT"), None);
        // Within a rule, the first origin that matches decides `*`.
        let both = cfg("<CORSRule><AllowedOrigin>http://a.com</AllowedOrigin>\
            <AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>");
        assert_eq!(
            both.preflight("http://a.com", "GET", None).unwrap()[0].1,
            "http://a.com"
        );
        assert_eq!(
            both.preflight("http://b.com", "GET", None).unwrap()[0].1,
            "*"
        );
    }

    #[test]
    fn actual_requests_evaluate_the_preflight_headers_when_present() {
        let c = cfg(
            "<CORSRule><AllowedOrigin>https://localhost:4200</AllowedOrigin>\
            <AllowedMethod>GET</AllowedMethod><AllowedHeader>x-amz-expected-bucket-owner</AllowedHeader>\
            </CORSRule>",
        );
        let o = "https://localhost:4200";
        assert_eq!(
            c.actual(o, "GET", None, None),
            Some(h(&[
                ("Access-Control-Allow-Origin", o),
                ("Access-Control-Allow-Methods", "GET"),
                ("Access-Control-Allow-Credentials", "true"),
                ("Vary", VARY),
            ]))
        );
        assert_eq!(c.actual(o, "PUT", None, None), None);
        assert_eq!(c.actual(o, "GET", Some("PUT"), None), None);
        assert!(c.actual(o, "PUT", Some("GET"), None).is_some());
        assert_eq!(c.actual(o, "GET", None, Some("x-amz-request-payer")), None);
        assert_eq!(c.actual("https://localhost:4201", "GET", None, None), None);
    }

    type Summary = (&'static str, u16, String, String);

    fn summary(e: S3Error) -> Summary {
        let details: Vec<String> = e.details.iter().map(|(k, v)| format!("{k}={v}")).collect();
        (e.code, e.status.as_u16(), e.message, details.join(" "))
    }

    #[test]
    fn preflight_errors_in_s3_order() {
        let c = cfg(&format!("<CORSRule>{MIN}</CORSRule>"));
        let fail = |config: Option<&CorsConfig>, origin, method, headers, resource| {
            summary(answer_preflight(config, origin, method, headers, resource).unwrap_err())
        };
        let bad = |m: &str| ("BadRequest", 400, m.to_owned(), String::new());
        let forbidden = |m: &str, method: &str, resource: &str| {
            let details = format!("Method={method} ResourceType={resource}");
            ("AccessForbidden", 403, m.to_owned(), details)
        };
        let (obj, bucket) = (Resource::Object, Resource::Bucket);

        let insufficient = bad("Insufficient information. Origin request header needed.");
        assert_eq!(fail(Some(&c), None, Some("GET"), None, obj), insufficient);
        assert_eq!(fail(None, Some(""), None, None, obj), insufficient);

        let off = "CORSResponse: CORS is not enabled for this bucket.";
        let want = forbidden(off, "PUT", "BUCKET");
        assert_eq!(fail(None, Some("o"), Some("PUT"), None, obj), want);
        let want = forbidden(off, "OPTIONS", "BUCKET");
        assert_eq!(fail(None, Some("o"), None, None, obj), want);

        let want = bad("Invalid Access-Control-Request-Method: null");
        assert_eq!(fail(Some(&c), Some("o"), None, None, obj), want);
        let want = bad("Invalid Access-Control-Request-Method: PATCH");
        assert_eq!(fail(Some(&c), Some("o"), Some("PATCH"), None, obj), want);

        let refused = "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.";
        let want = forbidden(refused, "PUT", "OBJECT");
        assert_eq!(fail(Some(&c), Some("o"), Some("PUT"), None, obj), want);
        let want = forbidden(refused, "GET", "BUCKET");
        assert_eq!(
            fail(Some(&c), Some("o"), Some("GET"), Some("x"), bucket),
            want
        );

        let ok = answer_preflight(Some(&c), Some("o"), Some("GET"), None, obj).unwrap();
        assert_eq!(ok[0], ("Access-Control-Allow-Origin", "*".to_owned()));

        let want = forbidden("CORSResponse: Bucket not found", "OPTIONS", "BUCKET");
        assert_eq!(summary(bucket_not_found(None)), want);
    }
}
