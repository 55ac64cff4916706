//! The store: one thread that owns the SQLite database and the per-server
//! log files. Everything else talks to it over channels.
//!
//! * Server configurations (`mcp_servers`), pushed notifications
//!   (`mcp_events`, `pending` until marked `processed`) and lazy-loading
//!   grants (`session_mcp_grants`, `stack_mcp_grants`) live in one SQLite
//!   file in WAL mode. The schema is created and upgraded by embedded,
//!   numbered migrations (`migrations/*.sql`).
//! * Log lines go to `<log_root>/logs/mcp/<name>.log`, rotated to
//!   `<name>.log.1` at [`StoreConfig::log_max_bytes`].
//!
//! Open a [`Store`] (the owner; closing or dropping it shuts the thread down)
//! and hand out [`StoreHandle`]s (`Clone + Send + Sync`, blocking methods).
//! Connections can be given the store's channels directly
//! ([`StoreHandle::events_sender`], [`StoreHandle::log_sender`]).
//!
//! # Batching and durability
//!
//! Events and log lines that arrive in a burst are written many per
//! transaction (up to [`StoreConfig::batch_max`]); when they trickle in, a
//! batch is committed at the latest [`StoreConfig::flush_interval`] after
//! its first item arrived. An event inserted with the blocking
//! [`StoreHandle::insert_event`] is committed as soon as the queues are
//! momentarily empty, and its id is returned only after the commit: an
//! acknowledged event survives a crash of the process. With
//! [`Synchronous::Normal`] (the default) it may be lost on a power failure;
//! choose [`Synchronous::Full`] to survive that too, at the cost of an
//! `fsync` per transaction.
//!
//! # Ordering
//!
//! Events get increasing ids in the order the store receives them; each
//! sender's events keep their order, also when one sender mixes the channel
//! and [`StoreHandle::insert_event`] (a blocking insert is ordered after the
//! events already waiting in the channel). Every other command (a query, a
//! write, [`StoreHandle::flush`]) first commits what was received before it
//! and everything already waiting in the event and log channels, so it
//! observes every send that completed before the command was issued.
//!
//! # Errors
//!
//! A failing batch (full disk, read-only database) is rolled back, reported
//! with `log::error!`, counted in [`StoreStats::events_failed`], and its
//! error is returned to every blocking caller whose event was in it and to
//! a [`StoreHandle::flush`] that committed it. The store thread keeps
//! running; nothing is dropped without a report.
//!
//! ```
//! use skald_mcp::{McpNotification, Store, StoreConfig};
//! # let dir = std::env::temp_dir().join(format!("skald-store-doc-{}", std::process::id()));
//! let store = Store::open(StoreConfig::new(dir.join("skald.db"), &dir))?;
//! let id = store.insert_event(McpNotification {
//!     server: "gmail".into(),
//!     method: "event/new_email".into(),
//!     params: serde_json::json!({"from": "a@b.c"}),
//! })?;
//! let pending = store.pending_events(10)?;
//! assert_eq!(pending[0].id, id);
//! store.mark_processed(&[id])?;
//! assert!(store.pending_events(10)?.is_empty());
//! store.close()?;
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), skald_mcp::McpError>(())
//! ```

mod commands;
mod db;
mod logfile;
mod migrate;
mod retention;
mod timestamp;
mod worker;

#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crossbeam_channel::{bounded, unbounded, Sender};
use parking_lot::Mutex;
use serde_json::Value;

use crate::config::McpServerConfig;
use crate::error::{McpError, Result};
use crate::limits::{
    LOG_ROTATE_BYTES, STORE_BATCH_MAX, STORE_BUSY_TIMEOUT, STORE_EVENT_QUEUE_CAPACITY,
    STORE_FLUSH_INTERVAL, STORE_LOG_QUEUE_CAPACITY, STORE_THREAD_NAME,
};
use crate::log::{McpLogLine, McpLogTx};
use crate::notification::{McpNotification, McpNotificationTx};

use commands::{Command, GrantTable, Reply};
use worker::{Counters, Inbox, Worker};

pub use logfile::{format_log_line, log_dir, log_file_path, sanitize_log_name};
pub use retention::{EventCap, EventRetention};

/// The schema version this build creates; a database at a higher version is
/// refused by [`Store::open`].
pub const SCHEMA_VERSION: u32 = migrate::LATEST_VERSION;

