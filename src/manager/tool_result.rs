//! The host-side result of a tool call, as an agent loop stores and replays it.

use serde_json::Value;

/// A tool result reduced to one representation: text or JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolResult {
    /// Plain text (including the markdown that references saved media).
    Text(String),
    /// Structured JSON (`structuredContent`).
    Json(Value),
}

impl ToolResult {
    /// The string persisted and replayed to the model: the text, or compact JSON.
    pub fn to_wire(&self) -> String {
        match self {
            ToolResult::Text(t) => t.clone(),
            ToolResult::Json(v) => v.to_string(),
        }
    }

    /// The type tag stored beside it: `"string"` or `"json"`.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolResult::Text(_) => "string",
            ToolResult::Json(_) => "json",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_and_kind() {
        assert_eq!(ToolResult::Text("a".into()).to_wire(), "a");
        assert_eq!(
            ToolResult::Json(json!({"a": [1, 2]})).to_wire(),
            r#"{"a":[1,2]}"#
        );
        assert_eq!(ToolResult::Json(json!(1)).kind(), "json");
        assert_eq!(ToolResult::Text(String::new()).kind(), "string");
    }
}
