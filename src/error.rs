//! The one error type of the crate.
//!
//! Every variant names the server it concerns and, where there is one, the
//! request (`method`) that failed, so an error read in a log is actionable on
//! its own. No variant ever carries a secret: configuration values such as
//! `api_key` and `env` are never copied into an error.

use std::fmt;
use std::io;
use std::time::Duration;

use serde_json::Value;

/// A convenient alias for results of this crate.
pub type Result<T, E = McpError> = std::result::Result<T, E>;

/// What an `UnsupportedProtocolVersionError` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionMismatch {
    /// The version the client asked for.
    pub requested: String,
    /// The versions the server supports.
    pub supported: Vec<String>,
    /// The server's message.
    pub message: String,
}

/// Why the OAuth client refused to go on: something a server sent (or a
/// configured URL) failed a security check. Carried by
/// [`McpError::AuthRefused`]; never carries a token or secret. Also
/// exported as `auth::AuthRefusal`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthRefusal {
    /// RFC 8414 §3.3 / OpenID Connect Discovery §4.3: the authorization
    /// server metadata fetched for issuer `expected` names another issuer
    /// (or none). Using it would send the registration, the authorization
    /// code and the PKCE verifier to endpoints an attacker chose.
    MetadataIssuerMismatch {
        /// The issuer the metadata URL was built from (from the protected
        /// resource metadata, or the server's origin before 2025-06-18).
        expected: String,
        /// The `issuer` the document declares; `None` when it has none.
        found: Option<String>,
        /// The URL the document was fetched from.
        url: String,
    },
    /// RFC 9207: the authorization response carries an `iss` that is not,
    /// character for character, the issuer the request was sent to. The
    /// code was not redeemed.
    ResponseIssuerMismatch {
        /// The issuer recorded before the redirect.
        expected: String,
        /// The `iss` of the response.
        found: String,
    },
    /// RFC 9207: the authorization server advertises
    /// `authorization_response_iss_parameter_supported` but its response
    /// has no `iss`. The code was not redeemed.
    ResponseIssuerMissing {
        /// The issuer recorded before the redirect.
        expected: String,
    },
    /// An endpoint (or the redirect URI) uses plain `http` on a host that
    /// is not loopback: OAuth 2.1 requires https there.
    InsecureEndpoint {
        /// Which endpoint, e.g. `token endpoint`.
        what: String,
        /// Its URL.
        url: String,
    },
    /// Pre-registered credentials bound to one authorization server
    /// ([`OAuthOptions::client_issuer`](crate::auth::OAuthOptions::client_issuer))
    /// while the resource now names another: they are not sent there.
    CredentialsForAnotherIssuer {
        /// The issuer the credentials belong to.
        bound: String,
        /// The issuer the resource's metadata names now.
        current: String,
    },
}

impl fmt::Display for AuthRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthRefusal::MetadataIssuerMismatch {
                expected,
                found,
                url,
            } => write!(
                f,
                "the authorization server metadata at {url} declares issuer {}, not {expected:?}, the issuer it was fetched for (RFC 8414 section 3.3: a possible mix-up attack); its endpoints are not used",
                found
                    .as_deref()
                    .map_or("none".to_owned(), |s| format!("{s:?}"))
            ),
            AuthRefusal::ResponseIssuerMismatch { expected, found } => write!(
                f,
                "the authorization response comes from issuer {found:?}, not {expected:?} (RFC 9207: a possible mix-up attack); the code was not redeemed"
            ),
            AuthRefusal::ResponseIssuerMissing { expected } => write!(
                f,
                "the authorization server {expected:?} advertises authorization_response_iss_parameter_supported, but its authorization response has no iss (RFC 9207); the code was not redeemed"
            ),
            AuthRefusal::InsecureEndpoint { what, url } => write!(
                f,
                "the {what} {url} does not use https (plain http is allowed for loopback addresses only)"
            ),
            AuthRefusal::CredentialsForAnotherIssuer { bound, current } => write!(
                f,
                "the pre-registered client credentials belong to authorization server {bound:?}, but the resource now names {current:?}; they are not sent there"
            ),
        }
    }
}

impl std::error::Error for AuthRefusal {}

