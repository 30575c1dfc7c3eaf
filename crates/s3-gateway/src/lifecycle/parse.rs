//! Parsing and validation of a `LifecycleConfiguration` document, with
//! S3's error codes and messages.
//!
//! A structural fault (`MalformedXML`: an unknown or repeated element, a
//! missing one, a number that is not a number, two filter predicates, two
//! forms of Expiration) wins over any value fault (`InvalidArgument`,
//! `InvalidRequest`) anywhere in the document, as a check against S3's
//! schema before the checks of values has it. The parser returns a
//! structural fault at once and remembers only the first value fault,
//! which it returns once the whole document has parsed.

use std::collections::HashSet;

use super::dates::{self, ParsedDate};
use super::{
    AndFilter, Expiration, Filter, Lifecycle, MAX_FILTER_SIZE, MAX_FILTER_TAGS, MAX_ID_CHARS,
    MAX_NEWER_NONCURRENT, MAX_PREFIX_BYTES, MAX_RULES, MAX_TAG_KEY_CHARS, MAX_TAG_VALUE_CHARS,
    NoncurrentExpiration, NoncurrentTransition, Rule, Transition, TransitionWhen,
};
use crate::error::S3Error;
use crate::xml::Element;

fn malformed() -> S3Error {
    S3Error::new("MalformedXML")
}

fn invalid_request(msg: &str) -> S3Error {
    S3Error::with_message("InvalidRequest", msg)
}

/// The first value fault of the document, reported once its structure is
/// known to be sound.
#[derive(Default)]
struct Faults {
    first: Option<S3Error>,
}

impl Faults {
    fn add(&mut self, e: S3Error) {
        if self.first.is_none() {
            self.first = Some(e);
        }
    }

    fn check(&mut self, ok: bool, e: impl FnOnce() -> S3Error) {
        if !ok {
            self.add(e());
        }
    }
}

impl Lifecycle {
    /// Parses and validates a PutBucketLifecycleConfiguration document (its
    /// size already bounded by the caller; [`crate::xml::parse`] bounds its
    /// depth and element count, which 1000 ordinary rules stay well within).
    /// The root is
    /// `LifecycleConfiguration` (MinIO also reads `BucketLifecycleConfiguration`);
    /// MinIO's own `ExpiryUpdatedAt` bookkeeping element is accepted and
    /// ignored so that a configuration MinIO wrote parses too.
    pub(crate) fn parse(xml: &[u8]) -> Result<Lifecycle, S3Error> {
        let root = crate::xml::parse(xml)?;
        if root.name != "LifecycleConfiguration" && root.name != "BucketLifecycleConfiguration" {
            return Err(malformed());
        }
        let mut faults = Faults::default();
        let mut rules = Vec::new();
        for child in &root.children {
            match child.name.as_str() {
                "Rule" => rules.push(rule(child, &mut faults)?),
                "ExpiryUpdatedAt" => {}
                _ => return Err(malformed()),
            }
        }
        if rules.is_empty() {
            return Err(malformed());
        }
        if let Some(e) = faults.first {
            return Err(e);
        }
        check_document(&rules)?;
        Ok(Lifecycle { rules })
    }
}

/// The checks across rules: their number, one filter form for the whole
/// document, unique IDs.
fn check_document(rules: &[Rule]) -> Result<(), S3Error> {
    if rules.len() > MAX_RULES {
        return Err(S3Error::with_message(
            "InvalidArgument",
            "Lifecycle configuration allows a maximum of 1000 rules",
        ));
    }
    // A document is V1 (`<Prefix>` in every rule) or V2 (`<Filter>` in
    // every rule); the first rule decides which, and S3 names the element
    // that breaks it.
    let legacy = |r: &Rule| matches!(r.filter, Filter::Legacy(_));
    if let Some(first) = rules.first() {
        if legacy(first) && !rules.iter().all(legacy) {
            return Err(invalid_request(
                "Filter element can only be used in Lifecycle V2.",
            ));
        }
        if !legacy(first) && rules.iter().any(legacy) {
            return Err(invalid_request(
                "Base level prefix cannot be used in Lifecycle V2, prefixes are only supported in the Filter.",
            ));
        }
    }
    // A rule without an ID gets a fresh one when stored, so empty IDs
    // never collide.
    let mut seen = HashSet::new();
    for r in rules.iter().filter(|r| !r.id.is_empty()) {
        if !seen.insert(r.id.as_str()) {
            return Err(S3Error::invalid_argument(
                "Rule ID must be unique. Found same ID for more than one rule",
                "ID",
                &r.id,
            ));
        }
    }
    Ok(())
}

