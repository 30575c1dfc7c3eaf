//! The server of the S3 API tests: `tessera server` on a free port over
//! fresh drive directories, with the tests' root credentials.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;

use aws_sdk_s3::Client;

use super::daemon::{Daemon, drive_dirs, tessera};
use super::s3::s3_client_trusting;

pub const ACCESS_KEY: &str = "tessera-test";
pub const SECRET_KEY: &str = "tessera-test-secret";

/// A running `tessera server` (a [`Daemon`]: killed on drop) and the
/// directory holding its drives.
pub struct Server {
    daemon: Daemon,
    pub dirs: Vec<PathBuf>,
    _tmp: tempfile::TempDir,
}

impl Deref for Server {
    type Target = Daemon;

    fn deref(&self) -> &Daemon {
        &self.daemon
    }
}

impl DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Daemon {
        &mut self.daemon
    }
}

impl Server {
    /// A server over `drives` fresh directories.
    pub fn start(drives: usize) -> Server {
        Server::start_with_env(drives, &[])
    }

    /// A server with extra environment variables.
    pub fn start_with_env(drives: usize, vars: &[(&str, &str)]) -> Server {
        Server::start_args(drives, vars, &[])
    }

    /// A server over HTTPS with a fresh self-signed certificate for
    /// `127.0.0.1` and `localhost`; also returns the certificate (PEM) to
    /// trust.
    pub fn start_tls(drives: usize) -> (Server, String) {
        let ck = rcgen::generate_simple_self_signed(vec![
            "127.0.0.1".to_owned(),
            "localhost".to_owned(),
        ])
        .unwrap();
        let pem = ck.cert.pem();
        let key = ck.signing_key.serialize_pem();
        let srv = Server::start_args(drives, &[], &[("public.crt", &pem), ("private.key", &key)]);
        (srv, pem)
    }

    /// A server with extra environment variables and, if `certs` names
    /// files, a certificates directory holding them.
    fn start_args(drives: usize, vars: &[(&str, &str)], certs: &[(&str, &str)]) -> Server {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dirs = drive_dirs(tmp.path(), drives);
        let mut cmd = tessera(tmp.path());
        cmd.arg("server").arg("--address").arg("127.0.0.1:0");
        if !certs.is_empty() {
            let dir = tmp.path().join("certs");
            std::fs::create_dir_all(&dir).unwrap();
            for (name, pem) in certs {
                std::fs::write(dir.join(name), pem).unwrap();
            }
            cmd.arg("--certs-dir").arg(dir);
        }
        cmd.args(&dirs)
            .env("TESSERA_ROOT_USER", ACCESS_KEY)
            .env("TESSERA_ROOT_PASSWORD", SECRET_KEY)
            .envs(vars.iter().copied());
        Server {
            daemon: Daemon::start(cmd),
            dirs,
            _tmp: tmp,
        }
    }

    /// A client with the SDK's default settings.
    pub fn client(&self) -> Client {
        self.client_with(ACCESS_KEY, SECRET_KEY)
    }

    /// A client signing with other credentials.
    pub fn client_with(&self, access: &str, secret: &str) -> Client {
        s3_client_trusting(&self.endpoint, access, secret, None)
    }

    /// A client that trusts only `ca` (PEM), for HTTPS servers.
    pub fn client_tls(&self, ca: &str) -> Client {
        s3_client_trusting(&self.endpoint, ACCESS_KEY, SECRET_KEY, Some(ca))
    }
}