/// Everything that can go wrong when talking to an MCP server.
#[derive(Debug)]
#[non_exhaustive]
pub enum McpError {
    /// The server configuration is invalid (missing field, bad name,
    /// a `${VAR}` that is not set, …).
    Config {
        /// The server the configuration is for.
        server: String,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The server process could not be spawned.
    Spawn {
        /// The server name.
        server: String,
        /// The command that was to be run.
        command: String,
        /// The operating-system error.
        source: io::Error,
    },
    /// The server did not answer `initialize` in time.
    StartTimeout {
        /// The server name.
        server: String,
        /// The start timeout that elapsed.
        timeout: Duration,
    },
    /// A request got no response in time.
    CallTimeout {
        /// The server name.
        server: String,
        /// The request's method, e.g. `tools/call`.
        method: String,
        /// The timeout that elapsed.
        timeout: Duration,
    },
    /// The connection is gone: the child exited, closed stdout, or was closed.
    Disconnected {
        /// The server name.
        server: String,
        /// The request that was in flight, if any.
        method: Option<String>,
        /// Why the connection ended (exit status, EOF, closed by the client, …).
        reason: String,
    },
    /// The server answered with a JSON-RPC error object.
    Rpc {
        /// The server name.
        server: String,
        /// The request's method.
        method: String,
        /// The JSON-RPC error code.
        code: i64,
        /// The error message the server gave.
        message: String,
        /// The optional `data` member (boxed to keep the error small).
        data: Option<Box<Value>>,
    },
    /// The server broke the protocol: a malformed message, a missing member,
    /// a wrong type.
    Protocol {
        /// The server name.
        server: String,
        /// The request concerned, if the violation could be tied to one.
        method: Option<String>,
        /// What was wrong.
        message: String,
    },
    /// A tool ran and reported failure (`isError: true`).
    Tool {
        /// The server name.
        server: String,
        /// The tool that failed.
        tool: String,
        /// The joined text content of the error result.
        message: String,
        /// The full `CallToolResult` as the server sent it (boxed to keep the
        /// error small).
        result: Box<Value>,
    },
    /// A tool's `structuredContent` does not match its `outputSchema`.
    SchemaMismatch {
        /// The server name.
        server: String,
        /// The tool.
        tool: String,
        /// The first violation, with its JSON Pointer.
        message: String,
    },
    /// The request was cancelled by the caller (through a
    /// [`CancelToken`](crate::CancelToken)).
    Cancelled {
        /// The server name.
        server: String,
        /// The request's method.
        method: String,
        /// The reason given to the server.
        reason: String,
    },
    /// A task-augmented call ended without a result.
    Task {
        /// The server name.
        server: String,
        /// The task id the server assigned.
        task_id: String,
        /// The terminal status (`failed`, `cancelled`) or
        /// `deadline` when the poll deadline passed.
        status: String,
        /// The server's `statusMessage`, if any.
        message: Option<String>,
    },
    /// The caller passed something the request cannot carry (e.g. tool
    /// arguments that are not a JSON object).
    InvalidInput {
        /// The server name.
        server: String,
        /// What was wrong.
        message: String,
    },
    /// A message was larger than the configured maximum.
    MessageTooLarge {
        /// The server name.
        server: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The connection's outgoing queue stayed full (the server is not reading
    /// its input) or too many requests are in flight.
    Backpressure {
        /// The server name.
        server: String,
        /// The request that could not be sent.
        method: String,
        /// Which bound was hit.
        message: String,
    },
    /// An HTTP request failed or got a non-success status.
    Http {
        /// The server name.
        server: String,
        /// The request's method, if the failure concerns one.
        method: Option<String>,
        /// The HTTP status, when a response arrived.
        status: Option<u16>,
        /// What happened, with a short excerpt of the body.
        message: String,
        /// The transport error, when the request got no HTTP response
        /// (refused, timed out, TLS); [`std::error::Error::source`] returns it.
        source: Option<Box<ureq::Error>>,
    },
    /// OAuth authorization failed (discovery, registration, the user's
    /// answer, the token endpoint). Never carries a token or secret.
    Auth {
        /// The server name.
        server: String,
        /// What failed.
        message: String,
    },
    /// OAuth authorization was refused by one of the client's security
    /// checks: a mix-up (metadata or authorization response naming another
    /// issuer), a code that would travel over plain HTTP, credentials of
    /// another authorization server. Distinct from [`McpError::Auth`] so a
    /// caller can tell "the server said no" from "this looks like an
    /// attack"; [`std::error::Error::source`] returns the refusal.
    AuthRefused {
        /// The server name.
        server: String,
        /// Which check failed, with the values it compared.
        refusal: Box<AuthRefusal>,
    },
    /// The server does not implement the protocol version asked for, and
    /// none of the versions it supports is one this client speaks
    /// (`UnsupportedProtocolVersionError`, -32022).
    UnsupportedProtocolVersion {
        /// The server name.
        server: String,
        /// The request's method.
        method: String,
        /// The versions the server says it supports, and what it said.
        detail: Box<VersionMismatch>,
    },
    /// The server found the HTTP headers of a request at odds with its body
    /// (`HeaderMismatchError`, -32020).
    HeaderMismatch {
        /// The server name.
        server: String,
        /// The request's method.
        method: String,
        /// The server's message, naming the header.
        message: String,
    },
    /// The request needs a client capability this client did not declare
    /// (`MissingRequiredClientCapabilityError`, -32021).
    MissingClientCapability {
        /// The server name.
        server: String,
        /// The request's method.
        method: String,
        /// The capabilities the server requires, and its message.
        detail: Box<(Value, String)>,
    },
    /// A modern server answered with an `InputRequiredResult`: it needs
    /// input (elicitation, sampling, roots) before it can answer, which this
    /// client cannot provide over the modern era yet.
    InputRequired {
        /// The server name.
        server: String,
        /// The request's method.
        method: String,
        /// The methods of the input requests (`elicitation/create`, …).
        requests: Vec<String>,
    },
    /// A request's response stream ended before its response, and the
    /// request is not one that may be sent again (`tools/call` may have had
    /// effects: it is never repeated silently).
    StreamEnded {
        /// The server name.
        server: String,
        /// The request's method.
        method: String,
        /// How the stream ended.
        reason: String,
    },
    /// An I/O error outside a connection (files, store).
    Io {
        /// What was being done, e.g. `writing log file logs/mcp/x.log`.
        context: String,
        /// The operating-system error.
        source: io::Error,
    },
    /// The SQLite store failed.
    Store {
        /// What was being done.
        context: String,
        /// The SQLite error, rendered.
        message: String,
        /// The SQLite error itself, when there is one;
        /// [`std::error::Error::source`] returns it.
        source: Option<Box<rusqlite::Error>>,
    },
}

impl McpError {
    /// The server this error concerns, when it concerns one.
    pub fn server(&self) -> Option<&str> {
        match self {
            McpError::Config { server, .. }
            | McpError::Spawn { server, .. }
            | McpError::StartTimeout { server, .. }
            | McpError::CallTimeout { server, .. }
            | McpError::Disconnected { server, .. }
            | McpError::Rpc { server, .. }
            | McpError::Protocol { server, .. }
            | McpError::Tool { server, .. }
            | McpError::Cancelled { server, .. }
            | McpError::Task { server, .. }
            | McpError::MessageTooLarge { server, .. }
            | McpError::InvalidInput { server, .. }
            | McpError::SchemaMismatch { server, .. }
            | McpError::Backpressure { server, .. }
            | McpError::Http { server, .. }
            | McpError::UnsupportedProtocolVersion { server, .. }
            | McpError::HeaderMismatch { server, .. }
            | McpError::MissingClientCapability { server, .. }
            | McpError::InputRequired { server, .. }
            | McpError::StreamEnded { server, .. }
            | McpError::Auth { server, .. }
            | McpError::AuthRefused { server, .. } => Some(server),
            McpError::Io { .. } | McpError::Store { .. } => None,
        }
    }

    /// True for a `resources/read` of a resource the server does not have:
    /// `-32602` in the modern era (2026-07-28), `-32002` before it.
    pub fn is_resource_not_found(&self) -> bool {
        matches!(
            self,
            McpError::Rpc { method, code, .. }
                if method == "resources/read" && (*code == -32602 || *code == -32002)
        )
    }

    /// True when the connection this error came from can no longer be used.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            McpError::Disconnected { .. }
                | McpError::StartTimeout { .. }
                | McpError::Spawn { .. }
                | McpError::MessageTooLarge { .. }
        )
    }
}

