//! Tool results: `CallToolResult` mapped to a typed value that keeps what the
//! server meant (plain text, structured JSON, or media) instead of
//! flattening everything to a string.

use base64::Engine as _;
use serde_json::Value;

use crate::error::McpError;
pub(crate) use crate::json::excerpt;
use crate::model::CreateTaskResult;

/// The payload of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceData {
    /// A text resource (`text`).
    Text(String),
    /// A binary resource (`blob`), decoded from base64.
    Blob(Vec<u8>),
}

/// One non-text content block of a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpMedia {
    /// An image, decoded.
    Image {
        /// e.g. `image/png`.
        mime_type: String,
        /// The image bytes.
        data: Vec<u8>,
    },
    /// Audio, decoded.
    Audio {
        /// e.g. `audio/wav`.
        mime_type: String,
        /// The audio bytes.
        data: Vec<u8>,
    },
    /// An embedded resource.
    Resource {
        /// The resource URI.
        uri: String,
        /// Its MIME type, if given.
        mime_type: Option<String>,
        /// Its contents.
        data: ResourceData,
    },
    /// A link to a resource the client may fetch (not fetched here).
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// Its name, if given.
        name: Option<String>,
        /// Its MIME type, if given.
        mime_type: Option<String>,
        /// Its description, if given.
        description: Option<String>,
    },
}

impl McpMedia {
    /// The MIME type, when known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            McpMedia::Image { mime_type, .. } | McpMedia::Audio { mime_type, .. } => {
                Some(mime_type)
            }
            McpMedia::Resource { mime_type, .. } | McpMedia::ResourceLink { mime_type, .. } => {
                mime_type.as_deref()
            }
        }
    }

    /// The inline bytes, for everything but resource links.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            McpMedia::Image { data, .. } | McpMedia::Audio { data, .. } => Some(data),
            McpMedia::Resource {
                data: ResourceData::Blob(b),
                ..
            } => Some(b),
            McpMedia::Resource {
                data: ResourceData::Text(t),
                ..
            } => Some(t.as_bytes()),
            McpMedia::ResourceLink { .. } => None,
        }
    }

    /// A short name of the kind: `image`, `audio`, `resource`, `resource_link`.
    pub fn kind(&self) -> &'static str {
        match self {
            McpMedia::Image { .. } => "image",
            McpMedia::Audio { .. } => "audio",
            McpMedia::Resource { .. } => "resource",
            McpMedia::ResourceLink { .. } => "resource_link",
        }
    }
}

/// What a successful `tools/call` produced.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McpCallResult {
    /// Only text content: the text items joined with `\n`.
    Text(String),
    /// `structuredContent` (preferred over its text mirror, per spec), with
    /// the text content beside it: a model is given `value`, while a person
    /// often wants `text` (a file server's file text, where `value` wraps
    /// it in an object; FastMCP's `"42"` where `value` is `{"result": 42}`).
    Json {
        /// `structuredContent`: any JSON value (2026-07-28), an object before.
        value: Value,
        /// The text items joined with `\n`: often the JSON serialisation of
        /// `value`, sometimes the readable answer; empty when there were none.
        text: String,
    },
    /// At least one media block, with the text and structured content beside it.
    Media {
        /// The text items joined with `\n` (may be empty).
        text: String,
        /// `structuredContent`, when present.
        structured: Option<Value>,
        /// Every media block, in order.
        items: Vec<McpMedia>,
    },
    /// A task handle: the server deferred the call. Callers of
    /// [`McpServerClient::call_tool`](crate::McpServerClient::call_tool) never
    /// see it (the client polls the task to completion); it appears only from
    /// [`extract_call_result`] used directly.
    Task(CreateTaskResult),
}

impl McpCallResult {
    /// A textual rendering: the text, compact JSON, or the media's text.
    pub fn to_text(&self) -> String {
        match self {
            McpCallResult::Text(t) => t.clone(),
            McpCallResult::Json { value, .. } => value.to_string(),
            McpCallResult::Media { text, .. } => text.clone(),
            McpCallResult::Task(t) => format!("task {} ({})", t.task_id, t.status),
        }
    }
}

/// The content blocks of a result, split into joined text and media.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassifiedContent {
    /// The text items joined with `\n`.
    pub text: String,
    /// The media items, in order.
    pub media: Vec<McpMedia>,
}

