//! Object lock (WORM): a bucket's lock configuration, each version's
//! retention and legal hold, and the rules that keep a locked version from
//! being removed or its protection weakened.
//!
//! The rules live here, in the object layer, so that every caller (the S3
//! gateway, the lifecycle scanner, an embedder) is held to them.
//!
//! # Format (MinIO's)
//!
//! - A bucket is lock-enabled when its `ObjectLockConfigXML` says
//!   `<ObjectLockEnabled>Enabled</ObjectLockEnabled>`; its optional
//!   `Rule/DefaultRetention` (mode and `Days` or `Years`) is applied to new
//!   versions that ask for no retention of their own. Versioning is always
//!   enabled on such a bucket.
//! - A version's lock is three entries of its user metadata:
//!   `x-amz-object-lock-mode` (`GOVERNANCE` | `COMPLIANCE`),
//!   `x-amz-object-lock-retain-until-date` (ISO 8601 UTC with milliseconds,
//!   `2006-01-02T15:04:05.000Z`) and `x-amz-object-lock-legal-hold`
//!   (`ON` | `OFF`).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::*;
use crate::civil::{civil_from_days, days_from_civil, days_in_month, is_leap};

/// Metadata key of a version's retention mode.
pub const LOCK_MODE: &str = "x-amz-object-lock-mode";
/// Metadata key of a version's retain-until date.
pub const LOCK_UNTIL: &str = "x-amz-object-lock-retain-until-date";
/// Metadata key of a version's legal hold.
pub const LEGAL_HOLD: &str = "x-amz-object-lock-legal-hold";

/// The longest default retention S3 accepts, in days and in years.
pub const MAX_DEFAULT_DAYS: u32 = 36_500;
/// See [`MAX_DEFAULT_DAYS`].
pub const MAX_DEFAULT_YEARS: u32 = 100;

/// A retention mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetentionMode {
    /// Removable before its date by an identity allowed
    /// `s3:BypassGovernanceRetention` that asks to bypass it.
    Governance,
    /// Removable by nobody before its date, root included.
    Compliance,
}

impl RetentionMode {
    /// Parses `GOVERNANCE` or `COMPLIANCE` (any case, as MinIO accepts).
    pub fn parse(s: &str) -> Option<RetentionMode> {
        if s.eq_ignore_ascii_case("GOVERNANCE") {
            Some(RetentionMode::Governance)
        } else if s.eq_ignore_ascii_case("COMPLIANCE") {
            Some(RetentionMode::Compliance)
        } else {
            None
        }
    }

    /// The mode as S3 spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RetentionMode::Governance => "GOVERNANCE",
            RetentionMode::Compliance => "COMPLIANCE",
        }
    }
}

/// A version's retention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Mode.
    pub mode: RetentionMode,
    /// Until when the version is protected.
    pub until: SystemTime,
}

/// The period of a bucket's default retention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetentionPeriod {
    /// Days (1..=36,500).
    Days(u32),
    /// Calendar years (1..=100).
    Years(u32),
}

/// A bucket's object lock configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ObjectLockConfig {
    /// The retention new versions get when they ask for none.
    pub default_retention: Option<(RetentionMode, RetentionPeriod)>,
}

impl ObjectLockConfig {
    /// The document MinIO stores (and S3 returns) for this configuration.
    pub fn to_xml(&self) -> String {
        let mut s = String::from(
            "<ObjectLockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><ObjectLockEnabled>Enabled</ObjectLockEnabled>",
        );
        if let Some((mode, period)) = self.default_retention {
            s.push_str("<Rule><DefaultRetention><Mode>");
            s.push_str(mode.as_str());
            s.push_str("</Mode>");
            match period {
                RetentionPeriod::Days(d) => s.push_str(&format!("<Days>{d}</Days>")),
                RetentionPeriod::Years(y) => s.push_str(&format!("<Years>{y}</Years>")),
            }
            s.push_str("</DefaultRetention></Rule>");
        }
        s.push_str("</ObjectLockConfiguration>");
        s
    }

