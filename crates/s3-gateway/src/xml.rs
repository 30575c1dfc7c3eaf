//! S3 XML: a small writer for responses and a bounded parser of request
//! documents into a tree of elements.

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::error::S3Error;

/// The namespace of S3's documents.
pub(crate) const S3_NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// Builds an XML document.
pub(crate) struct XmlWriter {
    out: String,
}

impl XmlWriter {
    /// A document with the XML declaration.
    pub(crate) fn new() -> XmlWriter {
        let mut out = String::with_capacity(512);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        XmlWriter { out }
    }

    /// Opens the root element with S3's namespace.
    pub(crate) fn root(&mut self, name: &str) -> &mut Self {
        self.root_ns(name, S3_NS)
    }

    /// Opens the root element with namespace `ns`.
    pub(crate) fn root_ns(&mut self, name: &str, ns: &str) -> &mut Self {
        self.out.push('<');
        self.out.push_str(name);
        self.out.push_str(" xmlns=\"");
        self.out.push_str(ns);
        self.out.push_str("\">");
        self
    }

    /// Opens an element.
    pub(crate) fn open(&mut self, name: &str) -> &mut Self {
        self.out.push('<');
        self.out.push_str(name);
        self.out.push('>');
        self
    }

    /// Closes an element.
    pub(crate) fn close(&mut self, name: &str) -> &mut Self {
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push('>');
        self
    }

    /// An element with text.
    pub(crate) fn elem(&mut self, name: &str, text: &str) -> &mut Self {
        self.open(name);
        escape_into(&mut self.out, text);
        self.close(name)
    }

    /// Text content.
    pub(crate) fn text(&mut self, text: &str) -> &mut Self {
        escape_into(&mut self.out, text);
        self
    }

    /// An element with text, when there is some.
    pub(crate) fn opt(&mut self, name: &str, text: Option<&str>) -> &mut Self {
        if let Some(t) = text {
            self.elem(name, t);
        }
        self
    }

    /// The document.
    pub(crate) fn finish(self) -> String {
        self.out
    }
}

/// Escapes text for element content and attribute values. Characters XML
/// 1.0 cannot carry (most C0 controls) are written as character
/// references, as Go's encoding/xml (and so MinIO) does for keys.
pub(crate) fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => {
                out.push_str(&format!("&#x{:X};", c as u32));
            }
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                out.push('\u{FFFD}');
            }
            c => out.push(c),
        }
    }
}

/// One element of a parsed request document.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Element {
    /// Local name (namespace prefix removed).
    pub name: String,
    /// Text content (concatenated, entities resolved).
    pub text: String,
    /// Child elements in document order.
    pub children: Vec<Element>,
}

impl Element {
    /// The first child named `name`.
    pub(crate) fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// Every child named `name`.
    pub(crate) fn children_named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The text of the first child named `name`.
    pub(crate) fn child_text(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }
}

/// Bounds of a parsed document.
const MAX_DEPTH: usize = 16;
const MAX_ELEMENTS: usize = 20_000;

fn malformed() -> S3Error {
    S3Error::new("MalformedXML")
}

/// Parses a request document (already bounded in size by the caller) into
/// its root element. Namespaces are ignored, as S3 does for request bodies.
pub(crate) fn parse(body: &[u8]) -> Result<Element, S3Error> {
    let text = std::str::from_utf8(body).map_err(|_| malformed())?;
    let mut reader = Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let mut count = 0usize;
    loop {
        let ev = reader.read_event().map_err(|_| malformed())?;
        match ev {
            Event::Start(_) | Event::Empty(_) if root.is_some() => return Err(malformed()),
            Event::Start(s) => {
                count += 1;
                if stack.len() >= MAX_DEPTH || count > MAX_ELEMENTS {
                    return Err(malformed());
                }
                stack.push(Element {
                    name: s.local_name().as_ref().to_owned(),
                    ..Element::default()
                });
            }
            Event::Empty(s) => {
                count += 1;
                if count > MAX_ELEMENTS {
                    return Err(malformed());
                }
                let el = Element {
                    name: s.local_name().as_ref().to_owned(),
                    ..Element::default()
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::End(_) => {
                let el = stack.pop().ok_or_else(malformed)?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => {
                let content = t.xml10_content();
                match stack.last_mut() {
                    Some(el) => el.text.push_str(&content),
                    None if content.trim().is_empty() => {}
                    None => return Err(malformed()),
                }
            }
            Event::CData(t) => match stack.last_mut() {
                Some(el) => el.text.push_str(&t),
                None => return Err(malformed()),
            },
            Event::GeneralRef(r) => {
                let ch = match r.resolve_char_ref().map_err(|_| malformed())? {
                    Some(c) => c,
                    None => match &*r {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        _ => return Err(malformed()),
                    },
                };
                match stack.last_mut() {
                    Some(el) => el.text.push(ch),
                    None => return Err(malformed()),
                }
            }
            Event::DocType(_) => return Err(malformed()),
            Event::Decl(_) | Event::Comment(_) | Event::PI(_) => {}
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err(malformed());
    }
    root.ok_or_else(malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_complete_multipart_upload() {
        let doc = br#"<?xml version="1.0" encoding="UTF-8"?>
<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Part><PartNumber>1</PartNumber><ETag>&quot;abc&quot;</ETag></Part>
  <Part><PartNumber>2</PartNumber><ETag>"def"</ETag></Part>
</CompleteMultipartUpload>"#;
        let root = parse(doc).unwrap();
        assert_eq!(root.name, "CompleteMultipartUpload");
        let parts: Vec<_> = root
            .children_named("Part")
            .map(|p| {
                (
                    p.child_text("PartNumber").unwrap().to_owned(),
                    p.child_text("ETag").unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            parts,
            vec![
                ("1".to_owned(), "\"abc\"".to_owned()),
                ("2".to_owned(), "\"def\"".to_owned())
            ]
        );
    }

    #[test]
    fn entities_and_char_refs_resolve() {
        let root = parse(b"<a><Key>x&amp;y&#x41;&#66;&lt;</Key></a>").unwrap();
        assert_eq!(root.child_text("Key"), Some("x&yAB<"));
    }

    #[test]
    fn refuses_malformed_documents() {
        for doc in [
            &b""[..],
            b"<a>",
            b"<a></b>",
            b"<a/><b/>",
            b"text",
            b"<a>&bogus;</a>",
            b"<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>",
            b"<a>\xff</a>",
        ] {
            assert_eq!(parse(doc).unwrap_err().code, "MalformedXML", "{doc:?}");
        }
        let deep = "<a>".repeat(40) + &"</a>".repeat(40);
        assert_eq!(parse(deep.as_bytes()).unwrap_err().code, "MalformedXML");
    }

    #[test]
    fn writer_escapes() {
        let mut w = XmlWriter::new();
        w.root("R").elem("Key", "a<b>&\"c'\u{1}\t").close("R");
        let s = w.finish();
        assert!(
            s.ends_with(
                "<R xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Key>a&lt;b&gt;&amp;&quot;c&apos;\u{FFFD}&#x9;</Key></R>"
            ),
            "{s}"
        );
    }
}
