//! Server configuration: which transport, what to run or where to connect.
//!
//! Configurations are plain data, loadable from JSON with serde. Secrets
//! (`env` values and `api_key`) may be written as `${VAR}` references, which
//! are resolved from the process environment only when a connection is made,
//! and never appear in `Debug` output.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{McpError, Result};
use crate::limits::MAX_SERVER_NAME_LEN;

/// How the client reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpTransport {
    /// A local child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// A remote server speaking MCP Streamable HTTP (2025-03-26 and later),
    /// or, when that is refused, the older HTTP+SSE transport (the spec's
    /// fallback).
    #[serde(alias = "streamable-http", alias = "streamable_http")]
    Http,
    /// A remote server speaking only the deprecated HTTP+SSE transport of
    /// MCP 2024-11-05: a `GET` event stream that names the endpoint the
    /// client `POST`s to ([`McpSseServer`](crate::McpSseServer)).
    Sse,
}

impl McpTransport {
    /// The canonical name, as stored and displayed: `stdio` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            McpTransport::Stdio => "stdio",
            McpTransport::Http => "http",
            McpTransport::Sse => "sse",
        }
    }

    /// Parses `stdio`, `http` (also `streamable-http`) or `sse`
    /// (case-insensitive).
    pub fn parse(s: &str) -> Option<McpTransport> {
        match s.to_ascii_lowercase().as_str() {
            "stdio" => Some(McpTransport::Stdio),
            "http" | "streamable-http" | "streamable_http" => Some(McpTransport::Http),
            "sse" => Some(McpTransport::Sse),
            _ => None,
        }
    }
}

impl fmt::Display for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The configuration of one MCP server.
///
/// ```
/// use skald_mcp::{McpServerConfig, McpTransport};
/// let cfg: McpServerConfig = serde_json::from_str(r#"{
///     "name": "demo", "transport": "stdio",
///     "command": "python3", "args": ["scripts/demo_mcp_server.py"]
/// }"#).unwrap();
/// assert_eq!(cfg.transport, McpTransport::Stdio);
/// cfg.validate().unwrap();
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerConfig {
    /// Unique name; used in tool names (`mcp__<name>__<tool>`), log file
    /// names and errors. See [`validate_server_name`].
    pub name: String,
    /// How to reach the server.
    pub transport: McpTransport,
    /// stdio: the executable to spawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdio: extra environment variables; values may contain `${VAR}`.
    /// The child gets these on top of an allowlist of the host's variables
    /// ([`ClientOptions::env_allowlist`](crate::ClientOptions::env_allowlist),
    /// default [`STDIO_ENV_ALLOWLIST`](crate::limits::STDIO_ENV_ALLOWLIST)),
    /// unless [`inherit_env`](Self::inherit_env) is set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// stdio: start the child with the host's *whole* environment (then
    /// `env` on top), as before the allowlist existed. Off by default,
    /// because the host's environment usually holds secrets (cloud
    /// credentials, API tokens) a server has no business seeing; pass what
    /// a server needs through `env` (`"TOKEN": "${TOKEN}"`) instead.
    /// [`ClientOptions::inherit_env`](crate::ClientOptions::inherit_env)
    /// turns it on for every server.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inherit_env: bool,
    /// stdio: the working directory of the child (the host's, when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// http: the endpoint URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// http: sent as `Authorization: Bearer <api_key>`; may contain `${VAR}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// http/sse: extra headers sent with every request (a hosted server's
    /// `X-API-Key`, a tenant header); values may contain `${VAR}` and are
    /// treated as secrets (never logged, redacted from quoted bodies). The
    /// headers the protocol itself sets (`Authorization`, which is
    /// [`api_key`](Self::api_key)'s or OAuth's, `Mcp-Session-Id`,
    /// `MCP-Protocol-Version`, `Content-Type`, `Accept`, …) are refused by
    /// [`validate`](Self::validate).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// A short description of what the server provides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A human-readable display name, e.g. "Google Calendar".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub friendly_name: Option<String>,
    /// Whether the server is started (used by the manager).
    #[serde(default = "default_true")]
    pub enabled: bool,
}

fn default_true() -> bool {
    true
}

