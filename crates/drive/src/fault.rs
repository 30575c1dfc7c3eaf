//! Fault injection for the fault-injection test suites (cargo feature
//! `fault-injection`, off in release builds): every operation that a
//! [`DeadlineDrive`](crate::DeadlineDrive) runs, and its recovery probe,
//! first looks up a control file for its drive and hangs or fails with
//! `EIO` as the file says.
//!
//! `TESSERA_FAULT_DIR` names the control directory (read once); the control
//! file of a drive is its label (its path) with every `/` replaced by `_`.
//! Content `hang`: the operation waits while the file says so (so the
//! drive's deadline cuts it short); `eio`: it fails as a disk I/O error
//! would; anything else, or no file: it runs normally.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use crate::error::{DriveError, Result};

/// Longest control file read (the words are short).
const MAX_CONTROL_BYTES: u64 = 64;
/// How often a hung operation looks whether its fault was lifted.
const HANG_POLL: Duration = Duration::from_millis(50);

#[derive(Debug, PartialEq, Eq)]
enum Fault {
    Hang,
    Eio,
}

fn control_dir() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        std::env::var_os("TESSERA_FAULT_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
    .as_ref()
}

fn current(label: &str) -> Option<Fault> {
    use std::io::Read;
    let path = control_dir()?.join(label.replace('/', "_"));
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_CONTROL_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    match text.trim() {
        "hang" => Some(Fault::Hang),
        "eio" => Some(Fault::Eio),
        _ => None,
    }
}

/// Applies the fault the control file sets for the drive `label`, if any.
pub(crate) async fn inject(label: &str) -> Result<()> {
    loop {
        match current(label) {
            None => return Ok(()),
            Some(Fault::Eio) => {
                return Err(DriveError::Io {
                    op: "injected fault",
                    source: std::io::Error::from_raw_os_error(libc::EIO),
                });
            }
            Some(Fault::Hang) => tokio::time::sleep(HANG_POLL).await,
        }
    }
}
