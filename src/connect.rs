//! One way in: a connection to a configured server, whatever its transport.
//!
//! The manager, the command-line tool and programs that hold a
//! [`McpServerConfig`] all start connections here, so that adding a
//! transport is one [`Outbound`](crate::peer) implementation and one arm of
//! the `match` below.

use std::sync::Arc;

use crate::client::{ClientOptions, McpServerClient};
use crate::config::{McpServerConfig, McpTransport};
use crate::error::Result;
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
pub fn connect(
    config: &McpServerConfig,
    options: ClientOptions,
) -> Result<Arc<dyn McpServerClient>> {
    Ok(match config.transport {
        McpTransport::Stdio => Arc::new(McpServer::connect(config, options)?),
        McpTransport::Http => Arc::new(McpHttpServer::connect(config, options)?),
        McpTransport::Sse => Arc::new(McpSseServer::connect(config, options)?),
    })
}

/// [`connect`] without the handshake: a stdio server is spawned, an HTTP one
/// is not contacted yet. The first request (or
/// [`McpServerClient::initialize`]) agrees on the era. For callers that want
/// to hold the connection (to close it from another thread) while it starts.
pub fn connect_lazy(
    config: &McpServerConfig,
    options: ClientOptions,
) -> Result<Arc<dyn McpServerClient>> {
    Ok(match config.transport {
        McpTransport::Stdio => Arc::new(McpServer::spawn(config, options)?),
        McpTransport::Http => Arc::new(McpHttpServer::new(config, options)?),
        McpTransport::Sse => Arc::new(McpSseServer::new(config, options)?),
    })
}
