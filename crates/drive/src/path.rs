//! Validation of volume names and paths, so that nothing a caller passes can
//! name anything outside the drive root.
//!
//! Every operation of [`LocalDrive`](crate::LocalDrive) joins a validated
//! volume and a validated path into a path *relative to the drive root* and
//! resolves it with `*at` system calls against a descriptor of the root, so
//! a path never starts from `/` or the process's working directory.
//!
//! Symbolic links planted inside the drive by someone else are not defended
//! against (the drive layer never creates any).

use crate::error::{DriveError, Result};

/// Longest single path component, in bytes (Linux `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;
/// Longest volume + path accepted, in bytes (below Linux `PATH_MAX`, leaving
/// room for the drive root itself in error messages and tools).
pub const MAX_PATH_BYTES: usize = 3072;

fn check_component(component: &str, whole: &str) -> Result<()> {
    if component.is_empty() {
        return Err(DriveError::InvalidPath(format!(
            "empty component in {whole:?}"
        )));
    }
    if component == "." || component == ".." {
        return Err(DriveError::InvalidPath(format!(
            "{component:?} component in {whole:?}"
        )));
    }
    if component.len() > MAX_COMPONENT_BYTES {
        return Err(DriveError::NameTooLong);
    }
    Ok(())
}

fn check_common(value: &str, what: &str) -> Result<()> {
    if value.is_empty() {
        return Err(DriveError::InvalidPath(format!("empty {what}")));
    }
    if value.starts_with('/') {
        return Err(DriveError::InvalidPath(format!(
            "absolute {what} {value:?}"
        )));
    }
    if value.contains('\0') {
        return Err(DriveError::InvalidPath(format!("{what} contains NUL")));
    }
    if value.len() > MAX_PATH_BYTES {
        return Err(DriveError::NameTooLong);
    }
    Ok(())
}

/// Checks a volume name: one or more `/`-separated components (MinIO uses
/// `.minio.sys/tmp` and `.minio.sys/multipart` as volumes), none empty,
/// `.` or `..`, no NUL, not absolute, no trailing `/`.
pub fn check_volume(volume: &str) -> Result<()> {
    check_common(volume, "volume")?;
    for component in volume.split('/') {
        check_component(component, volume)?;
    }
    Ok(())
}

/// Checks a path inside a volume and returns it without its trailing `/`
/// (MinIO passes directory paths with one; it is tolerated once).
pub fn check_path(path: &str) -> Result<&str> {
    check_common(path, "path")?;
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    for component in trimmed.split('/') {
        check_component(component, path)?;
    }
    Ok(trimmed)
}

/// Validates both and joins them into a root-relative path.
pub(crate) fn join(volume: &str, path: &str) -> Result<String> {
    check_volume(volume)?;
    let path = check_path(path)?;
    let joined = format!("{volume}/{path}");
    if joined.len() > MAX_PATH_BYTES {
        return Err(DriveError::NameTooLong);
    }
    Ok(joined)
}

/// The parent of a root-relative path, or `None` at the top.
pub(crate) fn parent(rel: &str) -> Option<&str> {
    rel.rfind('/').map(|index| &rel[..index])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        check_volume("bucket").unwrap();
        check_volume(".minio.sys/tmp").unwrap();
        assert_eq!(check_path("a/b/xl.meta").unwrap(), "a/b/xl.meta");
        assert_eq!(check_path("dir/").unwrap(), "dir");
        assert_eq!(check_path("..hidden/x..y").unwrap(), "..hidden/x..y");
        assert_eq!(join("b", "k/part.1").unwrap(), "b/k/part.1");
    }

    #[test]
    fn refuses_escapes() {
        for bad in [
            "", ".", "..", "/etc", "a/../b", "../a", "a/./b", "a//b", "a\0b", "a/..", "//",
        ] {
            assert!(
                matches!(check_path(bad), Err(DriveError::InvalidPath(_))),
                "path {bad:?}"
            );
            assert!(
                matches!(check_volume(bad), Err(DriveError::InvalidPath(_))),
                "volume {bad:?}"
            );
        }
        assert!(matches!(
            check_volume("bucket/"),
            Err(DriveError::InvalidPath(_))
        ));
        assert!(matches!(check_path("a//"), Err(DriveError::InvalidPath(_))));
    }

    #[test]
    fn refuses_long_names() {
        let long = "x".repeat(MAX_COMPONENT_BYTES + 1);
        assert!(matches!(check_path(&long), Err(DriveError::NameTooLong)));
        let deep = "abc/".repeat(MAX_PATH_BYTES / 4 + 1);
        assert!(matches!(check_path(&deep), Err(DriveError::NameTooLong)));
    }

    #[test]
    fn parent_of() {
        assert_eq!(parent("a/b/c"), Some("a/b"));
        assert_eq!(parent("a"), None);
    }
}