impl fmt::Debug for McpServerConfig {
    // Hand-written so that env values and the api key never reach a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: BTreeMap<&str, &str> = self
            .env
            .keys()
            .map(|k| (k.as_str(), "<redacted>"))
            .collect();
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &env)
            .field("inherit_env", &self.inherit_env)
            .field("cwd", &self.cwd)
            // User info and query may carry a token; show neither.
            .field("url", &self.url.as_deref().map(shown_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "headers",
                &self
                    .headers
                    .keys()
                    .map(|k| (k.as_str(), "<redacted>"))
                    .collect::<BTreeMap<_, _>>(),
            )
            .field("description", &self.description)
            .field("friendly_name", &self.friendly_name)
            .field("enabled", &self.enabled)
            .finish()
    }
}

impl McpServerConfig {
    /// A stdio configuration running `command` with `args`.
    pub fn stdio<I, S>(name: impl Into<String>, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        McpServerConfig {
            name: name.into(),
            transport: McpTransport::Stdio,
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            inherit_env: false,
            cwd: None,
            url: None,
            api_key: None,
            headers: BTreeMap::new(),
            description: None,
            friendly_name: None,
            enabled: true,
        }
    }

    /// An HTTP configuration for `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        McpServerConfig {
            name: name.into(),
            transport: McpTransport::Http,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            inherit_env: false,
            cwd: None,
            url: Some(url.into()),
            api_key: None,
            headers: BTreeMap::new(),
            description: None,
            friendly_name: None,
            enabled: true,
        }
    }

    /// An HTTP+SSE configuration (MCP 2024-11-05) for the event stream
    /// at `url`.
    pub fn sse(name: impl Into<String>, url: impl Into<String>) -> Self {
        McpServerConfig {
            transport: McpTransport::Sse,
            ..McpServerConfig::http(name, url)
        }
    }

    /// Adds an environment variable (stdio); the value may contain `${VAR}`.
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Makes the child (stdio) inherit the host's whole environment instead
    /// of the allowlist; see [`McpServerConfig::inherit_env`].
    pub fn with_inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// Sets the bearer token (http); it may contain `${VAR}`.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Adds a request header (http/sse); the value may contain `${VAR}`.
    /// See [`headers`](Self::headers) for the names refused.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Parses a configuration from JSON text.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| McpError::Config {
            server: "<unnamed>".into(),
            message: format!("invalid JSON configuration: {e}"),
        })
    }

    /// Checks the name and the fields the transport requires.
    pub fn validate(&self) -> Result<()> {
        validate_server_name(&self.name)?;
        let err = |message: String| McpError::Config {
            server: self.name.clone(),
            message,
        };
        match self.transport {
            McpTransport::Stdio => match &self.command {
                Some(c) if !c.trim().is_empty() => {}
                _ => return Err(err("transport stdio requires a non-empty 'command'".into())),
            },
            McpTransport::Http | McpTransport::Sse => match &self.url {
                Some(u) if u.starts_with("http://") || u.starts_with("https://") => {}
                Some(_) => return Err(err("'url' must start with http:// or https://".into())),
                None => return Err(err(format!("transport {} requires 'url'", self.transport))),
            },
        }
        for key in self.env.keys() {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                return Err(err(format!("invalid environment variable name {key:?}")));
            }
        }
        if !self.headers.is_empty() && self.transport == McpTransport::Stdio {
            return Err(err(
                "'headers' apply to http and sse servers, not stdio".into()
            ));
        }
        for (name, value) in &self.headers {
            // RFC 9110 token characters.
            let token = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token {
                return Err(err(format!("invalid header name {name:?}")));
            }
            let mirrored = name
                .get(..10)
                .is_some_and(|p| p.eq_ignore_ascii_case("Mcp-Param-"));
            if mirrored
                || RESERVED_HEADERS
                    .iter()
                    .any(|r| r.eq_ignore_ascii_case(name))
            {
                return Err(err(format!(
                    "header {name:?} is set by the client itself{}",
                    if name.eq_ignore_ascii_case("authorization") {
                        " (a bearer token goes in 'api_key'; OAuth sets its own)"
                    } else {
                        ""
                    }
                )));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(err(format!(
                    "header {name:?}: the value holds a line break or NUL"
                )));
            }
        }
        Ok(())
    }

    /// The `headers` with every `${VAR}` resolved from the process
    /// environment, checked to be sendable.
    pub fn resolved_headers(&self) -> Result<Vec<(String, String)>> {
        self.headers
            .iter()
            .map(|(k, v)| {
                let e = |m: String| McpError::Config {
                    server: self.name.clone(),
                    message: format!("header {k}: {m}"),
                };
                let v = interpolate(v, env_lookup).map_err(e)?;
                if v.bytes()
                    .any(|b| b == b'\r' || b == b'\n' || b == 0 || b == 0x7f)
                {
                    return Err(e("the value cannot be sent in an HTTP header".into()));
                }
                Ok((k.clone(), v))
            })
            .collect()
    }

    /// The `env` map with every `${VAR}` resolved from the process environment.
    ///
    /// A reference to a variable that is not set is an error naming the
    /// variable and the key, never an empty string.
    pub fn resolved_env(&self) -> Result<BTreeMap<String, String>> {
        self.env
            .iter()
            .map(|(k, v)| {
                interpolate(v, env_lookup)
                    .map(|v| (k.clone(), v))
                    .map_err(|m| McpError::Config {
                        server: self.name.clone(),
                        message: format!("env {k}: {m}"),
                    })
            })
            .collect()
    }

    /// The `api_key` with every `${VAR}` resolved from the process environment.
    pub fn resolved_api_key(&self) -> Result<Option<String>> {
        match &self.api_key {
            None => Ok(None),
            Some(k) => interpolate(k, env_lookup)
                .map(Some)
                .map_err(|m| McpError::Config {
                    server: self.name.clone(),
                    message: format!("api_key: {m}"),
                }),
        }
    }
}

