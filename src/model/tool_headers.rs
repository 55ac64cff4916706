//! `x-mcp-header` declarations in a tool's `inputSchema` (MCP 2026-07-28):
//! which parameters a server asks the client to mirror into
//! `Mcp-Param-{Name}` headers, and whether the declarations are valid (a
//! tool whose declarations are invalid is left out of `tools/list` over
//! HTTP).

use serde_json::Value;

/// The schema keyword that designates a mirrored parameter.
const X_MCP_HEADER: &str = "x-mcp-header";

/// Whether a schema's text may declare `x-mcp-header`s: a substring test,
/// so that the schemas of the many tools that declare none (kept as text)
/// are not parsed on every call. A text with a `\u` escape is parsed
/// whatever it says (the key could be spelled with escapes).
pub(crate) fn declares_headers(schema_text: &str) -> bool {
    schema_text.contains(X_MCP_HEADER) || schema_text.contains("\\u")
}

/// Checks a tool's `x-mcp-header` declarations; Err says what is wrong.
/// A tool that fails this is left out of `tools/list` over HTTP.
pub(crate) fn validate_tool(input_schema: &Value) -> Result<(), String> {
    annotations(input_schema).map(|_| ())
}

/// Every `x-mcp-header` of a schema with the property path it annotates;
/// Err when any declaration breaks the specification's constraints.
pub(crate) fn annotations(schema: &Value) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut found = Vec::new();
    walk(schema, true, &mut Vec::new(), &mut found)?;
    let mut seen: Vec<String> = Vec::new();
    for (name, _) in &found {
        let lower = name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(format!("x-mcp-header {name:?} is declared twice"));
        }
        seen.push(lower);
    }
    Ok(found)
}

/// Walks schema `node`; `reachable`: whether it is reached from the root
/// through `properties` alone.
fn walk(
    node: &Value,
    reachable: bool,
    path: &mut Vec<String>,
    found: &mut Vec<(String, Vec<String>)>,
) -> Result<(), String> {
    let Value::Object(obj) = node else {
        if let Value::Array(items) = node {
            for item in items {
                walk(item, false, path, found)?;
            }
        }
        return Ok(());
    };
    if let Some(h) = obj.get(X_MCP_HEADER) {
        let where_ = if path.is_empty() {
            "the schema root".to_owned()
        } else {
            format!("property {}", path.join("."))
        };
        if !reachable || path.is_empty() {
            return Err(format!(
                "x-mcp-header on {where_} is not reachable from the root through properties alone"
            ));
        }
        let Some(name) = h.as_str() else {
            return Err(format!("x-mcp-header on {where_} is not a string"));
        };
        if name.is_empty() {
            return Err(format!("x-mcp-header on {where_} is empty"));
        }
        if let Some(c) = name.chars().find(|c| !is_tchar(*c)) {
            return Err(format!(
                "x-mcp-header {name:?} on {where_} has {c:?}, which a header name cannot have"
            ));
        }
        match obj.get("type").and_then(Value::as_str) {
            Some("string" | "integer" | "boolean") => {}
            other => {
                return Err(format!(
                    "x-mcp-header {name:?} on {where_} annotates a parameter of type {}, not string, integer or boolean",
                    other.map_or_else(|| "(none)".to_owned(), |t| t.to_owned())
                ))
            }
        }
        found.push((name.to_owned(), path.clone()));
    }
    for (k, v) in obj {
        if k == "properties" {
            if let Value::Object(props) = v {
                for (pname, pschema) in props {
                    path.push(pname.clone());
                    walk(pschema, reachable, path, found)?;
                    path.pop();
                }
            }
        } else if k != X_MCP_HEADER && (v.is_object() || v.is_array()) {
            walk(v, false, path, found)?;
        }
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn invalid_declarations() {
        let bad = [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A\r\n"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"},
                                  "b": {"type": "string", "x-mcp-header": "x"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}}),
            json!({"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": 3}}}),
        ];
        for s in bad {
            assert!(validate_tool(&s).is_err(), "{s}");
        }
        let good = json!({"properties": {
            "x-mcp-header": {"type": "string"},
            "a": {"type": "object", "properties": {"b": {"type": "integer", "x-mcp-header": "B"}}}
        }});
        validate_tool(&good).unwrap();
    }
}
