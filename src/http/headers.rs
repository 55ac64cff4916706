//! The request headers of Streamable HTTP in the modern era (2026-07-28):
//! `MCP-Protocol-Version`, the standard `Mcp-Method` / `Mcp-Name`, and the
//! `Mcp-Param-{Name}` headers that mirror tool parameters a server declared
//! with `x-mcp-header`, with the specification's value encoding.
//!
//! Every header is derived from the request body itself, so a header can
//! never disagree with the body it travels with.

use std::borrow::Cow;

use base64::Engine as _;
use serde_json::Value;

use crate::json::member;

use crate::model::{annotations, keys};

/// The protocol version header.
pub(super) const VERSION_HEADER: &str = "MCP-Protocol-Version";
/// The method header.
const METHOD_HEADER: &str = "Mcp-Method";
/// The name header (`params.name` or `params.uri`).
const NAME_HEADER: &str = "Mcp-Name";
/// The prefix of mirrored tool parameters.
const PARAM_PREFIX: &str = "Mcp-Param-";
/// The largest integer a mirrored parameter may carry (JavaScript's safe range).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The modern protocol version a request body declares in its `_meta`;
/// `None` for a legacy message.
pub(super) fn modern_version(msg: &Value) -> Option<&str> {
    params_version(msg.get("params")?)
}

/// The modern protocol version a request's `params._meta` declares.
pub(super) fn params_version(params: &Value) -> Option<&str> {
    member(member(params, "_meta")?, keys::PROTOCOL_VERSION)?.as_str()
}

/// A request header: its name (one of this module's, or an `Mcp-Param-`
/// name made for a tool's parameter) and value. Both borrow a constant
/// where they can (a known version or method), so that the headers of a
/// typical request cost one allocation (its name), not one per header.
pub(crate) type Header = (Cow<'static, str>, Cow<'static, str>);

/// The headers of a modern request of `method` with `params`, declaring
/// protocol `version` (`None`: no version header). `input_schema`:
/// the called tool's `inputSchema`, for `tools/call`, when known.
pub(super) fn request_headers(
    params: Option<&Value>,
    version: Option<&str>,
    method: &str,
    input_schema: Option<&Value>,
) -> Result<Vec<Header>, String> {
    let mut h = Vec::with_capacity(4);
    if let Some(v) = version {
        h.push((
            VERSION_HEADER.into(),
            crate::methods::constant_or_owned(v, crate::limits::MODERN_PROTOCOL_VERSIONS),
        ));
    }
    h.push((METHOD_HEADER.into(), crate::methods::name(method)));
    let name = match method {
        "tools/call" | "prompts/get" => params.and_then(|p| member(p, "name")),
        "resources/read" => params.and_then(|p| member(p, "uri")),
        // The tasks extension routes a task's requests by its id.
        "tasks/get" | "tasks/update" | "tasks/cancel" => params.and_then(|p| member(p, "taskId")),
        _ => None,
    };
    if let Some(n) = name.and_then(Value::as_str) {
        h.push((NAME_HEADER.into(), encode(n).into()));
    }
    if method == "tools/call" {
        if let (Some(schema), Some(args)) =
            (input_schema, params.and_then(|p| member(p, "arguments")))
        {
            for (header, path) in annotations(schema)? {
                if let Some(v) = value_at(args, &path) {
                    if let Some(text) = header_value(v, &header)? {
                        h.push((format!("{PARAM_PREFIX}{header}").into(), text.into()));
                    }
                }
            }
        }
    }
    Ok(h)
}

fn value_at<'a>(args: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut v = args;
    for p in path {
        v = v.as_object()?.get(p)?;
    }
    Some(v)
}

/// The header text of a parameter value; `None` for `null` (omitted).
fn header_value(v: &Value, header: &str) -> Result<Option<String>, String> {
    Ok(match v {
        Value::Null => None,
        Value::String(s) => Some(encode(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => {
            let i = n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .ok_or_else(|| format!("parameter for header {header} is not an integer: {n}"))?;
            if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) {
                return Err(format!(
                    "parameter for header {header} is outside the safe integer range: {i}"
                ));
            }
            Some(i.to_string())
        }
        other => {
            return Err(format!(
                "parameter for header {header} is not a primitive value: {other}"
            ))
        }
    })
}

/// A header value as the specification encodes it: as-is when it is plain
/// visible ASCII (spaces inside), else `=?base64?…?=` of its UTF-8.
pub(super) fn encode(s: &str) -> String {
    // Tabs are legal in header values, but are control characters: they are
    // encoded too, as servers expect.
    let unsafe_byte = s.bytes().any(|b| !(0x20..=0x7e).contains(&b));
    let padded = s.starts_with(' ') || s.ends_with(' ');
    let sentinel = s.starts_with("=?base64?") && s.ends_with("?=");
    let plain = !(unsafe_byte || padded || sentinel);
    if plain {
        s.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spec_encoding_examples() {
        assert_eq!(encode("us-west1"), "us-west1");
        assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn known_versions_and_methods_are_borrowed_others_copied() {
        let borrowed = |c: &Cow<'static, str>| matches!(c, Cow::Borrowed(_));
        let params = json!({"name": "x", "_meta": {}});
        let h = request_headers(Some(&params), Some("2026-07-28"), "tools/call", None).unwrap();
        assert!(h.iter().take(2).all(|(_, v)| borrowed(v)), "{h:?}");
        let h = request_headers(None, Some("2099-01-01"), "vendor/op", None).unwrap();
        assert_eq!(h[0].1, "2099-01-01");
        assert_eq!(h[1].1, "vendor/op");
        assert!(h.iter().all(|(_, v)| !borrowed(v)), "{h:?}");
    }

    #[test]
    fn standard_and_param_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "deep": {"type": "object", "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
            "absent": {"type": "string", "x-mcp-header": "Absent"},
            "query": {"type": "string"}
        }});
        let msg = json!({"params": {"name": "execute_sql", "arguments": {
            "region": "us-west1", "n": 42.0, "deep": {"flag": true}, "query": "q"
        }, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        let h = request_headers(
            msg.get("params"),
            modern_version(&msg),
            "tools/call",
            Some(&schema),
        )
        .unwrap();
        let get = |k: &str| h.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_ref());
        assert_eq!(get("MCP-Protocol-Version"), Some("2026-07-28"));
        assert_eq!(get("Mcp-Method"), Some("tools/call"));
        assert_eq!(get("Mcp-Name"), Some("execute_sql"));
        assert_eq!(get("Mcp-Param-Region"), Some("us-west1"));
        assert_eq!(get("Mcp-Param-N"), Some("42"));
        assert_eq!(get("Mcp-Param-Flag"), Some("true"));
        assert_eq!(get("Mcp-Param-Absent"), None);
        let r = request_headers(
            Some(&json!({"uri": "file:///é"})),
            None,
            "resources/read",
            None,
        )
        .unwrap();
        assert!(r.contains(&("Mcp-Name".into(), encode("file:///é").into())));
    }

    #[test]
    fn task_requests_are_routed_by_task_id() {
        for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let msg = json!({"params": {"taskId": "786512e2"}});
            let h = request_headers(msg.get("params"), None, m, None).unwrap();
            assert!(
                h.contains(&("Mcp-Name".into(), "786512e2".into())),
                "{m}: {h:?}"
            );
        }
    }
}
