//! [`McpManager`]: every configured server, connected in the background,
//! with tools routed by name, results prepared for a model, events and logs
//! persisted by the store thread, and lazy tool loading.
//!
//! Threads: the store thread (owned by [`Store`]); one short-lived
//! `skald-mcp-startup` thread at open that starts one `mcp-connect-<name>`
//! thread per enabled server; and each connection's own threads. No lock is
//! held across a blocking call: the maps are read, an `Arc` to the client is
//! cloned, and the lock is released before the call.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{after, select, Receiver, Sender};
use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};

use crate::client::{CallOptions, ClientOptions, Disconnect, McpServerClient};
use crate::config::{validate_server_name, McpServerConfig, McpTransport};
use crate::error::{McpError, Result};
use crate::inbox::ElicitationInbox;
use crate::limits::{RESTART_INITIAL_BACKOFF, RESTART_MAX_ATTEMPTS, RESTART_MAX_BACKOFF};
use crate::log::{LogTag, McpLogLine};
use crate::manager::lazy::{self, Grants, ServerListing};
use crate::manager::media::{MediaStore, MEDIA_URL_PREFIX};
use crate::manager::naming::{self, parse_mcp_tool_name};
use crate::manager::ToolResult;
use crate::store::{EventRetention, Store, StoreConfig, StoreHandle};

/// Whether and how a server whose connection ends unexpectedly is
/// restarted: a stdio server that exits, an HTTP+SSE server whose event
/// stream (and with it the session) ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Off by default (tests want crashes to stay visible).
    pub enabled: bool,
    /// The wait before the first attempt; doubled after each failure.
    pub initial_backoff: std::time::Duration,
    /// The longest wait between attempts.
    pub max_backoff: std::time::Duration,
    /// Attempts before giving up (the server then stays failed).
    pub max_attempts: u32,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            enabled: false,
            initial_backoff: RESTART_INITIAL_BACKOFF,
            max_backoff: RESTART_MAX_BACKOFF,
            max_attempts: RESTART_MAX_ATTEMPTS,
        }
    }
}

impl RestartPolicy {
    /// The wait before attempt `n` (1-based).
    pub fn backoff(&self, n: u32) -> std::time::Duration {
        let factor = 1u32
            .checked_shl(n.saturating_sub(1).min(31))
            .unwrap_or(u32::MAX);
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// How a manager is set up.
#[derive(Debug, Clone)]
pub struct ManagerConfig {
    /// The SQLite database (created if missing).
    pub db_path: PathBuf,
    /// Root of the per-server log files: they are written to
    /// `<root>/logs/mcp/<name>.log`.
    pub log_root: PathBuf,
    /// Where media results are saved.
    pub media_dir: PathBuf,
    /// URL prefix of saved media in the markdown given to the model.
    pub media_url_prefix: String,
    /// Options every connection starts from (timeouts, handlers). The
    /// notification and log channels are replaced by the store's.
    pub client: ClientOptions,
    /// Tool-group names the embedder reserves for its own tools (e.g.
    /// `config`); they cannot be server names.
    pub reserved_groups: Vec<String>,
    /// Restarting crashed stdio servers and dropped HTTP+SSE sessions.
    pub restart: RestartPolicy,
    /// An inbox every server's questions go to (it replaces
    /// `client.elicitation`): for hosts whose user answers elsewhere. Set it
    /// with [`ManagerConfig::with_elicitation_inbox`]; reach it with
    /// [`McpManager::elicitation_inbox`].
    pub elicitation_inbox: Option<ElicitationInbox>,
    /// How many events the store keeps per server and in all (see
    /// [`StoreConfig::event_retention`]). Default
    /// [`EventRetention::default`]: a flooding server cannot fill the disk.
    pub event_retention: EventRetention,
}

impl ManagerConfig {
    /// Everything under one data directory: `<dir>/mcp.db`,
    /// `<dir>/logs/mcp/<name>.log`, `<dir>/mcp_media`.
    pub fn in_dir(dir: impl Into<PathBuf>) -> ManagerConfig {
        let dir = dir.into();
        ManagerConfig {
            db_path: dir.join("mcp.db"),
            log_root: dir.clone(),
            media_dir: dir.join("mcp_media"),
            media_url_prefix: MEDIA_URL_PREFIX.to_owned(),
            client: ClientOptions::default(),
            reserved_groups: vec!["config".to_owned()],
            restart: RestartPolicy::default(),
            elicitation_inbox: None,
            event_retention: EventRetention::default(),
        }
    }

    /// Sends every server's elicitation (legacy requests, modern
    /// `InputRequiredResult` rounds and task input alike) to a new
    /// [`ElicitationInbox`], answered from any thread through
    /// [`McpManager::elicitation_inbox`].
    pub fn with_elicitation_inbox(mut self) -> ManagerConfig {
        self.elicitation_inbox = Some(ElicitationInbox::new());
        self
    }
}

/// The state of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Connecting.
    Starting,
    /// Connected; its tools are callable.
    Connected,
    /// The last start failed, or the connection died.
    Failed(String),
    /// Disabled in the database; not started.
    Disabled,
    /// Enabled but not running (e.g. enabled since the last start).
    Stopped,
}

/// What [`McpManager::list`] shows of a server. Never an `api_key` or an
/// `env` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerInfo {
    /// The server name.
    pub name: String,
    /// Display name.
    pub friendly_name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Transport.
    pub transport: McpTransport,
    /// The enabled flag in the database.
    pub enabled: bool,
    /// The current state.
    pub status: ServerStatus,
    /// How many tools it offers, when connected.
    pub tool_count: Option<usize>,
    /// The protocol era it speaks: the live connection's, else the one
    /// recorded when it last connected.
    pub era: Option<crate::Era>,
    /// The protocol version, likewise.
    pub protocol_version: Option<String>,
}