    /// Reads a stored configuration document (validated by whoever stored
    /// it: this server or MinIO); `None` when it does not enable object
    /// lock. A default retention that cannot be read is ignored rather than
    /// guessed.
    pub fn from_stored(doc: &[u8]) -> Option<ObjectLockConfig> {
        let doc = std::str::from_utf8(doc).ok()?;
        if element_text(doc, "ObjectLockEnabled")? != "Enabled" {
            return None;
        }
        let default_retention = element_text(doc, "DefaultRetention").and_then(|_| {
            let mode = RetentionMode::parse(element_text(doc, "Mode")?)?;
            let period = match (element_text(doc, "Days"), element_text(doc, "Years")) {
                (Some(d), None) => RetentionPeriod::Days(d.parse().ok().filter(|d| *d > 0)?),
                (None, Some(y)) => RetentionPeriod::Years(y.parse().ok().filter(|y| *y > 0)?),
                _ => return None,
            };
            Some((mode, period))
        });
        Some(ObjectLockConfig { default_retention })
    }

    /// The retention a new version written at `now` gets by default.
    pub fn default_for(&self, now: SystemTime) -> Option<Retention> {
        let (mode, period) = self.default_retention?;
        let until = match period {
            RetentionPeriod::Days(d) => now + Duration::from_secs(u64::from(d) * 86_400),
            RetentionPeriod::Years(y) => add_years(now, y),
        };
        Some(Retention { mode, until })
    }
}

/// The text of the first element named `name` (any namespace prefix) in a
/// well-formed document, trimmed; the stored documents are small and were
/// validated when stored, so a scan suffices.
fn element_text<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = doc;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let tag_end = rest.find('>')?;
        let tag = &rest[..tag_end];
        let local = tag
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or("");
        let local = local.rsplit(':').next().unwrap_or(local);
        if local == name && !tag.starts_with('/') {
            if tag.ends_with('/') {
                return Some("");
            }
            let body = &rest[tag_end + 1..];
            let close = body.find("</")?;
            return Some(body[..close].trim());
        }
    }
    None
}

/// A version's lock, as its metadata records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VersionLock {
    /// Its retention, if it has one.
    pub retention: Option<Retention>,
    /// Its legal hold, if one was ever set (`Some(false)`: taken off).
    pub legal_hold: Option<bool>,
}

impl VersionLock {
    /// Reads the lock entries of a version's metadata (keys in any case,
    /// as MinIO reads them).
    pub fn of(meta: &BTreeMap<String, String>) -> VersionLock {
        let get = |k: &str| {
            meta.iter()
                .find(|(m, _)| m.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.as_str())
        };
        let retention = get(LOCK_MODE).and_then(RetentionMode::parse).map(|mode| {
            // A date that cannot be read protects the version until it is
            // set again: failing closed keeps what the mode promised.
            let until = get(LOCK_UNTIL)
                .and_then(parse_iso8601)
                .unwrap_or(UNIX_EPOCH + Duration::from_secs(253_402_300_799));
            Retention { mode, until }
        });
        let legal_hold = get(LEGAL_HOLD).map(|v| v.eq_ignore_ascii_case("ON"));
        VersionLock {
            retention,
            legal_hold,
        }
    }

    /// The retention still in force at `now`.
    pub fn active_retention(&self, now: SystemTime) -> Option<Retention> {
        self.retention.filter(|r| r.until > now)
    }

    /// Whether the version may be removed at `now`; `bypass` is a request
    /// to bypass governance retention by an identity allowed to.
    pub fn check_delete(&self, now: SystemTime, bypass: bool) -> Result<()> {
        if self.legal_hold == Some(true) {
            return Err(Error::ObjectLocked("the version is under legal hold"));
        }
        match self.active_retention(now) {
            Some(r) if r.mode == RetentionMode::Compliance => Err(Error::ObjectLocked(
                "the version is under compliance retention",
            )),
            Some(_) if !bypass => Err(Error::ObjectLocked(
                "the version is under governance retention",
            )),
            _ => Ok(()),
        }
    }

