//! arangoexport's XML formats: `xml` (a `<collection name="…">` of `<doc key="…">` elements)
//! and `xgmml` (a `<graph>` of `<node>` and `<edge>` elements, for graph viewers such as
//! Cytoscape). Attributes become `<att name="…" type="…" value="…"/>` elements with the types
//! `integer`, `real`, `boolean` and `string` (`null` is the string `null`); arrays and objects
//! become `type="list"` elements holding their members. XGMML (as arangoexport writes it)
//! keeps one level of lists and skips values nested deeper, counting them; XML keeps every
//! level. Values are escaped with htmlescape's minimal entity encoding.
//!
//! The text is assembled by hand because the format is arangoexport's exact layout (one
//! element per line, two-space indentation of attributes), which an XML writer would not
//! reproduce.

use serde_json::Value;

/// The XML declaration both formats start with.
const DECLARATION: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n";

/// The label of a node or edge without a string label attribute.
const DEFAULT_LABEL: &str = "Default-Label";

/// Attributes an XGMML node or edge carries in its own element, not as `<att>`.
const XGMML_SYSTEM_ATTRIBUTES: [&str; 5] = ["_id", "_key", "_rev", "_from", "_to"];

fn escape(text: &str) -> String {
    htmlescape::encode_minimal(text)
}

/// The start of an `xml` file for collection (or query result) `name`.
pub fn xml_header(name: &str) -> String {
    format!("{DECLARATION}<collection name=\"{}\">\n", escape(name))
}

/// The end of an `xml` file.
pub const XML_FOOTER: &str = "</collection>";

/// One document of an `xml` file: a `<doc>` with every attribute. A value that is not an
/// object is written as one `value` attribute.
pub fn xml_document(doc: &Value) -> String {
    let key = doc.get("_key").and_then(Value::as_str).unwrap_or("");
    let mut out = format!("<doc key=\"{}\">\n", escape(key));
    match doc {
        Value::Object(map) => {
            for (name, value) in map {
                write_att(&mut out, name, value, None, &mut 0);
            }
        }
        other => write_att(&mut out, "value", other, None, &mut 0),
    }
    out.push_str("</doc>\n");
    out
}

/// The start of an `xgmml` file for graph `name`.
pub fn xgmml_header(name: &str) -> String {
    format!(
        "{DECLARATION}<graph label=\"{}\" \nxmlns=\"http://www.cs.rpi.edu/XGMML\" \ndirected=\"1\">\n",
        escape(name)
    )
}

/// The end of an `xgmml` file.
pub const XGMML_FOOTER: &str = "</graph>\n";

/// How XGMML elements are labelled and what they carry.
pub struct XgmmlStyle<'a> {
    /// The attribute whose string value labels a node or edge.
    pub label_attribute: &'a str,
    /// Write only the label, no `<att>` elements.
    pub label_only: bool,
}

/// One document of an `xgmml` file: an `<edge>` when it has `_from`, a `<node>` otherwise.
/// `skipped` counts values nested too deep to be written.
pub fn xgmml_element(doc: &Value, style: &XgmmlStyle<'_>, skipped: &mut u64) -> String {
    let text = |name: &str| doc.get(name).and_then(Value::as_str).unwrap_or("");
    let label = doc
        .get(style.label_attribute)
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_LABEL);
    let (tag, mut out) = if doc.get("_from").is_some() {
        (
            "edge",
            format!(
                "<edge label=\"{}\" source=\"{}\" target=\"{}\"",
                escape(label),
                escape(text("_from")),
                escape(text("_to"))
            ),
        )
    } else {
        (
            "node",
            format!(
                "<node label=\"{}\" id=\"{}\"",
                escape(label),
                escape(text("_id"))
            ),
        )
    };
    if style.label_only {
        out.push_str(" />\n");
        return out;
    }
    out.push_str(">\n");
    if let Value::Object(map) = doc {
        for (name, value) in map {
            if XGMML_SYSTEM_ATTRIBUTES.contains(&name.as_str()) {
                continue;
            }
            write_att(&mut out, name, value, Some(1), skipped);
        }
    }
    out.push_str(&format!("</{tag}>\n"));
    out
}

