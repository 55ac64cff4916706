//! The messages a [`StoreHandle`](super::StoreHandle) sends to the store
//! thread. Every command that expects an answer carries its own reply channel.

use std::time::SystemTime;

use crossbeam_channel::Sender;

use crate::config::McpServerConfig;
use crate::error::Result;
use crate::notification::McpNotification;

use super::{EventId, StoredEvent};

/// The channel a command's result comes back on (capacity 1).
pub(crate) type Reply<T> = Sender<Result<T>>;

/// Which grant table a grant command addresses (the manager's
/// [`GrantScope`](crate::manager::GrantScope) says whose grants they are;
/// this says where they are kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GrantTable {
    /// `session_mcp_grants`, keyed by session id (root agents).
    Session,
    /// `stack_mcp_grants`, keyed by stack frame id (sub-agents).
    Stack,
}

/// One request to the store thread.
pub(crate) enum Command {
    /// Persist one event; the reply (its id) is sent only once the batch it
    /// joined is committed.
    InsertEvent {
        event: McpNotification,
        received_at: SystemTime,
        reply: Reply<EventId>,
    },
    /// Commit everything queued so far and flush the log files.
    Flush {
        reply: Reply<()>,
    },
    UpsertServer {
        config: Box<McpServerConfig>,
        reply: Reply<()>,
    },
    GetServer {
        name: String,
        reply: Reply<Option<McpServerConfig>>,
    },
    ListServers {
        reply: Reply<Vec<McpServerConfig>>,
    },
    DeleteServer {
        name: String,
        reply: Reply<bool>,
    },
    SetEnabled {
        name: String,
        enabled: bool,
        reply: Reply<bool>,
    },
    SetServerEra {
        name: String,
        era: crate::era::Era,
        protocol_version: String,
        reply: Reply<bool>,
    },
    GetServerEra {
        name: String,
        reply: Reply<Option<(crate::era::Era, Option<String>)>>,
    },
    SetServerWire {
        name: String,
        wire: crate::config::McpTransport,
        reply: Reply<bool>,
    },
    GetServerWire {
        name: String,
        reply: Reply<Option<crate::config::McpTransport>>,
    },
    PendingEvents {
        limit: usize,
        reply: Reply<Vec<StoredEvent>>,
    },
    OAuthLoad {
        server: String,
        reply: Reply<Option<crate::auth::StoredAuth>>,
    },
    OAuthSave {
        server: String,
        auth: Box<crate::auth::StoredAuth>,
        reply: Reply<()>,
    },
    OAuthClear {
        server: String,
        reply: Reply<bool>,
    },
    RecentEvents {
        limit: usize,
        reply: Reply<Vec<StoredEvent>>,
    },
    GetEvent {
        id: EventId,
        reply: Reply<Option<StoredEvent>>,
    },
    MarkProcessed {
        ids: Vec<EventId>,
        reply: Reply<usize>,
    },
    Grant {
        scope: GrantTable,
        owner: String,
        group: String,
        reply: Reply<bool>,
    },
    Revoke {
        scope: GrantTable,
        owner: String,
        group: String,
        reply: Reply<bool>,
    },
    Grants {
        scope: GrantTable,
        owner: String,
        reply: Reply<Vec<String>>,
    },
    ClearGrants {
        scope: GrantTable,
        owner: String,
        reply: Reply<usize>,
    },
    /// Drain what is queued, commit, close files and the database, exit.
    Shutdown {
        reply: Reply<()>,
    },
    /// Test hook: run SQL on the store's connection (e.g. to make the
    /// database read-only or full).
    #[cfg(test)]
    Exec {
        sql: String,
        reply: Reply<()>,
    },
}
