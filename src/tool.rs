//! Tool definitions as listed by `tools/list`.
//!
//! [`McpTool::from_json`] is the one place that maps the wire shape (the
//! serde type in `model`) to the typed value; both transports use it.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::model::wire;

/// Whether a tool may or must be run as a task (`execution.taskSupport`,
/// MCP 2025-11-25).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TaskSupport {
    /// The tool does not support tasks (the default when absent).
    #[default]
    Forbidden,
    /// The tool may be run as a task.
    Optional,
    /// The tool must be run as a task.
    Required,
}

impl TaskSupport {
    /// Parses the wire value; unknown values are treated as `Forbidden`.
    pub fn parse(s: &str) -> TaskSupport {
        match s {
            "optional" => TaskSupport::Optional,
            "required" => TaskSupport::Required,
            _ => TaskSupport::Forbidden,
        }
    }

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }

    /// Whether a `tools/call` should carry the `task` field.
    pub fn wants_task(self) -> bool {
        !matches!(self, TaskSupport::Forbidden)
    }
}

/// Behaviour hints a server gives about a tool (MCP 2025-06-18+). Hints are
/// not guarantees: a client must not trust them from an untrusted server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolAnnotations {
    /// A display title.
    pub title: Option<String>,
    /// The tool does not modify its environment.
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    pub destructive_hint: Option<bool>,
    /// Calling it repeatedly with the same arguments has no additional effect.
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    fn from_wire(w: wire::ToolAnnotations) -> ToolAnnotations {
        ToolAnnotations {
            title: w.title,
            read_only_hint: w.read_only_hint,
            destructive_hint: w.destructive_hint,
            idempotent_hint: w.idempotent_hint,
            open_world_hint: w.open_world_hint,
        }
    }

    /// True when no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == ToolAnnotations::default()
    }
}

/// A tool a server offers.
///
/// The definition is kept as the JSON text the server sent, and the input
/// schema as the part of it that it is, not as parsed trees: a parsed
/// `serde_json::Value` costs about thirty times its text in maps and
/// allocations, and a server may list ten thousand tools. The tools of one
/// `tools/list` page share that page's text. The texts are parsed where
/// they are used ([`McpTool::input_schema_value`], [`McpTool::raw_value`]);
/// [`McpTool::input_schema_json`] and [`McpTool::raw_json`] give them as
/// they came, to hand on unchanged.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// The tool's name, unique within its server.
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: Option<String>,
    /// The JSON Schema of its `structuredContent`, when declared (parsed:
    /// every result is checked against it; boxed, so that the many tools
    /// without one pay a pointer).
    pub output_schema: Option<Box<Value>>,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// Whether it runs as a task.
    pub task_support: TaskSupport,
    /// The text the definition lies in (its page's, or its own).
    text: Arc<String>,
    /// Where the definition lies in `text`.
    raw_at: (u32, u32),
    /// Where the input schema lies in `text` (`None`: it sent none).
    input_schema_at: Option<(u32, u32)>,
}

impl PartialEq for McpTool {
    /// Equal when every field is, the definition compared as the text it
    /// is.
    fn eq(&self, other: &McpTool) -> bool {
        self.name == other.name
            && self.title == other.title
            && self.description == other.description
            && self.output_schema == other.output_schema
            && self.annotations == other.annotations
            && self.task_support == other.task_support
            && self.raw_json() == other.raw_json()
    }
}

/// The input schema of a tool that sent none.
const EMPTY_OBJECT_SCHEMA: &str = r#"{"type":"object"}"#;

/// `inner`'s place in `outer`, when it is a part of it and fits in `u32`s.
fn place(outer: &str, inner: &str) -> Option<(u32, u32)> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    let end = start.checked_add(inner.len())?;
    if end > outer.len() {
        return None;
    }
    Some((u32::try_from(start).ok()?, u32::try_from(end).ok()?))
}

impl McpTool {
    /// Maps one element of `tools/list`'s `tools` array.
    ///
    /// Returns a message naming the problem for a definition without a
    /// string `name`; missing optional members take their defaults, and a
    /// missing `inputSchema` becomes an empty object schema.
    pub fn from_json(v: &Value) -> Result<McpTool, String> {
        McpTool::from_value(v.clone()).map_err(|(m, _)| m)
    }

    /// [`McpTool::from_json`] of a definition the caller owns. On error
    /// the definition is handed back.
    pub(crate) fn from_value(v: Value) -> Result<McpTool, (String, Value)> {
        let text = Arc::new(v.to_string());
        let len = text.len();
        McpTool::from_text(&text, 0..len).map_err(|m| (m, v))
    }

