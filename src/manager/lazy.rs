//! Lazy tool loading: only the tools of servers a session has activated are
//! given to the model; the others are listed compactly so it can ask for them.
//!
//! A *tool group* is a server name, or a name the embedder reserves (such as
//! `config`) for a group of its own tools.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::manager::naming::mcp_tool_name;
use crate::tool::McpTool;

/// The name of the synthetic interface tool that activates tool groups.
pub const ACTIVATE_TOOLS: &str = "activate_tools";

/// A set of granted tool groups.
pub type Grants = BTreeSet<String>;

/// One row of the rendered server list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerListing {
    /// The server name (a tool group).
    pub name: String,
    /// Its description, if any.
    pub description: Option<String>,
}

/// The OpenAI-style function definition of one MCP tool, named
/// `mcp__<server>__<tool>`.
pub fn openai_tool_definition(server: &str, tool: &McpTool) -> Value {
    let mut description = tool.description.clone().unwrap_or_default();
    if let Some(t) = tool.title.as_deref().or(tool.annotations.title.as_deref()) {
        if description.is_empty() {
            description = t.to_owned();
        } else if !description.starts_with(t) {
            description = format!("{t}: {description}");
        }
    }
    let mut function = json!({
        "name": mcp_tool_name(server, &tool.name),
        "description": description,
        "parameters": tool.input_schema_value(),
    });
    let a = &tool.annotations;
    if !a.is_empty() {
        let mut hints = serde_json::Map::new();
        for (k, v) in [
            ("readOnlyHint", a.read_only_hint),
            ("destructiveHint", a.destructive_hint),
            ("idempotentHint", a.idempotent_hint),
            ("openWorldHint", a.open_world_hint),
        ] {
            if let Some(v) = v {
                hints.insert(k.into(), Value::Bool(v));
            }
        }
        if !hints.is_empty() {
            function["x-mcp-annotations"] = Value::Object(hints);
        }
    }
    json!({"type": "function", "function": function})
}

/// The definition of the `activate_tools` interface tool.
pub fn activate_tools_definition() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": ACTIVATE_TOOLS,
            "description": "Load the tools of one or more tool groups (an MCP server name, or a reserved group such as \"config\") so they can be called from the next step on.",
            "parameters": {
                "type": "object",
                "properties": {
                    "groups": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Tool group names to activate."
                    }
                },
                "required": ["groups"]
            }
        }
    })
}

/// Renders the two-section "Available / Active" block for a system prompt.
///
/// `servers` are the servers that can be activated; `grants` the groups that
/// are active. Output is deterministic (sorted by name).
pub fn render_mcp_list(servers: &[ServerListing], grants: &Grants) -> String {
    let mut available: Vec<&ServerListing> = servers
        .iter()
        .filter(|s| !grants.contains(&s.name))
        .collect();
    available.sort_by(|a, b| a.name.cmp(&b.name));
    let mut active: Vec<&str> = servers
        .iter()
        .filter(|s| grants.contains(&s.name))
        .map(|s| s.name.as_str())
        .collect();
    active.sort_unstable();

    let mut out = String::from("## MCP servers\n\n");
    out.push_str("**Available** — call `activate_tools([\"name\"])` to load tools:\n\n");
    if available.is_empty() {
        out.push_str("(none)\n");
    } else {
        let cells: Vec<(String, String)> = available
            .iter()
            .map(|s| {
                let d = s
                    .description
                    .as_deref()
                    .unwrap_or("")
                    .replace('|', "\\|")
                    .replace('\n', " ");
                (format!("`{}`", s.name), d)
            })
            .collect();
        let w1 = cells
            .iter()
            .map(|c| c.0.chars().count())
            .max()
            .unwrap_or(0)
            .max("Server".len());
        let w2 = cells
            .iter()
            .map(|c| c.1.chars().count())
            .max()
            .unwrap_or(0)
            .max("Description".len());
        let row = |a: &str, b: &str| {
            let pa = w1 - a.chars().count();
            let pb = w2 - b.chars().count();
            format!("| {a}{} | {b}{} |\n", " ".repeat(pa), " ".repeat(pb))
        };
        out.push_str(&row("Server", "Description"));
        out.push_str(&format!(
            "|{}|{}|\n",
            "-".repeat(w1 + 2),
            "-".repeat(w2 + 2)
        ));
        for (a, b) in &cells {
            out.push_str(&row(a, b));
        }
    }
    out.push_str("\n**Active** — tools callable as `mcp__<name>__<tool>`:\n");
    if active.is_empty() {
        out.push_str("(none)\n");
    } else {
        for a in active {
            out.push_str(&format!("- `{a}`\n"));
        }
    }
    out
}

/// Parses the arguments of an `activate_tools` call into group names.
pub fn parse_activate_args(args: &Value) -> Result<Vec<String>, String> {
    let groups = args
        .get("groups")
        .and_then(Value::as_array)
        .ok_or("activate_tools needs a 'groups' array of names")?;
    groups
        .iter()
        .map(|g| {
            g.as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("group names must be non-empty strings, got {g}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_known_state() {
        let servers = vec![
            ServerListing {
                name: "whatsapp".into(),
                description: Some("Send and receive WhatsApp messages".into()),
            },
            ServerListing {
                name: "tavily".into(),
                description: Some("Web search and content extraction".into()),
            },
            ServerListing {
                name: "gmail".into(),
                description: None,
            },
        ];
        let grants: Grants = ["gmail".to_string(), "config".to_string()]
            .into_iter()
            .collect();
        let expected = "## MCP servers

**Available** — call `activate_tools([\"name\"])` to load tools:

| Server     | Description                        |
|------------|------------------------------------|
| `tavily`   | Web search and content extraction  |
| `whatsapp` | Send and receive WhatsApp messages |

**Active** — tools callable as `mcp__<name>__<tool>`:
- `gmail`
";
        assert_eq!(render_mcp_list(&servers, &grants), expected);
        let none = render_mcp_list(&[], &Grants::new());
        assert!(none.contains("(none)"));
    }

    #[test]
    fn definitions() {
        let t = McpTool::from_json(&json!({"name":"echo","description":"Echo.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}})).unwrap();
        let d = openai_tool_definition("demo", &t);
        assert_eq!(d["function"]["name"], "mcp__demo__echo");
        assert_eq!(d["function"]["parameters"], json!({"type":"object"}));
        assert_eq!(
            d["function"]["x-mcp-annotations"],
            json!({"readOnlyHint": true})
        );
        assert_eq!(
            activate_tools_definition()["function"]["name"],
            ACTIVATE_TOOLS
        );
        assert_eq!(
            parse_activate_args(&json!({"groups":["a","b"]})).unwrap(),
            ["a", "b"]
        );
        assert!(parse_activate_args(&json!({"groups":[1]})).is_err());
        assert!(parse_activate_args(&json!({})).is_err());
    }
}
