//! The byte encoding of the remote-drive calls: fixed-width big-endian
//! integers and length-prefixed byte strings, written and read in the
//! same order by both ends. Metadata files (`xl.meta`) travel as they are,
//! without a text encoding around them; every length is checked against
//! what is left, so a malformed message is an error, never a panic or a
//! large allocation.

use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use drive::{
    BackendKind, DiskInfo, DriveError, FileInfo, VolumeInfo, WalkEntry, WalkOptions, WalkPage,
};

/// A message that does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed drive message: {}", self.0)
    }
}

pub type WireResult<T> = Result<T, WireError>;

/// An answer opens with its status: the payload follows `[OK]`, the
/// encoded error `[ERR]` (the drive calls' `DriveError`, a relayed admin
/// call's S3 code and message).
pub const OK: u8 = 0;
pub const ERR: u8 = 1;

/// Builds an answer: `[OK] payload`, or `[ERR]` and what `error` encodes.
pub fn answer<E>(result: Result<&[u8], E>, error: impl FnOnce(&mut Enc, E)) -> Enc {
    let mut out = Enc::new();
    match result {
        Ok(payload) => {
            out.u8(OK);
            out.0.extend_from_slice(payload);
        }
        Err(e) => {
            out.u8(ERR);
            error(&mut out, e);
        }
    }
    out
}

/// An answer's payload (`Ok`) or its encoded error (`Err`).
pub fn open(b: &[u8]) -> WireResult<Result<&[u8], Dec<'_>>> {
    match b.split_first() {
        Some((&OK, payload)) => Ok(Ok(payload)),
        Some((&ERR, error)) => Ok(Err(Dec::new(error))),
        _ => Err(WireError("an answer without a status".into())),
    }
}

/// Builds a message.
#[derive(Debug, Default)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    pub fn new() -> Enc {
        Enc(Vec::with_capacity(64))
    }
    pub fn u8(&mut self, v: u8) -> &mut Enc {
        self.0.push(v);
        self
    }
    pub fn bool(&mut self, v: bool) -> &mut Enc {
        self.u8(u8::from(v))
    }
    pub fn u32(&mut self, v: u32) -> &mut Enc {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Enc {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn i64(&mut self, v: i64) -> &mut Enc {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// A length (u32) and the bytes.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Enc {
        self.u32(u32::try_from(v.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(v);
        self
    }
    pub fn str(&mut self, v: &str) -> &mut Enc {
        self.bytes(v.as_bytes())
    }
    pub fn opt_str(&mut self, v: Option<&str>) -> &mut Enc {
        match v {
            Some(s) => self.u8(1).str(s),
            None => self.u8(0),
        }
    }
    pub fn opt_u64(&mut self, v: Option<u64>) -> &mut Enc {
        match v {
            Some(x) => self.u8(1).u64(x),
            None => self.u8(0),
        }
    }
    /// A time as nanoseconds around the Unix epoch, if any.
    pub fn time(&mut self, v: Option<SystemTime>) -> &mut Enc {
        match v {
            Some(t) => {
                let nanos = match t.duration_since(UNIX_EPOCH) {
                    Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
                    Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
                };
                self.u8(1).i64(nanos)
            }
            None => self.u8(0),
        }
    }
}

/// Reads a message.
#[derive(Debug)]
pub struct Dec<'a> {
    buf: &'a [u8],
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8]) -> Dec<'a> {
        Dec { buf }
    }
    fn take(&mut self, n: usize) -> WireResult<&'a [u8]> {
        if self.buf.len() < n {
            return Err(WireError(format!(
                "{n} bytes wanted, {} left",
                self.buf.len()
            )));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }
    pub fn u8(&mut self) -> WireResult<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn bool(&mut self) -> WireResult<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(WireError(format!("{b} is not a boolean"))),
        }
    }
    pub fn u32(&mut self) -> WireResult<u32> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn u64(&mut self) -> WireResult<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    pub fn i64(&mut self) -> WireResult<i64> {
        Ok(self.u64()? as i64)
    }
    pub fn bytes(&mut self) -> WireResult<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub fn string(&mut self) -> WireResult<String> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| WireError("a string is not UTF-8".into()))
    }
    pub fn opt_string(&mut self) -> WireResult<Option<String>> {
        Ok(if self.bool()? {
            Some(self.string()?)
        } else {
            None
        })
    }
    pub fn opt_u64(&mut self) -> WireResult<Option<u64>> {
        Ok(if self.bool()? {
            Some(self.u64()?)
        } else {
            None
        })
    }
    pub fn time(&mut self) -> WireResult<Option<SystemTime>> {
        if !self.bool()? {
            return Ok(None);
        }
        let n = self.i64()?;
        let t = if n >= 0 {
            UNIX_EPOCH.checked_add(Duration::from_nanos(n as u64))
        } else {
            UNIX_EPOCH.checked_sub(Duration::from_nanos(n.unsigned_abs()))
        };
        Ok(t)
    }
    /// Fails unless everything was read.
    pub fn end(&self) -> WireResult<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(WireError(format!("{} bytes left over", self.buf.len())))
        }
    }
}

