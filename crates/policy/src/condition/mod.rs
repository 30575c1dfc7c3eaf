//! The `Condition` block: operators, their parsing and validation as MinIO
//! validates them (`minio/pkg/v3/policy/condition`), and (in [`eval`]) their
//! evaluation against a request's condition values.
//!
//! MinIO's operators: the `String*` family, `BinaryEquals`, `IpAddress`,
//! `NotIpAddress`, `Null`, `Bool`, the `Numeric*` and `Date*` families,
//! `NumericGreaterThanIfExists`, and the `ForAnyValue:`/`ForAllValues:`
//! qualifiers. Beyond MinIO, as AWS has them: the `Arn*` family and the
//! `IfExists` suffix on every operator but `Null`.

pub(crate) mod eval;
pub(crate) mod key;
pub(crate) mod value;

use crate::date::{self, Instant};
use crate::ip::{self, Cidr};
use crate::json::Json;
use crate::{Limits, PolicyError};
use key::{CondKey, KeyName};
use value::Scalar;

/// A condition operator, without qualifier or `IfExists`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    StringEquals,
    StringNotEquals,
    StringEqualsIgnoreCase,
    StringNotEqualsIgnoreCase,
    StringLike,
    StringNotLike,
    BinaryEquals,
    IpAddress,
    NotIpAddress,
    Null,
    Bool,
    NumericEquals,
    NumericNotEquals,
    NumericLessThan,
    NumericLessThanEquals,
    NumericGreaterThan,
    NumericGreaterThanEquals,
    DateEquals,
    DateNotEquals,
    DateLessThan,
    DateLessThanEquals,
    DateGreaterThan,
    DateGreaterThanEquals,
    ArnEquals,
    ArnNotEquals,
    ArnLike,
    ArnNotLike,
}

const OPS: &[(&str, Op)] = &[
    ("StringEquals", Op::StringEquals),
    ("StringNotEquals", Op::StringNotEquals),
    ("StringEqualsIgnoreCase", Op::StringEqualsIgnoreCase),
    ("StringNotEqualsIgnoreCase", Op::StringNotEqualsIgnoreCase),
    ("StringLike", Op::StringLike),
    ("StringNotLike", Op::StringNotLike),
    ("BinaryEquals", Op::BinaryEquals),
    ("IpAddress", Op::IpAddress),
    ("NotIpAddress", Op::NotIpAddress),
    ("Null", Op::Null),
    ("Bool", Op::Bool),
    ("NumericEquals", Op::NumericEquals),
    ("NumericNotEquals", Op::NumericNotEquals),
    ("NumericLessThan", Op::NumericLessThan),
    ("NumericLessThanEquals", Op::NumericLessThanEquals),
    ("NumericGreaterThan", Op::NumericGreaterThan),
    ("NumericGreaterThanEquals", Op::NumericGreaterThanEquals),
    ("DateEquals", Op::DateEquals),
    ("DateNotEquals", Op::DateNotEquals),
    ("DateLessThan", Op::DateLessThan),
    ("DateLessThanEquals", Op::DateLessThanEquals),
    ("DateGreaterThan", Op::DateGreaterThan),
    ("DateGreaterThanEquals", Op::DateGreaterThanEquals),
    ("ArnEquals", Op::ArnEquals),
    ("ArnNotEquals", Op::ArnNotEquals),
    ("ArnLike", Op::ArnLike),
    ("ArnNotLike", Op::ArnNotLike),
];

impl Op {
    pub(crate) fn name(self) -> &'static str {
        OPS.iter().find(|(_, o)| *o == self).map_or("", |(n, _)| n)
    }
}

/// `ForAnyValue:` / `ForAllValues:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Qualifier {
    None,
    ForAnyValue,
    ForAllValues,
}

/// A comparison of the numeric and date operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub(crate) fn holds<T: Ord>(self, request: &T, policy: &T) -> bool {
        match self {
            Cmp::Eq => request == policy,
            Cmp::Ne => request != policy,
            Cmp::Lt => request < policy,
            Cmp::Le => request <= policy,
            Cmp::Gt => request > policy,
            Cmp::Ge => request >= policy,
        }
    }
}