fn req(method: &Option<String>) -> String {
    match method {
        Some(m) => format!(" during {m}"),
        None => String::new(),
    }
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpError::Config { server, message } => {
                write!(f, "MCP server '{server}': invalid configuration: {message}")
            }
            McpError::Spawn {
                server,
                command,
                source,
            } => write!(
                f,
                "MCP server '{server}': failed to spawn '{command}': {source}"
            ),
            McpError::StartTimeout { server, timeout } => write!(
                f,
                "MCP server '{server}': no answer to initialize within {}",
                fmt_duration(*timeout)
            ),
            McpError::CallTimeout {
                server,
                method,
                timeout,
            } => write!(
                f,
                "MCP server '{server}': {method} got no response within {}",
                fmt_duration(*timeout)
            ),
            McpError::Disconnected {
                server,
                method,
                reason,
            } => write!(
                f,
                "MCP server '{server}': disconnected{}: {reason}",
                req(method)
            ),
            McpError::Rpc {
                server,
                method,
                code,
                message,
                ..
            } => write!(
                f,
                "MCP server '{server}': {method} failed with JSON-RPC error {code}: {message}"
            ),
            McpError::Protocol {
                server,
                method,
                message,
            } => write!(
                f,
                "MCP server '{server}': protocol violation{}: {message}",
                req(method)
            ),
            McpError::Tool {
                server,
                tool,
                message,
                ..
            } => write!(
                f,
                "MCP server '{server}': tool '{tool}' reported an error: {message}"
            ),
            McpError::Cancelled {
                server,
                method,
                reason,
            } => write!(f, "MCP server '{server}': {method} cancelled: {reason}"),
            McpError::Task {
                server,
                task_id,
                status,
                message,
            } => {
                write!(f, "MCP server '{server}': task {task_id} ended {status}")?;
                if let Some(m) = message {
                    write!(f, ": {m}")?;
                }
                Ok(())
            }
            McpError::SchemaMismatch { server, tool, message } => write!(
                f,
                "MCP server '{server}': result of tool '{tool}' does not match its outputSchema: {message}"
            ),
            McpError::InvalidInput { server, message } => {
                write!(f, "MCP server '{server}': invalid input: {message}")
            }
            McpError::MessageTooLarge { server, limit } => write!(
                f,
                "MCP server '{server}': message exceeds the {limit}-byte limit"
            ),
            McpError::Backpressure {
                server,
                method,
                message,
            } => write!(f, "MCP server '{server}': cannot send {method}: {message}"),
            McpError::Http {
                server,
                method,
                status,
                message,
                ..
            } => {
                write!(f, "MCP server '{server}': HTTP")?;
                if let Some(s) = status {
                    write!(f, " {s}")?;
                }
                write!(f, "{}: {message}", req(method))
            }
            McpError::Auth { server, message } => {
                write!(f, "MCP server '{server}': authorization failed: {message}")
            }
            McpError::AuthRefused { server, refusal } => {
                write!(f, "MCP server '{server}': authorization refused: {refusal}")
            }
            McpError::UnsupportedProtocolVersion {
                server,
                method,
                detail,
            } => write!(
                f,
                "MCP server '{server}': {method}: the server does not support protocol {} (it supports {}; this client speaks {}): {}",
                detail.requested,
                if detail.supported.is_empty() { "no version it named".to_owned() } else { detail.supported.join(", ") },
                crate::limits::MODERN_PROTOCOL_VERSIONS
                    .iter()
                    .chain(crate::limits::SUPPORTED_PROTOCOL_VERSIONS)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", "),
                detail.message
            ),
            McpError::HeaderMismatch {
                server,
                method,
                message,
            } => write!(
                f,
                "MCP server '{server}': {method}: the server found the HTTP headers at odds with the body (HeaderMismatch): {message}"
            ),
            McpError::MissingClientCapability {
                server,
                method,
                detail,
            } => write!(
                f,
                "MCP server '{server}': {method} needs client capabilities {} that this client did not declare: {}",
                detail.0, detail.1
            ),
            McpError::InputRequired {
                server,
                method,
                requests,
            } => write!(
                f,
                "MCP server '{server}': {method} needs input from the client ({}), which this client does not provide in the 2026-07-28 era yet",
                if requests.is_empty() { "unspecified".to_owned() } else { requests.join(", ") }
            ),
            McpError::StreamEnded {
                server,
                method,
                reason,
            } => write!(
                f,
                "MCP server '{server}': the response stream of {method} ended before its response ({reason}); it was not sent again"
            ),
            McpError::Io { context, source } => write!(f, "{context}: {source}"),
            McpError::Store {
                context, message, ..
            } => write!(f, "store: {context}: {message}"),
        }
    }
}

