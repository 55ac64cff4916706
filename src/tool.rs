//! Tool definitions as listed by `tools/list`.
//!
//! [`McpTool::from_json`] is the one place that maps the wire shape (the
//! serde type in `model`) to the typed value; both transports use it.

use serde::Deserialize as _;
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
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The tool's name, unique within its server.
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: Option<String>,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent`, when declared.
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// Whether it runs as a task.
    pub task_support: TaskSupport,
    /// The tool definition exactly as the server sent it.
    pub raw: Value,
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

    /// [`McpTool::from_json`] of a definition the caller owns: it becomes
    /// [`McpTool::raw`] without a copy (a long tool list is moved into its
    /// tools, never held twice). On error the definition is handed back.
    pub(crate) fn from_value(v: Value) -> Result<McpTool, (String, Value)> {
        let w = wire::Tool::deserialize(&v).unwrap_or_default();
        let Some(name) = w.name.filter(|n| !n.is_empty()) else {
            return Err(("tool definition has no name".to_string(), v));
        };
        Ok(McpTool {
            name,
            title: w.title,
            description: w.description,
            input_schema: w.input_schema.unwrap_or_else(|| json!({"type": "object"})),
            output_schema: w.output_schema,
            annotations: w
                .annotations
                .map(ToolAnnotations::from_wire)
                .unwrap_or_default(),
            task_support: w
                .execution
                .and_then(|e| e.task_support)
                .map(|t| TaskSupport::parse(&t))
                .unwrap_or_default(),
            raw: v,
        })
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
        assert_eq!(t.input_schema, json!({"type":"object"}));
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
