//! The canonical JSON form of a policy ([`Policy::to_json`]).
//!
//! One layout for every document: fields in a fixed order (`Version`,
//! `Id`, `Statement`; in a statement `Sid`, `Effect`, `Principal`,
//! `Action`, `Resource`, `Condition` and their `Not` forms), lists always
//! as arrays, principals as `{"AWS": [...]}`, condition keys as
//! written, values with the type they were written with. Parsing the
//! output gives back an equal policy, and serialising that gives the same
//! bytes.

use crate::condition::value::Scalar;
use crate::json::write_str;
use crate::policy::Policy;
use crate::statement::Statement;

impl Policy {
    /// The policy as canonical, compact JSON.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256);
        out.push('{');
        let mut first = true;
        let mut field = |out: &mut String, name: &str| {
            if !first {
                out.push(',');
            }
            first = false;
            write_str(out, name);
            out.push(':');
        };
        if let Some(v) = self.version {
            field(&mut out, "Version");
            write_str(&mut out, v.as_str());
        }
        if let Some(id) = &self.id {
            field(&mut out, "Id");
            write_str(&mut out, id);
        }
        field(&mut out, "Statement");
        out.push('[');
        for (i, s) in self.statements.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_statement(&mut out, s);
        }
        out.push_str("]}");
        out
    }
}

fn write_list<'a>(out: &mut String, items: impl IntoIterator<Item = &'a str>) {
    out.push('[');
    for (i, s) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, s);
    }
    out.push(']');
}

fn write_statement(out: &mut String, s: &Statement) {
    out.push('{');
    if let Some(sid) = &s.sid {
        write_str(out, "Sid");
        out.push(':');
        write_str(out, sid);
        out.push(',');
    }
    write_str(out, "Effect");
    out.push(':');
    write_str(out, s.effect.as_str());
    if let Some(p) = &s.principal {
        out.push(',');
        write_str(
            out,
            if p.negated {
                "NotPrincipal"
            } else {
                "Principal"
            },
        );
        out.push_str(":{\"AWS\":");
        write_list(out, p.patterns.iter().map(String::as_str));
        out.push('}');
    }
    let lists = [
        (
            "Action",
            s.actions
                .iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>(),
        ),
        (
            "NotAction",
            s.not_actions.iter().map(|a| a.text.as_str()).collect(),
        ),
        (
            "Resource",
            s.resources.iter().map(|r| r.text.as_str()).collect(),
        ),
        (
            "NotResource",
            s.not_resources.iter().map(|r| r.text.as_str()).collect(),
        ),
    ];
    for (name, items) in lists {
        if !items.is_empty() {
            out.push(',');
            write_str(out, name);
            out.push(':');
            write_list(out, items);
        }
    }
    if !s.conditions.is_empty() {
        out.push_str(",\"Condition\":{");
        // Conditions are kept one per operator and key, in document order;
        // those of one operator are written back under it.
        let mut operators: Vec<String> = Vec::new();
        for c in &s.conditions {
            let op = c.operator_name();
            if !operators.contains(&op) {
                operators.push(op);
            }
        }
        for (i, op) in operators.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_str(out, op);
            out.push_str(":{");
            let under = s.conditions.iter().filter(|c| c.operator_name() == *op);
            for (j, c) in under.enumerate() {
                if j > 0 {
                    out.push(',');
                }
                write_str(out, &c.key.text);
                out.push_str(":[");
                for (k, v) in c.values.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    match v {
                        Scalar::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                        Scalar::Int(n) => out.push_str(&n.to_string()),
                        Scalar::Str(t) => write_str(out, t),
                    }
                }
                out.push(']');
            }
            out.push('}');
        }
        out.push('}');
    }
    out.push('}');
}