/// A drive error as it travels: a code and the variant's fields.
pub fn put_error(e: &mut Enc, err: &DriveError) {
    match err {
        DriveError::InvalidPath(s) => e.u8(0).str(s),
        DriveError::InvalidArgument(s) => e.u8(1).str(s),
        DriveError::VolumeNotFound => e.u8(2),
        DriveError::VolumeExists => e.u8(3),
        DriveError::VolumeNotEmpty => e.u8(4),
        DriveError::FileNotFound => e.u8(5),
        DriveError::IsDirectory => e.u8(6),
        DriveError::NotDirectory => e.u8(7),
        DriveError::DirectoryNotEmpty => e.u8(8),
        DriveError::TooLarge { size, limit } => e.u8(9).u64(*size).u64(*limit),
        DriveError::SizeMismatch { expected, actual } => e.u8(10).u64(*expected).u64(*actual),
        DriveError::OutOfRange { offset, len, size } => e.u8(11).u64(*offset).u64(*len).u64(*size),
        DriveError::DriveFull => e.u8(12),
        DriveError::AccessDenied => e.u8(13),
        DriveError::NameTooLong => e.u8(14),
        DriveError::Unformatted => e.u8(15),
        DriveError::Format(f) => e.u8(16).str(&f.to_string()),
        DriveError::Timeout(d) => e
            .u8(17)
            .u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        DriveError::Offline(s) => e.u8(18).str(s),
        DriveError::BackendUnavailable(s) => e.u8(19).str(s),
        DriveError::BackendStopped => e.u8(20),
        DriveError::Poisoned => e.u8(21),
        DriveError::Io { op, source } => {
            let errno = source.raw_os_error().map_or(0, |n| n as u32 as u64);
            e.u8(22).str(op).u64(errno).str(&source.to_string())
        }
        other => e.u8(23).str(&other.to_string()),
    };
}

/// Reads a drive error written by [`put_error`]. Errors without an exact
/// counterpart on this side (a format error, an I/O error's operation
/// name) keep their text in an I/O error.
pub fn get_error(d: &mut Dec<'_>) -> WireResult<DriveError> {
    Ok(match d.u8()? {
        0 => DriveError::InvalidPath(d.string()?),
        1 => DriveError::InvalidArgument(d.string()?),
        2 => DriveError::VolumeNotFound,
        3 => DriveError::VolumeExists,
        4 => DriveError::VolumeNotEmpty,
        5 => DriveError::FileNotFound,
        6 => DriveError::IsDirectory,
        7 => DriveError::NotDirectory,
        8 => DriveError::DirectoryNotEmpty,
        9 => DriveError::TooLarge {
            size: d.u64()?,
            limit: d.u64()?,
        },
        10 => DriveError::SizeMismatch {
            expected: d.u64()?,
            actual: d.u64()?,
        },
        11 => DriveError::OutOfRange {
            offset: d.u64()?,
            len: d.u64()?,
            size: d.u64()?,
        },
        12 => DriveError::DriveFull,
        13 => DriveError::AccessDenied,
        14 => DriveError::NameTooLong,
        15 => DriveError::Unformatted,
        16 => remote_io(format!("format.json: {}", d.string()?), 0),
        17 => DriveError::Timeout(Duration::from_millis(d.u64()?)),
        18 => DriveError::Offline(d.string()?),
        19 => DriveError::BackendUnavailable(d.string()?),
        20 => DriveError::BackendStopped,
        21 => DriveError::Poisoned,
        22 => {
            let op = d.string()?;
            let errno = d.u64()?;
            let text = d.string()?;
            remote_io(format!("{op}: {text}"), errno)
        }
        23 => remote_io(d.string()?, 0),
        c => return Err(WireError(format!("unknown error code {c}"))),
    })
}