fn b64(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    // Servers differ in padding and line breaks; be lenient on whitespace.
    let cleaned: String;
    let s = if s.bytes().any(|b| b.is_ascii_whitespace()) {
        cleaned = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        &cleaned
    } else {
        s
    };
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(s))
}

/// Walks `content[]`: joins text items, decodes the base64 of image, audio
/// and embedded-resource blobs, and passes `resource_link`s through.
///
/// Returns a message naming the block at fault for malformed content
/// (invalid base64, a missing member). Unknown block types are skipped with
/// a debug log, for forward compatibility.
pub fn classify_content(content: &Value) -> Result<ClassifiedContent, String> {
    let mut out = ClassifiedContent::default();
    let items = match content {
        Value::Array(items) => items.as_slice(),
        Value::Null => &[],
        _ => return Err("content is not an array".into()),
    };
    let mut texts: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ty = item.get("type").and_then(Value::as_str).unwrap_or("");
        let field = |k: &str| -> Result<&str, String> {
            item.get(k)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("content[{i}] ({ty}) has no string '{k}'"))
        };
        let opt = |k: &str| crate::json::opt_str(item, k);
        match ty {
            "text" => texts.push(field("text")?),
            "image" | "audio" => {
                let data = b64(field("data")?)
                    .map_err(|e| format!("content[{i}] ({ty}) has invalid base64: {e}"))?;
                let mime_type = field("mimeType")?.to_owned();
                out.media.push(if ty == "image" {
                    McpMedia::Image { mime_type, data }
                } else {
                    McpMedia::Audio { mime_type, data }
                });
            }
            "resource" => {
                let r = item
                    .get("resource")
                    .ok_or_else(|| format!("content[{i}] (resource) has no 'resource'"))?;
                let uri = r
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("content[{i}] (resource) has no uri"))?
                    .to_owned();
                let mime_type = crate::json::opt_str(r, "mimeType");
                let data = if let Some(blob) = r.get("blob").and_then(Value::as_str) {
                    ResourceData::Blob(b64(blob).map_err(|e| {
                        format!("content[{i}] (resource {uri}) has invalid base64: {e}")
                    })?)
                } else if let Some(text) = r.get("text").and_then(Value::as_str) {
                    ResourceData::Text(text.to_owned())
                } else {
                    return Err(format!(
                        "content[{i}] (resource {uri}) has neither text nor blob"
                    ));
                };
                out.media.push(McpMedia::Resource {
                    uri,
                    mime_type,
                    data,
                });
            }
            "resource_link" => out.media.push(McpMedia::ResourceLink {
                uri: field("uri")?.to_owned(),
                name: opt("name"),
                mime_type: opt("mimeType"),
                description: opt("description"),
            }),
            other => {
                ::log::debug!(target: "mcp_client", "skipping content block of unknown type {other:?}")
            }
        }
    }
    out.text = texts.join("\n");
    Ok(out)
}

/// Maps a `CallToolResult` (the `result` member of a `tools/call` response).
///
/// Order of precedence: a task handle ([`CreateTaskResult::parse`]) first;
/// then `isError: true` becomes [`McpError::Tool`]; then media blocks make
/// [`McpCallResult::Media`]; then `structuredContent` makes
/// [`McpCallResult::Json`]; else the joined text is [`McpCallResult::Text`].
pub fn extract_call_result(
    server: &str,
    tool: &str,
    result: &Value,
) -> Result<McpCallResult, McpError> {
    let protocol = |message: String| McpError::Protocol {
        server: server.to_owned(),
        method: Some("tools/call".into()),
        message: format!("tool '{tool}': {message}"),
    };
    if !result.is_object() {
        return Err(protocol(format!(
            "result is not an object: {}",
            excerpt(result)
        )));
    }
    if let Some(task) = CreateTaskResult::parse(result) {
        return Ok(McpCallResult::Task(task));
    }
    let content = result.get("content").unwrap_or(&Value::Null);
    let classified = classify_content(content).map_err(protocol)?;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(McpError::Tool {
            server: server.to_owned(),
            tool: tool.to_owned(),
            message: classified.text,
            result: Box::new(result.clone()),
        });
    }
    let structured = result
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .cloned();
    if !classified.media.is_empty() {
        return Ok(McpCallResult::Media {
            text: classified.text,
            structured,
            items: classified.media,
        });
    }
    Ok(match structured {
        Some(value) => McpCallResult::Json {
            value,
            text: classified.text,
        },
        None => McpCallResult::Text(classified.text),
    })
}