/// The text of an element that must hold text only.
fn leaf(el: &Element) -> Result<&str, S3Error> {
    if el.children.is_empty() {
        Ok(&el.text)
    } else {
        Err(malformed())
    }
}

/// The text of a leaf that names something (an ID, a prefix, a tag): it
/// must be text an XML document can carry back, since GET returns it.
fn name_text(el: &Element) -> Result<&str, S3Error> {
    let text = leaf(el)?;
    let unwritable = |c: char| {
        (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{FFFE}' || c == '\u{FFFF}'
    };
    if text.contains(unwritable) {
        return Err(malformed());
    }
    Ok(text)
}

/// Stores an element that may appear once.
fn once<'a>(slot: &mut Option<&'a Element>, el: &'a Element) -> Result<(), S3Error> {
    if slot.replace(el).is_some() {
        return Err(malformed());
    }
    Ok(())
}

/// An integer of S3's `Integer` type (32 bits), any sign.
fn int32(el: &Element) -> Result<i64, S3Error> {
    leaf(el)?
        .trim()
        .parse::<i32>()
        .map(i64::from)
        .map_err(|_| malformed())
}

/// An integer of S3's `Long` type, any sign.
fn int64(el: &Element) -> Result<i64, S3Error> {
    leaf(el)?.trim().parse::<i64>().map_err(|_| malformed())
}

/// An XML Schema boolean.
fn boolean(el: &Element) -> Result<bool, S3Error> {
    match leaf(el)?.trim() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(malformed()),
    }
}

/// A `Date`: its form is structure, its being midnight a value check.
fn date(el: &Element, faults: &mut Faults) -> Result<i64, S3Error> {
    let text = leaf(el)?;
    let parsed: ParsedDate = dates::parse_date(text).ok_or_else(malformed)?;
    faults.check(parsed.is_midnight(), || {
        S3Error::invalid_argument("'Date' must be at midnight GMT", "Date", text)
    });
    Ok(parsed.secs)
}

/// A count of days (or versions) that must be positive: S3's message names
/// the element and its action.
fn positive(el: &Element, action: &str, faults: &mut Faults) -> Result<u32, S3Error> {
    let n = int32(el)?;
    faults.check(n > 0, || {
        S3Error::invalid_argument(
            format!(
                "'{}' for {action} action must be a positive integer",
                el.name
            ),
            &el.name,
            &n.to_string(),
        )
    });
    Ok(u32::try_from(n).unwrap_or(0))
}

/// A count of days that may be zero (transitions).
fn nonnegative(el: &Element, action: &str, faults: &mut Faults) -> Result<u32, S3Error> {
    let n = int32(el)?;
    faults.check(n >= 0, || {
        S3Error::invalid_argument(
            format!("'{}' in {action} action must be nonnegative", el.name),
            &el.name,
            &n.to_string(),
        )
    });
    Ok(u32::try_from(n).unwrap_or(0))
}

fn rule(el: &Element, faults: &mut Faults) -> Result<Rule, S3Error> {
    let mut id = None;
    let mut status = None;
    let mut legacy = None;
    let mut filter_el = None;
    let mut expiration_el = None;
    let mut noncurrent_el = None;
    let mut abort_el = None;
    let mut transition_els = Vec::new();
    let mut noncurrent_transition_els = Vec::new();
    for c in &el.children {
        match c.name.as_str() {
            "ID" => once(&mut id, c)?,
            "Status" => once(&mut status, c)?,
            "Prefix" => once(&mut legacy, c)?,
            "Filter" => once(&mut filter_el, c)?,
            "Expiration" => once(&mut expiration_el, c)?,
            "NoncurrentVersionExpiration" => once(&mut noncurrent_el, c)?,
            "AbortIncompleteMultipartUpload" => once(&mut abort_el, c)?,
            "Transition" => transition_els.push(c),
            "NoncurrentVersionTransition" => noncurrent_transition_els.push(c),
            _ => return Err(malformed()),
        }
    }
    let id = id.map(name_text).transpose()?.unwrap_or("").to_owned();
    faults.check(id.chars().count() <= MAX_ID_CHARS, || {
        S3Error::invalid_argument(
            "ID length should not exceed allowed limit of 255",
            "ID",
            &id,
        )
    });
    let enabled = match status.map(leaf).transpose()?.map(str::trim) {
        Some("Enabled") => true,
        Some("Disabled") => false,
        _ => return Err(malformed()),
    };
    let filter = match (legacy, filter_el) {
        (Some(p), None) => Filter::Legacy(prefix(p, faults)?),
        (None, Some(f)) => filter(f, faults)?,
        _ => return Err(malformed()),
    };
    let expiration = expiration_el
        .map(|e| expiration(e, &filter, faults))
        .transpose()?;
    let noncurrent_expiration = noncurrent_el
        .map(|e| noncurrent_expiration(e, &filter, faults))
        .transpose()?;
    let abort_after_days = abort_el.map(|e| abort(e, &filter, faults)).transpose()?;
    let transitions = transition_els
        .into_iter()
        .map(|e| transition(e, faults))
        .collect::<Result<Vec<_>, _>>()?;
    let noncurrent_transitions = noncurrent_transition_els
        .into_iter()
        .map(|e| noncurrent_transition(e, &filter, faults))
        .collect::<Result<Vec<_>, _>>()?;
    faults.check(
        expiration.is_some()
            || noncurrent_expiration.is_some()
            || abort_after_days.is_some()
            || !transitions.is_empty()
            || !noncurrent_transitions.is_empty(),
        || invalid_request("At least one action needs to be specified in a rule"),
    );
    Ok(Rule {
        id,
        enabled,
        filter,
        expiration,
        noncurrent_expiration,
        abort_after_days,
        transitions,
        noncurrent_transitions,
    })
}