/// Headers the client sets itself: a configured one would be sent twice or
/// fight the protocol (sessions, versions, the modern mirrored headers).
const RESERVED_HEADERS: &[&str] = &[
    "Authorization",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Content-Type",
    "Content-Length",
    "Accept",
    "Host",
    "Last-Event-ID",
    "Transfer-Encoding",
    "Connection",
    "DPoP",
];

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Checks that `name` can be used as a server name.
///
/// Allowed: 1 to [`MAX_SERVER_NAME_LEN`](crate::limits::MAX_SERVER_NAME_LEN) characters from `[A-Za-z0-9_-]`,
/// with no `__` and no leading or trailing `_`, so that a tool name
/// `mcp__<server>__<tool>` always splits back unambiguously.
pub fn validate_server_name(name: &str) -> Result<()> {
    let err = |message: &str| McpError::Config {
        server: name.chars().take(MAX_SERVER_NAME_LEN).collect(),
        message: message.into(),
    };
    if name.is_empty() {
        return Err(err("server name is empty"));
    }
    if name.len() > MAX_SERVER_NAME_LEN {
        return Err(err("server name is longer than 64 characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(err(
            "server name may only contain letters, digits, '_' and '-'",
        ));
    }
    if name.contains("__") || name.starts_with('_') || name.ends_with('_') {
        return Err(err(
            "server name must not contain '__' or start or end with '_' (tool names would be ambiguous)",
        ));
    }
    Ok(())
}

