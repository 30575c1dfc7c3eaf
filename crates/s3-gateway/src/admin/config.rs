//! MinIO's configuration calls as `mc admin config set|get|reset` sends
//! them (madmin-go's paths; the text of sub-system lines, `scanner
//! speed=fast`, sealed with the caller's secret key both ways), for the
//! one sub-system whose settings mean something here:
//!
//! - `PUT /minio/admin/v3/set-config-kv`: `scanner speed=fastest|fast|
//!   default|slow|slowest` sets the scanner's speed
//!   ([`ObjectLayer::set_scan_speed`](object::layer::ObjectLayer::set_scan_speed)),
//!   stored on the drives and applied at once (the answer says so with
//!   `x-minio-config-applied: true`, so mc asks for no restart);
//! - `GET /minio/admin/v3/get-config-kv?key=scanner`: the speed, and as a
//!   comment line the rate it gives;
//! - `DELETE /minio/admin/v3/del-config-kv` (`scanner`, or `scanner
//!   speed`): back to the start rate;
//! - `GET /minio/admin/v3/help-config-kv`: the sub-systems and keys
//!   served, for `mc admin config get ALIAS` and `set ALIAS scanner`.
//!
//! The `heal` sub-system's keys (`max_io`, `max_sleep`, `bitrotscan`,
//! `drive_workers`) have no meaning here (heals go at the scanner's speed
//! and always verify every record), so setting them is refused with
//! MinIO's error for invalid keys; any other sub-system MinIO knows is
//! 501 `NotImplemented` naming it, and a name MinIO does not know is
//! MinIO's "unknown sub-system" error. The root user, or a user allowed
//! `admin:ConfigUpdate`, may call them.

use bytes::Bytes;
use http::{Method, Response};
use http_body::Body;
use object::layer::ScanSpeed;
use serde::Serialize;

use super::iam::{madmin_decrypt, madmin_encrypt};
use crate::authz::Requester;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway, ResponseBody};

/// The largest sealed configuration body taken (MinIO's bound).
pub const MAX_CONFIG_BODY: usize = 262_272;

/// The header telling mc the change applies without a restart.
const APPLIED_HEADER: &str = "x-minio-config-applied";

/// The sub-systems of MinIO's configuration: those not served here are
/// 501, a name not among them is an unknown sub-system.
const MINIO_SUBSYSTEMS: &[&str] = &[
    "api",
    "audit_event_queue",
    "audit_kafka",
    "audit_webhook",
    "batch",
    "browser",
    "bucket_event_queue",
    "cache",
    "callhome",
    "compression",
    "crawler",
    "credentials",
    "drive",
    "erasure",
    "etcd",
    "heal",
    "identity_ldap",
    "identity_openid",
    "identity_plugin",
    "identity_tls",
    "ilm",
    "lambda_webhook",
    "logger_webhook",
    "notify_amqp",
    "notify_elasticsearch",
    "notify_kafka",
    "notify_mqtt",
    "notify_mysql",
    "notify_nats",
    "notify_nsq",
    "notify_postgres",
    "notify_redis",
    "notify_webhook",
    "policy_opa",
    "policy_plugin",
    "region",
    "scanner",
    "site",
    "storage_class",
    "subnet",
];

/// A configuration call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigCall {
    /// `PUT .../set-config-kv`.
    Set,
    /// `GET .../get-config-kv`.
    Get,
    /// `DELETE .../del-config-kv`.
    Del,
    /// `GET .../help-config-kv`.
    Help,
}

impl ConfigCall {
    /// The configuration call `method` and `path` name, if any.
    pub fn route(method: &Method, path: &str) -> Option<ConfigCall> {
        match (method, path) {
            (&Method::PUT, "/minio/admin/v3/set-config-kv") => Some(ConfigCall::Set),
            (&Method::GET, "/minio/admin/v3/get-config-kv") => Some(ConfigCall::Get),
            (&Method::DELETE, "/minio/admin/v3/del-config-kv") => Some(ConfigCall::Del),
            (&Method::GET, "/minio/admin/v3/help-config-kv") => Some(ConfigCall::Help),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ConfigCall::Set => "SetConfigKV",
            ConfigCall::Get => "GetConfigKV",
            ConfigCall::Del => "DelConfigKV",
            ConfigCall::Help => "HelpConfigKV",
        }
    }
}