    /// Whether the version's retention may become `new` (`None`: removed)
    /// at `now`: an active compliance retention can only be extended, an
    /// active governance one only extended or made compliance unless the
    /// request bypasses governance.
    pub fn check_retention_change(
        &self,
        new: Option<Retention>,
        now: SystemTime,
        bypass: bool,
    ) -> Result<()> {
        let Some(old) = self.active_retention(now) else {
            return Ok(());
        };
        let keeps =
            |want: RetentionMode| new.is_some_and(|n| n.mode == want && n.until >= old.until);
        match old.mode {
            RetentionMode::Compliance if !keeps(RetentionMode::Compliance) => Err(
                Error::ObjectLocked("compliance retention cannot be shortened or removed"),
            ),
            RetentionMode::Governance
                if !bypass
                    && !keeps(RetentionMode::Governance)
                    && !keeps(RetentionMode::Compliance) =>
            {
                Err(Error::ObjectLocked(
                    "governance retention cannot be shortened or removed without bypass",
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Formats an instant as MinIO stores retain-until dates
/// (`2006-01-02T15:04:05.000Z`, UTC).
pub fn format_iso8601(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, dd) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{dd:02}T{:02}:{:02}:{:02}.{:03}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        d.subsec_millis()
    )
}

/// Parses an ISO 8601 / RFC 3339 date-time as S3 accepts retain-until
/// dates: `YYYY-MM-DDTHH:MM:SS`, optional fraction, then `Z` or an offset.
pub fn parse_iso8601(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 60
    {
        return None;
    }
    let mut rest = &s[19..];
    let mut nanos = 0u32;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let padded = format!("{:0<9}", &frac[..digits]);
        nanos = padded.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let b = rest.as_bytes();
            if b.len() != 6 || !matches!(b[0], b'+' | b'-') || b[3] != b':' {
                return None;
            }
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            let o = oh * 3600 + om * 60;
            if b[0] == b'+' { o } else { -o }
        }
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se.min(59) - offset;
    let secs = u64::try_from(secs).ok()?;
    Some(UNIX_EPOCH + Duration::new(secs, nanos))
}

/// `t` plus `years` calendar years, a 29 February becoming 1 March when the
/// target year has none (as Go's `AddDate`, which MinIO uses, normalises).
fn add_years(t: SystemTime, years: u32) -> SystemTime {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, dd) = civil_from_days(days);
    let ny = y + i64::from(years);
    let new_days = if m == 2 && dd == 29 && !is_leap(ny) {
        days_from_civil(ny, 3, 1)
    } else {
        days_from_civil(ny, m, dd)
    };
    let secs = u64::try_from(new_days * 86_400 + sod).unwrap_or(u64::MAX / 2);
    UNIX_EPOCH + Duration::new(secs, d.subsec_nanos())
}

/// Whether a metadata key is one of a version's lock entries.
pub fn is_lock_key(k: &str) -> bool {
    [LOCK_MODE, LOCK_UNTIL, LEGAL_HOLD]
        .iter()
        .any(|l| k.eq_ignore_ascii_case(l))
}

/// How a write asks for a lock, read from its metadata entries; checked and
/// completed (default retention) by [`ObjectLayer::lock_metadata`].
fn requested(meta: &[(String, String)]) -> (bool, bool) {
    let has = |k: &str| meta.iter().any(|(m, _)| m.eq_ignore_ascii_case(k));
    (has(LOCK_MODE) || has(LOCK_UNTIL), has(LEGAL_HOLD))
}

impl ObjectLayer {
    /// The bucket's object lock configuration; `None` when the bucket is
    /// not lock-enabled.
    pub async fn bucket_object_lock(&self, bucket: &str) -> Result<Option<ObjectLockConfig>> {
        Ok(self
            .bucket_config(bucket, BucketConfig::ObjectLock)
            .await?
            .and_then(|d| ObjectLockConfig::from_stored(&d)))
    }

    /// Replaces the default retention of a lock-enabled bucket
    /// ([`Error::InvalidBucketState`] for a bucket created without object
    /// lock, which cannot be given it later).
    pub async fn set_bucket_object_lock(&self, bucket: &str, cfg: ObjectLockConfig) -> Result<()> {
        if self.bucket_object_lock(bucket).await?.is_none() {
            return Err(Error::InvalidBucketState(
                "Object Lock configuration cannot be enabled on existing buckets",
            ));
        }
        self.set_bucket_config(
            bucket,
            BucketConfig::ObjectLock,
            Some(cfg.to_xml().into_bytes()),
        )
        .await
    }

    /// Checks the lock entries a new version of `bucket` asks for in
    /// `metadata`, and adds the bucket's default retention when it asks for
    /// none: entries on a bucket without object lock are refused
    /// ([`Error::ObjectLockNotEnabled`]).
    pub(crate) async fn lock_metadata(
        &self,
        bucket: &str,
        metadata: &[(String, String)],
    ) -> Result<Option<Vec<(String, String)>>> {
        let (retention, hold) = requested(metadata);
        let Some(cfg) = self.bucket_object_lock(bucket).await? else {
            if retention || hold {
                return Err(Error::ObjectLockNotEnabled);
            }
            return Ok(None);
        };
        if retention {
            return Ok(None);
        }
        let Some(r) = cfg.default_for(SystemTime::now()) else {
            return Ok(None);
        };
        let mut out = metadata.to_vec();
        out.push((LOCK_MODE.to_owned(), r.mode.as_str().to_owned()));
        out.push((LOCK_UNTIL.to_owned(), format_iso8601(r.until)));
        Ok(Some(out))
    }

    /// Sets (or with `None` removes) a version's retention, under the
    /// rules of [`VersionLock::check_retention_change`].
    pub async fn put_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        retention: Option<Retention>,
        bypass_governance: bool,
    ) -> Result<ObjectInfo> {
        self.edit_lock(bucket, key, version, move |lock, now| {
            lock.check_retention_change(retention, now, bypass_governance)?;
            Ok(match retention {
                Some(r) => vec![
                    (LOCK_MODE, Some(r.mode.as_str().to_owned())),
                    (LOCK_UNTIL, Some(format_iso8601(r.until))),
                ],
                None => vec![(LOCK_MODE, None), (LOCK_UNTIL, None)],
            })
        })
        .await
    }

    /// Puts a legal hold on a version, or takes it off.
    pub async fn put_object_legal_hold(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        on: bool,
    ) -> Result<ObjectInfo> {
        self.edit_lock(bucket, key, version, move |_, _| {
            Ok(vec![(
                LEGAL_HOLD,
                Some(if on { "ON" } else { "OFF" }.to_owned()),
            )])
        })
        .await
    }

    /// Edits a version's lock entries under the object's write lock, after
    /// `decide` has seen the version's current lock.
    async fn edit_lock(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        decide: impl FnOnce(&VersionLock, SystemTime) -> Result<Vec<(&'static str, Option<String>)>>,
    ) -> Result<ObjectInfo> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        if self.bucket_object_lock(bucket).await?.is_none() {
            return Err(Error::ObjectLockNotEnabled);
        }
        let _g = self
            .locker
            .write(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        let pool = self.pool_for_read(bucket, key, version).await?;
        let set = self.set_in(pool, key);
        let info = set.head(bucket, key, version).await?;
        if info.delete_marker {
            return Err(Error::MethodNotAllowed);
        }
        let edits = decide(&VersionLock::of(&info.metadata), SystemTime::now())?;
        let version = version.or(info.version_id.map(VersionSel::Id));
        let edit = move |m: &mut crate::xlmeta::UserMeta<'static>| {
            for (k, v) in &edits {
                let existing: Vec<String> = m
                    .iter()
                    .filter_map(|(mk, _)| mk.as_str())
                    .filter(|mk| mk.eq_ignore_ascii_case(k))
                    .map(str::to_owned)
                    .collect();
                for mk in existing {
                    m.remove(&mk);
                }
                if let Some(v) = v {
                    m.insert((*k).to_owned(), v.clone().into());
                }
            }
        };
        set.update_user_metadata(bucket, key, version, &edit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> SystemTime {
        parse_iso8601(s).unwrap()
    }

    #[test]
    fn dates_round_trip_in_minio_form() {
        let t = at("2026-11-29T04:05:06.789Z");
        assert_eq!(format_iso8601(t), "2026-11-29T04:05:06.789Z");
        assert_eq!(
            format_iso8601(at("2030-01-01T00:00:00Z")),
            "2030-01-01T00:00:00.000Z"
        );
        assert_eq!(at("2026-11-29T05:05:06.789+01:00"), t);
        assert_eq!(
            at("2026-11-29T04:05:06.789123Z"),
            t + Duration::from_micros(123)
        );
        for bad in [
            "",
            "2026-11-29",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T00:00:00",
            "2026-11-29T00:00:00.Z",
            "2026-11-29T00:00:00+0100",
            "next tuesday and more",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn years_are_calendar_years() {
        assert_eq!(
            add_years(at("2024-02-29T10:00:00Z"), 1),
            at("2025-03-01T10:00:00Z")
        );
        assert_eq!(
            add_years(at("2024-02-29T10:00:00Z"), 4),
            at("2028-02-29T10:00:00Z")
        );
        assert_eq!(
            add_years(at("2026-11-29T00:00:00Z"), 100),
            at("2126-11-29T00:00:00Z")
        );
    }

    #[test]
    fn stored_configurations_read_with_any_prefix() {
        let ours = ObjectLockConfig {
            default_retention: Some((RetentionMode::Compliance, RetentionPeriod::Years(2))),
        };
        assert_eq!(
            ObjectLockConfig::from_stored(ours.to_xml().as_bytes()),
            Some(ours)
        );
        let prefixed = b"<s3:ObjectLockConfiguration xmlns:s3=\"x\"><s3:ObjectLockEnabled> Enabled </s3:ObjectLockEnabled><s3:Rule><s3:DefaultRetention><s3:Mode>governance</s3:Mode><s3:Days>3</s3:Days></s3:DefaultRetention></s3:Rule></s3:ObjectLockConfiguration>";
        assert_eq!(
            ObjectLockConfig::from_stored(prefixed),
            Some(ObjectLockConfig {
                default_retention: Some((RetentionMode::Governance, RetentionPeriod::Days(3)))
            })
        );
        assert_eq!(
            ObjectLockConfig::from_stored(b"<ObjectLockConfiguration/>"),
            None
        );
        assert_eq!(ObjectLockConfig::from_stored(b""), None);
    }

    fn lock(mode: RetentionMode, until: &str, hold: bool) -> VersionLock {
        VersionLock {
            retention: Some(Retention {
                mode,
                until: at(until),
            }),
            legal_hold: Some(hold),
        }
    }

    #[test]
    fn deletes_follow_the_lock() {
        let now = at("2026-01-01T00:00:00Z");
        let c = lock(RetentionMode::Compliance, "2026-01-02T00:00:00Z", false);
        assert!(c.check_delete(now, true).is_err());
        assert!(c.check_delete(at("2026-01-02T00:00:01Z"), false).is_ok());
        let g = lock(RetentionMode::Governance, "2026-01-02T00:00:00Z", false);
        assert!(g.check_delete(now, false).is_err());
        assert!(g.check_delete(now, true).is_ok());
        let h = VersionLock {
            retention: None,
            legal_hold: Some(true),
        };
        assert!(h.check_delete(now, true).is_err());
        assert!(VersionLock::default().check_delete(now, false).is_ok());
    }

    #[test]
    fn retention_changes_follow_the_mode() {
        let now = at("2026-01-01T00:00:00Z");
        let r = |mode, until: &str| {
            Some(Retention {
                mode,
                until: at(until),
            })
        };
        let c = lock(RetentionMode::Compliance, "2026-02-01T00:00:00Z", false);
        assert!(
            c.check_retention_change(
                r(RetentionMode::Compliance, "2026-03-01T00:00:00Z"),
                now,
                false
            )
            .is_ok()
        );
        assert!(
            c.check_retention_change(
                r(RetentionMode::Compliance, "2026-01-15T00:00:00Z"),
                now,
                true
            )
            .is_err()
        );
        assert!(
            c.check_retention_change(
                r(RetentionMode::Governance, "2026-03-01T00:00:00Z"),
                now,
                true
            )
            .is_err()
        );
        assert!(c.check_retention_change(None, now, true).is_err());
        let g = lock(RetentionMode::Governance, "2026-02-01T00:00:00Z", false);
        assert!(
            g.check_retention_change(
                r(RetentionMode::Governance, "2026-01-15T00:00:00Z"),
                now,
                false
            )
            .is_err()
        );
        assert!(
            g.check_retention_change(
                r(RetentionMode::Governance, "2026-01-15T00:00:00Z"),
                now,
                true
            )
            .is_ok()
        );
        assert!(
            g.check_retention_change(
                r(RetentionMode::Compliance, "2026-02-01T00:00:00Z"),
                now,
                false
            )
            .is_ok()
        );
        assert!(g.check_retention_change(None, now, false).is_err());
        assert!(g.check_retention_change(None, now, true).is_ok());
        // An expired retention may become anything.
        assert!(
            c.check_retention_change(None, at("2026-02-01T00:00:01Z"), false)
                .is_ok()
        );
    }
}
