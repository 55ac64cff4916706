//! # skald-mcp
//!
//! A synchronous Model Context Protocol client: dedicated OS threads, blocking
//! calls, crossbeam channels. No async runtime.
//!
//! ```
//! use serde_json::json;
//! use skald_mcp::{ClientOptions, McpServer, McpServerClient, McpServerConfig};
//!
//! // The bundled demo server (doctests run from the crate root).
//! let cfg = McpServerConfig::stdio("demo", "python3", ["scripts/demo_mcp_server.py"]);
//! let server = McpServer::connect(&cfg, ClientOptions::default())?;
//! let tools = server.list_tools()?;
//! let result = server.call_tool("echo", json!({"text": "hi"}))?;
//! assert_eq!(result.to_text(), "hi");
//! server.close()?;
//! # Ok::<(), skald_mcp::McpError>(())
//! ```
//!
//! What a program holds, all at the root:
//!
//! * [`connect`] — a connection to a configured server ([`McpServerConfig`]),
//!   whatever its transport: a [`McpServer`] (a child process over stdio,
//!   one named I/O thread) or a [`McpHttpServer`] (Streamable HTTP), both
//!   behind the [`McpServerClient`] trait.
//! * [`ClientOptions`] — timeouts, bounds, handlers ([`ElicitationHandler`],
//!   [`SamplingHandler`], [`RootsProvider`]) and where notifications and log
//!   lines go; [`CallOptions`] per call ([`CancelToken`], progress).
//! * [`Era`], [`EraPreference`] — which protocol era a connection speaks
//!   (MCP 2026-07-28, stateless; or the `initialize` handshake of 2025-11-25
//!   and older) and how it is chosen: probed, or forced.
//! * [`McpCallResult`], [`McpTool`], [`Resource`], [`Prompt`], … — what
//!   servers answer; [`McpError`] — what goes wrong, naming the server and
//!   the request.
//!
//! And four modules for what is configured as a whole: [`manager`] (many
//! servers, restarts, lazy tool loading), [`store`] (the SQLite store
//! thread), [`auth`] (OAuth), [`limits`] (every default and bound, in one
//! place; [`ClientOptions`] changes them per connection), plus [`model`]
//! (serde wire types shared by both eras).
#![warn(missing_docs)]
// Every `unsafe` block says why it is sound, in a `// SAFETY:` comment.
#![warn(clippy::undocumented_unsafe_blocks)]

// What a user holds is re-exported below; these modules are public for the
// domains a program configures as a whole (OAuth, the manager, the store,
// the tuning constants, the wire types).
pub mod auth;
pub mod limits;
pub mod manager;
pub mod model;
pub mod store;

mod cancel;
mod client;
mod config;
mod connect;
mod elicitation;
mod era;
mod error;
mod handoff;
mod http;
mod inbox;
mod json;
mod json_write;
mod jsonrpc_cap;
mod large_strings;
mod log;
mod mcp_json;
mod methods;
mod notification;
mod peer;
mod poll;
mod prompts;
mod resources;
mod result;
mod roots;
mod sampling;
mod spin;
mod stdio;
mod task;
mod text_content;
mod threads;
mod tool;
mod usual_result;

// The parsers the fuzz targets drive (`fuzz/`): public only with the
// `fuzzing` feature, not part of the stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod jsonrpc;
#[cfg(not(feature = "fuzzing"))]
mod jsonrpc;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod schema;
#[cfg(not(feature = "fuzzing"))]
mod schema;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod sse;
#[cfg(not(feature = "fuzzing"))]
mod sse;

pub use cancel::CancelToken;
pub use client::{
    list_all, CallOptions, ClientOptions, Completion, CompletionRef, Disconnect, Implementation,
    InitializeInfo, McpServerClient, OutputSchemaPolicy, Progress, ProgressFn, ServerCapabilities,
};
pub use config::{validate_server_name, McpServerConfig, McpTransport};
pub use connect::{connect, connect_lazy};
pub use elicitation::{
    ElicitationForm, ElicitationHandler, ElicitationMode, ElicitationRequest, ElicitationResponse,
    FieldKind, FormField,
};
pub use era::{Era, EraPreference};
pub use error::{McpError, Result, VersionMismatch};
pub use http::{McpHttpServer, McpSseServer};
pub use inbox::{ElicitationInbox, PendingElicitation, ResolveError};
/// The JSON-RPC and MCP error codes, for matching [`McpError::Rpc`].
pub use jsonrpc::codes;
pub use log::{LogLevel, LogTag, McpLogLine, McpLogTx};
pub use mcp_json::{parse_mcp_servers_json, ImportedServers, SkippedServer};
pub use notification::{McpNotification, McpNotificationTx};
pub use prompts::{GetPromptResult, Prompt, PromptArgument, PromptContent, PromptMessage, Role};
pub use resources::{Resource, ResourceContents, ResourceTemplate};
pub use result::{
    classify_content, extract_call_result, ClassifiedContent, McpCallResult, McpMedia, ResourceData,
};
pub use roots::{Root, RootsProvider};
pub use sampling::{SamplingHandler, SamplingMessage, SamplingRequest, SamplingResponse};
pub use stdio::McpServer;
pub use task::{clamp_poll_interval, poll_deadline, CreateTaskResult, TaskStatus};
pub use tool::{McpTool, TaskSupport, ToolAnnotations};

pub use store::{
    EventCap, EventId, EventRetention, EventStatus, Store, StoreConfig, StoreHandle, StoreStats,
    StoredEvent, Synchronous,
};