impl McpServerInfo {
    /// A JSON rendering for the `list_items` tool.
    pub fn to_json(&self) -> Value {
        let (status, error) = match &self.status {
            ServerStatus::Starting => ("starting", None),
            ServerStatus::Connected => ("connected", None),
            ServerStatus::Failed(e) => ("failed", Some(e.clone())),
            ServerStatus::Disabled => ("disabled", None),
            ServerStatus::Stopped => ("stopped", None),
        };
        json!({
            "name": self.name,
            "friendly_name": self.friendly_name,
            "description": self.description,
            "transport": self.transport.as_str(),
            "enabled": self.enabled,
            "status": status,
            "error": error,
            "tool_count": self.tool_count,
            "era": self.era.map(crate::Era::as_str),
            "protocol_version": self.protocol_version,
        })
    }
}

/// Where `activate_tools` persists its grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantScope {
    /// A root agent's session: survives restarts.
    Session(String),
    /// A sub-agent's stack frame: deleted when the frame ends.
    Stack(String),
}

/// What the manager knows of one server. The states overlap (a crashed
/// server keeps its dead client while it is restarted; a failed start keeps
/// its error while the next is scheduled), so they are fields of one slot
/// changed under one lock, not separate maps that could disagree.
#[derive(Default)]
struct Slot {
    /// The connected client (dead after a crash, until replaced).
    client: Option<Arc<dyn McpServerClient>>,
    /// A client still in its handshake, so `close()` can abort it.
    connecting: Option<Arc<dyn McpServerClient>>,
    /// Why the last start failed.
    error: Option<String>,
    /// A start is scheduled or running.
    starting: bool,
    /// A restart after a crash runs.
    restarting: bool,
}

impl Slot {
    fn is_empty(&self) -> bool {
        self.client.is_none()
            && self.connecting.is_none()
            && self.error.is_none()
            && !self.starting
            && !self.restarting
    }
}

struct Inner {
    store: Mutex<Option<Store>>,
    handle: StoreHandle,
    config: ManagerConfig,
    media: MediaStore,
    /// Everything the manager knows of each server, behind one lock.
    slots: RwLock<HashMap<String, Slot>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Restart threads, joined at close.
    restart_threads: Mutex<Vec<JoinHandle<()>>>,
    /// Crashes reported by connections (when restart is on).
    disconnect_tx: Option<Sender<Disconnect>>,
    /// Dropped at close: wakes the supervisor and restart waits.
    shutdown_tx: Mutex<Option<Sender<()>>>,
    shutdown_rx: Receiver<()>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
    /// Held for the whole of a close: a second `close()` (another thread's,
    /// or `Drop`'s) waits on it, so that no caller returns — and lets the
    /// process exit — while servers are still being stopped.
    closing: Mutex<()>,
}