/// Appends one `<att>`; `lists_left` is how many levels of lists may still be opened (`None`:
/// any), values nested deeper are counted in `skipped`.
fn write_att(
    out: &mut String,
    name: &str,
    value: &Value,
    lists_left: Option<u32>,
    skipped: &mut u64,
) {
    let scalar = |out: &mut String, kind: &str, text: &str| {
        out.push_str(&format!(
            "  <att name=\"{}\" type=\"{kind}\" value=\"{}\"/>\n",
            escape(name),
            escape(text)
        ));
    };
    match value {
        Value::Null => scalar(out, "string", "null"),
        Value::Bool(b) => scalar(out, "boolean", &b.to_string()),
        Value::Number(n) if n.is_f64() => scalar(out, "real", &n.to_string()),
        Value::Number(n) => scalar(out, "integer", &n.to_string()),
        Value::String(s) => scalar(out, "string", s),
        Value::Array(_) | Value::Object(_) => {
            if lists_left == Some(0) {
                *skipped += 1;
                return;
            }
            let inner = lists_left.map(|n| n - 1);
            out.push_str(&format!(
                "  <att name=\"{}\" type=\"list\">\n",
                escape(name)
            ));
            match value {
                Value::Array(items) => {
                    for item in items {
                        write_att(out, name, item, inner, skipped);
                    }
                }
                Value::Object(map) => {
                    for (member, item) in map {
                        write_att(out, member, item, inner, skipped);
                    }
                }
                _ => unreachable!("only lists reach here"),
            }
            out.push_str("  </att>\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn xml_documents_carry_every_attribute_typed_and_escaped() {
        let doc = json!({"_key": "k<1>", "n": 3, "f": 1.5, "b": true, "z": null,
            "s": "a \"q\" & b", "l": [1, {"x": "y"}]});
        let text = xml_document(&doc);
        assert!(text.starts_with("<doc key=\"k&lt;1&gt;\">\n"), "{text}");
        for line in [
            "  <att name=\"n\" type=\"integer\" value=\"3\"/>\n",
            "  <att name=\"f\" type=\"real\" value=\"1.5\"/>\n",
            "  <att name=\"b\" type=\"boolean\" value=\"true\"/>\n",
            "  <att name=\"z\" type=\"string\" value=\"null\"/>\n",
            "  <att name=\"s\" type=\"string\" value=\"a &quot;q&quot; &amp; b\"/>\n",
            "  <att name=\"l\" type=\"list\">\n",
            "  <att name=\"x\" type=\"string\" value=\"y\"/>\n",
        ] {
            assert!(text.contains(line), "{line} missing in {text}");
        }
        assert!(text.ends_with("</doc>\n"));
        assert!(xml_header("c&d").ends_with("<collection name=\"c&amp;d\">\n"));
    }

    #[test]
    fn xgmml_nodes_and_edges_with_labels_and_one_level_of_lists() {
        let style = XgmmlStyle {
            label_attribute: "name",
            label_only: false,
        };
        let mut skipped = 0;
        let node = xgmml_element(
            &json!({"_id": "p/a", "_key": "a", "_rev": "_x", "name": "Ann",
                "tags": [1, [2]]}),
            &style,
            &mut skipped,
        );
        assert!(
            node.starts_with("<node label=\"Ann\" id=\"p/a\">\n"),
            "{node}"
        );
        assert!(
            !node.contains("\"_key\"") && !node.contains("\"_rev\""),
            "{node}"
        );
        assert!(node.contains("  <att name=\"tags\" type=\"list\">\n  <att name=\"tags\" type=\"integer\" value=\"1\"/>\n  </att>\n"), "{node}");
        assert!(node.ends_with("</node>\n"));
        assert_eq!(skipped, 1, "the nested [2] is skipped");
        let edge = xgmml_element(
            &json!({"_id": "e/1", "_from": "p/a", "_to": "p/b", "since": 2020}),
            &XgmmlStyle {
                label_attribute: "label",
                label_only: true,
            },
            &mut skipped,
        );
        assert_eq!(
            edge,
            "<edge label=\"Default-Label\" source=\"p/a\" target=\"p/b\" />\n"
        );
    }
}
