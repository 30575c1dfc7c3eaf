//! The AWS/MinIO IAM policy language: identity policies (attached to users
//! and groups) and bucket policies, parsed from JSON, validated as MinIO
//! validates them, compiled once, evaluated against requests.
//!
//! The crate is pure: no I/O, no clock, no randomness. The caller puts the
//! request's context, the current time included, into [`Request`].
//!
//! ```
//! use std::collections::HashMap;
//! use policy::{Decision, Policy, Request};
//!
//! let p = Policy::parse_iam(br#"{
//!     "Version": "2012-10-17",
//!     "Statement": [{
//!         "Effect": "Allow",
//!         "Action": ["s3:GetObject"],
//!         "Resource": ["arn:aws:s3:::photos/${aws:username}/*"]
//!     }]
//! }"#).unwrap();
//! let mut conditions = HashMap::new();
//! conditions.insert("aws:username".to_string(), vec!["alice".to_string()]);
//! let req = Request {
//!     action: "s3:GetObject",
//!     bucket: "photos",
//!     object: Some("alice/cat.jpg"),
//!     account: "alice",
//!     groups: &[],
//!     principal_arn: None,
//!     anonymous: false,
//!     bucket_policy: false,
//!     conditions: &conditions,
//! };
//! assert_eq!(p.evaluate(&req), Decision::Allow);
//! ```
//!
//! # What MinIO decides, decided the same way
//!
//! MinIO's `minio/pkg/v3/policy` is the reference: `tests/oracle.rs` checks
//! about 700 documents and 30 000 decisions against answers computed by it
//! (`testdata/gen`). That covers the validation rules and their messages
//! (known actions, which condition keys each action takes, resource forms,
//! the admin, KMS and STS statement families), resource paths, policy
//! variables, the wildcard rules, and every condition operator MinIO has.
//! MinIO's readings are kept where AWS reads differently, because stored
//! MinIO policies must keep meaning what they meant:
//!
//! - In identity policies a bucket-level request has the path `bucket/`,
//!   so `arn:aws:s3:::bucket/*` covers `s3:ListBucket`; in bucket policies
//!   the path is `bucket` and it does not. Paths also match a pattern equal
//!   to their `path.Clean` form.
//! - `s3:GetObjectVersion` grants `s3:GetObject` too.
//! - An identity-policy statement whose actions include `*` is an STS
//!   statement: resources ignored, only `sts:DurationSeconds` as a key.
//!   Admin statements ignore resources; KMS statements without resources,
//!   or asked about no bucket, are decided by their conditions alone.
//! - Bucket-policy actions are not checked against the known ones (only
//!   their resources and keys are).
//! - Negated string operators under `ForAnyValue:`/`ForAllValues:` negate
//!   the whole qualified match (AWS negates per value).
//! - Numeric, date and `Bool` operators read the first request value only.
//! - Policy variables are the keys MinIO substitutes (`${aws:username}`,
//!   `${aws:userid}`, `${aws:principaltype}`, `${jwt:sub}`, `${ldap:user}`,
//!   ...), spelled exactly; in `Resource` and in string condition values.
//! - Principals match the access key with `wildcard.MatchSimple` (a
//!   trailing `?` is optional); here they also match the requester's ARN
//!   when the caller gives one.
//!
//! # Deliberate differences from MinIO
//!
//! Each makes the implementation accept more of what AWS accepts, or
//! refuse what MinIO silently misreads; `testdata/minio-vectors.json` holds
//! one document per difference, and the oracle test checks it shows:
//!
//! - Action names and condition key names are compared without ASCII case,
//!   as AWS compares them (MinIO compares them exactly).
//! - `Version` may also be `2008-10-17`; `Statement` may be a single
//!   object; `NotPrincipal` is supported.
//! - Every operator but `Null` takes the `IfExists` suffix (MinIO has only
//!   `NumericGreaterThanIfExists`), and `ArnEquals`, `ArnNotEquals`,
//!   `ArnLike`, `ArnNotLike` exist (matching each of the six ARN parts with
//!   wildcards, as AWS does).
//! - A lone IPv6 address in `IpAddress` is that address (`/128`); MinIO
//!   appends `/32`, which makes it a whole network.
//! - A `Bool` value written `"True"`, `"1"` or `"t"` means `true`; MinIO
//!   compares the request's `true` with the text as written and never
//!   matches.
//! - Unknown fields, fields repeated (even in another case), `null` or
//!   fractional condition values, non-string actions, resources or
//!   principals, and principals other than `AWS` are errors; Go's decoder
//!   ignores unknown fields, keeps the last of repeated ones, reads `null`
//!   as `false` and numbers as their text. An identity policy may not name
//!   principals (MinIO ignores them there).
//!
//! # Condition keys
//!
//! Every key MinIO knows (its `AllSupportedKeys`, 59 names) is accepted:
//! `aws:` `SourceIp`, `SecureTransport`, `CurrentTime`, `EpochTime`,
//! `Referer`, `UserAgent`, `username`, `userid`, `principaltype`, `groups`;
//! `s3:` `prefix`, `delimiter`, `max-keys`, `versionid`, `signatureversion`,
//! `signatureAge`, `authType`, `LocationConstraint`, `x-amz-copy-source`,
//! `x-amz-server-side-encryption` (and `-aws-kms-key-id`,
//! `-customer-algorithm`), `x-amz-metadata-directive`,
//! `x-amz-storage-class`, `x-amz-content-sha256`, the four
//! `object-lock-*` keys, `ExistingObjectTag/<key>`,
//! `RequestObjectTag/<key>`, `RequestObjectTagKeys`; `ldap:user`,
//! `ldap:username`, `ldap:groups`; 22 `jwt:` claims; `sts:DurationSeconds`,
//! `svc:DurationSeconds`. Keys MinIO does not know (`aws:SourceArn`,
//! `aws:MultiFactorAuthPresent`, `s3:TlsVersion`, ...) are refused, as
//! MinIO refuses them: no request here carries them. The caller supplies
//! the values in [`Request::conditions`], keyed by the whole key in lower
//! case.
//!
//! # Left out
//!
//! - Principals of types other than `AWS` (`Service`, `Federated`,
//!   `CanonicalUser`): nothing in Tessera authenticates them.
//! - The owner shortcut and "deny only" mode of MinIO's `IsAllowed`: the
//!   caller has them from [`Decision`] (the owner skips evaluation; a
//!   deny-only check asks for `Decision::Deny`).
//! - Dropping repeated statements, which MinIO does on reading: it changes
//!   no decision.

mod action;
pub mod builtin;
mod condition;
mod date;
mod error;
mod ip;
mod json;
#[cfg(test)]
mod oracle_tests;
mod policy;
mod principal;
mod request;
mod resource;
mod serialize;
mod statement;
pub mod wildcard;

pub use date::{Instant, parse_rfc3339};
pub use error::PolicyError;
pub use policy::{Kind, Limits, Policy, Version, evaluate_all};
pub use request::{Decision, Request};
pub use statement::{Effect, Statement};
