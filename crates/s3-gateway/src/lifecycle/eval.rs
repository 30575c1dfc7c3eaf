//! What the rules do to one object version, one incomplete upload, and
//! what `x-amz-expiration` announces, at an instant the caller gives.
//!
//! The semantics are S3's as MinIO implements them
//! (`internal/bucket/lifecycle`): only enabled rules whose filter matches
//! apply; a current version expires by Days at the first midnight UTC after
//! `mod_time + Days` or at the Date; a delete marker left with no other
//! version goes under `ExpiredObjectDeleteMarker`, or under Expiration by
//! Days once old enough; a noncurrent version expires NoncurrentDays after
//! it became noncurrent (same midnight rounding) once NewerNoncurrentVersions
//! newer noncurrent versions are kept. Of several rules that apply, the
//! earliest due one decides. An action is due from its due instant on
//! (MinIO acts only strictly after it; the two differ at that one instant).

use std::time::SystemTime;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::dates::{due_after_days, from_unix_secs, http_date};
use super::{Expiration, Lifecycle, Rule};

/// What the caller knows of one version of a key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VersionFacts<'a> {
    pub(crate) key: &'a str,
    pub(crate) size: u64,
    pub(crate) mod_time: SystemTime,
    pub(crate) is_latest: bool,
    pub(crate) is_delete_marker: bool,
    /// The time this version became noncurrent (its successor's mod time),
    /// for noncurrent ones. Unknown, NoncurrentDays never fall due (a
    /// version is not removed on a guess).
    pub(crate) successor_mod_time: Option<SystemTime>,
    /// How many noncurrent versions of this key are newer than this one
    /// and stay: MinIO counts, newest first, the noncurrent versions it
    /// does not expire in the same pass.
    pub(crate) newer_noncurrent: usize,
    /// Number of versions of the key (for expired-delete-marker: a delete
    /// marker that is the only version left).
    pub(crate) num_versions: usize,
    pub(crate) tags: &'a [(String, String)],
}

/// What to do with a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    None,
    /// Expire the current version: a delete marker in a versioned bucket,
    /// removal otherwise.
    DeleteCurrent,
    /// Remove this exact version (noncurrent expiry, or an expired delete
    /// marker).
    DeleteVersion,
}

/// When an action falls due: at once (`None`) or at an instant.
type Due = Option<SystemTime>;

/// Percent-encoding of the `rule-id` of `x-amz-expiration` ("The value of
/// the rule-id is URL-encoded"): everything but RFC 3986's unreserved
/// characters, so any ID makes a valid header value.
const RULE_ID: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

impl Rule {
    /// This rule's action on `v` and when it falls due, whether or not it
    /// is due yet; `None` when the rule does nothing to `v` (ever, or until
    /// more versions come).
    fn event(&self, v: &VersionFacts<'_>) -> Option<(Action, Due)> {
        if !self.enabled
            || !self
                .filter
                .matches(v.key, v.size, v.tags, v.is_delete_marker)
        {
            return None;
        }
        if v.is_latest && v.is_delete_marker {
            // Only a marker with nothing left behind it expires.
            if v.num_versions != 1 {
                return None;
            }
            return match self.expiration? {
                Expiration::ExpiredObjectDeleteMarker(true) => Some((Action::DeleteVersion, None)),
                // "Specifying the Days tag will automatically perform
                // ExpiredObjectDeleteMarker cleanup once delete markers are
                // old enough."
                Expiration::Days(d) => {
                    Some((Action::DeleteVersion, Some(due_after_days(v.mod_time, d)?)))
                }
                Expiration::Date(_) | Expiration::ExpiredObjectDeleteMarker(false) => None,
            };
        }
        if v.is_latest {
            return match self.expiration? {
                Expiration::Days(d) => {
                    Some((Action::DeleteCurrent, Some(due_after_days(v.mod_time, d)?)))
                }
                Expiration::Date(secs) => {
                    Some((Action::DeleteCurrent, Some(from_unix_secs(secs)?)))
                }
                Expiration::ExpiredObjectDeleteMarker(_) => None,
            };
        }
        let n = self.noncurrent_expiration?;
        // "For the deletion to occur, both the NoncurrentDays and the
        // NewerNoncurrentVersions values must be exceeded."
        let kept_enough = n
            .newer_versions
            .is_none_or(|k| u32::try_from(v.newer_noncurrent).unwrap_or(u32::MAX) >= k);
        if !kept_enough {
            return None;
        }
        let due = match n.days {
            Some(d) => Some(due_after_days(v.successor_mod_time?, d)?),
            None => None,
        };
        Some((Action::DeleteVersion, due))
    }
}

