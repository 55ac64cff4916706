//! One way in: a connection to a configured server, whatever its transport.
//!
//! The manager, the command-line tool and programs that hold a
//! [`McpServerConfig`] all start connections here, so that adding a
//! transport is one [`Outbound`](crate::peer) implementation and one arm of
//! the `match` below.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::client::{ClientOptions, McpServerClient};
use crate::config::{McpServerConfig, McpTransport};
use crate::error::{McpError, Result};
use crate::http::{McpHttpServer, McpSseServer};
use crate::stdio::McpServer;

/// Connects to the server `config` describes and agrees on the protocol era
/// and version with it (the `server/discover` probe and/or `initialize`),
/// bounded by [`ClientOptions::start_timeout`]. A stdio server is spawned
/// (and killed again if this fails).
///
/// ```
/// use skald_mcp::{connect, ClientOptions, McpServerConfig};
/// let cfg = McpServerConfig::stdio("demo", "python3", ["scripts/demo_mcp_server.py"]);
/// let server = connect(&cfg, ClientOptions::default())?;
/// assert_eq!(server.call_tool("echo", serde_json::json!({"text": "hi"}))?.to_text(), "hi");
/// server.close()?;
/// # Ok::<(), skald_mcp::McpError>(())
/// ```
///
/// Transport `http` follows the spec's backward-compatibility rule: when
/// the server refuses the Streamable HTTP `initialize` with `400`, `404` or
/// `405`, the client tries the deprecated HTTP+SSE transport at the same
/// URL (a `GET` that must answer an event stream naming its endpoint), and
/// an error names both attempts when neither works. A URL found to speak
/// HTTP+SSE is remembered for the process, so the next connection goes
/// there at once.
pub fn connect(
    config: &McpServerConfig,
    options: ClientOptions,
) -> Result<Arc<dyn McpServerClient>> {
    Ok(match config.transport {
        McpTransport::Stdio => Arc::new(McpServer::connect(config, options)?),
        McpTransport::Http if speaks_sse(config) => {
            Arc::new(McpSseServer::connect(config, options)?)
        }
        McpTransport::Http => match McpHttpServer::connect(config, options.clone()) {
            Ok(s) => Arc::new(s),
            Err(e) if wants_sse_fallback(&e) => Arc::new(sse_fallback(config, options, &e)?),
            Err(e) => return Err(e),
        },
        McpTransport::Sse => Arc::new(McpSseServer::connect(config, options)?),
    })
}

/// URLs found to speak only HTTP+SSE in this process.
fn sse_urls() -> &'static Mutex<HashSet<String>> {
    static URLS: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    URLS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Whether `config`'s URL was found to speak only HTTP+SSE.
pub(crate) fn speaks_sse(config: &McpServerConfig) -> bool {
    config
        .url
        .as_ref()
        .is_some_and(|u| sse_urls().lock().contains(u))
}

/// Whether a failed Streamable HTTP handshake is the spec's signal to try
/// HTTP+SSE: the `POST` of `initialize` answered `400`, `404` or `405`.
pub(crate) fn wants_sse_fallback(e: &McpError) -> bool {
    matches!(
        e,
        McpError::Http {
            status: Some(400 | 404 | 405),
            ..
        }
    )
}

/// The HTTP+SSE attempt after Streamable HTTP failed with `first`; an
/// error names both.
pub(crate) fn sse_fallback(
    config: &McpServerConfig,
    options: ClientOptions,
    first: &McpError,
) -> Result<McpSseServer> {
    if let Some(logs) = &options.logs {
        let _ = logs.send(crate::log::McpLogLine::now(
            config.name.clone(),
            crate::log::LogTag::Lifecycle,
            format!("Streamable HTTP refused ({first}); trying the HTTP+SSE transport"),
        ));
    }
    match McpSseServer::connect(config, options) {
        Ok(s) => {
            if let Some(u) = &config.url {
                sse_urls().lock().insert(u.clone());
            }
            Ok(s)
        }
        Err(second) => Err(McpError::Http {
            server: config.name.clone(),
            method: Some("initialize".into()),
            status: None,
            message: format!(
                "neither transport worked: Streamable HTTP: {first}; HTTP+SSE: {second}"
            ),
            source: None,
        }),
    }
}

/// [`connect`] without the handshake: a stdio server is spawned, an HTTP one
/// is not contacted yet (and an `http` server refusing Streamable HTTP is
/// not retried over HTTP+SSE, except that a URL already found to speak it
/// goes there; the manager does the fallback itself). The first request (or
/// [`McpServerClient::initialize`]) agrees on the era. For callers that want
/// to hold the connection (to close it from another thread) while it starts.
pub fn connect_lazy(
    config: &McpServerConfig,
    options: ClientOptions,
) -> Result<Arc<dyn McpServerClient>> {
    Ok(match config.transport {
        McpTransport::Stdio => Arc::new(McpServer::spawn(config, options)?),
        McpTransport::Http if speaks_sse(config) => Arc::new(McpSseServer::new(config, options)?),
        McpTransport::Http => Arc::new(McpHttpServer::new(config, options)?),
        McpTransport::Sse => Arc::new(McpSseServer::new(config, options)?),
    })
}