/// SQLite's `synchronous` setting for the store's connection (always in WAL
/// mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `NORMAL`: a committed transaction survives a crash of the process
    /// (even `SIGKILL`), not necessarily a power failure or OS crash.
    #[default]
    Normal,
    /// `FULL`: the WAL is synced at every commit, so a committed transaction
    /// also survives a power failure.
    Full,
}

impl Synchronous {
    fn pragma_value(self) -> &'static str {
        match self {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

/// How to open a [`Store`]. Start from [`StoreConfig::new`] and change the
/// fields you need.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoreConfig {
    /// The SQLite database file; its directory is created if missing.
    pub db_path: PathBuf,
    /// The root under which log files are written, as
    /// `<log_root>/logs/mcp/<name>.log` (see [`log_file_path`]).
    pub log_root: PathBuf,
    /// Size in bytes a log file may reach before it is rotated to
    /// `<name>.log.1`. Default [`LOG_ROTATE_BYTES`] (5 MiB).
    pub log_max_bytes: u64,
    /// The most events and log lines written in one batch (transaction).
    /// Default [`STORE_BATCH_MAX`]; values below 1 are treated as 1.
    pub batch_max: usize,
    /// The longest an event or log line sent on a channel waits before its
    /// batch is committed. Default [`STORE_FLUSH_INTERVAL`] (50 ms).
    pub flush_interval: Duration,
    /// Capacity of the event channel. Default [`STORE_EVENT_QUEUE_CAPACITY`];
    /// values below 1 are treated as 1.
    pub event_queue_capacity: usize,
    /// Capacity of the log-line channel. Default [`STORE_LOG_QUEUE_CAPACITY`];
    /// values below 1 are treated as 1.
    pub log_queue_capacity: usize,
    /// How long a statement waits for a lock held by another connection.
    /// Default [`STORE_BUSY_TIMEOUT`].
    pub busy_timeout: Duration,
    /// The durability of commits. Default [`Synchronous::Normal`].
    pub synchronous: Synchronous,
    /// How many pending and processed events are kept, per server and in
    /// all (rows and bytes). Default [`EventRetention::default`]: a server
    /// flooding notifications cannot fill the disk; its newest events are
    /// refused at the pending cap (counted in [`StoreStats::events_refused`]
    /// and reported in its log), and the oldest processed events are
    /// deleted past the processed cap.
    pub event_retention: EventRetention,
}

impl StoreConfig {
    /// A configuration with every default: the database at `db_path`, log
    /// files under `<log_root>/logs/mcp/`.
    pub fn new(db_path: impl Into<PathBuf>, log_root: impl Into<PathBuf>) -> StoreConfig {
        StoreConfig {
            db_path: db_path.into(),
            log_root: log_root.into(),
            log_max_bytes: LOG_ROTATE_BYTES,
            batch_max: STORE_BATCH_MAX,
            flush_interval: STORE_FLUSH_INTERVAL,
            event_queue_capacity: STORE_EVENT_QUEUE_CAPACITY,
            log_queue_capacity: STORE_LOG_QUEUE_CAPACITY,
            busy_timeout: STORE_BUSY_TIMEOUT,
            synchronous: Synchronous::Normal,
            event_retention: EventRetention::default(),
        }
    }
}

/// The id of a stored event: increasing in the order events reached the
/// store, never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(pub i64);

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Whether an event still awaits processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventStatus {
    /// Not yet handled; returned by [`StoreHandle::pending_events`].
    Pending,
    /// Handled; see [`StoreHandle::mark_processed`].
    Processed,
}

impl EventStatus {
    /// The stored name: `pending` or `processed`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventStatus::Pending => "pending",
            EventStatus::Processed => "processed",
        }
    }
}

/// An event as stored in `mcp_events`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Its id.
    pub id: EventId,
    /// The server that sent it.
    pub server: String,
    /// The notification method, e.g. `event/new_email`.
    pub method: String,
    /// The notification's `params` (`Null` when it had none).
    pub params: Value,
    /// When the store received it (millisecond precision).
    pub received_at: SystemTime,
    /// Pending or processed.
    pub status: EventStatus,
    /// When it was marked processed (millisecond precision).
    pub processed_at: Option<SystemTime>,
}