fn prefix(el: &Element, faults: &mut Faults) -> Result<String, S3Error> {
    let p = name_text(el)?;
    faults.check(p.len() <= MAX_PREFIX_BYTES, || {
        invalid_request("The maximum size of a prefix is 1024")
    });
    Ok(p.to_owned())
}

fn tag(el: &Element, faults: &mut Faults) -> Result<(String, String), S3Error> {
    let mut key = None;
    let mut value = None;
    for c in &el.children {
        match c.name.as_str() {
            "Key" => once(&mut key, c)?,
            "Value" => once(&mut value, c)?,
            _ => return Err(malformed()),
        }
    }
    let key = name_text(key.ok_or_else(malformed)?)?;
    // MinIO leaves an empty Value out of the documents it writes.
    let value = value.map(name_text).transpose()?.unwrap_or("");
    let key_chars = key.chars().count();
    faults.check((1..=MAX_TAG_KEY_CHARS).contains(&key_chars), || {
        invalid_request("A Tag's Key must be a length between 1 and 128.")
    });
    faults.check(value.chars().count() <= MAX_TAG_VALUE_CHARS, || {
        invalid_request("A Tag's Value must be a length between 0 and 256.")
    });
    Ok((key.to_owned(), value.to_owned()))
}

fn size_greater_than(el: &Element, faults: &mut Faults) -> Result<u64, S3Error> {
    let n = int64(el)?;
    let ok = u64::try_from(n).is_ok_and(|n| n <= MAX_FILTER_SIZE);
    faults.check(ok, || {
        invalid_request("'ObjectSizeGreaterThan' should be between 0 and 1099511627776000.")
    });
    Ok(u64::try_from(n).unwrap_or(0))
}

fn size_less_than(el: &Element, faults: &mut Faults) -> Result<u64, S3Error> {
    let n = int64(el)?;
    let ok = u64::try_from(n).is_ok_and(|n| (1..=MAX_FILTER_SIZE).contains(&n));
    faults.check(ok, || {
        invalid_request("'ObjectSizeLessThan' should be between 1 and 1099511627776000.")
    });
    Ok(u64::try_from(n).unwrap_or(0))
}

/// `<Filter>`: at most one predicate (none is every object).
fn filter(el: &Element, faults: &mut Faults) -> Result<Filter, S3Error> {
    let mut prefix_el = None;
    let mut tag_el = None;
    let mut gt_el = None;
    let mut lt_el = None;
    let mut and_el = None;
    for c in &el.children {
        match c.name.as_str() {
            "Prefix" => once(&mut prefix_el, c)?,
            "Tag" => once(&mut tag_el, c)?,
            "ObjectSizeGreaterThan" => once(&mut gt_el, c)?,
            "ObjectSizeLessThan" => once(&mut lt_el, c)?,
            "And" => once(&mut and_el, c)?,
            _ => return Err(malformed()),
        }
    }
    let given = [prefix_el, tag_el, gt_el, lt_el, and_el]
        .iter()
        .filter(|e| e.is_some())
        .count();
    if given > 1 {
        return Err(malformed());
    }
    if let Some(p) = prefix_el {
        return Ok(Filter::Prefix(prefix(p, faults)?));
    }
    if let Some(t) = tag_el {
        let (k, v) = tag(t, faults)?;
        return Ok(Filter::Tag(k, v));
    }
    if let Some(g) = gt_el {
        return Ok(Filter::SizeGreaterThan(size_greater_than(g, faults)?));
    }
    if let Some(l) = lt_el {
        return Ok(Filter::SizeLessThan(size_less_than(l, faults)?));
    }
    match and_el {
        Some(a) => Ok(Filter::And(and(a, faults)?)),
        None => Ok(Filter::All),
    }
}