/// An I/O error of the remote side: its errno when it had one (so that
/// "too many open files" stays no fault of the drive), else its text.
fn remote_io(text: String, errno: u64) -> DriveError {
    let source = match i32::try_from(errno) {
        Ok(n) if n > 0 => io::Error::from_raw_os_error(n),
        _ => io::Error::other(text),
    };
    DriveError::Io {
        op: "remote drive",
        source,
    }
}

pub fn put_volume(e: &mut Enc, v: &VolumeInfo) {
    e.str(&v.name).time(v.created);
}

pub fn get_volume(d: &mut Dec<'_>) -> WireResult<VolumeInfo> {
    Ok(VolumeInfo {
        name: d.string()?,
        created: d.time()?,
    })
}

pub fn put_file_info(e: &mut Enc, f: &FileInfo) {
    e.u64(f.size).time(f.modified).bool(f.is_dir);
}

pub fn get_file_info(d: &mut Dec<'_>) -> WireResult<FileInfo> {
    Ok(FileInfo {
        size: d.u64()?,
        modified: d.time()?,
        is_dir: d.bool()?,
    })
}

pub fn put_disk_info(e: &mut Enc, i: &DiskInfo) {
    e.u64(i.total)
        .u64(i.free)
        .u64(i.used)
        .u64(i.files_total)
        .u64(i.files_free)
        .opt_str(i.fs_type.as_deref())
        .u8(match i.backend {
            BackendKind::IoUring => 0,
            BackendKind::ThreadPool => 1,
            BackendKind::Other => 2,
        });
}

pub fn get_disk_info(d: &mut Dec<'_>) -> WireResult<DiskInfo> {
    Ok(DiskInfo {
        total: d.u64()?,
        free: d.u64()?,
        used: d.u64()?,
        files_total: d.u64()?,
        files_free: d.u64()?,
        fs_type: d.opt_string()?,
        backend: match d.u8()? {
            0 => BackendKind::IoUring,
            1 => BackendKind::ThreadPool,
            _ => BackendKind::Other,
        },
    })
}

pub fn put_walk_options(e: &mut Enc, o: &WalkOptions) {
    e.str(&o.volume)
        .str(&o.prefix)
        .opt_str(o.delimiter.as_deref())
        .opt_str(o.after.as_deref())
        .u64(o.limit as u64)
        .u64(o.meta_head as u64)
        .u64(o.meta_limit);
}

pub fn get_walk_options(d: &mut Dec<'_>) -> WireResult<WalkOptions> {
    Ok(WalkOptions {
        volume: d.string()?,
        prefix: d.string()?,
        delimiter: d.opt_string()?,
        after: d.opt_string()?,
        limit: usize::try_from(d.u64()?).unwrap_or(usize::MAX),
        meta_head: usize::try_from(d.u64()?).unwrap_or(usize::MAX),
        meta_limit: d.u64()?,
    })
}

pub fn put_walk_page(e: &mut Enc, p: &WalkPage) {
    e.bool(p.more)
        .u32(u32::try_from(p.entries.len()).unwrap_or(u32::MAX));
    for entry in &p.entries {
        match entry {
            WalkEntry::Object {
                key,
                meta,
                complete,
            } => e.u8(0).str(key).bytes(meta).bool(*complete),
            WalkEntry::Prefix(p) => e.u8(1).str(p),
        };
    }
}