/// The earlier of two due instants (at once is earliest).
fn earlier(a: Due, b: Due) -> bool {
    match (a, b) {
        (None, Some(_)) => true,
        (Some(x), Some(y)) => x < y,
        (_, None) => false,
    }
}

impl Lifecycle {
    /// The earliest due action of the rules on `v`, with its rule; among
    /// rules due at the same instant, the first in the document.
    fn next_event(&self, v: &VersionFacts<'_>) -> Option<(Action, Due, &Rule)> {
        let mut best: Option<(Action, Due, &Rule)> = None;
        for r in &self.rules {
            if let Some((action, due)) = r.event(v)
                && best.is_none_or(|(_, b, _)| earlier(due, b))
            {
                best = Some((action, due, r));
            }
        }
        best
    }

    /// What to do with version `v` at `now`, and the ID of the rule that
    /// says so. [`Action::None`] (and no rule) until an action is due.
    pub(crate) fn eval(&self, v: &VersionFacts<'_>, now: SystemTime) -> (Action, Option<&str>) {
        match self.next_event(v) {
            Some((action, due, r)) if due.is_none_or(|t| now >= t) => (action, Some(r.id.as_str())),
            _ => (Action::None, None),
        }
    }

    /// The `x-amz-expiration` value for the current version of `key` when a
    /// rule will expire it: `expiry-date="Fri, 23 Dec 2012 00:00:00 GMT",
    /// rule-id="picture-deletion-rule"`, the earliest expiring rule's date
    /// and URL-encoded ID (MinIO reports the earliest due event). `None`
    /// for a noncurrent version (its expiry depends on its successor, not
    /// known here) and when no enabled rule expires the object.
    pub(crate) fn expiration_header(
        &self,
        key: &str,
        size: u64,
        mod_time: SystemTime,
        tags: &[(String, String)],
        is_latest: bool,
    ) -> Option<String> {
        if !is_latest {
            return None;
        }
        let v = VersionFacts {
            key,
            size,
            mod_time,
            is_latest: true,
            is_delete_marker: false,
            successor_mod_time: None,
            newer_noncurrent: 0,
            num_versions: 1,
            tags,
        };
        let (_, due, r) = self.next_event(&v)?;
        Some(format!(
            "expiry-date=\"{}\", rule-id=\"{}\"",
            http_date(due?),
            utf8_percent_encode(&r.id, RULE_ID)
        ))
    }

    /// Whether an incomplete multipart upload of `key` initiated at
    /// `initiated` is to be aborted at `now`: an enabled rule with
    /// AbortIncompleteMultipartUpload whose prefix the key has, due at the
    /// first midnight UTC after `initiated + DaysAfterInitiation` (S3's
    /// rounding; MinIO has no such action). Filters on tags or sizes never
    /// pass validation with this action and, defensively, never match an
    /// upload.
    pub(crate) fn abort_upload_due(
        &self,
        key: &str,
        initiated: SystemTime,
        now: SystemTime,
    ) -> bool {
        self.rules.iter().any(|r| {
            r.enabled
                && !r.filter.has_tags()
                && !r.filter.has_size()
                && key.starts_with(r.filter.prefix())
                && r.abort_after_days
                    .and_then(|d| due_after_days(initiated, d))
                    .is_some_and(|due| now >= due)
        })
    }
}