/// What an operator tests, with its values compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Test {
    /// The `StringEquals` family. `texts` are lower-cased already when
    /// `fold` is set and none holds a policy variable.
    Strings {
        texts: Vec<String>,
        has_vars: bool,
        fold: bool,
        negate: bool,
    },
    /// `BinaryEquals`: the decoded bytes.
    Binary(Vec<Vec<u8>>),
    /// `StringLike`, `StringNotLike`.
    Like {
        texts: Vec<String>,
        has_vars: bool,
        negate: bool,
    },
    /// The `Arn*` family (`ArnEquals` matches wildcards too, as in AWS).
    Arn {
        patterns: Vec<String>,
        negate: bool,
    },
    Ip {
        nets: Vec<Cidr>,
        negate: bool,
    },
    /// `Null`: whether the key must be absent.
    Null(bool),
    /// `Bool`: `"true"` or `"false"`, compared with the request's value.
    Bool(&'static str),
    Numeric(Cmp, i64),
    Date(Cmp, Instant),
}

/// One operator applied to one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    pub(crate) op: Op,
    pub(crate) qualifier: Qualifier,
    pub(crate) if_exists: bool,
    pub(crate) key: CondKey,
    /// The values as written, for serialisation.
    pub(crate) values: Vec<Scalar>,
    pub(crate) test: Test,
}

impl Condition {
    /// The operator as written in a policy (`ForAnyValue:StringLike`,
    /// `DateLessThanIfExists`).
    pub(crate) fn operator_name(&self) -> String {
        let q = match self.qualifier {
            Qualifier::None => "",
            Qualifier::ForAnyValue => "ForAnyValue:",
            Qualifier::ForAllValues => "ForAllValues:",
        };
        let suffix = if self.if_exists { "IfExists" } else { "" };
        format!("{q}{}{suffix}", self.op.name())
    }
}

/// Reads an operator name as MinIO does (`Qualifier:Name`, both spelled
/// exactly), plus the `IfExists` suffix.
fn parse_operator(s: &str) -> Result<(Qualifier, Op, bool), PolicyError> {
    let bad = || PolicyError::invalid(format!("invalid condition name '{s}'"));
    let mut parts = s.split(':');
    let (qualifier, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(n), None, _) => (Qualifier::None, n),
        (Some("ForAnyValue"), Some(n), None) => (Qualifier::ForAnyValue, n),
        (Some("ForAllValues"), Some(n), None) => (Qualifier::ForAllValues, n),
        _ => return Err(bad()),
    };
    let find = |n: &str| OPS.iter().find(|(o, _)| *o == n).map(|(_, op)| *op);
    if let Some(op) = find(name) {
        return Ok((qualifier, op, false));
    }
    match name.strip_suffix("IfExists").and_then(find) {
        Some(op) if op != Op::Null => Ok((qualifier, op, true)),
        _ => Err(bad()),
    }
}

/// Reads a `Condition` block: an object of operators, each an object of
/// keys and their values.
pub(crate) fn parse_block(j: &Json, limits: &Limits) -> Result<Vec<Condition>, PolicyError> {
    let Json::Object(ops) = j else {
        return Err(PolicyError::syntax(format!(
            "Condition must be an object, not {}",
            j.kind()
        )));
    };
    if ops.is_empty() {
        return Err(PolicyError::invalid("condition must not be empty"));
    }
    let mut out = Vec::new();
    for (op_name, keys) in ops {
        let (qualifier, op, if_exists) = parse_operator(op_name)?;
        let Json::Object(keys) = keys else {
            return Err(PolicyError::syntax(format!(
                "the keys of condition {op_name} must be an object, not {}",
                keys.kind()
            )));
        };
        for (key_text, values) in keys {
            let key = CondKey::parse(key_text)?;
            let values = value::parse_values(values, limits.max_values)?;
            let test = compile(op, &key, &values)?;
            out.push(Condition {
                op,
                qualifier,
                if_exists,
                key,
                values,
                test,
            });
        }
    }
    Ok(out)
}

