//! MinIO's bucket quota calls (`mc quota set|info|clear`):
//! `PUT /minio/admin/v3/set-bucket-quota?bucket=B` with MinIO's quota JSON
//! (plain, not sealed), `GET /minio/admin/v3/get-bucket-quota?bucket=B`.
//! The root user, or a user allowed `admin:SetBucketQuota` /
//! `admin:GetBucketQuota`, may call them.

use bytes::Bytes;
use http::{Method, Response};
use http_body::Body;
use object::layer::quota::BucketQuota;

use super::iam::{ok_empty, required};
use super::json_response;
use crate::authz::Requester;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway, ResponseBody};

/// A quota call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaCall {
    /// `PUT .../set-bucket-quota`.
    Set,
    /// `GET .../get-bucket-quota`.
    Get,
}

impl QuotaCall {
    /// The quota call `method` and `path` name, if any.
    pub fn route(method: &Method, path: &str) -> Option<QuotaCall> {
        match (method, path) {
            (&Method::PUT, "/minio/admin/v3/set-bucket-quota") => Some(QuotaCall::Set),
            (&Method::GET, "/minio/admin/v3/get-bucket-quota") => Some(QuotaCall::Get),
            _ => None,
        }
    }
}

fn not_configured() -> S3Error {
    let mut e = S3Error::with_message(
        "XMinioAdminNoSuchQuotaConfiguration",
        "The quota configuration does not exist",
    );
    e.status = http::StatusCode::NOT_FOUND;
    e
}

impl Gateway {
    pub(crate) async fn serve_quota<B>(
        &self,
        ctx: &mut Ctx<B>,
        call: QuotaCall,
    ) -> Result<Response<ResponseBody>, S3Error>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        let api = match call {
            QuotaCall::Set => "SetBucketQuotaConfig",
            QuotaCall::Get => "GetBucketQuotaConfig",
        };
        let who = self.begin_admin(ctx, api).await?;
        let action = match call {
            QuotaCall::Set => "admin:SetBucketQuota",
            QuotaCall::Get => "admin:GetBucketQuota",
        };
        match &who {
            Requester::Owner => {}
            Requester::User(id) if crate::authz::admin_allowed(id, action) => {}
            _ => return Err(S3Error::new("AccessDenied")),
        }
        let body = crate::handlers::read_small_body(self, ctx).await?;
        let bucket = required(ctx, "bucket")?.to_owned();
        self.layer.head_bucket(&bucket).await?;
        match call {
            QuotaCall::Set => {
                let quota = BucketQuota::parse(&body)
                    .map_err(|why| S3Error::with_message("XMinioAdminInvalidArgument", why))?;
                self.layer.set_bucket_quota(&bucket, Some(quota)).await?;
                Ok(ok_empty())
            }
            QuotaCall::Get => {
                let limit = self
                    .layer
                    .bucket_quota(&bucket)
                    .await?
                    .ok_or_else(not_configured)?;
                Ok(json_response(
                    BucketQuota { size: limit }.to_json().into_bytes(),
                ))
            }
        }
    }
}
