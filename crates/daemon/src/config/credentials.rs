//! Secrets: the root credentials (MinIO's rules, each value from its
//! variable or from a `*_FILE`, Docker and Kubernetes secrets included) and
//! the static KMS key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ConfigError, Env, err};
use crate::cli::{self, EnvVar};

/// The first-try credentials, as MinIO's.
pub const DEFAULT_USER: &str = "minioadmin";
pub const DEFAULT_PASSWORD: &str = "minioadmin";

/// Where the root credentials came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// Nothing configured: minioadmin:minioadmin.
    Default,
    /// The variables they were read from.
    Env {
        user: &'static str,
        password: &'static str,
        /// The file the password was read from (`*_FILE` variables).
        password_file: Option<PathBuf>,
    },
}

/// The root credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
    pub source: CredentialSource,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Whether these are the well-known first-try credentials.
    pub fn is_default(&self) -> bool {
        self.user == DEFAULT_USER && self.password == DEFAULT_PASSWORD
    }
}

/// The root credentials from the environment (MinIO's rules: both or
/// neither, user at least 3 characters without `=` or `,`, password at
/// least 8).
pub fn credentials(env: &Env, warnings: &mut Vec<String>) -> Result<Credentials, ConfigError> {
    let user = secret(env, &cli::ROOT_USER, &cli::ROOT_USER_FILE)?;
    let password = secret(env, &cli::ROOT_PASSWORD, &cli::ROOT_PASSWORD_FILE)?;
    let password_file = password.as_ref().and_then(|p| p.2.clone());
    let user = user.map(|(v, n, _)| (v, n));
    let password = password.map(|(v, n, _)| (v, n));
    let (user, password) = match (user, password) {
        (None, None) => {
            return Ok(Credentials {
                user: DEFAULT_USER.to_owned(),
                password: DEFAULT_PASSWORD.to_owned(),
                source: CredentialSource::Default,
            });
        }
        (Some((_, n)), None) => {
            return err(format!(
                "{n} is set but the root password is not: set TESSERA_ROOT_PASSWORD (or \
                 MINIO_ROOT_PASSWORD) too"
            ));
        }
        (None, Some((_, n))) => {
            return err(format!(
                "{n} is set but the root user is not: set TESSERA_ROOT_USER (or \
                 MINIO_ROOT_USER) too"
            ));
        }
        (Some(u), Some(p)) => (u, p),
    };
    for (name, deprecated) in [
        (user.1, "MINIO_ACCESS_KEY"),
        (password.1, "MINIO_SECRET_KEY"),
    ] {
        if name == deprecated {
            warnings.push(format!(
                "{deprecated} is deprecated; use TESSERA_ROOT_USER and TESSERA_ROOT_PASSWORD"
            ));
        }
    }
    if user.0.chars().count() < 3 {
        return err(format!(
            "{}: the root user must be at least 3 characters long",
            user.1
        ));
    }
    if user.0.contains(['=', ',']) {
        return err(format!(
            "{}: the root user must not contain '=' or ','",
            user.1
        ));
    }
    if user
        .0
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '/')
    {
        return err(format!(
            "{}: the root user must not contain spaces, '/' or control characters",
            user.1
        ));
    }
    if password.0.chars().count() < 8 {
        return err(format!(
            "{}: the root password must be at least 8 characters long",
            password.1
        ));
    }
    if password.0.chars().any(char::is_control) {
        return err(format!(
            "{}: the root password must not contain control characters",
            password.1
        ));
    }
    Ok(Credentials {
        user: user.0,
        password: password.0,
        source: CredentialSource::Env {
            user: user.1,
            password: password.1,
            password_file,
        },
    })
}

/// A secret's value, the variable it came from, and the file it was read
/// from (for `*_FILE` variables).
type Secret = (String, &'static str, Option<PathBuf>);

/// A secret from `var` or from the file named by `file_var`, in the order
/// Tessera's name, its file, then each MinIO name and its file. A relative
/// file name is looked up in `/run/secrets` (Docker and Kubernetes secrets)
/// first. Surrounding white space of the file is dropped.
fn secret(env: &Env, var: &EnvVar, file_var: &EnvVar) -> Result<Option<Secret>, ConfigError> {
    let names = std::iter::once(var.name).chain(var.aliases.iter().copied());
    let files = std::iter::once(file_var.name).chain(file_var.aliases.iter().copied());
    for (name, file_name) in names.zip(files) {
        if let Some(v) = env.raw(name) {
            return Ok(Some((v.to_owned(), name, None)));
        }
        let Some(path) = env.raw(file_name) else {
            continue;
        };
        let mut p = PathBuf::from(path);
        if p.is_relative() {
            let in_secrets = Path::new("/run/secrets").join(&p);
            if in_secrets.is_file() {
                p = in_secrets;
            }
        }
        let bytes = std::fs::read(&p)
            .map_err(|e| ConfigError(format!("{file_name}={path}: cannot read: {e}")))?;
        if bytes.len() > 4096 {
            return err(format!("{file_name}={path}: more than 4 KiB"));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| ConfigError(format!("{file_name}={path}: not UTF-8 text")))?;
        return Ok(Some((text.trim().to_owned(), file_name, Some(p))));
    }
    Ok(None)
}

/// The static KMS key (`NAME:BASE64`), from its variable or the file its
/// `*_FILE` variable names, if configured.
pub fn kms(env: &Env) -> Result<Option<Arc<dyn sse::kms::Kms>>, ConfigError> {
    let kms_text = match env.get(&cli::KMS_SECRET_KEY) {
        Some((v, name)) => Some((v, name)),
        None => match env.get(&cli::KMS_SECRET_KEY_FILE) {
            Some((path, name)) => Some((
                std::fs::read_to_string(path.trim())
                    .map_err(|e| ConfigError(format!("{name}='{path}': {e}")))?
                    .trim()
                    .to_owned(),
                name,
            )),
            None => None,
        },
    };
    Ok(match kms_text {
        None => None,
        Some((v, name)) => {
            Some(Arc::new(sse::kms::StaticKms::parse(v.trim()).map_err(|e| {
                ConfigError(format!("{name}: {e} (expected NAME:BASE64-OF-32-BYTES)"))
            })?) as Arc<dyn sse::kms::Kms>)
        }
    })
}
