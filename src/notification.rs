//! Unsolicited messages from a server: JSON-RPC notifications (no `id`) that
//! are not consumed by the client itself (progress, log records, cancellation
//! and list changes are).

use serde_json::Value;

/// The channel on which a connection delivers server notifications.
pub type McpNotificationTx = crossbeam_channel::Sender<McpNotification>;

/// A notification a server sent, such as a custom `event/new_email`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpNotification {
    /// The name of the server that sent it.
    pub server: String,
    /// The JSON-RPC method, e.g. `event/new_email`.
    pub method: String,
    /// The `params` member, or `Value::Null` when the server sent none.
    pub params: Value,
}