fn strings(op: Op, values: &[Scalar]) -> Result<Vec<&str>, PolicyError> {
    values
        .iter()
        .map(|v| {
            v.as_str().ok_or_else(|| {
                PolicyError::invalid(format!(
                    "value must be a string for {} condition",
                    op.name()
                ))
            })
        })
        .collect()
}

fn single(op: Op, values: &[Scalar]) -> Result<&Scalar, PolicyError> {
    match values {
        [v] => Ok(v),
        _ => Err(PolicyError::invalid(match op {
            Op::Bool => "only one value is allowed for boolean condition".to_owned(),
            _ => format!("only one value is allowed for {} condition", op.name()),
        })),
    }
}

/// MinIO's `validateStringValues`: the values some keys may take.
fn check_string_values<'a>(
    op: Op,
    key: &CondKey,
    values: impl IntoIterator<Item = &'a str>,
) -> Result<(), PolicyError> {
    let n = op.name();
    for s in values {
        if key.name == KeyName::CopySource {
            let path = s.strip_prefix('/').unwrap_or(s);
            let (bucket, object) = path.split_once('/').unwrap_or((path, ""));
            if object.is_empty() {
                return Err(PolicyError::invalid(format!(
                    "invalid value '{s}' for 's3:x-amz-copy-source' for {n} condition"
                )));
            }
            value::check_bucket_name(bucket).map_err(PolicyError::invalid)?;
        }
        if matches!(op, Op::StringLike | Op::StringNotLike) {
            continue;
        }
        let allowed: &[&str] = match key.name {
            KeyName::SseCustomerAlgorithm => &["AES256"],
            KeyName::Sse => &["AES256", "aws:kms"],
            KeyName::MetadataDirective => &["COPY", "REPLACE"],
            KeyName::ContentSha256 if s.is_empty() => {
                return Err(PolicyError::invalid(format!(
                    "invalid empty value for 's3:x-amz-content-sha256' for {n} condition"
                )));
            }
            _ => continue,
        };
        if !allowed.contains(&s) {
            return Err(PolicyError::invalid(format!(
                "invalid value '{s}' for '{}' for {n} condition",
                key.name.name()
            )));
        }
    }
    Ok(())
}

fn has_vars(texts: &[String]) -> bool {
    texts.iter().any(|t| t.contains("${"))
}