/// `<And>`: two or more predicates, tags with distinct keys, a size range
/// that is not empty.
fn and(el: &Element, faults: &mut Faults) -> Result<AndFilter, S3Error> {
    let mut prefix_el = None;
    let mut gt_el = None;
    let mut lt_el = None;
    let mut tag_els = Vec::new();
    for c in &el.children {
        match c.name.as_str() {
            "Prefix" => once(&mut prefix_el, c)?,
            "Tag" => tag_els.push(c),
            "ObjectSizeGreaterThan" => once(&mut gt_el, c)?,
            "ObjectSizeLessThan" => once(&mut lt_el, c)?,
            _ => return Err(malformed()),
        }
    }
    let predicates = tag_els.len()
        + usize::from(prefix_el.is_some())
        + usize::from(gt_el.is_some())
        + usize::from(lt_el.is_some());
    if predicates < 2 {
        return Err(malformed());
    }
    let a = AndFilter {
        prefix: prefix_el.map(|p| prefix(p, faults)).transpose()?,
        tags: tag_els
            .into_iter()
            .map(|t| tag(t, faults))
            .collect::<Result<Vec<_>, _>>()?,
        size_greater_than: gt_el.map(|g| size_greater_than(g, faults)).transpose()?,
        size_less_than: lt_el.map(|l| size_less_than(l, faults)).transpose()?,
    };
    if a.tags.len() > MAX_FILTER_TAGS {
        faults.add(invalid_request(
            "A lifecycle rule filter cannot name more than 50 tags.",
        ));
    } else {
        // Quadratic, but over at most 50 tags.
        let distinct = a
            .tags
            .iter()
            .enumerate()
            .all(|(i, (k, _))| a.tags[..i].iter().all(|(k2, _)| k2 != k));
        faults.check(distinct, || {
            invalid_request("Duplicate Tag Keys are not allowed.")
        });
    }
    if let (Some(g), Some(l)) = (a.size_greater_than, a.size_less_than) {
        faults.check(g < l, || {
            invalid_request(
                "'ObjectSizeLessThan' has to be a value greater than 'ObjectSizeGreaterThan'.",
            )
        });
    }
    Ok(a)
}

/// S3 refuses actions on things without tags or sizes (delete markers,
/// uploads) under a filter on tags or sizes.
fn untagged_action(action: &str, filter: &Filter, faults: &mut Faults) {
    faults.check(!filter.has_tags(), || {
        invalid_request(&format!("{action} cannot be specified with Tags."))
    });
    faults.check(!filter.has_size(), || {
        invalid_request(&format!("{action} cannot be specified with Object Size."))
    });
}

/// `<Expiration>`: exactly one of Days, Date, ExpiredObjectDeleteMarker.
fn expiration(el: &Element, filter: &Filter, faults: &mut Faults) -> Result<Expiration, S3Error> {
    let mut days = None;
    let mut date_el = None;
    let mut marker = None;
    for c in &el.children {
        match c.name.as_str() {
            "Days" => once(&mut days, c)?,
            "Date" => once(&mut date_el, c)?,
            "ExpiredObjectDeleteMarker" => once(&mut marker, c)?,
            _ => return Err(malformed()),
        }
    }
    match (days, date_el, marker) {
        (Some(d), None, None) => Ok(Expiration::Days(positive(d, "Expiration", faults)?)),
        (None, Some(d), None) => Ok(Expiration::Date(date(d, faults)?)),
        (None, None, Some(m)) => {
            let on = boolean(m)?;
            untagged_action("ExpiredObjectDeleteMarker", filter, faults);
            Ok(Expiration::ExpiredObjectDeleteMarker(on))
        }
        _ => Err(malformed()),
    }
}

