//! Every S3 request resolves to exactly one [`Op`] before it is
//! authorised or served: the operation names the handler, the IAM actions
//! the requester must be allowed, and what the request addresses. The
//! handlers are dispatched by an exhaustive `match` on it, and
//! authorisation (`crate::authz`) is an exhaustive function of it, so no
//! operation is served unchecked.

use http::Method;

use crate::error::S3Error;

/// What a request addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The service (no bucket).
    Service,
    /// A bucket.
    Bucket,
    /// An object of a bucket.
    Object,
}

/// How an operation is authorised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Every one of these IAM actions on the request's bucket (and key).
    Actions(&'static [&'static str]),
    /// The action on the request's bucket and key, and `s3:GetObject` on
    /// the object named in `x-amz-copy-source`.
    CopyFrom(&'static str),
    /// The action on each object the request names, checked by the
    /// handler as it reads them (`DeleteObjects`: one answer per key).
    PerObject(&'static str),
    /// The action on the key the form names, checked once the form's
    /// signature holds (browser `POST` uploads).
    PostForm(&'static str),
    /// Not implemented: any signed requester gets 501, an anonymous one
    /// `AccessDenied` (it learns nothing about the server).
    NotImplemented,
}

macro_rules! operations {
    ($($(#[$doc:meta])* $op:ident: $target:ident, $access:expr;)*) => {
        /// An S3 operation, resolved from the method, the addressing and
        /// the query (and, for copies, one header).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Op {
            $($(#[$doc])* $op,)*
        }

        impl Op {
            /// Every operation.
            pub const ALL: &'static [Op] = &[$(Op::$op,)*];

            /// Its name (`GetObject`): metrics, logs, access records.
            pub fn name(self) -> &'static str {
                match self {
                    $(Op::$op => stringify!($op),)*
                }
            }

            /// What it addresses.
            pub fn target(self) -> Target {
                match self {
                    $(Op::$op => Target::$target,)*
                }
            }

            /// How it is authorised.
            pub fn access(self) -> Access {
                match self {
                    $(Op::$op => $access,)*
                }
            }
        }
    };
}

const fn act(a: &'static [&'static str]) -> Access {
    Access::Actions(a)
}

// The actions are MinIO's for the same handler, so that policies written
// for MinIO mean the same here (ACL calls are checked as the bucket policy
// calls, as MinIO checks them; S3 has no ACL actions MinIO knows).
operations! {
    /// `GET /`.
    ListBuckets: Service, act(&["s3:ListAllMyBuckets"]);
    /// `GET /b?location`.
    GetBucketLocation: Bucket, act(&["s3:GetBucketLocation"]);
    /// `GET /b?versioning`.
    GetBucketVersioning: Bucket, act(&["s3:GetBucketVersioning"]);
    /// `GET /b?uploads`.
    ListMultipartUploads: Bucket, act(&["s3:ListBucketMultipartUploads"]);
    /// `GET /b?versions` (`s3:ListBucket` allows it too, as S3 has it).
    ListObjectVersions: Bucket, act(&["s3:ListBucketVersions"]);
    /// `GET /b?policy`.
    GetBucketPolicy: Bucket, act(&["s3:GetBucketPolicy"]);
    /// `GET /b?policyStatus`.
    GetBucketPolicyStatus: Bucket, act(&["s3:GetBucketPolicyStatus"]);
    /// `GET /b?object-lock`.
    GetObjectLockConfiguration: Bucket, act(&["s3:GetBucketObjectLockConfiguration"]);
    /// `GET /b?encryption`.
    GetBucketEncryption: Bucket, act(&["s3:GetEncryptionConfiguration"]);
    /// `GET /b?tagging`.
    GetBucketTagging: Bucket, act(&["s3:GetBucketTagging"]);
    /// `GET /b?lifecycle`.
    GetBucketLifecycle: Bucket, act(&["s3:GetLifecycleConfiguration"]);
    /// `GET /b?cors`.
    GetBucketCors: Bucket, act(&["s3:GetBucketCors"]);
    /// `GET /b?acl`.
    GetBucketAcl: Bucket, act(&["s3:GetBucketPolicy"]);
    /// `GET /b?list-type=2`.
    ListObjectsV2: Bucket, act(&["s3:ListBucket"]);
    /// `GET /b`.
    ListObjects: Bucket, act(&["s3:ListBucket"]);
    /// `HEAD /b`.
    HeadBucket: Bucket, act(&["s3:ListBucket"]);
    /// `GET /b?ownershipControls`.
    GetBucketOwnershipControls: Bucket, act(&["s3:GetBucketPolicy"]);
    /// `PUT /b?ownershipControls`.
    PutBucketOwnershipControls: Bucket, act(&["s3:PutBucketPolicy"]);
    /// `PUT /b?versioning`.
    PutBucketVersioning: Bucket, act(&["s3:PutBucketVersioning"]);
    /// `PUT /b?encryption`.
    PutBucketEncryption: Bucket, act(&["s3:PutEncryptionConfiguration"]);
    /// `PUT /b?tagging`.
    PutBucketTagging: Bucket, act(&["s3:PutBucketTagging"]);
    /// `PUT /b?policy`.
    PutBucketPolicy: Bucket, act(&["s3:PutBucketPolicy"]);
    /// `PUT /b?lifecycle`.
    PutBucketLifecycle: Bucket, act(&["s3:PutLifecycleConfiguration"]);
    /// `PUT /b?cors`.
    PutBucketCors: Bucket, act(&["s3:PutBucketCors"]);
    /// `PUT /b?object-lock`.
    PutObjectLockConfiguration: Bucket, act(&["s3:PutBucketObjectLockConfiguration"]);
    /// `PUT /b?acl`.
    PutBucketAcl: Bucket, act(&["s3:PutBucketPolicy"]);
    /// `PUT /b`.
    CreateBucket: Bucket, act(&["s3:CreateBucket"]);
    /// `DELETE /b?encryption`.
    DeleteBucketEncryption: Bucket, act(&["s3:PutEncryptionConfiguration"]);
    /// `DELETE /b?tagging`.
    DeleteBucketTagging: Bucket, act(&["s3:PutBucketTagging"]);
    /// `DELETE /b?policy`.
    DeleteBucketPolicy: Bucket, act(&["s3:DeleteBucketPolicy"]);
    /// `DELETE /b?lifecycle`.
    DeleteBucketLifecycle: Bucket, act(&["s3:PutLifecycleConfiguration"]);
    /// `DELETE /b?cors`.
    DeleteBucketCors: Bucket, act(&["s3:DeleteBucketCors"]);
    /// `DELETE /b`.
    DeleteBucket: Bucket, act(&["s3:DeleteBucket"]);
    /// `POST /b?delete`.
    DeleteObjects: Bucket, Access::PerObject("s3:DeleteObject");
    /// `POST /b` with a `multipart/form-data` body.
    PostObject: Bucket, Access::PostForm("s3:PutObject");
    /// A bucket sub-resource or method this gateway does not implement.
    UnsupportedBucketCall: Bucket, Access::NotImplemented;
    /// `GET /b/k?uploadId`.
    ListParts: Object, act(&["s3:ListMultipartUploadParts"]);
    /// `GET /b/k?acl`.
    GetObjectAcl: Object, act(&["s3:GetBucketPolicy"]);
    /// `GET /b/k?tagging`.
    GetObjectTagging: Object, act(&["s3:GetObjectTagging"]);
    /// `GET /b/k?attributes`.
    GetObjectAttributes: Object, act(&["s3:GetObjectAttributes", "s3:GetObject"]);
    /// `GET /b/k?retention`.
    GetObjectRetention: Object, act(&["s3:GetObjectRetention"]);
    /// `GET /b/k?legal-hold`.
    GetObjectLegalHold: Object, act(&["s3:GetObjectLegalHold"]);
    /// `GET /b/k`.
    GetObject: Object, act(&["s3:GetObject"]);
    /// `HEAD /b/k`.
    HeadObject: Object, act(&["s3:GetObject"]);
    /// `PUT /b/k?partNumber&uploadId` with `x-amz-copy-source`.
    UploadPartCopy: Object, Access::CopyFrom("s3:PutObject");
    /// `PUT /b/k?partNumber&uploadId`.
    UploadPart: Object, act(&["s3:PutObject"]);
    /// `PUT /b/k?tagging`.
    PutObjectTagging: Object, act(&["s3:PutObjectTagging"]);
    /// `PUT /b/k?acl`.
    PutObjectAcl: Object, act(&["s3:PutBucketPolicy"]);
    /// `PUT /b/k?retention`.
    PutObjectRetention: Object, act(&["s3:PutObjectRetention"]);
    /// `PUT /b/k?legal-hold`.
    PutObjectLegalHold: Object, act(&["s3:PutObjectLegalHold"]);
    /// `PUT /b/k` with `x-amz-copy-source`.
    CopyObject: Object, Access::CopyFrom("s3:PutObject");
    /// `PUT /b/k`.
    PutObject: Object, act(&["s3:PutObject"]);
    /// `DELETE /b/k?uploadId`.
    AbortMultipartUpload: Object, act(&["s3:AbortMultipartUpload"]);
    /// `DELETE /b/k?tagging`.
    DeleteObjectTagging: Object, act(&["s3:DeleteObjectTagging"]);
    /// `DELETE /b/k`.
    DeleteObject: Object, act(&["s3:DeleteObject"]);
    /// `POST /b/k?uploads`.
    CreateMultipartUpload: Object, act(&["s3:PutObject"]);
    /// `POST /b/k?uploadId`.
    CompleteMultipartUpload: Object, act(&["s3:PutObject"]);
}

/// Bucket sub-resources this gateway does not implement: answered with
/// `NotImplemented` rather than mistaken for another operation.
pub(crate) const UNSUPPORTED_BUCKET: &[&str] = &[
    "accelerate",
    "analytics",
    "intelligent-tiering",
    "inventory",
    "logging",
    "metrics",
    "publicAccessBlock",
    "requestPayment",
    "website",
    "replication",
    "notification",
];

/// What [`resolve`] reads of a request.
pub(crate) struct RequestView<'a> {
    pub method: &'a Method,
    pub has_bucket: bool,
    pub has_key: bool,
    pub query: &'a [(String, String)],
    pub copy_source: bool,
    pub form_upload: bool,
}

impl RequestView<'_> {
    fn has(&self, name: &str) -> bool {
        self.query.iter().any(|(n, _)| n == name)
    }

    fn q(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The operation of a request, or the error S3 answers for a method or
/// query that names none (`MethodNotAllowed`, an invalid `list-type`).
pub(crate) fn resolve(r: &RequestView<'_>) -> Result<Op, S3Error> {
    match (r.has_bucket, r.has_key) {
        (false, _) => match *r.method {
            Method::GET | Method::HEAD => Ok(Op::ListBuckets),
            _ => Err(S3Error::new("MethodNotAllowed")),
        },
        (true, false) => bucket_op(r),
        (true, true) => object_op(r),
    }
}

fn bucket_op(r: &RequestView<'_>) -> Result<Op, S3Error> {
    if UNSUPPORTED_BUCKET.iter().any(|s| r.has(s)) {
        return Ok(Op::UnsupportedBucketCall);
    }
    let op = match *r.method {
        Method::GET => {
            if r.has("location") {
                Op::GetBucketLocation
            } else if r.has("versioning") {
                Op::GetBucketVersioning
            } else if r.has("uploads") {
                Op::ListMultipartUploads
            } else if r.has("versions") {
                Op::ListObjectVersions
            } else if r.has("policy") {
                Op::GetBucketPolicy
            } else if r.has("policyStatus") {
                Op::GetBucketPolicyStatus
            } else if r.has("object-lock") {
                Op::GetObjectLockConfiguration
            } else if r.has("encryption") {
                Op::GetBucketEncryption
            } else if r.has("tagging") {
                Op::GetBucketTagging
            } else if r.has("lifecycle") {
                Op::GetBucketLifecycle
            } else if r.has("cors") {
                Op::GetBucketCors
            } else if r.has("acl") {
                Op::GetBucketAcl
            } else if r.has("ownershipControls") {
                Op::GetBucketOwnershipControls
            } else {
                match r.q("list-type") {
                    Some("2") => Op::ListObjectsV2,
                    Some(t) => {
                        return Err(S3Error::invalid_argument(
                            "Invalid list type",
                            "list-type",
                            t,
                        ));
                    }
                    None => Op::ListObjects,
                }
            }
        }
        Method::HEAD => Op::HeadBucket,
        Method::PUT => {
            if r.has("versioning") {
                Op::PutBucketVersioning
            } else if r.has("encryption") {
                Op::PutBucketEncryption
            } else if r.has("tagging") {
                Op::PutBucketTagging
            } else if r.has("policy") {
                Op::PutBucketPolicy
            } else if r.has("lifecycle") {
                Op::PutBucketLifecycle
            } else if r.has("cors") {
                Op::PutBucketCors
            } else if r.has("object-lock") {
                Op::PutObjectLockConfiguration
            } else if r.has("acl") {
                Op::PutBucketAcl
            } else if r.has("ownershipControls") {
                Op::PutBucketOwnershipControls
            } else if r.has("policyStatus") {
                Op::UnsupportedBucketCall
            } else {
                Op::CreateBucket
            }
        }
        Method::DELETE => {
            if r.has("encryption") {
                Op::DeleteBucketEncryption
            } else if r.has("tagging") {
                Op::DeleteBucketTagging
            } else if r.has("policy") {
                Op::DeleteBucketPolicy
            } else if r.has("lifecycle") {
                Op::DeleteBucketLifecycle
            } else if r.has("cors") {
                Op::DeleteBucketCors
            } else if r.has("policyStatus") || r.has("ownershipControls") {
                Op::UnsupportedBucketCall
            } else {
                Op::DeleteBucket
            }
        }
        Method::POST => {
            if r.has("delete") {
                Op::DeleteObjects
            } else if r.form_upload {
                Op::PostObject
            } else {
                Op::UnsupportedBucketCall
            }
        }
        _ => return Err(S3Error::new("MethodNotAllowed")),
    };
    Ok(op)
}

fn object_op(r: &RequestView<'_>) -> Result<Op, S3Error> {
    let op = match *r.method {
        Method::GET => {
            if r.has("uploadId") {
                Op::ListParts
            } else if r.has("acl") {
                Op::GetObjectAcl
            } else if r.has("tagging") {
                Op::GetObjectTagging
            } else if r.has("attributes") {
                Op::GetObjectAttributes
            } else if r.has("retention") {
                Op::GetObjectRetention
            } else if r.has("legal-hold") {
                Op::GetObjectLegalHold
            } else {
                Op::GetObject
            }
        }
        Method::HEAD => Op::HeadObject,
        Method::PUT => {
            if r.has("uploadId") || r.has("partNumber") {
                if r.copy_source {
                    Op::UploadPartCopy
                } else {
                    Op::UploadPart
                }
            } else if r.has("tagging") {
                Op::PutObjectTagging
            } else if r.has("acl") {
                Op::PutObjectAcl
            } else if r.has("retention") {
                Op::PutObjectRetention
            } else if r.has("legal-hold") {
                Op::PutObjectLegalHold
            } else if r.copy_source {
                Op::CopyObject
            } else {
                Op::PutObject
            }
        }
        Method::DELETE => {
            if r.has("uploadId") {
                Op::AbortMultipartUpload
            } else if r.has("tagging") {
                Op::DeleteObjectTagging
            } else {
                Op::DeleteObject
            }
        }
        Method::POST => {
            if r.has("uploads") {
                Op::CreateMultipartUpload
            } else if r.has("uploadId") {
                Op::CompleteMultipartUpload
            } else {
                return Err(S3Error::new("MethodNotAllowed"));
            }
        }
        _ => return Err(S3Error::new("MethodNotAllowed")),
    };
    Ok(op)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request of each operation: (method, bucket, key, query, copy
    /// source, form upload).
    fn sample(op: Op) -> (Method, bool, bool, &'static str, bool, bool) {
        use Op::*;
        let (m, target_q): (Method, &str) = match op {
            ListBuckets => (Method::GET, ""),
            GetBucketLocation => (Method::GET, "location"),
            GetBucketVersioning => (Method::GET, "versioning"),
            ListMultipartUploads => (Method::GET, "uploads"),
            ListObjectVersions => (Method::GET, "versions"),
            GetBucketPolicy => (Method::GET, "policy"),
            GetBucketPolicyStatus => (Method::GET, "policyStatus"),
            GetObjectLockConfiguration => (Method::GET, "object-lock"),
            GetBucketEncryption => (Method::GET, "encryption"),
            GetBucketTagging => (Method::GET, "tagging"),
            GetBucketLifecycle => (Method::GET, "lifecycle"),
            GetBucketCors => (Method::GET, "cors"),
            GetBucketAcl => (Method::GET, "acl"),
            GetBucketOwnershipControls => (Method::GET, "ownershipControls"),
            PutBucketOwnershipControls => (Method::PUT, "ownershipControls"),
            ListObjectsV2 => (Method::GET, "list-type=2"),
            ListObjects => (Method::GET, ""),
            HeadBucket => (Method::HEAD, ""),
            PutBucketVersioning => (Method::PUT, "versioning"),
            PutBucketEncryption => (Method::PUT, "encryption"),
            PutBucketTagging => (Method::PUT, "tagging"),
            PutBucketPolicy => (Method::PUT, "policy"),
            PutBucketLifecycle => (Method::PUT, "lifecycle"),
            PutBucketCors => (Method::PUT, "cors"),
            PutObjectLockConfiguration => (Method::PUT, "object-lock"),
            PutBucketAcl => (Method::PUT, "acl"),
            CreateBucket => (Method::PUT, ""),
            DeleteBucketEncryption => (Method::DELETE, "encryption"),
            DeleteBucketTagging => (Method::DELETE, "tagging"),
            DeleteBucketPolicy => (Method::DELETE, "policy"),
            DeleteBucketLifecycle => (Method::DELETE, "lifecycle"),
            DeleteBucketCors => (Method::DELETE, "cors"),
            DeleteBucket => (Method::DELETE, ""),
            DeleteObjects => (Method::POST, "delete"),
            PostObject => (Method::POST, ""),
            UnsupportedBucketCall => (Method::GET, "website"),
            ListParts => (Method::GET, "uploadId=u"),
            GetObjectAcl => (Method::GET, "acl"),
            GetObjectTagging => (Method::GET, "tagging"),
            GetObjectAttributes => (Method::GET, "attributes"),
            GetObjectRetention => (Method::GET, "retention"),
            GetObjectLegalHold => (Method::GET, "legal-hold"),
            GetObject => (Method::GET, ""),
            HeadObject => (Method::HEAD, ""),
            UploadPartCopy | UploadPart => (Method::PUT, "partNumber=1&uploadId=u"),
            PutObjectTagging => (Method::PUT, "tagging"),
            PutObjectAcl => (Method::PUT, "acl"),
            PutObjectRetention => (Method::PUT, "retention"),
            PutObjectLegalHold => (Method::PUT, "legal-hold"),
            CopyObject | PutObject => (Method::PUT, ""),
            AbortMultipartUpload => (Method::DELETE, "uploadId=u"),
            DeleteObjectTagging => (Method::DELETE, "tagging"),
            DeleteObject => (Method::DELETE, ""),
            CreateMultipartUpload => (Method::POST, "uploads"),
            CompleteMultipartUpload => (Method::POST, "uploadId=u"),
        };
        let target = op.target();
        (
            m,
            target != Target::Service,
            target == Target::Object,
            target_q,
            matches!(op, UploadPartCopy | CopyObject),
            op == PostObject,
        )
    }

    fn query(q: &str) -> Vec<(String, String)> {
        q.split('&')
            .filter(|s| !s.is_empty())
            .map(|s| {
                let (n, v) = s.split_once('=').unwrap_or((s, ""));
                (n.to_owned(), v.to_owned())
            })
            .collect()
    }

    #[test]
    fn every_operation_is_reached_by_its_request() {
        for &op in Op::ALL {
            let (method, has_bucket, has_key, q, copy_source, form_upload) = sample(op);
            let query = query(q);
            let view = RequestView {
                method: &method,
                has_bucket,
                has_key,
                query: &query,
                copy_source,
                form_upload,
            };
            assert_eq!(resolve(&view).ok(), Some(op), "{method} {q}");
        }
    }

    #[test]
    fn every_operation_is_authorised_by_s3_actions_or_refused() {
        let mut names = std::collections::HashSet::new();
        for &op in Op::ALL {
            assert!(names.insert(op.name()), "{} twice", op.name());
            let actions: Vec<&str> = match op.access() {
                Access::Actions(a) => a.to_vec(),
                Access::CopyFrom(a) | Access::PerObject(a) | Access::PostForm(a) => vec![a],
                Access::NotImplemented => {
                    assert_eq!(op, Op::UnsupportedBucketCall);
                    continue;
                }
            };
            assert!(!actions.is_empty(), "{op:?}");
            for a in actions {
                assert!(
                    a.starts_with("s3:") && a.len() > 3 && !a.contains('*'),
                    "{op:?}: {a}"
                );
            }
        }
    }

    #[test]
    fn unknown_methods_and_list_types_are_refused() {
        for (method, has_key, q, code) in [
            (Method::PATCH, false, "", "MethodNotAllowed"),
            (Method::PATCH, true, "", "MethodNotAllowed"),
            (Method::POST, true, "", "MethodNotAllowed"),
            (Method::GET, false, "list-type=3", "InvalidArgument"),
        ] {
            let query = query(q);
            let view = RequestView {
                method: &method,
                has_bucket: true,
                has_key,
                query: &query,
                copy_source: false,
                form_upload: false,
            };
            assert_eq!(resolve(&view).unwrap_err().code, code, "{method} {q}");
        }
        let none = Vec::new();
        let put_root = RequestView {
            method: &Method::PUT,
            has_bucket: false,
            has_key: false,
            query: &none,
            copy_source: false,
            form_upload: false,
        };
        assert_eq!(resolve(&put_root).unwrap_err().code, "MethodNotAllowed");
    }
}