/// Counters of the store's work since it was opened; see
/// [`StoreHandle::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Write transactions committed (event batches and write commands).
    pub transactions: u64,
    /// Events committed.
    pub events_written: u64,
    /// Events whose batch failed to commit (each was reported with
    /// `log::error!`, and waiting callers got the error).
    pub events_failed: u64,
    /// Log lines written to files.
    pub log_lines_written: u64,
    /// Log lines that could not be written (reported with `log::error!`).
    pub log_lines_failed: u64,
    /// Log file rotations.
    pub log_rotations: u64,
    /// The most events committed in one transaction.
    pub largest_event_batch: u64,
    /// Events refused because a pending cap of
    /// [`StoreConfig::event_retention`] was reached (never stored; each
    /// episode is reported by a lifecycle line in the server's log, and a
    /// blocking [`StoreHandle::insert_event`] gets
    /// [`McpError::Backpressure`]).
    pub events_refused: u64,
    /// Processed events deleted, oldest first, because a processed cap of
    /// [`StoreConfig::event_retention`] was passed.
    pub events_pruned: u64,
}

struct Shared {
    cmd: Sender<Command>,
    events: Sender<McpNotification>,
    logs: Sender<McpLogLine>,
    counters: Arc<Counters>,
    thread: Mutex<Option<JoinHandle<()>>>,
    log_root: PathBuf,
}

/// A handle to the store thread: cheap to clone, usable from any thread.
///
/// Every method blocks until the store thread has answered. After the store
/// is shut down every method returns [`McpError::Store`] ("the store is shut
/// down"); none panics.
#[derive(Clone)]
pub struct StoreHandle {
    shared: Arc<Shared>,
}

impl fmt::Debug for StoreHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreHandle")
            .field("log_root", &self.shared.log_root)
            .finish_non_exhaustive()
    }
}

fn shut_down(context: &str) -> McpError {
    McpError::Store {
        context: context.into(),
        message: "the store is shut down".into(),
        source: None,
    }
}

impl StoreHandle {
    fn call<T>(&self, context: &str, make: impl FnOnce(Reply<T>) -> Command) -> Result<T> {
        let (tx, rx) = bounded(1);
        self.shared
            .cmd
            .send(make(tx))
            .map_err(|_| shut_down(context))?;
        // The reply sender is dropped unanswered only if the thread ended.
        rx.recv().map_err(|_| shut_down(context))?
    }

    /// Persists one event and returns its id once it is committed.
    ///
    /// Concurrent callers share transactions (group commit), so many threads
    /// inserting at once do not each pay for a commit. An event past a
    /// pending cap of [`StoreConfig::event_retention`] is not stored: the
    /// caller gets [`McpError::Backpressure`] (the channel's events are
    /// refused the same way, counted in [`StoreStats::events_refused`]).
    pub fn insert_event(&self, event: McpNotification) -> Result<EventId> {
        let received_at = SystemTime::now();
        self.call("inserting an event", |reply| Command::InsertEvent {
            event,
            received_at,
            reply,
        })
    }

    /// The store's event channel, to give to a connection as its
    /// notification sink: fire and forget, batched, committed within
    /// [`StoreConfig::flush_interval`].
    ///
    /// The channel is bounded ([`StoreConfig::event_queue_capacity`]): when
    /// the store falls behind, `send` blocks (backpressure) rather than drop
    /// anything on the way. At the store, an event past a pending cap of
    /// [`StoreConfig::event_retention`] is refused (counted in
    /// [`StoreStats::events_refused`], reported in the server's log), never
    /// silently. After shutdown `send` returns an error. An event sent while
    /// the store is shutting down may be rejected or persisted; stop the
    /// producers before closing the store.
    pub fn events_sender(&self) -> McpNotificationTx {
        self.shared.events.clone()
    }

    /// The store's log-line channel, to give to a connection as its log
    /// sink. Bounded ([`StoreConfig::log_queue_capacity`]) like
    /// [`StoreHandle::events_sender`].
    pub fn log_sender(&self) -> McpLogTx {
        self.shared.logs.clone()
    }

    /// Commits everything sent so far (on the channels or as commands) and
    /// flushes the log files. Returns the error of a batch that failed while
    /// doing so.
    pub fn flush(&self) -> Result<()> {
        self.call("flushing", |reply| Command::Flush { reply })
    }

    /// The oldest `limit` events still pending, in id (arrival) order.
    pub fn pending_events(&self, limit: usize) -> Result<Vec<StoredEvent>> {
        self.call("reading pending events", |reply| Command::PendingEvents {
            limit,
            reply,
        })
    }

