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
/// an error names both attempts when neither works. The transport found is
/// [`McpServerClient::transport`]; given back as
/// [`ClientOptions::wire_hint`] (the manager and the CLI keep it with the
/// server's row) it is tried first next time, and a URL found to speak
/// HTTP+SSE is also remembered for the process. When the remembered
/// transport turns out wrong (an HTTP+SSE `GET` answered with anything but
/// an event stream), the other one is tried.
pub fn connect(
    config: &McpServerConfig,
    options: ClientOptions,
) -> Result<Arc<dyn McpServerClient>> {
    Ok(match config.transport {
        McpTransport::Stdio => Arc::new(McpServer::connect(config, options)?),
        McpTransport::Sse => Arc::new(McpSseServer::connect(config, options)?),
        McpTransport::Http => with_http_fallback(config, options, &mut |wire, options| {
            Ok(match wire {
                McpTransport::Sse => Arc::new(McpSseServer::connect(config, options)?),
                _ => Arc::new(McpHttpServer::connect(config, options)?),
            })
        })?,
    })
}

/// Connects an `http` server with `attempt` (which makes a connection over
/// the given HTTP transport and does its handshake), in the order
/// [`http_order`] gives, trying the other transport when the first one's
/// failure says so; remembers what worked for the process. The manager
/// passes an `attempt` that keeps each connection while its handshake
/// runs, so that closing the manager interrupts it.
pub(crate) fn with_http_fallback(
    config: &McpServerConfig,
    options: ClientOptions,
    attempt: &mut dyn FnMut(McpTransport, ClientOptions) -> Result<Arc<dyn McpServerClient>>,
) -> Result<Arc<dyn McpServerClient>> {
    let [first, second] = http_order(config, &options);
    let first_err = match attempt(first, options.clone()) {
        Ok(c) => {
            remember_wire(config, first);
            return Ok(c);
        }
        Err(e) if try_other_wire(first, &e) => e,
        Err(e) => return Err(e),
    };
    if let Some(logs) = &options.logs {
        let _ = logs.send(crate::log::McpLogLine::now(
            config.name.clone(),
            crate::log::LogTag::Lifecycle,
            format!(
                "{} refused ({first_err}); trying {}",
                wire_name(first),
                wire_name(second)
            ),
        ));
    }
    match attempt(second, options) {
        Ok(c) => {
            remember_wire(config, second);
            Ok(c)
        }
        Err(second_err) => {
            let (http_err, sse_err) = match first {
                McpTransport::Sse => (&second_err, &first_err),
                _ => (&first_err, &second_err),
            };
            Err(McpError::Http {
                server: config.name.clone(),
                method: Some("initialize".into()),
                status: None,
                message: format!(
                    "neither transport worked: Streamable HTTP: {http_err}; HTTP+SSE: {sse_err}"
                ),
                source: None,
            })
        }
    }
}

/// The two HTTP transports of an `http` server, in the order to try them:
/// the hinted (or remembered) one first, else Streamable HTTP.
fn http_order(config: &McpServerConfig, options: &ClientOptions) -> [McpTransport; 2] {
    let sse_first = match options.wire_hint {
        Some(hint) => hint == McpTransport::Sse,
        None => speaks_sse(config),
    };
    if sse_first {
        [McpTransport::Sse, McpTransport::Http]
    } else {
        [McpTransport::Http, McpTransport::Sse]
    }
}

/// A connection over `wire` (Streamable HTTP or HTTP+SSE) to `config`'s
/// URL, not contacted yet.
pub(crate) fn lazy_http(
    config: &McpServerConfig,
    options: ClientOptions,
    wire: McpTransport,
) -> Result<Arc<dyn McpServerClient>> {
    Ok(match wire {
        McpTransport::Sse => Arc::new(McpSseServer::new(config, options)?),
        _ => Arc::new(McpHttpServer::new(config, options)?),
    })
}

fn wire_name(wire: McpTransport) -> &'static str {
    match wire {
        McpTransport::Sse => "HTTP+SSE",
        _ => "Streamable HTTP",
    }
}

/// URLs found to speak only HTTP+SSE in this process.
fn sse_urls() -> &'static Mutex<HashSet<String>> {
    static URLS: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    URLS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Whether `config`'s URL was found to speak only HTTP+SSE.
fn speaks_sse(config: &McpServerConfig) -> bool {
    config
        .url
        .as_ref()
        .is_some_and(|u| sse_urls().lock().contains(u))
}

/// Remembers for the process which transport `config`'s URL spoke.
fn remember_wire(config: &McpServerConfig, wire: McpTransport) {
    if let Some(u) = &config.url {
        let mut urls = sse_urls().lock();
        if wire == McpTransport::Sse {
            urls.insert(u.clone());
        } else {
            urls.remove(u);
        }
    }
}

/// Whether a failed handshake over `wire` is the signal to try the other
/// HTTP transport. Streamable HTTP: the spec's rule, the `POST` of
/// `initialize` answered `400`, `404` or `405`. HTTP+SSE (tried first
/// because it was remembered): the server answered the `GET` at all, but not
/// with an event stream naming an endpoint, so it may have moved on to
/// Streamable HTTP. A server that cannot be reached is not retried.
fn try_other_wire(wire: McpTransport, e: &McpError) -> bool {
    match (wire, e) {
        (McpTransport::Sse, McpError::Http { status, .. }) => status.is_some(),
        (_, McpError::Http { status, .. }) => matches!(status, Some(400 | 404 | 405)),
        _ => false,
    }
}

/// [`connect`] without the handshake: a stdio server is spawned, an HTTP one
/// is not contacted yet (and an `http` server refusing Streamable HTTP is
/// not retried over HTTP+SSE; the hinted or remembered transport is the one
/// made). The first request (or
/// [`McpServerClient::initialize`]) agrees on the era. For callers that want
/// to hold the connection (to close it from another thread) while it starts.
pub fn connect_lazy(
    config: &McpServerConfig,
    options: ClientOptions,
) -> Result<Arc<dyn McpServerClient>> {
    Ok(match config.transport {
        McpTransport::Stdio => Arc::new(McpServer::spawn(config, options)?),
        McpTransport::Http => {
            let [first, _] = http_order(config, &options);
            lazy_http(config, options, first)?
        }
        McpTransport::Sse => Arc::new(McpSseServer::new(config, options)?),
    })
}
