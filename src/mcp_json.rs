//! Reading the `mcpServers` JSON that other MCP hosts keep their servers in
//! (Claude Desktop's `claude_desktop_config.json`, Cursor's and Claude
//! Code's `.mcp.json`, VS Code's `mcp.json`), so a user does not type them
//! again.
//!
//! The shapes differ a little: Claude Desktop and Cursor write
//! `{"mcpServers": {NAME: {...}}}`, VS Code `{"servers": {NAME: {...}},
//! "inputs": [...]}`; an entry runs a `command` (with `args`, `env`, `cwd`)
//! or names a `url` (with `headers`, an `Authorization: Bearer` one
//! becoming the `api_key`, and a `type` of `http`,
//! `streamable-http` or `sse`). Whatever cannot be carried over faithfully
//! is not guessed at: the entry is skipped, with the reason, so the user
//! knows what to add by hand.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::config::{validate_server_name, McpServerConfig};
use crate::error::{McpError, Result};

/// What [`parse_mcp_servers_json`] found in a file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportedServers {
    /// The entries that became configurations, in the file's order.
    pub servers: Vec<McpServerConfig>,
    /// The entries that did not, each with why.
    pub skipped: Vec<SkippedServer>,
}

/// An entry of an `mcpServers` file that was not imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedServer {
    /// The entry's key in the file (possibly not a valid server name).
    pub name: String,
    /// Why it was left out, naming the field.
    pub reason: String,
}

/// Parses an `mcpServers` file (see the module docs for the shapes read).
///
/// Fails only when the text is not JSON or holds no server map at all;
/// an entry that cannot be imported is reported in
/// [`ImportedServers::skipped`], never silently dropped or half-imported.
/// `${env:VAR}` (VS Code's syntax) becomes `${VAR}`, which this crate
/// expands when it starts the server; VS Code's `${input:…}` prompts and
/// editor variables have no equivalent and skip the entry.
pub fn parse_mcp_servers_json(text: &str) -> Result<ImportedServers> {
    let err = |message: String| McpError::Config {
        server: "mcpServers".into(),
        message,
    };
    let root: Value =
        serde_json::from_str(text).map_err(|e| err(format!("the file is not JSON: {e}")))?;
    let Some(obj) = root.as_object() else {
        return Err(err("the file is not a JSON object".into()));
    };
    let map = match (obj.get("mcpServers"), obj.get("servers")) {
        (Some(Value::Object(m)), _) | (None, Some(Value::Object(m))) => m,
        (Some(_), _) => return Err(err("\"mcpServers\" is not an object".into())),
        (None, Some(_)) => return Err(err("\"servers\" is not an object".into())),
        (None, None) => {
            return Err(err(
                "no \"mcpServers\" (Claude Desktop, Cursor) or \"servers\" (VS Code) object".into(),
            ))
        }
    };
    let mut out = ImportedServers::default();
    for (name, entry) in map {
        match entry_to_config(name, entry) {
            Ok(cfg) => out.servers.push(cfg),
            Err(reason) => out.skipped.push(SkippedServer {
                name: name.clone(),
                reason,
            }),
        }
    }
    Ok(out)
}

/// One entry, or why it cannot be imported.
fn entry_to_config(name: &str, entry: &Value) -> std::result::Result<McpServerConfig, String> {
    if let Err(e) = validate_server_name(name) {
        return Err(match e {
            McpError::Config { message, .. } => format!("not a valid server name: {message}"),
            other => other.to_string(),
        });
    }
    let Some(e) = entry.as_object() else {
        return Err("the entry is not an object".into());
    };
    let kind = str_field(e, "type")?;
    let command = str_field(e, "command")?;
    let url = str_field(e, "url")?.or(str_field(e, "serverUrl")?);
    let mut cfg = match (command, url) {
        (Some(_), Some(_)) => return Err("it has both \"command\" and \"url\"".into()),
        (None, None) => return Err("it has neither \"command\" nor \"url\"".into()),
        (Some(command), None) => {
            if kind.is_some_and(|k| k != "stdio") {
                return Err(format!(
                    "\"type\": {:?} does not go with \"command\"",
                    kind.unwrap_or_default()
                ));
            }
            if e.contains_key("envFile") {
                return Err("\"envFile\" is not read: put the variables in \"env\"".into());
            }
            let args = match e.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().map(substitute).transpose())
                    .collect::<std::result::Result<Option<Vec<_>>, _>>()?
                    .ok_or("\"args\" holds a value that is not a string")?,
                Some(_) => return Err("\"args\" is not an array".into()),
            };
            let mut cfg = McpServerConfig::stdio(name, substitute(command)?, args);
            cfg.env = string_map(e, "env")?;
            for v in cfg.env.values_mut() {
                *v = substitute(v)?;
            }
            if let Some(cwd) = str_field(e, "cwd")? {
                cfg.cwd = Some(substitute(cwd)?.into());
            }
            cfg
        }
        (None, Some(url)) => {
            let url = substitute(url)?;
            let mut cfg = match kind {
                Some("sse") => McpServerConfig::sse(name, url),
                None | Some("http" | "streamable-http" | "streamableHttp") => {
                    McpServerConfig::http(name, url)
                }
                Some(other) => {
                    return Err(format!(
                        "\"type\": {other:?} is not a transport this client knows"
                    ))
                }
            };
            for (k, v) in string_map(e, "headers")? {
                if k.eq_ignore_ascii_case("authorization") {
                    let bearer = v
                        .strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("bearer "));
                    match bearer {
                        Some(token) => cfg.api_key = Some(substitute(token.trim())?),
                        None => {
                            return Err(format!(
                                "header {k:?}: only a Bearer token is carried over (as api_key)"
                            ))
                        }
                    }
                } else {
                    cfg.headers.insert(k, substitute(&v)?);
                }
            }
            // The headers the client sets itself, or bad names and values.
            if let Err(e) = cfg.validate() {
                return Err(match e {
                    McpError::Config { message, .. } => message,
                    other => other.to_string(),
                });
            }
            cfg
        }
    };
    cfg.description = str_field(e, "description")?.map(str::to_owned);
    if e.get("disabled").and_then(Value::as_bool) == Some(true)
        || e.get("enabled").and_then(Value::as_bool) == Some(false)
    {
        cfg.enabled = false;
    }
    Ok(cfg)
}

