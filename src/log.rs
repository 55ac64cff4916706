//! Per-server log lines: what a server printed on stderr, the log records it
//! sent as `notifications/message`, and lifecycle events (start, failure,
//! disconnect).
//!
//! The client only *emits* [`McpLogLine`]s on a channel; writing them to
//! files is the store's job. This keeps the transports free of file I/O.

use std::fmt;
use std::time::SystemTime;

/// The channel on which a connection sends its log lines.
pub type McpLogTx = crossbeam_channel::Sender<McpLogLine>;

/// An MCP log level, as carried by `notifications/message` (RFC 5424 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// General informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Parses an MCP level name; unknown names are `None`.
    pub fn parse(s: &str) -> Option<LogLevel> {
        Some(match s {
            "debug" => LogLevel::Debug,
            "info" => LogLevel::Info,
            "notice" => LogLevel::Notice,
            "warning" => LogLevel::Warning,
            "error" => LogLevel::Error,
            "critical" => LogLevel::Critical,
            "alert" => LogLevel::Alert,
            "emergency" => LogLevel::Emergency,
            _ => return None,
        })
    }

    /// The MCP wire name of the level.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a log line came from; rendered as the bracketed tag of a log file line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogTag {
    /// A raw line the child process wrote to stderr (stdio only).
    Stderr,
    /// A `notifications/message` record, tagged with its MCP level.
    Level(LogLevel),
    /// Connection lifecycle: start, start failure, timeout, disconnect.
    Lifecycle,
}

impl LogTag {
    /// The tag's text without brackets: `stderr`, `warning`, `lifecycle`, …
    pub fn as_str(self) -> &'static str {
        match self {
            LogTag::Stderr => "stderr",
            LogTag::Level(l) => l.as_str(),
            LogTag::Lifecycle => "lifecycle",
        }
    }
}

impl fmt::Display for LogTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line for a server's log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpLogLine {
    /// The name of the server the line belongs to.
    pub server: String,
    /// Where the line came from.
    pub tag: LogTag,
    /// The text, without a trailing newline.
    pub text: String,
    /// When the client received or produced it.
    pub at: SystemTime,
}

impl McpLogLine {
    /// A line stamped with the current time.
    pub fn now(server: impl Into<String>, tag: LogTag, text: impl Into<String>) -> McpLogLine {
        McpLogLine {
            server: server.into(),
            tag,
            text: text.into(),
            at: SystemTime::now(),
        }
    }
}
