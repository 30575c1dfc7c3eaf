//! Bucket lifecycle configuration: the `LifecycleConfiguration` document of
//! PutBucketLifecycleConfiguration, parsed and validated as S3 does
//! ([`Lifecycle::parse`]), the document GetBucketLifecycleConfiguration
//! answers ([`Lifecycle::to_xml`]), and the rules' verdict on one object
//! version ([`Lifecycle::eval`]), on an incomplete multipart upload
//! ([`Lifecycle::abort_upload_due`]) and for the `x-amz-expiration` header
//! ([`Lifecycle::expiration_header`]).
//!
//! No clock is read here: every verdict takes the instant it is asked for,
//! so the scanner decides what time it is and tests can move time.
//!
//! Transition and NoncurrentVersionTransition actions are parsed, kept and
//! returned by GET, but never executed: the server has one storage class
//! and no tiers to move data to ([`Lifecycle::has_transitions`] tells the
//! caller so it can say as much). Expiration, NoncurrentVersionExpiration
//! and AbortIncompleteMultipartUpload are executed by whoever acts on
//! [`Lifecycle::eval`] and [`Lifecycle::abort_upload_due`].

mod dates;
mod eval;
mod parse;
mod render;
mod run;
#[cfg(test)]
mod tests;

pub(crate) use eval::{Action, VersionFacts};
pub use run::{Clock, LifecycleHandle, LifecycleOptions, LifecycleStats, run_pass, spawn};

/// S3's limit on the rules of one configuration ("up to 1,000 rules. This
/// limit is not adjustable").
pub(crate) const MAX_RULES: usize = 1000;
/// The longest rule ID S3 accepts, in characters.
pub(crate) const MAX_ID_CHARS: usize = 255;
/// The longest key prefix of a filter, in bytes (S3's key length).
pub(crate) const MAX_PREFIX_BYTES: usize = 1024;
/// The most tags one rule's filter may name: S3's bucket tag limit, far
/// above the 10 tags an object can carry (a filter naming more tags than
/// an object can have matches nothing).
pub(crate) const MAX_FILTER_TAGS: usize = 50;
/// Tag key and value lengths, in characters, as for object tags.
pub(crate) const MAX_TAG_KEY_CHARS: usize = 128;
pub(crate) const MAX_TAG_VALUE_CHARS: usize = 256;
/// S3's limit on NewerNoncurrentVersions ("You can specify up to 100
/// noncurrent versions to retain").
pub(crate) const MAX_NEWER_NONCURRENT: u32 = 100;
/// The largest object size a filter bound may name (1000 TiB).
pub(crate) const MAX_FILTER_SIZE: u64 = 1_099_511_627_776_000;

/// A validated lifecycle configuration: its rules in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lifecycle {
    rules: Vec<Rule>,
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The rule's ID; empty when the document gave none (see
    /// [`Lifecycle::fill_missing_ids`]).
    pub(crate) id: String,
    /// `Status` is `Enabled`; a disabled rule is kept and returned but
    /// never applies.
    pub(crate) enabled: bool,
    pub(crate) filter: Filter,
    pub(crate) expiration: Option<Expiration>,
    pub(crate) noncurrent_expiration: Option<NoncurrentExpiration>,
    /// AbortIncompleteMultipartUpload's `DaysAfterInitiation`.
    pub(crate) abort_after_days: Option<u32>,
    /// Kept and returned, never executed.
    pub(crate) transitions: Vec<Transition>,
    /// Kept and returned, never executed.
    pub(crate) noncurrent_transitions: Vec<NoncurrentTransition>,
}

/// Which objects a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Filter {
    /// `<Prefix>` directly in the rule: the V1 form of the deprecated
    /// PutBucketLifecycle, still accepted.
    Legacy(String),
    /// An empty `<Filter/>`: every object of the bucket.
    All,
    /// `<Filter><Prefix>`.
    Prefix(String),
    /// `<Filter><Tag>`: objects carrying this tag.
    Tag(String, String),
    /// `<Filter><ObjectSizeGreaterThan>`: sizes strictly above.
    SizeGreaterThan(u64),
    /// `<Filter><ObjectSizeLessThan>`: sizes strictly below.
    SizeLessThan(u64),
    /// `<Filter><And>`: every predicate at once.
    And(AndFilter),
}

/// The predicates of `<And>` (two or more of them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct AndFilter {
    pub(crate) prefix: Option<String>,
    pub(crate) tags: Vec<(String, String)>,
    pub(crate) size_greater_than: Option<u64>,
    pub(crate) size_less_than: Option<u64>,
}

/// The Expiration action, one of three forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiration {
    /// The current version expires this many days after its creation.
    Days(u32),
    /// The current version expires at this midnight UTC (seconds since
    /// the Unix epoch).
    Date(i64),
    /// `ExpiredObjectDeleteMarker`: whether a delete marker left with no
    /// other version is removed (`false` is accepted and does nothing).
    ExpiredObjectDeleteMarker(bool),
}

/// The NoncurrentVersionExpiration action: at least one of the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoncurrentExpiration {
    /// Days a version stays noncurrent before it expires.
    pub(crate) days: Option<u32>,
    /// How many of the newest noncurrent versions are kept whatever their
    /// age.
    pub(crate) newer_versions: Option<u32>,
}

/// When a Transition happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransitionWhen {
    Days(u32),
    /// Midnight UTC, seconds since the Unix epoch.
    Date(i64),
}

/// A Transition action (kept, never executed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Transition {
    pub(crate) when: TransitionWhen,
    pub(crate) storage_class: String,
}