fn fmt_duration(d: Duration) -> String {
    if d.as_millis() % 1000 == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

impl std::error::Error for McpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            McpError::Spawn { source, .. } | McpError::Io { source, .. } => Some(source),
            McpError::Http {
                source: Some(s), ..
            } => Some(s.as_ref()),
            McpError::Store {
                source: Some(s), ..
            } => Some(s.as_ref()),
            McpError::AuthRefused { refusal, .. } => Some(refusal.as_ref()),
            _ => None,
        }
    }
}
#[cfg(test)]
mod tests {
    use super::McpError;

    #[test]
    fn resource_not_found_in_both_eras() {
        let rpc = |method: &str, code| McpError::Rpc {
            server: "s".into(),
            method: method.into(),
            code,
            message: "no".into(),
            data: None,
        };
        assert!(rpc("resources/read", -32602).is_resource_not_found());
        assert!(rpc("resources/read", -32002).is_resource_not_found());
        assert!(!rpc("tools/call", -32602).is_resource_not_found());
        assert!(!rpc("resources/read", -32603).is_resource_not_found());
    }

    #[test]
    fn stays_small() {
        // Results are returned by value on every call: keep the error lean.
        assert!(
            std::mem::size_of::<super::McpError>() <= 96,
            "{}",
            std::mem::size_of::<super::McpError>()
        );
    }
}
