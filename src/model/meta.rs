//! The reserved `_meta` keys of MCP 2026-07-28.

/// The `_meta` keys, in one place so that both transports and the era
/// logic spell them the same way.
pub(crate) mod keys {
    /// The request's protocol version (required on every modern request).
    pub(crate) const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities for this request (required).
    pub(crate) const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Who the client is (`{name, version}`).
    pub(crate) const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The least level of `notifications/message` wanted for this request
    /// (it replaces `logging/setLevel`).
    pub(crate) const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Who the server is, on results.
    pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The `subscriptions/listen` request a notification belongs to.
    pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// The tasks extension (2026-07-28), declared in
    /// `clientCapabilities.extensions`.
    pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
}