    /// The stored OAuth state of `server`.
    pub fn oauth_load(&self, server: &str) -> Result<Option<crate::auth::StoredAuth>> {
        let server = server.to_owned();
        self.call("reading OAuth tokens", |reply| Command::OAuthLoad {
            server,
            reply,
        })
    }

    /// Replaces the stored OAuth state of `server` (committed when this returns).
    pub fn oauth_save(&self, server: &str, auth: &crate::auth::StoredAuth) -> Result<()> {
        let server = server.to_owned();
        let auth = Box::new(auth.clone());
        self.call("saving OAuth tokens", |reply| Command::OAuthSave {
            server,
            auth,
            reply,
        })
    }

    /// Forgets the OAuth state of `server`; true if there was some.
    pub fn oauth_clear(&self, server: &str) -> Result<bool> {
        let server = server.to_owned();
        self.call("clearing OAuth tokens", |reply| Command::OAuthClear {
            server,
            reply,
        })
    }

    /// The newest `limit` events of any status, oldest first.
    pub fn recent_events(&self, limit: usize) -> Result<Vec<StoredEvent>> {
        self.call("reading recent events", |reply| Command::RecentEvents {
            limit,
            reply,
        })
    }

    /// One event by id, whatever its status.
    pub fn get_event(&self, id: EventId) -> Result<Option<StoredEvent>> {
        self.call("reading an event", |reply| Command::GetEvent { id, reply })
    }

    /// Marks events processed, in one transaction; returns how many were
    /// pending (ids unknown or already processed are ignored). The same
    /// transaction deletes the oldest processed events past the processed
    /// caps of [`StoreConfig::event_retention`] (counted in
    /// [`StoreStats::events_pruned`]), so a [`StoreHandle::get_event`] of an
    /// old processed id may find nothing.
    pub fn mark_processed(&self, ids: &[EventId]) -> Result<usize> {
        let ids = ids.to_vec();
        self.call("marking events processed", |reply| Command::MarkProcessed {
            ids,
            reply,
        })
    }

    /// Inserts or updates a server configuration (its creation time is kept
    /// on update). The configuration is validated first. `args` and `env`
    /// are stored as JSON; `api_key` and `env` values are stored as given
    /// (typically `${VAR}` references) and never logged.
    pub fn upsert_server(&self, config: &McpServerConfig) -> Result<()> {
        config.validate()?;
        let config = Box::new(config.clone());
        self.call("saving a server", |reply| Command::UpsertServer {
            config,
            reply,
        })
    }

    /// The configuration of `name`, if stored.
    pub fn get_server(&self, name: &str) -> Result<Option<McpServerConfig>> {
        let name = name.to_string();
        self.call("reading a server", |reply| Command::GetServer {
            name,
            reply,
        })
    }

    /// Every stored server configuration, by name.
    pub fn list_servers(&self) -> Result<Vec<McpServerConfig>> {
        self.call("listing servers", |reply| Command::ListServers { reply })
    }

    /// Deletes a server configuration; true if it existed.
    pub fn delete_server(&self, name: &str) -> Result<bool> {
        let name = name.to_string();
        self.call("deleting a server", |reply| Command::DeleteServer {
            name,
            reply,
        })
    }

    /// Records the protocol era (and version) server `name` was found to
    /// speak, kept with its row; false if there is no such server.
    pub fn set_server_era(
        &self,
        name: &str,
        era: crate::Era,
        protocol_version: &str,
    ) -> Result<bool> {
        let (name, protocol_version) = (name.to_string(), protocol_version.to_string());
        self.call("recording a server's protocol era", |reply| {
            Command::SetServerEra {
                name,
                era,
                protocol_version,
                reply,
            }
        })
    }

    /// The protocol era (and version) recorded for server `name`: what the
    /// next connection tries first.
    pub fn server_era(&self, name: &str) -> Result<Option<(crate::Era, Option<String>)>> {
        let name = name.to_string();
        self.call("reading a server's protocol era", |reply| {
            Command::GetServerEra { name, reply }
        })
    }

    /// Records which HTTP transport server `name` (configured as `http`)
    /// was found to speak: [`McpTransport::Http`](crate::McpTransport::Http)
    /// (Streamable HTTP) or [`McpTransport::Sse`](crate::McpTransport::Sse)
    /// (reached by the fallback). The next start goes there first. False if
    /// there is no such server.
    pub fn set_server_wire(&self, name: &str, wire: crate::McpTransport) -> Result<bool> {
        let name = name.to_string();
        self.call("recording a server's HTTP transport", |reply| {
            Command::SetServerWire { name, wire, reply }
        })
    }

