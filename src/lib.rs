//! # skald-mcp
//!
//! A synchronous Model Context Protocol client: dedicated OS threads, blocking
//! calls, crossbeam channels. No async runtime.
#![warn(missing_docs)]

pub mod config;
pub mod error;
pub mod limits;
pub mod log;
pub mod notification;

pub use config::{validate_server_name, McpServerConfig, McpTransport};
pub use error::{McpError, Result};
pub use limits::*;
pub use log::{LogLevel, LogTag, McpLogLine, McpLogTx};
pub use notification::{McpNotification, McpNotificationTx};
pub mod store;
pub use store::{
    format_log_line, log_dir, log_file_path, sanitize_log_name, EventId, EventStatus, Store,
    StoreConfig, StoreHandle, StoreStats, StoredEvent, Synchronous, SCHEMA_VERSION,
};