/// Manages every MCP server of an application.
///
/// ```
/// use skald_mcp::manager::{ManagerConfig, McpManager};
/// use skald_mcp::McpServerConfig;
/// let dir = std::env::temp_dir().join(format!("skald-doc-{}", std::process::id()));
/// let mgr = McpManager::open(ManagerConfig::in_dir(&dir))?;
/// mgr.register(McpServerConfig::stdio("demo", "python3", ["scripts/demo_mcp_server.py"]))?;
/// let r = mgr.call("mcp__demo__echo", serde_json::json!({"text": "hi"}))?;
/// assert_eq!(r.to_wire(), "hi");
/// mgr.close()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), skald_mcp::McpError>(())
/// ```
pub struct McpManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("db", &self.inner.config.db_path)
            .field(
                "servers",
                &self
                    .inner
                    .slots
                    .read()
                    .iter()
                    .filter(|(_, s)| s.client.is_some())
                    .map(|(k, _)| k)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpManager {
    /// Opens the store and returns at once; every enabled server is
    /// connected in the background, in parallel, each bounded by the start
    /// timeout. Failures land in [`errors`](Self::errors) and the server's
    /// log file, and block nothing else.
    pub fn open(mut config: ManagerConfig) -> Result<McpManager> {
        if let Some(inbox) = &config.elicitation_inbox {
            config.client.elicitation = Some(Arc::new(inbox.clone()));
        }
        let mut store_config = StoreConfig::new(&config.db_path, &config.log_root);
        store_config.event_retention = config.event_retention;
        let store = Store::open(store_config)?;
        let handle = store.handle();
        let media = MediaStore::new(&config.media_dir, config.media_url_prefix.clone());
        let (shutdown_tx, shutdown_rx) = crossbeam_channel::bounded::<()>(0);
        let (disconnect_tx, disconnect_rx) = crossbeam_channel::unbounded::<Disconnect>();
        let restart_on = config.restart.enabled;
        let inner = Arc::new(Inner {
            restart_threads: Mutex::new(Vec::new()),
            disconnect_tx: restart_on.then_some(disconnect_tx),
            shutdown_tx: Mutex::new(Some(shutdown_tx)),
            shutdown_rx,
            supervisor: Mutex::new(None),
            store: Mutex::new(Some(store)),
            handle,
            config,
            media,
            slots: RwLock::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            closing: Mutex::new(()),
        });
        let configs: Vec<McpServerConfig> = inner
            .handle
            .list_servers()?
            .into_iter()
            .filter(|c| c.enabled)
            .collect();
        for c in &configs {
            inner.connecting_placeholder(&c.name);
        }
        let bg = Arc::clone(&inner);
        let startup = crate::threads::spawn(
            "skald-mcp-startup".into(),
            crate::limits::DEFAULT_THREAD_STACK,
            move || {
                let handles: Vec<_> = configs
                    .into_iter()
                    .filter_map(|cfg| {
                        let inner = Arc::clone(&bg);
                        crate::threads::spawn(
                            format!("mcp-connect-{}", cfg.name),
                            crate::limits::DEFAULT_THREAD_STACK,
                            move || {
                                let _ = inner.start_one(&cfg);
                            },
                        )
                        .ok()
                    })
                    .collect();
                for h in handles {
                    let _ = h.join();
                }
            },
        )
        .map_err(|source| McpError::Io {
            context: "spawning the manager's startup thread".into(),
            source,
        })?;
        inner.threads.lock().push(startup);
        if restart_on {
            let bg = Arc::clone(&inner);
            let sup = crate::threads::spawn(
                "skald-mcp-supervisor".into(),
                crate::limits::DEFAULT_THREAD_STACK,
                move || bg.supervise(disconnect_rx),
            )
            .map_err(|source| McpError::Io {
                context: "spawning the manager's supervisor thread".into(),
                source,
            })?;
            *inner.supervisor.lock() = Some(sup);
        }
        Ok(McpManager { inner })
    }

    /// The elicitation inbox, when the manager was opened with one
    /// ([`ManagerConfig::with_elicitation_inbox`]): list the servers'
    /// pending questions and answer them from any thread.
    pub fn elicitation_inbox(&self) -> Option<&ElicitationInbox> {
        self.inner.config.elicitation_inbox.as_ref()
    }

    /// The store, for events, grants and server rows.
    pub fn store(&self) -> &StoreHandle {
        &self.inner.handle
    }

    /// The media store results are saved in.
    pub fn media(&self) -> &MediaStore {
        &self.inner.media
    }

    /// Waits until the background startup has finished (every enabled
    /// server connected or failed).
    pub fn wait_started(&self) {
        let handles: Vec<JoinHandle<()>> = std::mem::take(&mut *self.inner.threads.lock());
        for h in handles {
            let _ = h.join();
        }
    }

    /// Validates, stores and connects `config`; its tools are callable when
    /// this returns `Ok`. An existing server of that name is replaced. On a
    /// connection failure the row is kept (status failed) and the error is
    /// returned.
    pub fn register(&self, config: McpServerConfig) -> Result<usize> {
        self.inner.check_open()?;
        config.validate()?;
        validate_server_name(&config.name)?;
        if self
            .inner
            .config
            .reserved_groups
            .iter()
            .any(|g| g == &config.name)
        {
            return Err(McpError::Config {
                server: config.name.clone(),
                message: "this name is reserved for a built-in tool group".into(),
            });
        }
        self.inner.handle.upsert_server(&config)?;
        self.inner.stop_one(&config.name);
        if !config.enabled {
            return Ok(0);
        }
        self.inner.start_one(&config)
    }

    /// Deletes the server's row and disconnects it; the child is gone when
    /// this returns. Returns whether the server existed.
    pub fn unregister(&self, name: &str) -> Result<bool> {
        self.inner.check_open()?;
        let existed = self.inner.handle.delete_server(name)?;
        let was_running = self.inner.stop_one(name);
        self.inner.with_slot(name, |s| s.error = None);
        if existed || was_running {
            self.inner.lifecycle(name, "unregistered");
        }
        Ok(existed || was_running)
    }

    /// Sets the enabled flag only; it takes effect at the next start (or
    /// [`restart`](Self::restart)). Returns whether the server exists.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<bool> {
        self.inner.check_open()?;
        self.inner.handle.set_enabled(name, enabled)
    }

    /// Stops the server and starts it again if it is enabled.
    pub fn restart(&self, name: &str) -> Result<()> {
        self.inner.check_open()?;
        let cfg = self
            .inner
            .handle
            .get_server(name)?
            .ok_or_else(|| McpError::InvalidInput {
                server: name.to_owned(),
                message: "no such server".into(),
            })?;
        self.inner.stop_one(name);
        self.inner.with_slot(name, |s| s.error = None);
        if cfg.enabled {
            self.inner.start_one(&cfg).map(|_| ())
        } else {
            self.inner.lifecycle(name, "stopped (disabled)");
            Ok(())
        }
    }

    /// Every configured server with its state.
    pub fn list(&self) -> Result<Vec<McpServerInfo>> {
        let rows = self.inner.handle.list_servers()?;
        let slots = self.inner.slots.read();
        Ok(rows
            .into_iter()
            .map(|c| {
                let slot = slots.get(&c.name);
                let live = slot.and_then(|s| s.client.as_ref());
                let status = if let Some(s) = live {
                    if s.is_connected() {
                        ServerStatus::Connected
                    } else {
                        ServerStatus::Failed("disconnected".into())
                    }
                } else if slot.is_some_and(|s| s.starting) {
                    ServerStatus::Starting
                } else if let Some(e) = slot.and_then(|s| s.error.as_ref()) {
                    ServerStatus::Failed(e.clone())
                } else if !c.enabled {
                    ServerStatus::Disabled
                } else {
                    ServerStatus::Stopped
                };
                let stored = self.inner.handle.server_era(&c.name).ok().flatten();
                let live_info = live.and_then(|s| s.protocol_version().map(|v| (s, v)));
                let (era, protocol_version) = match live_info {
                    Some((_, v)) => (Some(crate::Era::of_version(&v)), Some(v)),
                    None => match stored {
                        Some((e, v)) => (Some(e), v),
                        None => (None, None),
                    },
                };
                McpServerInfo {
                    era,
                    protocol_version,
                    tool_count: live.and_then(|s| s.cached_tools()).map(|t| t.len()),
                    name: c.name,
                    friendly_name: c.friendly_name,
                    description: c.description,
                    transport: c.transport,
                    enabled: c.enabled,
                    status,
                }
            })
            .collect())
    }

    /// Start failures by server name.
    pub fn errors(&self) -> HashMap<String, String> {
        self.inner
            .slots
            .read()
            .iter()
            .filter_map(|(k, s)| s.error.clone().map(|e| (k.clone(), e)))
            .collect()
    }

    /// The connected client of `server`, for anything beyond tools.
    pub fn client(&self, server: &str) -> Option<Arc<dyn McpServerClient>> {
        self.inner
            .slots
            .read()
            .get(server)
            .and_then(|s| s.client.clone())
    }

    /// Calls `mcp__<server>__<tool>` with the default options.
    pub fn call(&self, name: &str, arguments: Value) -> Result<ToolResult> {
        self.call_with(name, arguments, &CallOptions::default())
    }

    /// Calls `mcp__<server>__<tool>`; media is saved and referenced.
    pub fn call_with(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<ToolResult> {
        let (server, tool) = parse_mcp_tool_name(name).ok_or_else(|| McpError::InvalidInput {
            server: "manager".into(),
            message: format!("{name:?} is not an mcp__<server>__<tool> name"),
        })?;
        let client = self.inner.live_client(server)?;
        let result = client.call_tool_with(tool, arguments, options)?;
        self.inner.media.persist(result)
    }

    /// The OpenAI-style definitions of the tools of the granted, connected
    /// servers, sorted by server.
    pub fn tools_for(&self, grants: &Grants) -> Vec<Value> {
        let mut servers: Vec<(String, Arc<dyn McpServerClient>)> = self
            .inner
            .slots
            .read()
            .iter()
            .filter(|(n, _)| grants.contains(*n))
            .filter_map(|(n, s)| s.client.as_ref().map(|c| (n.clone(), Arc::clone(c))))
            .collect();
        servers.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::new();
        for (name, client) in servers {
            if let Some(tools) = client.cached_tools() {
                for t in tools.iter() {
                    // A name a model API would refuse breaks every request
                    // of the host: such a tool is left out, with a warning.
                    let full = naming::mcp_tool_name(&name, &t.name);
                    if naming::is_model_tool_name(&full) {
                        out.push(lazy::openai_tool_definition(&name, t));
                    } else {
                        ::log::warn!(
                            target: "mcp_client",
                            "[{name}] tool {:?} left out of the model's tools: {full:?} is not 1-{} characters of [A-Za-z0-9_-]",
                            t.name,
                            crate::limits::MAX_MODEL_TOOL_NAME_LEN
                        );
                    }
                }
            }
        }
        out
    }

    /// The "Available / Active" block for the system prompt.
    pub fn render_mcp_list(&self, grants: &Grants) -> Result<String> {
        let rows = self.inner.handle.list_servers()?;
        let slots = self.inner.slots.read();
        let listing: Vec<ServerListing> = rows
            .into_iter()
            .filter(|c| slots.get(&c.name).is_some_and(|s| s.client.is_some()))
            .map(|c| ServerListing {
                name: c.name,
                description: c.description,
            })
            .collect();
        Ok(lazy::render_mcp_list(&listing, grants))
    }

    /// The groups granted in `scope`.
    pub fn grants(&self, scope: &GrantScope) -> Result<Grants> {
        let g = match scope {
            GrantScope::Session(s) => self.inner.handle.session_grants(s)?,
            GrantScope::Stack(s) => self.inner.handle.stack_grants(s)?,
        };
        Ok(g.into_iter().collect())
    }

    /// Grants `groups` in `scope` (persisted).
    pub fn grant(&self, scope: &GrantScope, groups: &[String]) -> Result<()> {
        for g in groups {
            match scope {
                GrantScope::Session(s) => self.inner.handle.grant_session(s, g)?,
                GrantScope::Stack(s) => self.inner.handle.grant_stack(s, g)?,
            };
        }
        Ok(())
    }

    /// Ends a stack frame: its grants are deleted.
    pub fn end_stack(&self, stack_id: &str) -> Result<usize> {
        self.inner.handle.delete_stack_grants(stack_id)
    }

    /// The `activate_tools` handler: validates the groups (known servers or
    /// reserved groups), persists them in `scope` and returns the message
    /// for the model.
    pub fn activate_tools(&self, scope: &GrantScope, arguments: &Value) -> Result<String> {
        let groups = lazy::parse_activate_args(arguments).map_err(|m| McpError::InvalidInput {
            server: "manager".into(),
            message: m,
        })?;
        let known: HashSet<String> = self
            .inner
            .handle
            .list_servers()?
            .into_iter()
            .map(|c| c.name)
            .collect();
        let (ok, unknown): (Vec<String>, Vec<String>) = groups
            .into_iter()
            .partition(|g| known.contains(g) || self.inner.config.reserved_groups.contains(g));
        self.grant(scope, &ok)?;
        let where_ = match scope {
            GrantScope::Session(_) => "session".to_owned(),
            GrantScope::Stack(s) => format!("stack {s}"),
        };
        let mut msg = if ok.is_empty() {
            "No tool group activated.".to_owned()
        } else {
            format!("Activated {} for this {where_}.", ok.join(", "))
        };
        if !unknown.is_empty() {
            msg.push_str(&format!(" Unknown group(s): {}.", unknown.join(", ")));
        }
        Ok(msg)
    }

    /// The definitions of the management tools an agent may be given:
    /// `register_mcp`, `delete_mcp`, `toggle_item`, `list_items`.
    pub fn management_tool_definitions() -> Vec<Value> {
        let f = |name: &str, description: &str, parameters: Value| json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}});
        vec![
            f(
                "register_mcp",
                "Register an MCP server and connect it now; its tools become available at once.",
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "Unique name for this MCP server (used to reference it in tool calls)"},
                    "transport": {"type": "string", "enum": ["stdio", "http", "sse"]},
                    "command": {"type": "string", "description": "stdio only: executable to spawn"},
                    "args": {"type": "array", "items": {"type": "string"}, "description": "stdio only: command-line arguments"},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "stdio only: extra environment variables"},
                    "url": {"type": "string", "description": "http/sse only: base URL of the remote server"},
                    "api_key": {"type": "string", "description": "http/sse only: API key (sent as Authorization: Bearer <key>)"},
                    "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "http/sse only: extra request headers, e.g. {\"X-API-Key\": \"...\"}"},
                    "description": {"type": "string", "description": "Short description of what the server provides"},
                    "friendly_name": {"type": "string", "description": "Human-readable display name"}
                }, "required": ["name", "transport"]}),
            ),
            f(
                "delete_mcp",
                "Permanently remove an MCP server (its configuration is discarded).",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
            f(
                "toggle_item",
                "Enable or disable an item. For kind=mcp the change takes effect at the next restart.",
                json!({"type": "object", "properties": {
                    "kind": {"type": "string", "enum": ["mcp"]},
                    "id": {"type": "string"},
                    "enabled": {"type": "boolean"}
                }, "required": ["kind", "id", "enabled"]}),
            ),
            f(
                "list_items",
                "List items. For type=mcp: every MCP server with its status.",
                json!({"type": "object", "properties": {"type": {"type": "string", "enum": ["mcp"]}}, "required": ["type"]}),
            ),
        ]
    }

    /// Runs a management tool by name; returns the text for the model.
    pub fn handle_management_tool(&self, name: &str, arguments: &Value) -> Result<String> {
        let bad = |m: String| McpError::InvalidInput {
            server: "manager".into(),
            message: m,
        };
        let s = |k: &str| arguments.get(k).and_then(Value::as_str);
        match name {
            "register_mcp" => {
                let mut v = arguments.clone();
                if let Some(t) = s("transport") {
                    let t = McpTransport::parse(t)
                        .ok_or_else(|| bad(format!("unknown transport {t:?}")))?;
                    v["transport"] = json!(t.as_str());
                }
                let cfg: McpServerConfig = serde_json::from_value(v)
                    .map_err(|e| bad(format!("invalid register_mcp arguments: {e}")))?;
                let name = cfg.name.clone();
                let n = self.register(cfg)?;
                Ok(format!("Registered MCP server '{name}' with {n} tools."))
            }
            "delete_mcp" => {
                let n = s("name").ok_or_else(|| bad("delete_mcp needs 'name'".into()))?;
                Ok(if self.unregister(n)? {
                    format!("Deleted MCP server '{n}'.")
                } else {
                    format!("No MCP server named '{n}'.")
                })
            }
            "toggle_item" => {
                if s("kind") != Some("mcp") {
                    return Err(bad("toggle_item: only kind=mcp is handled here".into()));
                }
                let id = s("id").ok_or_else(|| bad("toggle_item needs 'id'".into()))?;
                let enabled = arguments
                    .get("enabled")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| bad("toggle_item needs a boolean 'enabled'".into()))?;
                Ok(if self.set_enabled(id, enabled)? {
                    format!(
                        "MCP server '{id}' {}; the change takes effect at the next restart.",
                        if enabled { "enabled" } else { "disabled" }
                    )
                } else {
                    format!("No MCP server named '{id}'.")
                })
            }
            "list_items" => {
                if s("type") != Some("mcp") {
                    return Err(bad("list_items: only type=mcp is handled here".into()));
                }
                let list: Vec<Value> = self.list()?.iter().map(McpServerInfo::to_json).collect();
                Ok(Value::Array(list).to_string())
            }
            other => Err(bad(format!("unknown management tool {other:?}"))),
        }
    }

    /// Stops every server (no orphans), drains and closes the store, and
    /// joins every thread the manager started. Idempotent: a call while
    /// another thread's close is under way waits for it to finish (and
    /// returns `Ok`; the first caller gets any error).
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        let _ = self.inner.close();
    }
}