/// A sub-system named by a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subsys {
    Scanner,
    Heal,
    /// One MinIO has and Tessera does not serve.
    Other(&'static str),
}

/// MinIO's error for input it cannot take (400 `XMinioConfigError`).
fn config_error(msg: impl Into<String>) -> S3Error {
    S3Error::with_message("XMinioConfigError", msg)
}

/// MinIO's error for a value its sub-system refuses.
fn bad_value(msg: impl Into<String>) -> S3Error {
    S3Error::with_message("XMinioAdminConfigBadJSON", msg)
}

fn not_served(name: &str) -> S3Error {
    let why = if name == "heal" {
        "heals go at the scanner's speed (`mc admin config get ALIAS scanner`)"
    } else {
        "only the scanner sub-system is served"
    };
    S3Error::with_message(
        "NotImplemented",
        format!("The configuration sub-system '{name}' is not implemented by Tessera: {why}"),
    )
}

fn invalid_keys(subsys: &str, keys: &[(String, String)]) -> S3Error {
    let listed: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let why = if subsys == "heal" {
        "Tessera's heals go at the scanner's speed and verify every shard record: set \
         `scanner speed=...` instead"
    } else {
        "Tessera serves the key speed only"
    };
    config_error(format!(
        "found invalid keys ({}) for '{subsys}' sub-system: {why}",
        listed.join(" ")
    ))
}

/// The sub-system of `word` (`name`, `name:` or `name:target`); these take
/// no targets.
fn subsys_of(word: &str) -> Result<Subsys, S3Error> {
    let (name, target) = match word.split_once(':') {
        Some((n, t)) => (n, Some(t)),
        None => (word, None),
    };
    let known = MINIO_SUBSYSTEMS
        .iter()
        .find(|s| **s == name)
        .ok_or_else(|| config_error(format!("unknown sub-system {word}")))?;
    if target.is_some_and(|t| !t.is_empty() && t != "_") {
        return Err(config_error(format!(
            "sub-system '{name}' only supports single target"
        )));
    }
    Ok(match name {
        "scanner" => Subsys::Scanner,
        "heal" => Subsys::Heal,
        _ => Subsys::Other(known),
    })
}

/// Keys and values of a sub-system line, in order.
type Kvs = Vec<(String, String)>;

/// A sub-system line, `subsys[:target] k1=v1 k2="v 2"`, as madmin writes
/// it: its sub-system word and its keys and values in order.
fn parse_line(line: &str) -> Result<(&str, Kvs), S3Error> {
    let (word, mut rest) = match line.split_once(' ') {
        Some((w, r)) => (w, r.trim()),
        None => (line, ""),
    };
    let mut kvs = Vec::new();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            return Err(config_error(
                "expected config value in the format `key=value`",
            ));
        };
        let key = key.trim();
        if key.is_empty() || key.contains(' ') {
            return Err(config_error(
                "expected config value in the format `key=value`",
            ));
        }
        let (value, tail) = if let Some(quoted) = after.strip_prefix('"') {
            quoted
                .split_once('"')
                .ok_or_else(|| config_error(format!("the value of {key} has no closing quote")))?
        } else {
            after.split_once(' ').unwrap_or((after, ""))
        };
        kvs.push((key.to_owned(), value.to_owned()));
        rest = tail.trim();
    }
    Ok((word, kvs))
}

/// The lines of a sealed body's text that say something.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

fn speed_of(value: &str) -> Result<ScanSpeed, S3Error> {
    ScanSpeed::parse(value).ok_or_else(|| {
        bad_value(format!(
            "unknown '{value}' value for scanner speed: fastest, fast, default, slow or slowest"
        ))
    })
}

