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
//! The pieces, one module each:
//!
//! * [`jsonrpc`] — framing: bytes to typed messages and back.
//! * [`stdio`] — [`McpServer`], a child process and its three I/O threads.
//! * [`http`] — [`McpHttpServer`], Streamable HTTP: POSTs; in the legacy era
//!   the GET stream and sessions, in the modern era the request headers.
//! * [`Era`], [`EraPreference`] — which protocol era a connection speaks
//!   (MCP 2026-07-28 or the `initialize` handshake of 2025-11-25 and older)
//!   and how it is chosen: probed, or forced in [`ClientOptions`].
//! * [`model`] — serde-derived wire types shared by both eras.
//! * [`sse`] — the Server-Sent Events parser the HTTP transport reads with.
//! * [`client`] — the [`McpServerClient`] trait, [`ClientOptions`], [`CallOptions`].
//! * [`result`] — [`McpCallResult`] and media decoding.
//! * [`tool`] — [`McpTool`].
//! * [`task`] — task-mode calls, polled to completion.
//! * [`cancel`] — [`CancelToken`] and the cancellation messages.
//! * [`elicitation`] — [`ElicitationHandler`] and form parsing.
//! * [`log`], [`notification`] — what a server emits besides responses.
//! * [`limits`] — every default and bound, in one place.
//! * [`error`] — [`McpError`].
#![warn(missing_docs)]

pub mod auth;
pub mod cancel;
pub mod client;
pub mod config;
mod connect;
pub mod elicitation;
mod era;
pub mod error;
pub mod http;
mod json;
pub mod jsonrpc;
pub mod limits;
pub mod log;
pub mod manager;
pub mod model;
pub mod notification;
mod peer;
pub mod prompts;
pub mod resources;
pub mod result;
pub mod roots;
pub mod sampling;
pub mod schema;
pub mod sse;
pub mod stdio;
pub mod store;
pub mod task;
mod threads;
pub mod tool;

pub use cancel::{cancelled_notification, tasks_cancel_request, CancelToken};
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
pub use http::McpHttpServer;
pub use limits::*;
pub use log::{LogLevel, LogTag, McpLogLine, McpLogTx};
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
    format_log_line, log_dir, log_file_path, sanitize_log_name, EventId, EventStatus, Store,
    StoreConfig, StoreHandle, StoreStats, StoredEvent, Synchronous, SCHEMA_VERSION,
};
