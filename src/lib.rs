//! # skald-mcp
//!
//! A synchronous Model Context Protocol client: dedicated OS threads, blocking
//! calls, crossbeam channels. No async runtime.
#![warn(missing_docs)]

pub mod cancel;
pub mod client;
pub mod config;
pub mod elicitation;
pub mod error;
pub mod jsonrpc;
pub mod limits;
pub mod log;
pub mod notification;
mod peer;
pub mod result;
pub mod stdio;
pub mod task;
pub mod tool;

pub use cancel::{cancelled_notification, tasks_cancel_request, CancelToken};
pub use client::{
    CallOptions, ClientOptions, Implementation, InitializeInfo, McpServerClient, Progress,
    ProgressFn, ServerCapabilities,
};
pub use config::{validate_server_name, McpServerConfig, McpTransport};
pub use elicitation::{
    ElicitationForm, ElicitationHandler, ElicitationMode, ElicitationRequest, ElicitationResponse,
    FieldKind, FormField,
};
pub use error::{McpError, Result};
pub use limits::*;
pub use log::{LogLevel, LogTag, McpLogLine, McpLogTx};
pub use notification::{McpNotification, McpNotificationTx};
pub use result::{
    classify_content, extract_call_result, ClassifiedContent, McpCallResult, McpMedia, ResourceData,
};
pub use stdio::McpServer;
pub use task::{clamp_poll_interval, poll_deadline, CreateTaskResult, TaskStatus};
pub use tool::{McpTool, TaskSupport, ToolAnnotations};