    /// The HTTP transport recorded for server `name` (see
    /// [`set_server_wire`](Self::set_server_wire)); `None` before its first
    /// HTTP connection.
    pub fn server_wire(&self, name: &str) -> Result<Option<crate::McpTransport>> {
        let name = name.to_string();
        self.call("reading a server's HTTP transport", |reply| {
            Command::GetServerWire { name, reply }
        })
    }

    /// Sets a server's `enabled` flag; true if the server exists.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<bool> {
        let name = name.to_string();
        self.call("enabling or disabling a server", |reply| {
            Command::SetEnabled {
                name,
                enabled,
                reply,
            }
        })
    }

    fn grant_cmd(&self, scope: GrantTable, owner: &str, group: &str, revoke: bool) -> Result<bool> {
        let (owner, group) = (owner.to_string(), group.to_string());
        if revoke {
            self.call("revoking a tool group", |reply| Command::Revoke {
                scope,
                owner,
                group,
                reply,
            })
        } else {
            self.call("granting a tool group", |reply| Command::Grant {
                scope,
                owner,
                group,
                reply,
            })
        }
    }

    fn grants_of(&self, scope: GrantTable, owner: &str) -> Result<Vec<String>> {
        let owner = owner.to_string();
        self.call("reading grants", |reply| Command::Grants {
            scope,
            owner,
            reply,
        })
    }

    fn clear(&self, scope: GrantTable, owner: &str) -> Result<usize> {
        let owner = owner.to_string();
        self.call("deleting grants", |reply| Command::ClearGrants {
            scope,
            owner,
            reply,
        })
    }

    /// Grants a tool group (a server name or `config`) to a root agent's
    /// session; true if new (granting twice is not an error).
    pub fn grant_session(&self, session_id: &str, group: &str) -> Result<bool> {
        self.grant_cmd(GrantTable::Session, session_id, group, false)
    }

    /// Removes one session grant; true if it existed.
    pub fn revoke_session(&self, session_id: &str, group: &str) -> Result<bool> {
        self.grant_cmd(GrantTable::Session, session_id, group, true)
    }

    /// The groups granted to a session, sorted by name.
    pub fn session_grants(&self, session_id: &str) -> Result<Vec<String>> {
        self.grants_of(GrantTable::Session, session_id)
    }

    /// Removes every grant of a session; returns how many there were.
    pub fn delete_session_grants(&self, session_id: &str) -> Result<usize> {
        self.clear(GrantTable::Session, session_id)
    }

    /// Grants a tool group to a sub-agent's stack frame; true if new.
    pub fn grant_stack(&self, stack_id: &str, group: &str) -> Result<bool> {
        self.grant_cmd(GrantTable::Stack, stack_id, group, false)
    }

    /// Removes one stack grant; true if it existed.
    pub fn revoke_stack(&self, stack_id: &str, group: &str) -> Result<bool> {
        self.grant_cmd(GrantTable::Stack, stack_id, group, true)
    }

    /// The groups granted to a stack frame, sorted by name.
    pub fn stack_grants(&self, stack_id: &str) -> Result<Vec<String>> {
        self.grants_of(GrantTable::Stack, stack_id)
    }

    /// Removes every grant of a stack frame (when it terminates); returns
    /// how many there were.
    pub fn delete_stack_grants(&self, stack_id: &str) -> Result<usize> {
        self.clear(GrantTable::Stack, stack_id)
    }

    /// The store's counters. Read without a round trip to the store thread;
    /// after [`StoreHandle::flush`] returns they include everything flushed.
    pub fn stats(&self) -> StoreStats {
        self.shared.counters.snapshot()
    }

    /// The log file of `server`: `<log_root>/logs/mcp/<sanitized>.log`.
    pub fn log_path(&self, server: &str) -> PathBuf {
        log_file_path(&self.shared.log_root, server)
    }

    /// Shuts the store down: drains what is queued, commits, closes the log
    /// files and the database, joins the thread. Idempotent: later calls
    /// (from any handle) return `Ok(())`.
    pub fn shutdown(&self) -> Result<()> {
        let (tx, rx) = bounded(1);
        let result = match self.shared.cmd.send(Command::Shutdown { reply: tx }) {
            // A dropped reply means another shutdown finished first.
            Ok(()) => rx.recv().unwrap_or(Ok(())),
            Err(_) => Ok(()),
        };
        let thread = self.shared.thread.lock().take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                return Err(McpError::Store {
                    context: "shutting down".into(),
                    message: "the store thread panicked".into(),
                    source: None,
                });
            }
        }
        result
    }

    #[cfg(test)]
    fn exec(&self, sql: &str) -> Result<()> {
        let sql = sql.to_string();
        self.call("test exec", |reply| Command::Exec { sql, reply })
    }
}

