//! MinIO's canned policies (`policy.DefaultPolicies`), which every MinIO
//! deployment has under these names and which cannot be changed.
//!
//! The documents are MinIO's definitions written as JSON, actions sorted;
//! `tests/oracle.rs` checks them against `testdata/minio-vectors.json`,
//! which the generator takes from MinIO's package itself.

use crate::{Policy, PolicyError};

/// `readwrite`: every S3 action on every bucket and object.
pub const READWRITE: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}"#;

/// `readonly`: reading objects and bucket locations.
pub const READONLY: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetBucketLocation","s3:GetObject"],"Resource":["arn:aws:s3:::*"]}]}"#;

/// `writeonly`: writing objects.
pub const WRITEONLY: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:PutObject"],"Resource":["arn:aws:s3:::*"]}]}"#;

/// `diagnostics`: the admin calls of `mc admin` diagnostics (profiling,
/// traces, logs, server information, locks, health, bandwidth, metrics).
pub const DIAGNOSTICS: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["admin:BandwidthMonitor","admin:ConsoleLog","admin:OBDInfo","admin:Profiling","admin:Prometheus","admin:ServerInfo","admin:ServerTrace","admin:TopLocksInfo"],"Resource":["arn:aws:s3:::*"]}]}"#;

/// `consoleAdmin`: every admin, KMS and S3 action.
pub const CONSOLE_ADMIN: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["admin:*"]},{"Effect":"Allow","Action":["kms:*"]},{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}"#;

/// Every canned policy by name, in MinIO's order.
pub const ALL: &[(&str, &str)] = &[
    ("readwrite", READWRITE),
    ("readonly", READONLY),
    ("writeonly", WRITEONLY),
    ("diagnostics", DIAGNOSTICS),
    ("consoleAdmin", CONSOLE_ADMIN),
];

/// The canned policy `name`, parsed; `None` if MinIO has none of that
/// name.
pub fn get(name: &str) -> Option<Policy> {
    let (_, doc) = ALL.iter().find(|(n, _)| *n == name)?;
    parse(doc).ok()
}

fn parse(doc: &str) -> Result<Policy, PolicyError> {
    Policy::parse_iam(doc.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_parse_and_round_trip() {
        for (name, doc) in ALL {
            let p = parse(doc).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p.to_json(), *doc, "{name}");
            assert!(get(name).is_some());
        }
        assert!(get("nope").is_none());
    }
}
