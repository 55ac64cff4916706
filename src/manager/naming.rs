//! Tool naming: MCP tools are exposed to a model as `mcp__<server>__<tool>`.
//!
//! Server names are validated ([`validate_server_name`](crate::validate_server_name))
//! so that they contain no `__` and neither start nor end with `_`; the split
//! on the first `__` after the prefix is then unambiguous, whatever the tool
//! name contains.

/// The prefix of every exposed MCP tool name.
pub const TOOL_PREFIX: &str = "mcp__";

/// The separator between server and tool.
pub const TOOL_SEPARATOR: &str = "__";

/// `mcp__<server>__<tool>`.
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let mut s =
        String::with_capacity(TOOL_PREFIX.len() + server.len() + TOOL_SEPARATOR.len() + tool.len());
    s.push_str(TOOL_PREFIX);
    s.push_str(server);
    s.push_str(TOOL_SEPARATOR);
    s.push_str(tool);
    s
}

/// Whether `name` is acceptable to model APIs as a function name: 1 to
/// [`MAX_MODEL_TOOL_NAME_LEN`](crate::limits::MAX_MODEL_TOOL_NAME_LEN)
/// characters from `[A-Za-z0-9_-]` (the common rule; one bad name would
/// make the host's every request fail).
pub fn is_model_tool_name(name: &str) -> bool {
    (1..=crate::limits::MAX_MODEL_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Splits `mcp__<server>__<tool>` into `(server, tool)`.
///
/// Returns `None` for anything that is not such a name: a missing prefix, an
/// empty server or tool, or a server part that is not a valid server name.
///
/// ```
/// use skald_mcp::manager::parse_mcp_tool_name;
/// assert_eq!(parse_mcp_tool_name("mcp__tavily__search"), Some(("tavily", "search")));
/// assert_eq!(parse_mcp_tool_name("mcp__fs__read__file"), Some(("fs", "read__file")));
/// assert_eq!(parse_mcp_tool_name("search"), None);
/// ```
pub fn parse_mcp_tool_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(TOOL_PREFIX)?;
    let (server, tool) = rest.split_once(TOOL_SEPARATOR)?;
    if tool.is_empty() || crate::config::validate_server_name(server).is_err() {
        return None;
    }
    Some((server, tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for (server, tool) in [
            ("demo", "echo"),
            ("a-b", "x_y"),
            ("s1", "__lead"),
            ("s", "trail__"),
        ] {
            let n = mcp_tool_name(server, tool);
            assert_eq!(parse_mcp_tool_name(&n), Some((server, tool)), "{n}");
        }
    }

    #[test]
    fn rejects() {
        for bad in [
            "",
            "mcp__",
            "mcp____x",
            "mcp__demo",
            "mcp__demo__",
            "demo__echo",
            "mcp_demo__echo",
            "mcp__a b__c",
            "MCP__a__b",
        ] {
            assert_eq!(parse_mcp_tool_name(bad), None, "{bad:?}");
        }
    }
}