fn compile(op: Op, key: &CondKey, values: &[Scalar]) -> Result<Test, PolicyError> {
    let n = op.name();
    Ok(match op {
        Op::StringEquals
        | Op::StringNotEquals
        | Op::StringEqualsIgnoreCase
        | Op::StringNotEqualsIgnoreCase => {
            let s = strings(op, values)?;
            check_string_values(op, key, s.iter().copied())?;
            let texts: Vec<String> = s.iter().map(|t| (*t).to_owned()).collect();
            let vars = has_vars(&texts);
            let fold = matches!(
                op,
                Op::StringEqualsIgnoreCase | Op::StringNotEqualsIgnoreCase
            );
            Test::Strings {
                texts: if fold && !vars {
                    texts.iter().map(|t| eval::lower(t)).collect()
                } else {
                    texts
                },
                has_vars: vars,
                fold,
                negate: matches!(op, Op::StringNotEquals | Op::StringNotEqualsIgnoreCase),
            }
        }
        Op::StringLike | Op::StringNotLike => {
            let s = strings(op, values)?;
            check_string_values(op, key, s.iter().copied())?;
            let texts: Vec<String> = s.iter().map(|t| (*t).to_owned()).collect();
            Test::Like {
                has_vars: has_vars(&texts),
                texts,
                negate: op == Op::StringNotLike,
            }
        }
        Op::BinaryEquals => {
            let mut decoded = Vec::new();
            for s in strings(op, values)? {
                decoded.push(
                    value::base64_decode(s)
                        .ok_or_else(|| PolicyError::invalid("illegal base64 data"))?,
                );
            }
            let lossy: Vec<String> = decoded
                .iter()
                .map(|d| String::from_utf8_lossy(d).into_owned())
                .collect();
            check_string_values(op, key, lossy.iter().map(String::as_str))?;
            Test::Binary(decoded)
        }
        Op::ArnEquals | Op::ArnNotEquals | Op::ArnLike | Op::ArnNotLike => Test::Arn {
            patterns: strings(op, values)?
                .into_iter()
                .map(str::to_owned)
                .collect(),
            negate: matches!(op, Op::ArnNotEquals | Op::ArnNotLike),
        },
        Op::IpAddress | Op::NotIpAddress => {
            let mut nets = Vec::new();
            for v in values {
                let s = v.as_str().ok_or_else(|| {
                    PolicyError::invalid(format!(
                        "value {} must be string representation of CIDR for {n} condition",
                        v.describe()
                    ))
                })?;
                nets.push(parse_block_or_host(s).ok_or_else(|| {
                    PolicyError::invalid(format!("value {s} must be CIDR string for {n} condition"))
                })?);
            }
            if key.name != KeyName::SourceIp {
                return Err(PolicyError::invalid(format!(
                    "only aws:SourceIp key is allowed for {n} condition"
                )));
            }
            Test::Ip {
                nets,
                negate: op == Op::NotIpAddress,
            }
        }
        Op::Null => Test::Null(match single(op, values)? {
            Scalar::Bool(b) => *b,
            Scalar::Str(s) => value::parse_bool(s).ok_or_else(|| {
                PolicyError::invalid("value must be a boolean string for Null condition")
            })?,
            Scalar::Int(_) => {
                return Err(PolicyError::invalid(
                    "value must be a boolean for Null condition",
                ));
            }
        }),
        Op::Bool => {
            if key.name != KeyName::SecureTransport {
                return Err(PolicyError::invalid(
                    "only aws:SecureTransport key is allowed for Bool condition",
                ));
            }
            let b = match single(op, values)? {
                Scalar::Bool(b) => *b,
                Scalar::Str(s) => value::parse_bool(s).ok_or_else(|| {
                    PolicyError::invalid("value must be a boolean string for boolean condition")
                })?,
                Scalar::Int(_) => {
                    return Err(PolicyError::invalid(
                        "value must be a boolean for boolean condition",
                    ));
                }
            };
            Test::Bool(if b { "true" } else { "false" })
        }
        Op::NumericEquals
        | Op::NumericNotEquals
        | Op::NumericLessThan
        | Op::NumericLessThanEquals
        | Op::NumericGreaterThan
        | Op::NumericGreaterThanEquals => {
            let v = match single(op, values)? {
                Scalar::Int(i) => *i,
                Scalar::Str(s) => value::atoi(s).ok_or_else(|| {
                    PolicyError::invalid(format!("value {s} must be a int for {n} condition"))
                })?,
                Scalar::Bool(b) => {
                    return Err(PolicyError::invalid(format!(
                        "value {b} must be a int for {n} condition"
                    )));
                }
            };
            Test::Numeric(comparison(op), v)
        }
        Op::DateEquals
        | Op::DateNotEquals
        | Op::DateLessThan
        | Op::DateLessThanEquals
        | Op::DateGreaterThan
        | Op::DateGreaterThanEquals => {
            let v = single(op, values)?;
            let Scalar::Str(s) = v else {
                return Err(PolicyError::invalid(format!(
                    "value {} must be a time.Time for {n} condition",
                    v.describe()
                )));
            };
            let at = date::parse_rfc3339(s).ok_or_else(|| {
                PolicyError::invalid(format!(
                    "value {s} must be a time.Time string for {n} condition"
                ))
            })?;
            Test::Date(comparison(op), at)
        }
    })
}

/// A CIDR block, or a lone address as its own block. MinIO appends `/32`
/// to a lone address whatever its family, which makes a lone IPv6 address
/// the `/32` network around it; here it is the address alone (`/128`), as
/// AWS reads it.
fn parse_block_or_host(s: &str) -> Option<Cidr> {
    if s.contains('/') {
        ip::parse_cidr(s)
    } else {
        ip::parse_ip(s).map(Cidr::host)
    }
}