/// Replaces every `${VAR}` in `input` by `lookup(VAR)`.
///
/// `$$` is a literal `$`; a `$` not followed by `{` or `$` is kept as is.
/// Returns a message naming the problem (an unset variable, an unterminated
/// or empty reference) on failure. Only the variables named in `input` are
/// looked up.
pub fn interpolate(
    input: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body
                .find('}')
                .ok_or_else(|| "unterminated ${...} reference".to_string())?;
            let var = &body[..end];
            let valid = !var.is_empty()
                && !var.starts_with(|c: char| c.is_ascii_digit())
                && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !valid {
                return Err(format!("invalid variable reference ${{{var}}}"));
            }
            let value =
                lookup(var).ok_or_else(|| format!("references ${{{var}}}, which is not set"))?;
            out.push_str(&value);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The URL as shown in log lines and `Debug`: no user info, no query, no
/// fragment (any of which may carry a token).
pub(crate) fn shown_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let rest = match rest.split_once('/') {
        Some((authority, path)) => {
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{host}/{path}")
        }
        None => rest.rsplit('@').next().unwrap_or(rest).to_owned(),
    };
    format!("{scheme}://{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(name: &str) -> Option<String> {
        match name {
            "A" => Some("alpha".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn interpolation() {
        assert_eq!(interpolate("x${A}y", look).unwrap(), "xalphay");
        assert_eq!(interpolate("${A}${A}", look).unwrap(), "alphaalpha");
        assert_eq!(interpolate("$$A and $5", look).unwrap(), "$A and $5");
        assert_eq!(interpolate("${EMPTY}", look).unwrap(), "");
        assert!(interpolate("${MISSING}", look)
            .unwrap_err()
            .contains("MISSING"));
        assert!(interpolate("${A", look)
            .unwrap_err()
            .contains("unterminated"));
        assert!(interpolate("${}", look).is_err());
        assert!(interpolate("${1X}", look).is_err());
        assert!(interpolate("${A-B}", look).is_err());
        assert_eq!(interpolate("plain", look).unwrap(), "plain");
        assert_eq!(interpolate("trailing $", look).unwrap(), "trailing $");
    }

    #[test]
    fn headers_are_checked_and_never_shown() {
        let ok = McpServerConfig::http("h", "https://x/mcp").with_header("X-Api-Key", "s3cret");
        ok.validate().unwrap();
        assert!(!format!("{ok:?}").contains("s3cret"), "{ok:?}");
        for (k, v) in [
            ("Authorization", "Basic x"),
            ("mcp-session-id", "s"),
            ("Mcp-Param-Region", "x"),
            ("Content-Type", "text/plain"),
            ("Bad Name", "v"),
            ("", "v"),
            ("X-Ok", "a\r\nInjected: 1"),
        ] {
            let c = McpServerConfig::http("h", "https://x/mcp").with_header(k, v);
            assert!(c.validate().is_err(), "{k:?}: {v:?} accepted");
        }
        let stdio = McpServerConfig::stdio("s", "cmd", ["a"]).with_header("X-A", "1");
        assert!(stdio.validate().is_err());
        // ${VAR} is resolved; a missing variable is an error naming it.
        let c = McpServerConfig::http("h", "https://x/mcp")
            .with_header("X-K", "${SKALD_NO_SUCH_VAR_9}");
        let e = c.resolved_headers().unwrap_err().to_string();
        assert!(
            e.contains("X-K") && e.contains("SKALD_NO_SUCH_VAR_9"),
            "{e}"
        );
        let round: McpServerConfig =
            serde_json::from_str(&serde_json::to_string(&ok).unwrap()).unwrap();
        assert_eq!(round, ok);
    }

    #[test]
    fn transport_aliases() {
        for (s, t) in [
            ("stdio", McpTransport::Stdio),
            ("http", McpTransport::Http),
            ("sse", McpTransport::Sse),
            ("streamable-http", McpTransport::Http),
        ] {
            let cfg: McpServerConfig = serde_json::from_value(serde_json::json!({
                "name": "x", "transport": s, "command": "c", "url": "http://h"
            }))
            .unwrap();
            assert_eq!(cfg.transport, t);
            assert_eq!(McpTransport::parse(s), Some(t));
        }
        assert!(serde_json::from_value::<McpServerConfig>(
            serde_json::json!({"name":"x","transport":"ftp"})
        )
        .is_err());
    }

    #[test]
    fn names() {
        for ok in ["demo", "a-b", "a_b", "A1", "x"] {
            validate_server_name(ok).unwrap();
        }
        for bad in [
            "",
            "a__b",
            "_a",
            "a_",
            "a b",
            "a/b",
            "é",
            &"x".repeat(65),
            "../x",
            "a\0",
        ] {
            assert!(validate_server_name(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn validate_required_fields() {
        let mut c = McpServerConfig::stdio("s", "", Vec::<String>::new());
        assert!(c.validate().is_err());
        c.command = Some("python3".into());
        c.validate().unwrap();
        let mut h = McpServerConfig::http("h", "ftp://x");
        assert!(h.validate().is_err());
        h.url = None;
        assert!(h.validate().is_err());
        h.url = Some("https://example.test/mcp".into());
        h.validate().unwrap();
    }

    #[test]
    fn debug_redacts_secrets() {
        let c = McpServerConfig::http("h", "https://x")
            .with_api_key("sk-SECRET-1")
            .with_env("TOKEN", "hunter2");
        let d = format!("{c:?}");
        assert!(!d.contains("SECRET") && !d.contains("hunter2"), "{d}");
        assert!(d.contains("TOKEN"));
        let u = McpServerConfig::http("u", "https://user:pw-SECRET@x.test/mcp?key=SECRET-2#f");
        let d = format!("{u:?}");
        assert!(
            !d.contains("SECRET") && d.contains("https://x.test/mcp"),
            "{d}"
        );
    }

    #[test]
    fn missing_variable_is_an_error() {
        let c = McpServerConfig::stdio("s", "c", Vec::<String>::new())
            .with_env("K", "${SKALD_TEST_SURELY_UNSET_VAR}");
        let e = c.resolved_env().unwrap_err().to_string();
        assert!(
            e.contains("SKALD_TEST_SURELY_UNSET_VAR") && e.contains("env K"),
            "{e}"
        );
    }
}