/// A string field, absent or null as `None`; any other type is an error.
fn str_field<'a>(
    e: &'a Map<String, Value>,
    key: &str,
) -> std::result::Result<Option<&'a str>, String> {
    match e.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("{key:?} is not a string")),
    }
}

/// An object of strings (`env`, `headers`); numbers and booleans are
/// written as JSON writes them, which is what a shell would have seen.
fn string_map(
    e: &Map<String, Value>,
    key: &str,
) -> std::result::Result<BTreeMap<String, String>, String> {
    match e.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(_) | Value::Bool(_) => Ok((k.clone(), v.to_string())),
                _ => Err(format!("{key:?}: {k:?} is not a string")),
            })
            .collect(),
        Some(_) => Err(format!("{key:?} is not an object")),
    }
}

/// `${env:VAR}` becomes `${VAR}` (this crate's syntax); the other VS Code
/// variables (`${input:…}`, `${workspaceFolder}`, …) have no value here.
fn substitute(s: &str) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[i..]);
            return Ok(out);
        };
        let var = &after[..end];
        match var.strip_prefix("env:") {
            Some(v) => {
                out.push_str("${");
                out.push_str(v);
                out.push('}');
            }
            None if var.contains(':') || var == "workspaceFolder" || var == "userHome" => {
                return Err(format!(
                    "\"${{{var}}}\" is an editor variable with no value outside the editor"
                ))
            }
            None => {
                out.push_str("${");
                out.push_str(var);
                out.push('}');
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::McpTransport;

    #[test]
    fn claude_desktop_and_vs_code_shapes() {
        let claude = r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
            "brave": {"command": "npx", "args": ["-y", "b"], "env": {"BRAVE_API_KEY": "${env:BRAVE}", "N": 3}},
            "remote": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X-Api-Key": "${env:K}"}},
            "old": {"type": "sse", "url": "https://y/sse", "disabled": true}
        }}"#;
        let r = parse_mcp_servers_json(claude).unwrap();
        assert!(r.skipped.is_empty(), "{:?}", r.skipped);
        let by = |n: &str| r.servers.iter().find(|c| c.name == n).unwrap();
        assert_eq!(by("fs").command.as_deref(), Some("npx"));
        assert_eq!(by("fs").args.len(), 3);
        assert_eq!(by("brave").env["BRAVE_API_KEY"], "${BRAVE}");
        assert_eq!(by("brave").env["N"], "3");
        assert_eq!(by("remote").transport, McpTransport::Http);
        assert_eq!(by("remote").api_key.as_deref(), Some("${TOKEN}"));
        assert_eq!(by("remote").headers["X-Api-Key"], "${K}");
        assert_eq!(by("old").transport, McpTransport::Sse);
        assert!(!by("old").enabled);

        let vscode = r#"{"inputs": [], "servers": {
            "git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"]},
            "h": {"type": "http", "url": "http://127.0.0.1:1/mcp"}
        }}"#;
        let r = parse_mcp_servers_json(vscode).unwrap();
        assert_eq!(r.servers.len(), 2);
    }

    #[test]
    fn what_cannot_be_carried_over_is_skipped_with_why() {
        let text = r#"{"mcpServers": {
            "both": {"command": "a", "url": "http://x"},
            "none": {"args": []},
            "bad name!": {"command": "a"},
            "input": {"command": "a", "env": {"K": "${input:key}"}},
            "hdr": {"url": "http://x", "headers": {"Authorization": "Basic dTpw"}},
            "reserved": {"url": "http://x", "headers": {"Mcp-Session-Id": "s"}},
            "argtype": {"command": "a", "args": [1]},
            "kind": {"type": "websocket", "url": "ws://x"},
            "envfile": {"command": "a", "envFile": ".env"},
            "notobj": 3
        }}"#;
        let r = parse_mcp_servers_json(text).unwrap();
        assert!(r.servers.is_empty(), "{:?}", r.servers);
        assert_eq!(r.skipped.len(), 10);
        let why = |n: &str| &r.skipped.iter().find(|s| s.name == n).unwrap().reason;
        assert!(why("both").contains("both"));
        assert!(why("input").contains("input:key"));
        assert!(why("hdr").contains("Bearer"), "{}", why("hdr"));
        assert!(
            why("reserved").contains("Mcp-Session-Id"),
            "{}",
            why("reserved")
        );
        assert!(why("kind").contains("websocket"));
        assert!(why("bad name!").contains("valid server name"));
    }

    #[test]
    fn files_without_servers_are_errors() {
        for bad in ["", "[]", "{}", r#"{"mcpServers": []}"#, "{not json"] {
            assert!(
                matches!(parse_mcp_servers_json(bad), Err(McpError::Config { .. })),
                "{bad:?}"
            );
        }
    }
}