/// MinIO's `Help` (madmin's field names; mc decodes it refusing unknown
/// fields).
#[derive(Serialize)]
struct Help {
    #[serde(rename = "subSys")]
    subsys: &'static str,
    description: &'static str,
    #[serde(rename = "multipleTargets")]
    multiple_targets: bool,
    #[serde(rename = "keysHelp")]
    keys: Vec<HelpKv>,
}

#[derive(Serialize)]
struct HelpKv {
    key: &'static str,
    description: String,
    optional: bool,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(rename = "multipleTargets")]
    multiple_targets: bool,
}

const SCANNER_HELP: &str = "the background scanner's pace, which heals of every kind keep to (the start rate is \
     TESSERA_SCANNER_RATE)";

fn help(subsys: &str, key: &str, env: bool) -> Result<Help, S3Error> {
    if subsys.is_empty() {
        return Ok(Help {
            subsys: "",
            description: "",
            multiple_targets: false,
            keys: vec![HelpKv {
                key: "scanner",
                description: SCANNER_HELP.to_owned(),
                optional: false,
                kind: "",
                multiple_targets: false,
            }],
        });
    }
    match subsys_of(subsys)? {
        Subsys::Scanner => {}
        Subsys::Heal => return Err(not_served("heal")),
        Subsys::Other(name) => return Err(not_served(name)),
    }
    if !key.is_empty() && key != "speed" {
        return Err(config_error(format!(
            "unknown key {key} for sub-system scanner"
        )));
    }
    let kv = if env {
        // No variable sets the speed: the one that sets the start rate the
        // speeds are relative to is what an environment can give.
        HelpKv {
            key: "TESSERA_SCANNER_RATE",
            description: "the start rate, versions per second (0: unlimited); speed=default \
                          is this rate"
                .to_owned(),
            optional: true,
            kind: "number",
            multiple_targets: false,
        }
    } else {
        HelpKv {
            key: "speed",
            description: "the scanner's speed: fastest (unlimited), fast (10 times the start \
                          rate), default (the start rate), slow (a tenth of it), slowest (a \
                          hundredth of it); default 'default'"
                .to_owned(),
            optional: true,
            kind: "fastest|fast|default|slow|slowest",
            multiple_targets: false,
        }
    };
    Ok(Help {
        subsys: "scanner",
        description: SCANNER_HELP,
        multiple_targets: false,
        keys: vec![kv],
    })
}

fn applied() -> Response<ResponseBody> {
    let mut r = super::iam::ok_empty();
    r.headers_mut()
        .insert(APPLIED_HEADER, http::HeaderValue::from_static("true"));
    r
}

