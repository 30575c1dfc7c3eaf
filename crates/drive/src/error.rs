//! Errors of the drive layer.

use std::io;
use std::time::Duration;

use crate::format::FormatError;

/// Result alias of the drive layer.
pub type Result<T, E = DriveError> = std::result::Result<T, E>;

/// Everything a drive operation can fail with.
///
/// The "expected" outcomes (a missing file, a full drive, a bad path) have
/// their own variants so the object layer can count them towards quorum
/// decisions; only [`DriveError::is_fault`] errors say something about the
/// health of the drive itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriveError {
    /// A volume or path was refused before touching the disk: empty, `.`,
    /// `..`, absolute, containing NUL, or too long.
    #[error("invalid path: {0}")]
    InvalidPath(String),
    /// An argument is out of range (for example a read longer than its
    /// buffer).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The volume (top-level directory) does not exist.
    #[error("volume not found")]
    VolumeNotFound,
    /// `make_volume` found the volume already there.
    #[error("volume already exists")]
    VolumeExists,
    /// `delete_volume` without `force` found entries in the volume.
    #[error("volume not empty")]
    VolumeNotEmpty,
    /// The file or directory does not exist (or a prefix of its path is a
    /// regular file, so it cannot exist).
    #[error("file not found")]
    FileNotFound,
    /// The path names a directory where a regular file was expected.
    #[error("is a directory")]
    IsDirectory,
    /// A prefix of the path (or the target of a rename) is a regular file
    /// where a directory was expected.
    #[error("not a directory")]
    NotDirectory,
    /// A non-recursive delete found a directory with entries.
    #[error("directory not empty")]
    DirectoryNotEmpty,
    /// A file is larger than the limit the caller or the drive set.
    #[error("file too large: {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Size found or requested, in bytes.
        size: u64,
        /// The limit in force, in bytes.
        limit: u64,
    },
    /// A streamed file did not end with the size announced at creation.
    #[error("size mismatch: expected {expected} bytes, got {actual} bytes")]
    SizeMismatch {
        /// Size announced to `create_file`.
        expected: u64,
        /// Bytes actually written.
        actual: u64,
    },
    /// A read range lies (partly) beyond the end of the file.
    #[error("range {offset}+{len} is beyond the end of the file ({size} bytes)")]
    OutOfRange {
        /// Start of the requested range.
        offset: u64,
        /// Length of the requested range.
        len: u64,
        /// Size of the file.
        size: u64,
    },
    /// No space (or quota) left on the drive.
    #[error("drive full")]
    DriveFull,
    /// Permission denied or read-only file system.
    #[error("access denied")]
    AccessDenied,
    /// A path component or the whole path is longer than the file system
    /// accepts.
    #[error("name too long")]
    NameTooLong,
    /// The drive has no `format.json`: it is fresh and may be formatted.
    #[error("drive is unformatted")]
    Unformatted,
    /// `format.json` exists but is not acceptable.
    #[error("format.json: {0}")]
    Format(#[from] FormatError),
    /// The operation did not finish within the drive's deadline.
    #[error("drive operation timed out after {0:?}")]
    Timeout(Duration),
    /// The drive has been marked offline after repeated failures; operations
    /// fail fast until a background probe brings it back.
    #[error("drive offline: {0}")]
    Offline(String),
    /// The requested backend cannot run on this host.
    #[error("backend unavailable: {0}")]
    BackendUnavailable(String),
    /// The backend's worker (ring thread or thread pool) is gone.
    #[error("drive backend stopped")]
    BackendStopped,
    /// A stream was used after an earlier failure or cancellation left it in
    /// an unknown state.
    #[error("stream poisoned by an earlier failed or cancelled operation")]
    Poisoned,
    /// Any other I/O error, with the operation that failed.
    #[error("{op}: {source}")]
    Io {
        /// The operation, for logs ("openat", "write", ...).
        op: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl DriveError {
    /// Whether this error says the drive itself misbehaves (an I/O error,
    /// a timeout, a dead backend), as opposed to an expected outcome such as
    /// a missing file, a full drive or a refused path. Only faults count
    /// towards marking a drive offline. Running out of file descriptors
    /// (`EMFILE`, `ENFILE`) is the process's or the system's state, not the
    /// drive's: a crowd of clients must not take healthy drives offline.
    pub fn is_fault(&self) -> bool {
        match self {
            DriveError::Io { source, .. } => {
                !matches!(source.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
            }
            DriveError::Timeout(_) | DriveError::BackendStopped | DriveError::Offline(_) => true,
            _ => false,
        }
    }

    /// Whether the error means "not there" (file or volume).
    pub fn is_not_found(&self) -> bool {
        matches!(self, DriveError::FileNotFound | DriveError::VolumeNotFound)
    }
}

/// How an errno should be read: a missing directory on the way to a file
/// is "not found" when reading but "not a directory" when creating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ctx {
    Read,
    Write,
}

/// Maps an OS error to the drive's vocabulary.
pub(crate) fn map_io(op: &'static str, ctx: Ctx, err: io::Error) -> DriveError {
    let Some(code) = err.raw_os_error() else {
        // The backends report their own death as a BrokenPipe without errno.
        if err.kind() == io::ErrorKind::BrokenPipe {
            return DriveError::BackendStopped;
        }
        return DriveError::Io { op, source: err };
    };
    match code {
        libc::ENOENT => DriveError::FileNotFound,
        libc::ENOTDIR => match ctx {
            Ctx::Read => DriveError::FileNotFound,
            Ctx::Write => DriveError::NotDirectory,
        },
        libc::EISDIR => DriveError::IsDirectory,
        libc::ENOTEMPTY => DriveError::DirectoryNotEmpty,
        libc::ENOSPC | libc::EDQUOT => DriveError::DriveFull,
        libc::EACCES | libc::EPERM | libc::EROFS => DriveError::AccessDenied,
        libc::ENAMETOOLONG => DriveError::NameTooLong,
        _ => DriveError::Io { op, source: err },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_out_of_descriptors_is_not_a_drive_fault() {
        let io = |code| map_io("openat", Ctx::Read, io::Error::from_raw_os_error(code));
        assert!(io(libc::EIO).is_fault());
        assert!(io(libc::EBADMSG).is_fault());
        assert!(!io(libc::EMFILE).is_fault());
        assert!(!io(libc::ENFILE).is_fault());
        assert!(!io(libc::ENOENT).is_fault());
        assert!(DriveError::Timeout(Duration::from_secs(1)).is_fault());
        assert!(!DriveError::DriveFull.is_fault());
    }
}