pub fn get_walk_page(d: &mut Dec<'_>) -> WireResult<WalkPage> {
    let more = d.bool()?;
    let n = d.u32()? as usize;
    // Each entry takes at least 5 bytes: a count beyond what is left is a
    // lie, and must not size an allocation.
    let mut entries = Vec::with_capacity(n.min(d.buf.len() / 5));
    for _ in 0..n {
        entries.push(match d.u8()? {
            0 => WalkEntry::Object {
                key: d.string()?,
                meta: d.bytes()?.to_vec(),
                complete: d.bool()?,
            },
            1 => WalkEntry::Prefix(d.string()?),
            t => return Err(WireError(format!("unknown walk entry {t}"))),
        });
    }
    Ok(WalkPage { entries, more })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_round_trip() {
        let cases = vec![
            DriveError::InvalidPath("a/../b".into()),
            DriveError::VolumeNotFound,
            DriveError::FileNotFound,
            DriveError::TooLarge { size: 9, limit: 4 },
            DriveError::SizeMismatch {
                expected: 5,
                actual: 3,
            },
            DriveError::OutOfRange {
                offset: 1,
                len: 2,
                size: 3,
            },
            DriveError::Unformatted,
            DriveError::Timeout(Duration::from_millis(1500)),
            DriveError::Offline("gone".into()),
            DriveError::Poisoned,
        ];
        for err in cases {
            let mut e = Enc::new();
            put_error(&mut e, &err);
            let got = get_error(&mut Dec::new(&e.0)).unwrap();
            assert_eq!(format!("{got:?}"), format!("{err:?}"));
        }
        // An errno survives, so the fault rules hold on both sides.
        let mut e = Enc::new();
        put_error(
            &mut e,
            &DriveError::Io {
                op: "openat",
                source: io::Error::from_raw_os_error(libc_emfile()),
            },
        );
        let got = get_error(&mut Dec::new(&e.0)).unwrap();
        assert!(!got.is_fault(), "{got:?}");
        let mut e = Enc::new();
        put_error(
            &mut e,
            &DriveError::Io {
                op: "write",
                source: io::Error::from_raw_os_error(5),
            },
        );
        assert!(get_error(&mut Dec::new(&e.0)).unwrap().is_fault());
    }

    fn libc_emfile() -> i32 {
        24
    }

    #[test]
    fn walk_pages_and_infos_round_trip() {
        let page = WalkPage {
            entries: vec![
                WalkEntry::Object {
                    key: "a/b".into(),
                    meta: vec![0, 1, 2, 255],
                    complete: true,
                },
                WalkEntry::Prefix("c/".into()),
            ],
            more: true,
        };
        let mut e = Enc::new();
        put_walk_page(&mut e, &page);
        let mut d = Dec::new(&e.0);
        assert_eq!(get_walk_page(&mut d).unwrap(), page);
        d.end().unwrap();

        let opts = WalkOptions {
            volume: "v".into(),
            prefix: "p/".into(),
            delimiter: Some("/".into()),
            after: None,
            limit: 1000,
            meta_head: 4096,
            meta_limit: 1 << 20,
        };
        let mut e = Enc::new();
        put_walk_options(&mut e, &opts);
        assert_eq!(get_walk_options(&mut Dec::new(&e.0)).unwrap(), opts);

        let vol = VolumeInfo {
            name: "b".into(),
            created: Some(UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789)),
        };
        let mut e = Enc::new();
        put_volume(&mut e, &vol);
        assert_eq!(get_volume(&mut Dec::new(&e.0)).unwrap(), vol);
    }

    #[test]
    fn malformed_messages_are_errors() {
        // A walk page that claims four billion entries in six bytes.
        let mut e = Enc::new();
        e.bool(false).u32(u32::MAX);
        assert!(get_walk_page(&mut Dec::new(&e.0)).is_err());
        assert!(get_error(&mut Dec::new(&[99])).is_err());
        assert!(Dec::new(&[0, 0, 0, 9, 1]).bytes().is_err());
        for n in 0..40 {
            let junk: Vec<u8> = (0..n).map(|i| (i * 37 % 251) as u8).collect();
            let _ = get_walk_page(&mut Dec::new(&junk));
            let _ = get_error(&mut Dec::new(&junk));
            let _ = get_disk_info(&mut Dec::new(&junk));
        }
    }
}