/// The owner of the store thread. Dereferences to a [`StoreHandle`];
/// [`Store::close`] or dropping it shuts the store down (handles cloned
/// from it then get errors).
pub struct Store {
    handle: StoreHandle,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("handle", &self.handle)
            .finish()
    }
}

impl Store {
    /// Starts the store thread, which opens (creating if needed) the
    /// database, applies pending migrations and creates the log directory.
    ///
    /// Fails with [`McpError::Store`] if the database cannot be opened or
    /// migrated (including a schema newer than [`SCHEMA_VERSION`]) and
    /// [`McpError::Io`] if a directory cannot be created.
    pub fn open(config: StoreConfig) -> Result<Store> {
        let (cmd_tx, cmd_rx) = unbounded();
        let (ev_tx, ev_rx) = bounded(config.event_queue_capacity.max(1));
        let (log_tx, log_rx) = bounded(config.log_queue_capacity.max(1));
        let counters = Arc::new(Counters::default());
        let (ready_tx, ready_rx) = bounded::<Result<()>>(1);
        let inbox = Inbox {
            cmd: cmd_rx,
            events: ev_rx,
            logs: log_rx,
        };
        let thread_counters = Arc::clone(&counters);
        let log_root = config.log_root.clone();
        let thread = crate::threads::spawn(
            STORE_THREAD_NAME.into(),
            crate::limits::DEFAULT_THREAD_STACK,
            move || match Worker::open(&config, inbox, thread_counters) {
                Ok(worker) => {
                    let _ = ready_tx.send(Ok(()));
                    worker.run();
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            },
        )
        .map_err(|source| McpError::Io {
            context: "spawning the store thread".into(),
            source,
        })?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(McpError::Store {
                    context: "opening the store".into(),
                    message: "the store thread panicked".into(),
                    source: None,
                });
            }
        }
        Ok(Store {
            handle: StoreHandle {
                shared: Arc::new(Shared {
                    cmd: cmd_tx,
                    events: ev_tx,
                    logs: log_tx,
                    counters,
                    thread: Mutex::new(Some(thread)),
                    log_root,
                }),
            },
        })
    }

    /// A new handle to the store.
    pub fn handle(&self) -> StoreHandle {
        self.handle.clone()
    }

    /// Shuts the store down (see [`StoreHandle::shutdown`]) and reports
    /// whether the final commit succeeded.
    pub fn close(self) -> Result<()> {
        self.handle.shutdown()
    }

    /// The log root this store writes under.
    pub fn log_root(&self) -> &Path {
        &self.handle.shared.log_root
    }
}

impl Deref for Store {
    type Target = StoreHandle;

    fn deref(&self) -> &StoreHandle {
        &self.handle
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Err(e) = self.handle.shutdown() {
            ::log::error!("store: {e}");
        }
    }
}

/// OAuth tokens persisted in the store's database (table `mcp_oauth`), so
/// an authorization survives restarts. Failures are logged (without the
/// tokens) and behave as "nothing stored".
impl crate::auth::TokenStore for StoreHandle {
    fn load(&self, server: &str) -> Option<crate::auth::StoredAuth> {
        self.oauth_load(server)
            .map_err(|e| ::log::warn!(target: "mcp_client", "[{server}] loading OAuth tokens failed: {e}"))
            .ok()
            .flatten()
    }

    fn save(&self, server: &str, auth: &crate::auth::StoredAuth) {
        if let Err(e) = self.oauth_save(server, auth) {
            ::log::warn!(target: "mcp_client", "[{server}] saving OAuth tokens failed: {e}");
        }
    }

    fn clear(&self, server: &str) {
        if let Err(e) = self.oauth_clear(server) {
            ::log::warn!(target: "mcp_client", "[{server}] clearing OAuth tokens failed: {e}");
        }
    }
}
