//! Credentials: what an access key stands for (its secret key, its session
//! token when the credentials are temporary, and the principal the request
//! acts as), and where they are looked up.

use std::collections::HashMap;
use std::fmt;

/// A secret access key. `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey(String);

impl Drop for SecretKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

impl SecretKey {
    /// Wraps a secret access key.
    pub fn new(secret: impl Into<String>) -> Self {
        SecretKey(secret.into())
    }

    /// The secret itself, for key derivation.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

/// Who a request acts as once its signature is verified: the user (or
/// service account) that owns the access key. Authorization (bucket
/// policies, IAM) is decided on this name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(String);

impl Principal {
    /// A principal named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Principal(name.into())
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

/// What an access key resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The secret key that signs.
    pub secret_key: SecretKey,
    /// The session token temporary credentials must present
    /// (`x-amz-security-token`); `None` for long-term keys, which must not
    /// present one.
    pub session_token: Option<String>,
    /// Who the request acts as.
    pub principal: Principal,
}

impl Credentials {
    /// Long-term credentials: a secret key and the principal it stands for.
    pub fn new(secret_key: impl Into<String>, principal: Principal) -> Self {
        Credentials {
            secret_key: SecretKey::new(secret_key),
            session_token: None,
            principal,
        }
    }

    /// The same credentials, made temporary with `token`.
    pub fn with_session_token(mut self, token: impl Into<String>) -> Self {
        self.session_token = Some(token.into());
        self
    }
}

/// Looks access keys up. Implementations must answer from memory (the
/// verifier calls this on every request, on an executor thread).
pub trait CredentialsProvider: Send + Sync {
    /// The credentials of `access_key`, or `None` if there is no such key.
    fn lookup(&self, access_key: &str) -> Option<Credentials>;
}

/// A fixed set of credentials, such as the root user's.
#[derive(Debug, Clone, Default)]
pub struct StaticCredentials {
    keys: HashMap<String, Credentials>,
}

impl StaticCredentials {
    /// An empty set: every access key is unknown.
    pub fn new() -> Self {
        StaticCredentials::default()
    }

    /// Adds (or replaces) `access_key`.
    pub fn insert(&mut self, access_key: impl Into<String>, credentials: Credentials) {
        self.keys.insert(access_key.into(), credentials);
    }

    /// Whether `access_key` is one of these (without copying its secret).
    pub fn contains(&self, access_key: &str) -> bool {
        self.keys.contains_key(access_key)
    }

    /// Builder form of [`insert`](Self::insert).
    pub fn with(mut self, access_key: impl Into<String>, credentials: Credentials) -> Self {
        self.insert(access_key, credentials);
        self
    }
}

impl CredentialsProvider for StaticCredentials {
    fn lookup(&self, access_key: &str) -> Option<Credentials> {
        self.keys.get(access_key).cloned()
    }
}

impl<P: CredentialsProvider + ?Sized> CredentialsProvider for std::sync::Arc<P> {
    fn lookup(&self, access_key: &str) -> Option<Credentials> {
        (**self).lookup(access_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn static_credentials_look_keys_up() {
        let root = Credentials::new("secret", Principal::new("root"));
        let temp = Credentials::new("other", Principal::new("app")).with_session_token("tok");
        let creds = StaticCredentials::new()
            .with("AKIAROOT", root.clone())
            .with("ASIATEMP", temp.clone());
        assert_eq!(creds.lookup("AKIAROOT"), Some(root));
        assert_eq!(
            creds.lookup("ASIATEMP").unwrap().session_token.as_deref(),
            Some("tok")
        );
        assert_eq!(creds.lookup("akiaroot"), None);
        let mut creds = creds;
        creds.insert(
            "AKIAROOT",
            Credentials::new("rotated", Principal::new("root")),
        );
        assert_eq!(
            creds.lookup("AKIAROOT").unwrap().secret_key.expose(),
            "rotated"
        );
        let shared: Arc<dyn CredentialsProvider> = Arc::new(creds);
        assert_eq!(shared.lookup("ASIATEMP"), Some(temp));
        assert_eq!(shared.lookup("nobody"), None);
    }

    #[test]
    fn secrets_do_not_print() {
        let c = Credentials::new(
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            Principal::new("p"),
        );
        let printed = format!("{c:?}");
        assert!(!printed.contains("wJalr"), "{printed}");
        assert_eq!(
            c.secret_key.expose(),
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        );
        assert_eq!(c.principal.name(), "p");
    }
}