/// [`extract_call_result`] on an owned result, which may be in the
/// reader's compact form (`jsonrpc_cap::restore`): the common answers —
/// one text block, no task, not an error, with or without
/// `structuredContent` — move their text (and structured value) out
/// instead of copying them; anything else takes the general path.
pub(crate) fn extract_call_result_owned(
    server: &str,
    tool: &str,
    mut result: Value,
) -> Result<McpCallResult, McpError> {
    // The usual answer, kept by the reader as its text alone.
    if let Some(text) = crate::text_content::take_bare(&mut result) {
        return Ok(McpCallResult::Text(text));
    }
    if let Some(obj) = result.as_object_mut() {
        // One pass over the few members of a result, comparing names,
        // instead of hashing each name looked up (six lookups per call).
        let (mut content, mut only_text, mut structured, mut plain) = (None, None, None, true);
        for (k, v) in obj.iter_mut() {
            match k.as_str() {
                "content" => content = Some(v),
                crate::text_content::TEXT_ONLY => only_text = Some(v),
                "task" => plain = false,
                "structuredContent" if !v.is_null() => structured = Some(v),
                "isError" if v.as_bool() == Some(true) => plain = false,
                _ => {}
            }
        }
        // The reader kept the one text block as its text (and then there
        // is no `content` member).
        if let (true, None, Some(Value::String(text))) = (plain, &content, only_text) {
            let text = std::mem::take(text);
            return Ok(match structured {
                Some(value) => McpCallResult::Json {
                    value: value.take(),
                    text,
                },
                None => McpCallResult::Text(text),
            });
        }
        if let (true, None, Some(Value::Array(items))) = (plain, &structured, content) {
            if let [Value::Object(item)] = items.as_mut_slice() {
                let (mut is_text, mut text) = (false, None);
                for (k, v) in item.iter_mut() {
                    match k.as_str() {
                        "type" => is_text = v.as_str() == Some("text"),
                        "text" => text = Some(v),
                        _ => {}
                    }
                }
                if let (true, Some(Value::String(text))) = (is_text, text) {
                    return Ok(McpCallResult::Text(std::mem::take(text)));
                }
            }
        }
    }
    crate::jsonrpc_cap::restore(&mut result);
    extract_call_result(server, tool, &result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The result of a response frame as the reader hands it to `Peer`
    /// (compact where it can be: `text_content`).
    fn result_as_read(frame: &str) -> Value {
        match crate::jsonrpc::decode_plain_for_tests(frame.as_bytes()).map(|mut m| m.pop()) {
            Ok(Some(crate::jsonrpc::Incoming::Response { outcome: Ok(r), .. })) => r,
            other => panic!("{frame}: not a result: {other:?}"),
        }
    }

    fn ex(v: Value) -> Result<McpCallResult, McpError> {
        extract_call_result("s", "t", &v)
    }

    #[test]
    fn owned_extraction_matches_borrowed() {
        let cases = [
            json!({"content":[{"type":"text","text":"plain"}]}),
            json!({"content":[{"type":"text","text":"plain"}],"isError":false}),
            json!({"content":[{"type":"text","text":"oops"}],"isError":true}),
            json!({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}),
            json!({"content":[{"type":"text","text":"s"}],"structuredContent":{"n":1}}),
            json!({"content":[{"type":"text","text":"s"}],"structuredContent":null}),
            json!({"content":[{"type":"text"}]}),
            json!({"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}),
            json!({"content":[{"type":"text","text":"t"}],"task":{"taskId":"1","status":"working"}}),
            json!({"task":{"taskId":"1","status":"working"}}),
            json!({"content":"nope"}),
            json!([1]),
        ];
        for v in cases {
            let owned = extract_call_result_owned("s", "t", v.clone());
            let borrowed = extract_call_result("s", "t", &v);
            assert_eq!(format!("{owned:?}"), format!("{borrowed:?}"), "for {v}");
            // And as the reader hands it over: compact where it can be.
            let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{v}}}"#);
            let compact = result_as_read(&frame);
            let owned = extract_call_result_owned("s", "t", compact);
            assert_eq!(format!("{owned:?}"), format!("{borrowed:?}"), "read: {v}");
        }
        // A server that sends the reader's own member name beside its
        // content: no panic, and its content is not lost.
        let forged = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"mine"}}],"{}":"x"}}}}"#,
            crate::text_content::TEXT_ONLY
        );
        let r = extract_call_result_owned("s", "t", result_as_read(&forged));
        assert!(r.unwrap().to_text().contains("mine"));
    }

    #[test]
    fn text_joined() {
        let r =
            ex(json!({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]})).unwrap();
        assert_eq!(r, McpCallResult::Text("a\nb".into()));
        assert_eq!(
            ex(json!({"content":[]})).unwrap(),
            McpCallResult::Text(String::new())
        );
    }

    /// MCP 2026-07-28: `structuredContent` may be any JSON value, not only
    /// an object.
    #[test]
    fn structured_content_of_any_kind() {
        for v in [json!([1, 2]), json!(3), json!("s"), json!(true)] {
            let r = ex(json!({"content": [], "structuredContent": v.clone()})).unwrap();
            assert_eq!(
                r,
                McpCallResult::Json {
                    value: v,
                    text: String::new()
                }
            );
        }
    }

    #[test]
    fn structured_preferred() {
        let r =
            ex(json!({"content":[{"type":"text","text":"{\"x\":1}"}],"structuredContent":{"x":1}}))
                .unwrap();
        assert_eq!(
            r,
            McpCallResult::Json {
                value: json!({"x":1}),
                text: "{\"x\":1}".into()
            }
        );
        // structuredContent only, no mirror: not an empty text.
        let r = ex(json!({"structuredContent":{"y":2}})).unwrap();
        assert_eq!(
            r,
            McpCallResult::Json {
                value: json!({"y":2}),
                text: String::new()
            }
        );
    }

    #[test]
    fn media() {
        let r = ex(json!({"content":[
            {"type":"text","text":"pic"},
            {"type":"image","mimeType":"image/png","data":"AAEC"},
            {"type":"audio","mimeType":"audio/wav","data":"AAE="},
            {"type":"resource","resource":{"uri":"x://b","blob":"AAEC","mimeType":"application/octet-stream"}},
            {"type":"resource","resource":{"uri":"x://t","text":"hello"}},
            {"type":"resource_link","uri":"file:///a","name":"a"}
        ]})).unwrap();
        let McpCallResult::Media {
            text,
            structured,
            items,
        } = r
        else {
            panic!()
        };
        assert_eq!(text, "pic");
        assert_eq!(structured, None);
        assert_eq!(items.len(), 5);
        assert_eq!(
            items[0],
            McpMedia::Image {
                mime_type: "image/png".into(),
                data: vec![0, 1, 2]
            }
        );
        assert_eq!(items[1].bytes(), Some(&[0u8, 1][..]));
        assert_eq!(items[2].kind(), "resource");
        assert_eq!(items[3].bytes(), Some(&b"hello"[..]));
        assert_eq!(items[4].kind(), "resource_link");
        assert_eq!(items[4].bytes(), None);
    }

    #[test]
    fn errors() {
        let e = ex(json!({"content":[{"type":"text","text":"boom"}],"isError":true})).unwrap_err();
        assert!(
            matches!(&e, McpError::Tool { message, .. } if message == "boom"),
            "{e}"
        );
        assert!(matches!(ex(json!("x")), Err(McpError::Protocol { .. })));
        assert!(matches!(
            ex(json!({"content":"x"})),
            Err(McpError::Protocol { .. })
        ));
        let e = ex(json!({"content":[{"type":"image","mimeType":"image/png","data":"!!!"}]}))
            .unwrap_err();
        assert!(e.to_string().contains("content[0]"), "{e}");
        assert!(ex(json!({"content":[{"type":"image","data":"AA=="}]})).is_err());
        assert!(ex(json!({"content":[{"type":"text"}]})).is_err());
        // Unknown block types are skipped, not fatal.
        assert_eq!(
            ex(json!({"content":[{"type":"hologram"}]})).unwrap(),
            McpCallResult::Text(String::new())
        );
    }

    #[test]
    fn task_first() {
        let r = ex(json!({"task":{"taskId":"t1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttl":null}})).unwrap();
        assert!(matches!(r, McpCallResult::Task(t) if t.task_id == "t1"));
    }
}