fn comparison(op: Op) -> Cmp {
    match op {
        Op::NumericEquals | Op::DateEquals => Cmp::Eq,
        Op::NumericNotEquals | Op::DateNotEquals => Cmp::Ne,
        Op::NumericLessThan | Op::DateLessThan => Cmp::Lt,
        Op::NumericLessThanEquals | Op::DateLessThanEquals => Cmp::Le,
        Op::NumericGreaterThan | Op::DateGreaterThan => Cmp::Gt,
        _ => Cmp::Ge,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(s: &str) -> Result<Vec<Condition>, PolicyError> {
        parse_block(
            &crate::json::parse(s.as_bytes(), 16).unwrap(),
            &Limits::default(),
        )
    }

    #[test]
    fn operator_names() {
        assert_eq!(
            parse_operator("StringEquals").unwrap(),
            (Qualifier::None, Op::StringEquals, false)
        );
        assert_eq!(
            parse_operator("ForAllValues:StringLikeIfExists").unwrap(),
            (Qualifier::ForAllValues, Op::StringLike, true)
        );
        assert_eq!(
            parse_operator("NumericGreaterThanIfExists").unwrap(),
            (Qualifier::None, Op::NumericGreaterThan, true)
        );
        for bad in [
            "stringequals",
            "Foo:StringEquals",
            "ForAnyValue:",
            "A:B:C",
            "NullIfExists",
            "IfExists",
            "",
        ] {
            assert!(parse_operator(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn blocks_and_messages() {
        let c = block(r#"{"StringEquals":{"aws:username":["a","b"],"s3:prefix":"x"}}"#).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].operator_name(), "StringEquals");
        let err = |s: &str| block(s).unwrap_err().to_string();
        assert_eq!(err("{}"), "condition must not be empty");
        assert_eq!(
            err(r#"{"Bool":{"aws:username":"true"}}"#),
            "only aws:SecureTransport key is allowed for Bool condition"
        );
        assert_eq!(
            err(r#"{"IpAddress":{"aws:username":"1.2.3.4"}}"#),
            "only aws:SourceIp key is allowed for IpAddress condition"
        );
        assert_eq!(
            err(r#"{"IpAddress":{"aws:SourceIp":"1.2.3"}}"#),
            "value 1.2.3 must be CIDR string for IpAddress condition"
        );
        assert_eq!(
            err(r#"{"NumericEquals":{"s3:max-keys":["1","2"]}}"#),
            "only one value is allowed for NumericEquals condition"
        );
        assert_eq!(
            err(r#"{"NumericEquals":{"s3:max-keys":"x"}}"#),
            "value x must be a int for NumericEquals condition"
        );
        assert_eq!(
            err(r#"{"StringEquals":{"aws:username":1}}"#),
            "value must be a string for StringEquals condition"
        );
        assert_eq!(
            err(r#"{"StringEquals":{"aws:nope":"1"}}"#),
            "invalid condition key 'aws:nope'"
        );
        assert_eq!(
            err(r#"{"StringEquals":{"s3:x-amz-server-side-encryption":"AES"}}"#),
            "invalid value 'AES' for 's3:x-amz-server-side-encryption' for StringEquals condition"
        );
        assert!(block(r#"{"StringLike":{"s3:x-amz-server-side-encryption":"AES*"}}"#).is_ok());
        assert_eq!(
            err(r#"{"StringLike":{"s3:x-amz-copy-source":"bucket"}}"#),
            "invalid value 'bucket' for 's3:x-amz-copy-source' for StringLike condition"
        );
        assert!(block(r#"{"StringEquals":{"s3:x-amz-copy-source":"/bucket/key"}}"#).is_ok());
        assert_eq!(
            err(r#"{"DateLessThan":{"aws:CurrentTime":"2020-01-01"}}"#),
            "value 2020-01-01 must be a time.Time string for DateLessThan condition"
        );
        assert!(block(r#"{"Null":{"aws:username":"True"}}"#).is_ok());
        assert!(block(r#"{"Null":{"aws:username":1}}"#).is_err());
        assert!(block(r#"{"BinaryEquals":{"aws:username":"!!"}}"#).is_err());
        assert!(block(r#"{"StringEquals":[]}"#).is_err());
    }
}