    /// Maps the definition at `range` of a page's `text` (definitions
    /// separated by NULs, as `jsonrpc_cap` keeps them): the tool keeps a
    /// share of the text, not a copy.
    pub(crate) fn from_text(
        text: &Arc<String>,
        range: std::ops::Range<usize>,
    ) -> Result<McpTool, String> {
        let def = text
            .get(range.clone())
            .ok_or_else(|| "tool definition out of its page".to_string())?;
        let w: wire::Tool<'_> = serde_json::from_str(def).unwrap_or_default();
        let Some(name) = w.name.filter(|n| !n.is_empty()) else {
            return Err("tool definition has no name".to_string());
        };
        // Offsets into the page fit `u32` under any message-size limit; a
        // definition that does not is given a text of its own.
        let (text, def) = match place(text, def) {
            Some(_) => (Arc::clone(text), def),
            None if def.len() > u32::MAX as usize => {
                return Err("tool definition larger than 4 GiB".to_string())
            }
            None => {
                let own = Arc::new(def.to_owned());
                return McpTool::from_text(&own, 0..own.len());
            }
        };
        let raw_at = place(&text, def).unwrap_or((0, 0));
        // The schema was read borrowed from the text: its place there.
        let input_schema_at = w.input_schema.and_then(|s| place(&text, s.get()));
        Ok(McpTool {
            name,
            title: w.title,
            description: w.description,
            output_schema: w.output_schema.map(Box::new),
            annotations: w
                .annotations
                .map(ToolAnnotations::from_wire)
                .unwrap_or_default(),
            task_support: w
                .execution
                .and_then(|e| e.task_support)
                .map(|t| TaskSupport::parse(&t))
                .unwrap_or_default(),
            text,
            raw_at,
            input_schema_at,
        })
    }

    fn slice(&self, (a, b): (u32, u32)) -> Option<&str> {
        self.text.get(a as usize..b as usize)
    }

    /// The tool definition exactly as the server sent it, as JSON text.
    pub fn raw_json(&self) -> &str {
        self.slice(self.raw_at).unwrap_or("{}")
    }

    /// [`McpTool::raw_json`], parsed.
    pub fn raw_value(&self) -> Value {
        serde_json::from_str(self.raw_json()).unwrap_or(Value::Null)
    }

    /// The JSON Schema of its arguments (an object schema), as the server
    /// wrote it; `{"type":"object"}` when it sent none.
    pub fn input_schema_json(&self) -> &str {
        self.input_schema_at
            .and_then(|at| self.slice(at))
            .unwrap_or(EMPTY_OBJECT_SCHEMA)
    }

    /// [`McpTool::input_schema_json`], parsed.
    pub fn input_schema_value(&self) -> Value {
        serde_json::from_str(self.input_schema_json()).unwrap_or_else(|_| json!({"type": "object"}))
    }

    /// The name to display: `title`, then `annotations.title`, then `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or(self.annotations.title.as_deref())
            .unwrap_or(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_tool() {
        let t = McpTool::from_json(&json!({
            "name": "job", "title": "Job", "description": "d",
            "inputSchema": {"type":"object","properties":{"a":{"type":"number"}}},
            "outputSchema": {"type":"object"},
            "annotations": {"readOnlyHint": true, "title": "Ann"},
            "execution": {"taskSupport": "required"}
        }))
        .unwrap();
        assert_eq!(t.name, "job");
        assert_eq!(t.display_name(), "Job");
        assert_eq!(t.task_support, TaskSupport::Required);
        assert_eq!(t.annotations.read_only_hint, Some(true));
        assert!(t.output_schema.is_some());
    }

    #[test]
    fn minimal_and_bad() {
        let t = McpTool::from_json(&json!({"name": "x"})).unwrap();
        assert_eq!(t.input_schema_value(), json!({"type":"object"}));
        assert_eq!(t.input_schema_json(), r#"{"type":"object"}"#);
        let with = McpTool::from_value(
            json!({"name": "s", "inputSchema": {"type": "object", "properties": {"a": {}}}}),
        )
        .unwrap();
        assert_eq!(
            with.input_schema_json(),
            r#"{"type":"object","properties":{"a":{}}}"#
        );
        assert_eq!(with.input_schema_value()["properties"]["a"], json!({}));
        assert_eq!(t.task_support, TaskSupport::Forbidden);
        assert!(t.annotations.is_empty());
        assert_eq!(t.display_name(), "x");
        assert!(McpTool::from_json(&json!({"title": "no name"})).is_err());
        assert!(McpTool::from_json(&json!({"name": 5})).is_err());
        assert!(McpTool::from_json(&json!("str")).is_err());
        let t = McpTool::from_json(
            &json!({"name":"y","execution":{"taskSupport":"bogus"},"annotations":"x"}),
        )
        .unwrap();
        assert_eq!(t.task_support, TaskSupport::Forbidden);
    }
}