impl Gateway {
    pub(crate) async fn serve_config<B>(
        &self,
        ctx: &mut Ctx<B>,
        call: ConfigCall,
    ) -> Result<Response<ResponseBody>, S3Error>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        let who = self.begin_admin(ctx, call.name()).await?;
        if let Requester::User(id) = &who
            && !crate::authz::admin_allowed(id, "admin:ConfigUpdate")
        {
            return Err(S3Error::new("AccessDenied"));
        }
        let secret = self
            .madmin_secret(&ctx.access_key, &who)
            .ok_or_else(|| S3Error::new("AccessDenied"))?;
        let announced = ctx
            .header("content-length")
            .and_then(|v| v.parse::<u64>().ok());
        let too_large = || {
            S3Error::with_message(
                "XMinioAdminConfigTooLarge",
                format!(
                    "Configuration data provided exceeds the allowed maximum of \
                     {MAX_CONFIG_BODY} bytes"
                ),
            )
        };
        if announced.is_some_and(|n| n > MAX_CONFIG_BODY as u64) {
            return Err(too_large());
        }
        let body = crate::handlers::read_small_body(self, ctx).await?;
        if body.len() > MAX_CONFIG_BODY {
            return Err(too_large());
        }
        match call {
            ConfigCall::Set | ConfigCall::Del => {
                let plain = madmin_decrypt(secret, body).await.map_err(|_| {
                    bad_value("the configuration does not decrypt with the caller's secret key")
                })?;
                let text = String::from_utf8(plain)
                    .map_err(|_| config_error("the configuration is not UTF-8 text"))?;
                if call == ConfigCall::Set {
                    self.set_config(&text).await
                } else {
                    self.del_config(&text).await
                }
            }
            ConfigCall::Get => {
                let key = ctx.q("key").unwrap_or("").to_owned();
                let text = self.get_config(&key)?;
                madmin_encrypt(secret, text.into_bytes()).await
            }
            ConfigCall::Help => {
                let h = help(
                    ctx.q("subSys").unwrap_or(""),
                    ctx.q("key").unwrap_or(""),
                    ctx.has("env"),
                )?;
                Ok(super::json_response(super::iam::json(&h)))
            }
        }
    }

    /// Every line is checked before anything is applied.
    async fn set_config(&self, text: &str) -> Result<Response<ResponseBody>, S3Error> {
        let mut speed = None;
        let mut any = false;
        for line in lines(text) {
            any = true;
            let (word, kvs) = parse_line(line)?;
            match subsys_of(word)? {
                Subsys::Scanner => {
                    if kvs.is_empty() {
                        return Err(config_error("sub-system 'scanner' must have key"));
                    }
                    let (known, unknown): (Vec<_>, Vec<_>) =
                        kvs.into_iter().partition(|(k, _)| k == "speed");
                    if !unknown.is_empty() {
                        return Err(invalid_keys("scanner", &unknown));
                    }
                    for (_, v) in known {
                        speed = Some(speed_of(&v)?);
                    }
                }
                Subsys::Heal if kvs.is_empty() => {
                    return Err(config_error("sub-system 'heal' must have key"));
                }
                Subsys::Heal => return Err(invalid_keys("heal", &kvs)),
                Subsys::Other(name) => return Err(not_served(name)),
            }
        }
        if !any {
            return Err(config_error("input arguments cannot be empty"));
        }
        if let Some(s) = speed {
            self.layer.set_scan_speed(Some(s)).await?;
        }
        Ok(applied())
    }

    async fn del_config(&self, text: &str) -> Result<Response<ResponseBody>, S3Error> {
        let mut reset = false;
        let mut any = false;
        for line in lines(text) {
            any = true;
            let (word, keys) = match line.split_once(' ') {
                Some((w, k)) => (w, k.split_whitespace().collect::<Vec<_>>()),
                None => (line, Vec::new()),
            };
            match subsys_of(word)? {
                Subsys::Scanner => {
                    if let Some(k) = keys.iter().find(|k| **k != "speed") {
                        let mut e = S3Error::with_message(
                            "XMinioConfigNotFoundError",
                            format!("key {k} doesn't exist"),
                        );
                        e.status = http::StatusCode::NOT_FOUND;
                        return Err(e);
                    }
                    reset = true;
                }
                Subsys::Heal => return Err(not_served("heal")),
                Subsys::Other(name) => return Err(not_served(name)),
            }
        }
        if !any {
            return Err(config_error("input arguments cannot be empty"));
        }
        if reset {
            self.layer.set_scan_speed(None).await?;
        }
        Ok(applied())
    }

    /// The sub-system's line (and a comment line with the rate it gives).
    fn get_config(&self, key: &str) -> Result<String, S3Error> {
        match subsys_of(key)? {
            Subsys::Scanner => {}
            Subsys::Heal => return Err(not_served("heal")),
            Subsys::Other(name) => return Err(not_served(name)),
        }
        let rate = self.layer.scan_rate();
        let speed = rate.speed().unwrap_or(ScanSpeed::Default);
        let per_sec = |r: Option<u32>| r.map_or("unlimited".to_owned(), |r| r.to_string());
        Ok(format!(
            "# scanner rate: {} versions per second (start rate {}, TESSERA_SCANNER_RATE)\n\
             scanner speed={}\n",
            per_sec(rate.current()),
            per_sec(rate.start()),
            speed.name()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn lines_parse_as_madmin_writes_them() {
        assert_eq!(
            parse_line("scanner speed=fast").unwrap(),
            ("scanner", vec![kv("speed", "fast")])
        );
        assert_eq!(
            parse_line("heal max_io=50 max_sleep=\"300 ms\" bitrotscan=on").unwrap(),
            (
                "heal",
                vec![
                    kv("max_io", "50"),
                    kv("max_sleep", "300 ms"),
                    kv("bitrotscan", "on")
                ]
            )
        );
        assert_eq!(parse_line("scanner").unwrap(), ("scanner", vec![]));
        assert_eq!(
            parse_line("scanner speed=").unwrap().1,
            vec![kv("speed", "")]
        );
        for bad in [
            "scanner speed",
            "scanner =fast",
            "scanner a=\"b",
            "scanner a b=c",
        ] {
            assert_eq!(
                parse_line(bad).unwrap_err().code,
                "XMinioConfigError",
                "{bad}"
            );
        }
    }

    #[test]
    fn sub_systems_are_served_refused_or_unknown() {
        assert_eq!(subsys_of("scanner").unwrap(), Subsys::Scanner);
        assert_eq!(subsys_of("scanner:").unwrap(), Subsys::Scanner);
        assert_eq!(subsys_of("scanner:_").unwrap(), Subsys::Scanner);
        assert_eq!(subsys_of("heal").unwrap(), Subsys::Heal);
        assert_eq!(subsys_of("region").unwrap(), Subsys::Other("region"));
        let e = subsys_of("scanner:other").unwrap_err();
        assert_eq!(e.code, "XMinioConfigError");
        let e = subsys_of("warp_drive").unwrap_err();
        assert_eq!((e.code, e.status.as_u16()), ("XMinioConfigError", 400));
        assert!(
            e.message.contains("unknown sub-system warp_drive"),
            "{}",
            e.message
        );
        let e = not_served("notify_webhook");
        assert_eq!((e.code, e.status.as_u16()), ("NotImplemented", 501));
        assert!(e.message.contains("'notify_webhook'"));
        let e = invalid_keys("heal", &[kv("max_io", "50")]);
        assert_eq!((e.code, e.status.as_u16()), ("XMinioConfigError", 400));
        assert!(e.message.contains("(max_io=50)") && e.message.contains("'heal'"));
        assert_eq!(speed_of("slowest").unwrap(), ScanSpeed::Slowest);
        assert_eq!(
            speed_of("warp").unwrap_err().code,
            "XMinioAdminConfigBadJSON"
        );
    }

    #[test]
    fn help_names_the_scanner_and_its_key() {
        let all = serde_json::to_value(help("", "", false).unwrap()).unwrap();
        assert_eq!(all["keysHelp"][0]["key"], "scanner");
        let h = serde_json::to_value(help("scanner", "", false).unwrap()).unwrap();
        assert_eq!(h["subSys"], "scanner");
        assert_eq!(h["keysHelp"].as_array().unwrap().len(), 1);
        assert_eq!(h["keysHelp"][0]["key"], "speed");
        // Exactly madmin's fields: mc refuses unknown ones.
        let mut fields: Vec<&String> = h["keysHelp"][0].as_object().unwrap().keys().collect();
        fields.sort();
        assert_eq!(
            fields,
            ["description", "key", "multipleTargets", "optional", "type"]
        );
        let mut top: Vec<&String> = h.as_object().unwrap().keys().collect();
        top.sort();
        assert_eq!(
            top,
            ["description", "keysHelp", "multipleTargets", "subSys"]
        );
        let env = serde_json::to_value(help("scanner", "", true).unwrap()).unwrap();
        assert_eq!(env["keysHelp"][0]["key"], "TESSERA_SCANNER_RATE");
        assert_eq!(
            help("scanner", "delay", false).err().unwrap().code,
            "XMinioConfigError"
        );
        assert_eq!(
            help("heal", "", false).err().unwrap().code,
            "NotImplemented"
        );
        assert_eq!(
            help("nope", "", false).err().unwrap().code,
            "XMinioConfigError"
        );
    }
}
