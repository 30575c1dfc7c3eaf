//! The `LifecycleConfiguration` document GetBucketLifecycleConfiguration
//! answers: every rule as it was put (IDs, filters, actions, transitions
//! included), in S3's namespace. [`Lifecycle::parse`] reads it back to the
//! same configuration.

use super::dates::format_date;
use super::{
    Expiration, Filter, Lifecycle, NoncurrentTransition, Rule, Transition, TransitionWhen,
};
use crate::xml::XmlWriter;

impl Lifecycle {
    /// The document, with the XML declaration.
    pub(crate) fn to_xml(&self) -> String {
        let mut w = XmlWriter::new();
        w.root("LifecycleConfiguration");
        for r in &self.rules {
            rule(&mut w, r);
        }
        w.close("LifecycleConfiguration");
        w.finish()
    }
}

fn rule(w: &mut XmlWriter, r: &Rule) {
    w.open("Rule");
    if !r.id.is_empty() {
        w.elem("ID", &r.id);
    }
    filter(w, &r.filter);
    w.elem("Status", if r.enabled { "Enabled" } else { "Disabled" });
    if let Some(e) = &r.expiration {
        w.open("Expiration");
        match e {
            Expiration::Days(d) => w.elem("Days", &d.to_string()),
            Expiration::Date(secs) => w.elem("Date", &format_date(*secs)),
            Expiration::ExpiredObjectDeleteMarker(on) => w.elem(
                "ExpiredObjectDeleteMarker",
                if *on { "true" } else { "false" },
            ),
        };
        w.close("Expiration");
    }
    for t in &r.transitions {
        transition(w, t);
    }
    for t in &r.noncurrent_transitions {
        noncurrent_transition(w, t);
    }
    if let Some(n) = &r.noncurrent_expiration {
        w.open("NoncurrentVersionExpiration");
        w.opt("NoncurrentDays", n.days.map(|d| d.to_string()).as_deref());
        w.opt(
            "NewerNoncurrentVersions",
            n.newer_versions.map(|v| v.to_string()).as_deref(),
        );
        w.close("NoncurrentVersionExpiration");
    }
    if let Some(days) = r.abort_after_days {
        w.open("AbortIncompleteMultipartUpload")
            .elem("DaysAfterInitiation", &days.to_string())
            .close("AbortIncompleteMultipartUpload");
    }
    w.close("Rule");
}

fn tag(w: &mut XmlWriter, key: &str, value: &str) {
    w.open("Tag")
        .elem("Key", key)
        .elem("Value", value)
        .close("Tag");
}

fn filter(w: &mut XmlWriter, f: &Filter) {
    if let Filter::Legacy(p) = f {
        w.elem("Prefix", p);
        return;
    }
    w.open("Filter");
    match f {
        Filter::Legacy(_) | Filter::All => {}
        Filter::Prefix(p) => {
            w.elem("Prefix", p);
        }
        Filter::Tag(k, v) => tag(w, k, v),
        Filter::SizeGreaterThan(n) => {
            w.elem("ObjectSizeGreaterThan", &n.to_string());
        }
        Filter::SizeLessThan(n) => {
            w.elem("ObjectSizeLessThan", &n.to_string());
        }
        Filter::And(a) => {
            w.open("And");
            w.opt("Prefix", a.prefix.as_deref());
            for (k, v) in &a.tags {
                tag(w, k, v);
            }
            w.opt(
                "ObjectSizeGreaterThan",
                a.size_greater_than.map(|n| n.to_string()).as_deref(),
            );
            w.opt(
                "ObjectSizeLessThan",
                a.size_less_than.map(|n| n.to_string()).as_deref(),
            );
            w.close("And");
        }
    }
    w.close("Filter");
}

fn transition(w: &mut XmlWriter, t: &Transition) {
    w.open("Transition");
    match t.when {
        TransitionWhen::Days(d) => w.elem("Days", &d.to_string()),
        TransitionWhen::Date(secs) => w.elem("Date", &format_date(secs)),
    };
    w.elem("StorageClass", &t.storage_class).close("Transition");
}

fn noncurrent_transition(w: &mut XmlWriter, t: &NoncurrentTransition) {
    w.open("NoncurrentVersionTransition")
        .elem("NoncurrentDays", &t.days.to_string());
    w.opt(
        "NewerNoncurrentVersions",
        t.newer_versions.map(|v| v.to_string()).as_deref(),
    );
    w.elem("StorageClass", &t.storage_class)
        .close("NoncurrentVersionTransition");
}
