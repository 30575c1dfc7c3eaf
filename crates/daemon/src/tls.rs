//! HTTPS: the certificates directory in MinIO's layout (`public.crt`,
//! `private.key`, `CAs/`), a rustls configuration offering HTTP/2 and
//! HTTP/1.1 by ALPN, and a certificate resolver whose key pair is swapped in
//! place on reload (SIGHUP), so connections already open keep theirs.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

pub const PUBLIC_CERT: &str = "public.crt";
pub const PRIVATE_KEY: &str = "private.key";
pub const CAS_DIR: &str = "CAs";

/// What TLS the server runs with.
pub enum TlsSetup {
    /// No certificate pair in the directory: plain HTTP.
    Disabled,
    /// HTTPS with the pair of `dir`.
    Enabled(Arc<TlsState>),
}

/// The live TLS state: the directory and the swappable key pair.
pub struct TlsState {
    pub dir: PathBuf,
    pub resolver: Arc<ReloadingResolver>,
    pub config: Arc<rustls::ServerConfig>,
    /// Certificates found in `CAs/`.
    pub ca_count: usize,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Loads the certificate chain and key of `dir`, checking that they match.
pub fn load_pair(dir: &Path) -> Result<CertifiedKey, String> {
    let cert_path = dir.join(PUBLIC_CERT);
    let key_path = dir.join(PRIVATE_KEY);
    let cert_pem =
        std::fs::read(&cert_path).map_err(|e| format!("reading {}: {e}", cert_path.display()))?;
    let key_pem =
        std::fs::read(&key_path).map_err(|e| format!("reading {}: {e}", key_path.display()))?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: not a PEM certificate chain: {e}", cert_path.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "{}: no CERTIFICATE block found",
            cert_path.display()
        ));
    }
    if String::from_utf8_lossy(&key_pem).contains("ENCRYPTED") {
        return Err(format!(
            "{}: encrypted private keys are not supported; decrypt it (openssl pkey -in \
             private.key -out private.key)",
            key_path.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        format!(
            "{}: no usable PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC): {e}",
            key_path.display()
        )
    })?;
    CertifiedKey::from_der(chain, key, &provider()).map_err(|e| {
        format!(
            "{} and {} do not make a usable pair: {e}",
            cert_path.display(),
            key_path.display()
        )
    })
}

/// The TLS client configuration a cluster node calls its peers with: it
/// trusts the certificates of `CAs/` and this node's own `public.crt` chain
/// (a cluster often shares one certificate, or one CA, across its nodes),
/// and speaks HTTP/2.
pub fn node_client_config(dir: &Path) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    let mut pems = vec![dir.join(PUBLIC_CERT)];
    if let Ok(entries) = std::fs::read_dir(dir.join(CAS_DIR)) {
        pems.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    for path in pems {
        let pem = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert =
                cert.map_err(|e| format!("{}: not a PEM certificate: {e}", path.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("{}: not a usable trust anchor: {e}", path.display()))?;
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// Counts the certificates of `CAs/` (each file may hold several), failing
/// on a file that is not PEM.
fn load_cas(dir: &Path) -> Result<usize, String> {
    let cas = dir.join(CAS_DIR);
    let entries = match std::fs::read_dir(&cas) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(format!("reading {}: {e}", cas.display())),
    };
    let mut count = 0;
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", cas.display()))?;
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let pem = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}: not a PEM certificate: {e}", path.display()))?;
        count += certs.len();
    }
    Ok(count)
}

/// Sets TLS up from `dir`: plain HTTP when it holds neither `public.crt`
/// nor `private.key`; an error when it holds one of them only, or a pair
/// that does not load.
pub fn setup(dir: Option<&Path>, explicit: bool) -> Result<TlsSetup, String> {
    let Some(dir) = dir else {
        return Ok(TlsSetup::Disabled);
    };
    if !dir.exists() {
        if explicit {
            return Err(format!(
                "certificates directory {} does not exist",
                dir.display()
            ));
        }
        return Ok(TlsSetup::Disabled);
    }
    let has_cert = dir.join(PUBLIC_CERT).exists();
    let has_key = dir.join(PRIVATE_KEY).exists();
    match (has_cert, has_key) {
        (false, false) => return Ok(TlsSetup::Disabled),
        (true, false) => {
            return Err(format!(
                "{} has {PUBLIC_CERT} but no {PRIVATE_KEY}",
                dir.display()
            ));
        }
        (false, true) => {
            return Err(format!(
                "{} has {PRIVATE_KEY} but no {PUBLIC_CERT}",
                dir.display()
            ));
        }
        (true, true) => {}
    }
    let pair = load_pair(dir)?;
    let ca_count = load_cas(dir)?;
    let resolver = Arc::new(ReloadingResolver::new(pair));
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(resolver.clone());
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsSetup::Enabled(Arc::new(TlsState {
        dir: dir.to_owned(),
        resolver,
        config: Arc::new(config),
        ca_count,
    })))
}

impl TlsState {
    /// Reloads the pair from the directory; on failure the current pair
    /// stays in use.
    pub fn reload(&self) -> Result<(), String> {
        let pair = load_pair(&self.dir)?;
        self.resolver.replace(pair);
        Ok(())
    }
}

/// Hands out the current key pair; [`replace`](Self::replace) swaps it for
/// new handshakes only.
pub struct ReloadingResolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ReloadingResolver {
    pub fn new(pair: CertifiedKey) -> Self {
        ReloadingResolver {
            current: RwLock::new(Arc::new(pair)),
        }
    }

    pub fn replace(&self, pair: CertifiedKey) {
        let mut slot = self.current.write().unwrap_or_else(|p| p.into_inner());
        *slot = Arc::new(pair);
    }

    fn get(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl fmt::Debug for ReloadingResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingResolver")
            .field("chain_len", &self.get().cert.len())
            .finish()
    }
}

impl ResolvesServerCert for ReloadingResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }
}
