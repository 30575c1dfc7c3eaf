//! IAM documents at rest as MinIO keeps them: in the clear without a KMS;
//! with one, sealed per document under a data key bound to the document's
//! path ([`sse::config`]). Reading takes either, so drives of a MinIO with
//! or without a KMS serve as they are, and documents of older MinIO
//! releases sealed with the root credentials (a madmin payload under
//! `<access key>:<secret key>`) open too.

use std::sync::Arc;

use super::{Iam, IamError};

impl Iam {
    /// The document at `path` in clear, `None` when there is none or it
    /// cannot be opened (logged with why: the identity it holds is then
    /// missing, never guessed).
    pub(super) async fn read_doc(&self, path: &str) -> Result<Option<Vec<u8>>, IamError> {
        let Some(bytes) = self.layer.read_config(path).await? else {
            return Ok(None);
        };
        if std::str::from_utf8(&bytes).is_ok() {
            return Ok(Some(bytes));
        }
        match self.open_doc(path, bytes).await {
            Ok(plain) => Ok(Some(plain)),
            Err(why) => {
                tracing::warn!(%path, "IAM document skipped: {why}");
                Ok(None)
            }
        }
    }

    async fn open_doc(&self, path: &str, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
        if sse::config::is_encrypted(&bytes) {
            let Some(kms) = &self.kms else {
                return Err(format!(
                    "encrypted by MinIO with the KMS key {:?}: set TESSERA_KMS_SECRET_KEY to that key",
                    sse::config::key_id_of(&bytes).unwrap_or_default()
                ));
            };
            return sse::config::decrypt(kms.as_ref(), &sse::config::context_for(path), &bytes)
                .or_else(|_| {
                    sse::config::decrypt(
                        kms.as_ref(),
                        &sse::config::legacy_context_for(path),
                        &bytes,
                    )
                })
                .map_err(|e| format!("does not decrypt with the configured KMS key: {e}"));
        }
        if sse::madmin::is_encrypted(&bytes) {
            let password = self.root_password().ok_or("no root user")?;
            // Argon2id: a blocking thread, as for admin payloads.
            return tokio::task::spawn_blocking(move || {
                sse::madmin::decrypt(password.as_bytes(), &bytes)
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("sealed, but not with the root credentials: {e}"));
        }
        Err("neither JSON nor an encrypted document".into())
    }

    /// `<access key>:<secret key>` of the root user, the password older
    /// MinIO releases sealed IAM documents with.
    fn root_password(&self) -> Option<String> {
        let secret = self.root_secret(&self.root_key)?;
        Some(format!("{}:{secret}", self.root_key))
    }

    /// `plain` as stored at `path`: sealed when a KMS is configured.
    pub(super) fn seal_doc(&self, path: &str, plain: Vec<u8>) -> Result<Vec<u8>, IamError> {
        let Some(kms) = &self.kms else {
            return Ok(plain);
        };
        let random = crate::encryption::random::<60>().map_err(|e| IamError::Storage(e.message))?;
        let nonce = crate::encryption::random::<{ sse::madmin::NONCE_LEN }>()
            .map_err(|e| IamError::Storage(e.message))?;
        sse::config::encrypt(
            kms.as_ref(),
            &sse::config::context_for(path),
            &random,
            nonce,
            &plain,
        )
        .map_err(|e| IamError::Storage(format!("sealing {path}: {e}")))
    }
}

/// The KMS IAM documents are sealed with, if any.
pub type DocKms = Option<Arc<dyn sse::kms::Kms>>;