/// `NewerNoncurrentVersions`: 1 to 100, and only in a V2 (`<Filter>`)
/// rule.
fn newer_versions(
    el: &Element,
    action: &str,
    filter: &Filter,
    faults: &mut Faults,
) -> Result<u32, S3Error> {
    let n = positive(el, action, faults)?;
    faults.check(n <= MAX_NEWER_NONCURRENT, || {
        S3Error::invalid_argument(
            format!("'NewerNoncurrentVersions' for {action} action must be between 1 and 100"),
            "NewerNoncurrentVersions",
            &n.to_string(),
        )
    });
    faults.check(!matches!(filter, Filter::Legacy(_)), || {
        invalid_request("NewerNoncurrentVersions element can only be used in Lifecycle V2.")
    });
    Ok(n)
}

/// `<NoncurrentVersionExpiration>`: NoncurrentDays, NewerNoncurrentVersions
/// or both (MinIO takes NewerNoncurrentVersions alone: keep that many
/// noncurrent versions, expire the rest at once).
fn noncurrent_expiration(
    el: &Element,
    filter: &Filter,
    faults: &mut Faults,
) -> Result<NoncurrentExpiration, S3Error> {
    const ACTION: &str = "NoncurrentVersionExpiration";
    let mut days = None;
    let mut newer = None;
    for c in &el.children {
        match c.name.as_str() {
            "NoncurrentDays" => once(&mut days, c)?,
            "NewerNoncurrentVersions" => once(&mut newer, c)?,
            _ => return Err(malformed()),
        }
    }
    if days.is_none() && newer.is_none() {
        return Err(malformed());
    }
    Ok(NoncurrentExpiration {
        days: days.map(|d| positive(d, ACTION, faults)).transpose()?,
        newer_versions: newer
            .map(|n| newer_versions(n, ACTION, filter, faults))
            .transpose()?,
    })
}

/// `<AbortIncompleteMultipartUpload>`: DaysAfterInitiation, and no filter
/// on tags or sizes (an upload has neither).
fn abort(el: &Element, filter: &Filter, faults: &mut Faults) -> Result<u32, S3Error> {
    let mut days = None;
    for c in &el.children {
        match c.name.as_str() {
            "DaysAfterInitiation" => once(&mut days, c)?,
            _ => return Err(malformed()),
        }
    }
    let days = positive(
        days.ok_or_else(malformed)?,
        "AbortIncompleteMultipartUpload",
        faults,
    )?;
    untagged_action("AbortIncompleteMultipartUpload", filter, faults);
    Ok(days)
}

fn storage_class(el: Option<&Element>) -> Result<String, S3Error> {
    let class = name_text(el.ok_or_else(malformed)?)?.trim();
    if class.is_empty() {
        return Err(malformed());
    }
    Ok(class.to_owned())
}

/// `<Transition>`: Days or Date, and a storage class. MinIO writes
/// `<Days>0</Days>` beside a Date; that reads as the Date.
fn transition(el: &Element, faults: &mut Faults) -> Result<Transition, S3Error> {
    let mut days = None;
    let mut date_el = None;
    let mut class = None;
    for c in &el.children {
        match c.name.as_str() {
            "Days" => once(&mut days, c)?,
            "Date" => once(&mut date_el, c)?,
            "StorageClass" => once(&mut class, c)?,
            _ => return Err(malformed()),
        }
    }
    let storage_class = storage_class(class)?;
    let when = match (days, date_el) {
        (Some(d), None) => TransitionWhen::Days(nonnegative(d, "Transition", faults)?),
        (Some(d), Some(date_el)) if int32(d)? == 0 => TransitionWhen::Date(date(date_el, faults)?),
        (None, Some(d)) => TransitionWhen::Date(date(d, faults)?),
        _ => return Err(malformed()),
    };
    Ok(Transition {
        when,
        storage_class,
    })
}

/// `<NoncurrentVersionTransition>`: NoncurrentDays, a storage class, and
/// perhaps NewerNoncurrentVersions.
fn noncurrent_transition(
    el: &Element,
    filter: &Filter,
    faults: &mut Faults,
) -> Result<NoncurrentTransition, S3Error> {
    const ACTION: &str = "NoncurrentVersionTransition";
    let mut days = None;
    let mut newer = None;
    let mut class = None;
    for c in &el.children {
        match c.name.as_str() {
            "NoncurrentDays" => once(&mut days, c)?,
            "NewerNoncurrentVersions" => once(&mut newer, c)?,
            "StorageClass" => once(&mut class, c)?,
            _ => return Err(malformed()),
        }
    }
    let storage_class = storage_class(class)?;
    Ok(NoncurrentTransition {
        days: nonnegative(days.ok_or_else(malformed)?, ACTION, faults)?,
        newer_versions: newer
            .map(|n| newer_versions(n, ACTION, filter, faults))
            .transpose()?,
        storage_class,
    })
}