/// A NoncurrentVersionTransition action (kept, never executed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoncurrentTransition {
    pub(crate) days: u32,
    pub(crate) newer_versions: Option<u32>,
    pub(crate) storage_class: String,
}

impl Filter {
    /// The key prefix every matching object has (empty: any key).
    pub(crate) fn prefix(&self) -> &str {
        match self {
            Filter::Legacy(p) | Filter::Prefix(p) => p,
            Filter::And(a) => a.prefix.as_deref().unwrap_or(""),
            Filter::All
            | Filter::Tag(..)
            | Filter::SizeGreaterThan(_)
            | Filter::SizeLessThan(_) => "",
        }
    }

    /// Whether the filter names tags: S3 refuses such a filter on the
    /// actions that concern things without tags (delete markers, uploads).
    pub(crate) fn has_tags(&self) -> bool {
        match self {
            Filter::Tag(..) => true,
            Filter::And(a) => !a.tags.is_empty(),
            _ => false,
        }
    }

    /// Whether the filter bounds the object size.
    pub(crate) fn has_size(&self) -> bool {
        match self {
            Filter::SizeGreaterThan(_) | Filter::SizeLessThan(_) => true,
            Filter::And(a) => a.size_greater_than.is_some() || a.size_less_than.is_some(),
            _ => false,
        }
    }

    /// Whether an object (or delete marker) matches: the prefix, every tag
    /// of the filter present with the same value, and the size strictly
    /// within the bounds. A delete marker has no size, so size bounds do
    /// not apply to it (as MinIO evaluates them).
    pub(crate) fn matches(
        &self,
        key: &str,
        size: u64,
        tags: &[(String, String)],
        is_delete_marker: bool,
    ) -> bool {
        let has_tag = |k: &str, v: &str| tags.iter().any(|(tk, tv)| tk == k && tv == v);
        let in_bounds = |gt: Option<u64>, lt: Option<u64>| {
            is_delete_marker || (gt.is_none_or(|g| size > g) && lt.is_none_or(|l| size < l))
        };
        match self {
            Filter::All => true,
            Filter::Legacy(p) | Filter::Prefix(p) => key.starts_with(p.as_str()),
            Filter::Tag(k, v) => has_tag(k, v),
            Filter::SizeGreaterThan(g) => in_bounds(Some(*g), None),
            Filter::SizeLessThan(l) => in_bounds(None, Some(*l)),
            Filter::And(a) => {
                a.prefix.as_deref().is_none_or(|p| key.starts_with(p))
                    && a.tags.iter().all(|(k, v)| has_tag(k, v))
                    && in_bounds(a.size_greater_than, a.size_less_than)
            }
        }
    }
}

impl Rule {
    /// Whether the rule has an action this server executes on objects.
    fn acts_on_objects(&self) -> bool {
        self.noncurrent_expiration.is_some()
            || matches!(
                self.expiration,
                Some(
                    Expiration::Days(_)
                        | Expiration::Date(_)
                        | Expiration::ExpiredObjectDeleteMarker(true)
                )
            )
    }
}

impl Lifecycle {
    /// The rules, in document order.
    pub(crate) fn rules(&self) -> &[Rule] {
        &self.rules
    }

    fn enabled(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().filter(|r| r.enabled)
    }

    /// Gives every rule without an ID a fresh random one, as S3 and MinIO
    /// do when the configuration is put, so that what is stored, what GET
    /// answers and the `rule-id` of `x-amz-expiration` name each rule.
    pub(crate) fn fill_missing_ids(&mut self) {
        for r in self.rules.iter_mut().filter(|r| r.id.is_empty()) {
            r.id = uuid::Uuid::new_v4().to_string();
        }
    }

    /// Whether any rule (enabled or not) holds a Transition or
    /// NoncurrentVersionTransition, actions the server keeps but never
    /// runs.
    pub(crate) fn has_transitions(&self) -> bool {
        self.rules
            .iter()
            .any(|r| !r.transitions.is_empty() || !r.noncurrent_transitions.is_empty())
    }

    /// Whether an enabled rule aborts incomplete multipart uploads: the
    /// scanner skips listing uploads otherwise.
    pub(crate) fn has_abort_rules(&self) -> bool {
        self.enabled().any(|r| r.abort_after_days.is_some())
    }

    /// Whether an enabled rule expires noncurrent versions: the scanner
    /// skips a key's older versions otherwise.
    pub(crate) fn has_noncurrent_rules(&self) -> bool {
        self.enabled().any(|r| r.noncurrent_expiration.is_some())
    }

    /// Whether an enabled rule expires current versions (Days or Date).
    pub(crate) fn has_current_rules(&self) -> bool {
        self.enabled().any(|r| {
            matches!(
                r.expiration,
                Some(Expiration::Days(_) | Expiration::Date(_))
            )
        })
    }

    /// Whether an enabled rule removes a delete marker left alone:
    /// `ExpiredObjectDeleteMarker` true, or Expiration by Days (which S3
    /// applies to such markers once they are old enough).
    pub(crate) fn has_delete_marker_rules(&self) -> bool {
        self.enabled().any(|r| {
            matches!(
                r.expiration,
                Some(Expiration::Days(_) | Expiration::ExpiredObjectDeleteMarker(true))
            )
        })
    }

    /// Whether any enabled rule could act on an object whose key starts
    /// with `prefix`: the scanner skips a whole subtree otherwise. A rule
    /// is relevant when its prefix and `prefix` are prefixes of one
    /// another.
    pub(crate) fn may_act_under(&self, prefix: &str) -> bool {
        self.enabled().any(|r| {
            let p = r.filter.prefix();
            r.acts_on_objects() && (prefix.starts_with(p) || p.starts_with(prefix))
        })
    }
}