impl Inner {
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(McpError::Store {
                context: "manager".into(),
                message: "the manager is closed".into(),
                source: None,
            });
        }
        Ok(())
    }

    fn lifecycle(&self, server: &str, text: impl Into<String>) {
        let text = text.into();
        ::log::info!(target: "mcp_client", "[{server}] {text}");
        let _ = self
            .handle
            .log_sender()
            .send(McpLogLine::now(server, LogTag::Lifecycle, text));
    }

    /// Marks a server as starting before its thread runs, so `list()`
    /// shows it as such from the moment `open` returns.
    fn connecting_placeholder(&self, name: &str) {
        self.with_slot(name, |s| s.starting = true);
    }

    /// Changes the slot of `name` under the one lock (created when missing,
    /// dropped when it holds nothing any more). `f` must not block.
    fn with_slot<R>(&self, name: &str, f: impl FnOnce(&mut Slot) -> R) -> R {
        let mut g = self.slots.write();
        let slot = g.entry(name.to_owned()).or_default();
        let r = f(slot);
        if slot.is_empty() {
            g.remove(name);
        }
        r
    }

    fn options(&self) -> ClientOptions {
        let mut o = self.config.client.clone();
        o.notifications = Some(self.handle.events_sender());
        o.logs = Some(self.handle.log_sender());
        o.disconnects = self.disconnect_tx.clone();
        o
    }

    /// Receives crash reports and starts one restart thread per server.
    fn supervise(self: Arc<Self>, rx: Receiver<Disconnect>) {
        loop {
            select! {
                recv(rx) -> d => {
                    let Ok(d) = d else { return };
                    let dead = self
                        .slots
                        .read()
                        .get(&d.server)
                        .and_then(|s| s.client.as_ref())
                        .is_some_and(|c| !c.is_connected());
                    // Only one restart per server at a time.
                    if !dead
                        || self.with_slot(&d.server, |s| std::mem::replace(&mut s.restarting, true))
                    {
                        continue;
                    }
                    let inner = Arc::clone(&self);
                    let name = d.server.clone();
                    let spawned = crate::threads::spawn(format!("mcp-restart-{}", d.server), crate::limits::DEFAULT_THREAD_STACK, move || inner.restart_with_backoff(&d.server));
                    match spawned {
                        Ok(h) => {
                            let mut threads = self.restart_threads.lock();
                            threads.retain(|t| !t.is_finished());
                            threads.push(h);
                        }
                        Err(_) => {
                            self.with_slot(&name, |s| s.restarting = false);
                        }
                    }
                }
                recv(self.shutdown_rx) -> _ => return,
            }
        }
    }

    fn restart_with_backoff(&self, name: &str) {
        let policy = &self.config.restart;
        let mut restarted = false;
        for n in 1..=policy.max_attempts.max(1) {
            let wait = policy.backoff(n);
            self.lifecycle(
                name,
                format!(
                    "restart attempt {n}/{} in {} ms",
                    policy.max_attempts,
                    wait.as_millis()
                ),
            );
            select! {
                recv(self.shutdown_rx) -> _ => break,
                recv(after(wait)) -> _ => {}
            }
            if self.closed.load(Ordering::Acquire) {
                break;
            }
            let cfg = match self.handle.get_server(name) {
                Ok(Some(c)) if c.enabled => c,
                _ => {
                    self.lifecycle(name, "not restarted: removed or disabled");
                    break;
                }
            };
            if self.start_one(&cfg).is_ok() {
                self.lifecycle(name, format!("restarted after {n} attempt(s)"));
                restarted = true;
                break;
            }
        }
        if !restarted && !self.closed.load(Ordering::Acquire) {
            self.lifecycle(name, "restart gave up");
        }
        self.with_slot(name, |s| s.restarting = false);
    }

    fn live_client(&self, server: &str) -> Result<Arc<dyn McpServerClient>> {
        let dead = |reason: String| McpError::Disconnected {
            server: server.to_owned(),
            method: Some("tools/call".into()),
            reason,
        };
        if let Some(slot) = self.slots.read().get(server) {
            if let Some(c) = &slot.client {
                if c.is_connected() && !slot.restarting {
                    return Ok(Arc::clone(c));
                }
                return Err(dead("the server's connection is dead; restart it".into()));
            }
            if slot.restarting {
                return Err(dead("the server crashed and is being restarted".into()));
            }
            if slot.starting {
                return Err(dead("the server is still starting".into()));
            }
            if let Some(e) = &slot.error {
                return Err(dead(format!("the server failed to start: {e}")));
            }
        }
        Err(McpError::InvalidInput {
            server: server.to_owned(),
            message: "no such MCP server is running".into(),
        })
    }

    /// Connects one server and lists its tools; returns the tool count.
    fn start_one(&self, cfg: &McpServerConfig) -> Result<usize> {
        struct Started<'a>(&'a Inner, &'a str);
        impl Drop for Started<'_> {
            fn drop(&mut self) {
                self.0.with_slot(self.1, |s| s.starting = false);
            }
        }
        self.with_slot(&cfg.name, |s| s.starting = true);
        let _started = Started(self, &cfg.name);
        if self.closed.load(Ordering::Acquire) {
            return Err(McpError::Disconnected {
                server: cfg.name.clone(),
                method: None,
                reason: "the manager is closing".into(),
            });
        }
        // The era (and, for `http`, the HTTP transport) this server spoke
        // last time is tried first, and probed again when it turns out
        // wrong.
        let mut options = self.options();
        if options.era_hint.is_none() {
            options.era_hint = self
                .handle
                .server_era(&cfg.name)
                .ok()
                .flatten()
                .map(|(era, _)| era);
        }
        if cfg.transport == McpTransport::Http && options.wire_hint.is_none() {
            options.wire_hint = self.handle.server_wire(&cfg.name).ok().flatten();
        }
        // Each attempt is kept in the slot while its handshake runs, so that
        // close() can interrupt it.
        let attempt = |made: Result<Arc<dyn McpServerClient>>| {
            let client = made?;
            if self.closed.load(Ordering::Acquire) {
                let _ = client.close();
                return Err(McpError::Disconnected {
                    server: cfg.name.clone(),
                    method: None,
                    reason: "the manager is closing".into(),
                });
            }
            self.with_slot(&cfg.name, |s| s.connecting = Some(Arc::clone(&client)));
            match client.initialize() {
                Ok(_) => Ok(client),
                Err(e) => {
                    let _ = client.close();
                    Err(e)
                }
            }
        };
        let connected = match cfg.transport {
            McpTransport::Http => {
                crate::connect::with_http_fallback(cfg, options, &mut |wire, options| {
                    attempt(crate::connect::lazy_http(cfg, options, wire))
                })
            }
            _ => attempt(crate::connect::connect_lazy(cfg, options)),
        };
        let client = match connected {
            Ok(c) => c,
            Err(e) => {
                self.with_slot(&cfg.name, |s| {
                    s.connecting = None;
                    s.error = Some(e.to_string());
                });
                self.lifecycle(&cfg.name, format!("failed to start: {e}"));
                return Err(e);
            }
        };
        let outcome = client
            .initialize()
            .and_then(|info| client.list_tools_shared().map(|t| (info, t.len())));
        self.with_slot(&cfg.name, |s| s.connecting = None);
        match outcome {
            Ok((info, n)) if !self.closed.load(Ordering::Acquire) => {
                self.lifecycle(
                    &cfg.name,
                    format!(
                        "connected ({} era, protocol {}, server {} {}, {n} tools)",
                        info.era,
                        info.protocol_version,
                        info.server_info.name,
                        info.server_info.version
                    ),
                );
                if let Err(e) =
                    self.handle
                        .set_server_era(&cfg.name, info.era, &info.protocol_version)
                {
                    ::log::warn!(target: "mcp_client", "[{}] could not record the protocol era: {e}", cfg.name);
                }
                if let (McpTransport::Http, Some(wire)) = (cfg.transport, client.transport()) {
                    if let Err(e) = self.handle.set_server_wire(&cfg.name, wire) {
                        ::log::warn!(target: "mcp_client", "[{}] could not record the HTTP transport: {e}", cfg.name);
                    }
                }
                let old = self.with_slot(&cfg.name, |s| {
                    s.error = None;
                    s.client.replace(client)
                });
                if let Some(old) = old {
                    let _ = old.close();
                }
                Ok(n)
            }
            Ok(_) => {
                let _ = client.close();
                Err(McpError::Disconnected {
                    server: cfg.name.clone(),
                    method: None,
                    reason: "the manager is closing".into(),
                })
            }
            Err(e) => {
                let _ = client.close();
                self.with_slot(&cfg.name, |s| s.error = Some(e.to_string()));
                self.lifecycle(&cfg.name, format!("failed to start: {e}"));
                Err(e)
            }
        }
    }

    /// Disconnects a server if it runs; returns whether it did.
    fn stop_one(&self, name: &str) -> bool {
        let client = self.with_slot(name, |s| s.client.take());
        match client {
            Some(c) => {
                let _ = c.close();
                self.lifecycle(name, "stopped");
                true
            }
            None => false,
        }
    }

    fn close(&self) -> Result<()> {
        let _closing = self.closing.lock();
        if self.closed.swap(true, Ordering::AcqRel) {
            // Closed already, or by the caller that held the lock until now.
            return Ok(());
        }
        // Abort handshakes in progress, then wait for the startup threads.
        let connecting: Vec<_> = self
            .slots
            .read()
            .values()
            .filter_map(|s| s.connecting.clone())
            .collect();
        for c in connecting {
            let _ = c.close();
        }
        // Wake the supervisor and any restart wait, then join them.
        drop(self.shutdown_tx.lock().take());
        let mut threads: Vec<JoinHandle<()>> = std::mem::take(&mut *self.threads.lock());
        threads.extend(self.supervisor.lock().take());
        threads.append(&mut self.restart_threads.lock());
        for t in threads {
            let _ = t.join();
        }
        let servers: Vec<(String, Arc<dyn McpServerClient>)> = self
            .slots
            .write()
            .drain()
            .filter_map(|(k, s)| s.client.map(|c| (k, c)))
            .collect();
        std::thread::scope(|scope| {
            for (name, c) in &servers {
                let name = name.clone();
                crate::threads::spawn_scoped(
                    scope,
                    format!("mcp-close-{name}"),
                    // An HTTP close sends DELETE (TLS included).
                    crate::limits::DEFAULT_THREAD_STACK,
                    move || {
                        let _ = c.close();
                    },
                )
                .map(|_| ())
                .unwrap_or_else(|_| {
                    let _ = c.close();
                });
            }
        });
        for (name, _) in &servers {
            self.lifecycle(name, "stopped (manager closed)");
        }
        drop(servers);
        match self.store.lock().take() {
            Some(store) => store.close(),
            None => Ok(()),
        }
    }
}
