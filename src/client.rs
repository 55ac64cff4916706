//! The transport-neutral client API: the [`McpServerClient`] trait, the
//! options a connection is made with, and per-call options.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::elicitation::ElicitationHandler;
use crate::era::{Era, EraPreference};
use crate::error::McpError;
use crate::error::Result;
use crate::json::excerpt;
use crate::limits;
use crate::log::LogLevel;
use crate::log::McpLogTx;
use crate::notification::McpNotificationTx;
use crate::prompts::{GetPromptResult, Prompt};
use crate::resources::{Resource, ResourceContents, ResourceTemplate};
use crate::result::McpCallResult;
use crate::roots::RootsProvider;
use crate::sampling::SamplingHandler;
use crate::tool::McpTool;

/// What `completion/complete` completes an argument of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// An argument of the named prompt.
    Prompt(String),
    /// A variable of the resource template with this URI template.
    ResourceTemplate(String),
}

impl CompletionRef {
    fn to_json(&self) -> Value {
        match self {
            CompletionRef::Prompt(name) => serde_json::json!({"type": "ref/prompt", "name": name}),
            CompletionRef::ResourceTemplate(uri) => {
                serde_json::json!({"type": "ref/resource", "uri": uri})
            }
        }
    }
}

/// Suggestions from `completion/complete`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    /// The suggested values (at most 100, per spec).
    pub values: Vec<String>,
    /// How many matches exist in all, if the server says.
    pub total: Option<u64>,
    /// Whether there are more than were returned.
    pub has_more: bool,
}

/// Requests every page of a paginated list and returns the items under `key`,
/// mapped by `map` (items it rejects are skipped with a warning). Stops after
/// [`limits::MAX_TOOL_PAGES`] pages or on a repeated cursor.
pub fn list_all<C, T>(
    client: &C,
    method: &str,
    key: &str,
    map: impl Fn(&Value) -> std::result::Result<T, String>,
) -> Result<Vec<T>>
where
    C: McpServerClient + ?Sized,
{
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..limits::MAX_TOOL_PAGES {
        let params = cursor.as_ref().map(|c| serde_json::json!({"cursor": c}));
        let r = client.request(method, params, &CallOptions::default())?;
        let items = r
            .get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| McpError::Protocol {
                server: client.name().to_owned(),
                method: Some(method.to_owned()),
                message: format!("result has no {key} array: {}", excerpt(&r)),
            })?;
        for item in items {
            if out.len() >= limits::MAX_TOOLS {
                ::log::warn!(target: "mcp_client", "[{}] {method}: kept the first {} items; the rest are dropped", client.name(), limits::MAX_TOOLS);
                return Ok(out);
            }
            match map(item) {
                Ok(v) => out.push(v),
                Err(m) => {
                    ::log::warn!(target: "mcp_client", "[{}] {method}: skipping {m}: {}", client.name(), excerpt(item))
                }
            }
        }
        match r.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() && seen.insert(c.to_owned()) => cursor = Some(c.to_owned()),
            _ => return Ok(out),
        }
    }
    ::log::warn!(target: "mcp_client", "[{}] {method}: page cap reached; the list may be truncated", client.name());
    Ok(out)
}

fn protocol_err<C: McpServerClient + ?Sized>(
    client: &C,
    method: &str,
    message: String,
) -> McpError {
    McpError::Protocol {
        server: client.name().to_owned(),
        method: Some(method.to_owned()),
        message,
    }
}

/// One `notifications/progress` update for a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far (increases with every update).
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// The server's message, if any.
    pub message: Option<String>,
}

/// A connection that ended without the client closing it (the child
/// exited, its stdout closed, the transport failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disconnect {
    /// The server name.
    pub server: String,
    /// Why it ended.
    pub reason: String,
}

/// A progress callback; runs on the calling thread, between waits.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Options for one call. `Default` uses the connection's timeout, no
/// cancellation token and no progress reporting.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Overrides the connection's call timeout for this call.
    pub timeout: Option<Duration>,
    /// Cancels the call when tripped from another thread.
    pub cancel: Option<CancelToken>,
    /// Receives progress updates. When set, the request carries a
    /// `progressToken`. Task-mode calls also report each poll here, with the
    /// task's `statusMessage` as the message.
    pub on_progress: Option<ProgressFn>,
    /// Whether each progress update restarts the timeout (for long calls
    /// that report progress steadily). Progress is only asked for, and
    /// only passed on, when [`on_progress`](Self::on_progress) is set.
    pub progress_resets_timeout: bool,
    /// The `ttl` requested for a task-mode call.
    pub task_ttl: Option<Duration>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("cancel", &self.cancel)
            .field("on_progress", &self.on_progress.is_some())
            .field("progress_resets_timeout", &self.progress_resets_timeout)
            .field("task_ttl", &self.task_ttl)
            .finish()
    }
}

impl CallOptions {
    /// Default options.
    pub fn new() -> CallOptions {
        CallOptions::default()
    }

    /// Sets the timeout for this call.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Attaches a cancellation token.
    pub fn cancel_token(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Reports progress to `f`.
    pub fn on_progress(mut self, f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// Reports progress on a channel (a full bounded channel drops nothing:
    /// the call waits for room).
    pub fn progress_channel(self, tx: crossbeam_channel::Sender<Progress>) -> Self {
        self.on_progress(move |p| {
            let _ = tx.send(p.clone());
        })
    }

    /// Makes every progress update restart the timeout.
    pub fn progress_resets_timeout(mut self, yes: bool) -> Self {
        self.progress_resets_timeout = yes;
        self
    }

    /// Requests a task `ttl` for task-mode calls.
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = Some(ttl);
        self
    }
}

/// What to do when a tool's `structuredContent` does not match its declared
/// `outputSchema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputSchemaPolicy {
    /// Fail the call with [`McpError::SchemaMismatch`] (the default: the
    /// spec says clients SHOULD validate).
    #[default]
    Error,
    /// Log a warning and return the result.
    Warn,
    /// Do not validate.
    Off,
}

/// How a connection behaves: timeouts, bounds, and where its notifications,
/// log lines and server requests go. Starts from the constants in
/// [`limits`].
#[derive(Clone)]
pub struct ClientOptions {
    /// Timeout of `initialize`.
    pub start_timeout: Duration,
    /// Default timeout of every other request.
    pub call_timeout: Duration,
    /// Timeout of `ping`.
    pub ping_timeout: Duration,
    /// Cap on `tools/list` pages.
    pub max_tool_pages: usize,
    /// Most tools kept of one server's list ([`limits::MAX_TOOLS`]); past
    /// it the list is cut, with a warning and a lifecycle line.
    pub max_tools: usize,
    /// Most JSON text (about, in bytes) the kept tools of one server may
    /// amount to ([`limits::MAX_TOOL_LIST_BYTES`]); past it the list is
    /// cut, as at `max_tools`.
    pub max_tool_list_bytes: usize,
    /// Largest message accepted from the server, in bytes.
    pub max_message_size: usize,
    /// Capacity of the outgoing queue (stdio).
    pub write_queue_capacity: usize,
    /// Cap on requests in flight.
    pub max_pending_requests: usize,
    /// How long an elicitation handler may take.
    pub elicitation_deadline: Duration,
    /// Cap on server requests handled at once.
    pub max_concurrent_handlers: usize,
    /// Grace periods of `close()` (stdio): after closing stdin, after SIGTERM.
    pub shutdown_grace: Duration,
    /// How long a call that is alone in flight (and has no cancel token)
    /// reads its reply on its own thread before waiting for the reader
    /// thread (stdio). It saves a thread hand-off on every quick call;
    /// `Duration::ZERO` leaves all reading to the reader thread.
    pub caller_read_window: Duration,
    /// For how much of [`caller_read_window`](Self::caller_read_window) the
    /// caller yields the CPU between non-blocking reads instead of sleeping
    /// (stdio), and how long a plain `http://` request polls its socket for
    /// the answer before it sleeps in a blocking read (Streamable HTTP and
    /// HTTP+SSE; not `https://`). A reply that comes within it is seen
    /// without the wake-up of a sleeping thread (tens of microseconds on a
    /// virtual machine); it costs up to this much CPU time per call. At most
    /// half the cores' worth of callers (at least one) yield at once in the
    /// process; the others sleep at once. `Duration::ZERO`: sleep at once.
    pub caller_spin: Duration,
    /// How long a stdio connection's I/O thread, with two or more requests
    /// in flight, polls the server's stdout without sleeping (yielding the
    /// CPU between polls) before it sleeps until the next reply. Replies
    /// to a busy connection then come to a thread that is awake. It shares
    /// the bound of [`caller_spin`](Self::caller_spin): at most half the
    /// cores' worth of threads yield at once in the process.
    /// `Duration::ZERO`: sleep at once.
    pub io_spin: Duration,
    /// Where notifications that the client does not consume itself go.
    /// When `None`, they are logged at debug level and dropped.
    ///
    /// As with [`logs`](Self::logs), a full bounded channel applies
    /// backpressure: the stdout reader waits, so responses wait too. Drain it.
    pub notifications: Option<McpNotificationTx>,
    /// Where stderr lines, log records and lifecycle lines go.
    ///
    /// Lines are never dropped: when a bounded channel is full, the sender
    /// waits. The channel must therefore be drained (the store thread does);
    /// a bounded channel nobody reads stalls the server's stderr and the
    /// threads that report lifecycle events.
    pub logs: Option<McpLogTx>,
    /// Answers `elicitation/create`; the capability is advertised only when set.
    pub elicitation: Option<Arc<dyn ElicitationHandler>>,
    /// Answers `sampling/createMessage`; advertised only when set.
    pub sampling: Option<Arc<dyn SamplingHandler>>,
    /// How long a sampling handler may take.
    pub sampling_deadline: Duration,
    /// Answers `roots/list`; advertised (with `listChanged`) only when set.
    pub roots: Option<Arc<dyn RootsProvider>>,
    /// Told once when the connection ends without the client closing it
    /// (used by the manager to restart a crashed server).
    pub disconnects: Option<crossbeam_channel::Sender<Disconnect>>,
    /// OAuth for HTTP servers that answer `401`; `None`: only `api_key`.
    pub oauth: Option<crate::auth::OAuthOptions>,
    /// How `structuredContent` is checked against a tool's `outputSchema`
    /// (known once the tools were listed).
    pub output_schema_validation: OutputSchemaPolicy,
    /// `clientInfo.name`.
    pub client_name: String,
    /// `clientInfo.version`.
    pub client_version: String,
    /// Which protocol era the connection may use (auto by default: probe
    /// with `server/discover`, fall back to `initialize`; see [`crate::Era`]).
    pub era: EraPreference,
    /// Speak exactly this protocol version (its era follows from it);
    /// `None`: the newest one the server supports.
    pub protocol_version: Option<String>,
    /// The era this server was found to speak before (the manager keeps it
    /// with the server's row): tried first in auto mode, and re-probed when
    /// it turns out wrong.
    pub era_hint: Option<Era>,
    /// For a server configured as [`McpTransport::Http`](crate::McpTransport::Http):
    /// the HTTP transport it was found to speak before
    /// ([`McpServerClient::transport`]; the manager and the CLI keep it
    /// with the server's row). `Some(Sse)` goes to HTTP+SSE first (and to
    /// Streamable HTTP when that turns out wrong); `None` follows what this
    /// process found for the URL, else Streamable HTTP first.
    pub wire_hint: Option<crate::McpTransport>,
    /// How long a stdio server may leave the `server/discover` probe
    /// unanswered before `initialize` is sent as well (whichever is answered
    /// first decides the era).
    pub discover_timeout: Duration,
    /// The least level of `notifications/message` asked for in the modern
    /// era, where a server sends log messages only when a request asks
    /// (`_meta` `logLevel`). `Debug` by default, so that the per-server log
    /// gets what a legacy server would send unasked; `None` asks for none.
    /// [`McpServerClient::set_logging_level`] changes it.
    pub log_level: Option<LogLevel>,
    /// stdio: every server inherits the host's whole environment, as if
    /// each config set [`McpServerConfig::inherit_env`](crate::McpServerConfig::inherit_env).
    /// Off by default: the host's environment usually holds secrets.
    pub inherit_env: bool,
    /// stdio: the host variables a server that does not inherit the whole
    /// environment starts with (those that are set), before its configured
    /// `env`. Default [`limits::STDIO_ENV_ALLOWLIST`].
    pub env_allowlist: Vec<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            start_timeout: limits::SERVER_START_TIMEOUT,
            call_timeout: limits::CALL_TIMEOUT,
            ping_timeout: limits::PING_TIMEOUT,
            max_tool_pages: limits::MAX_TOOL_PAGES,
            max_tools: limits::MAX_TOOLS,
            max_tool_list_bytes: limits::MAX_TOOL_LIST_BYTES,
            max_message_size: limits::MAX_MESSAGE_SIZE,
            write_queue_capacity: limits::WRITE_QUEUE_CAPACITY,
            max_pending_requests: limits::MAX_PENDING_REQUESTS,
            elicitation_deadline: limits::ELICITATION_DEADLINE,
            max_concurrent_handlers: limits::MAX_CONCURRENT_HANDLERS,
            shutdown_grace: limits::SHUTDOWN_GRACE,
            caller_read_window: limits::CALLER_READ_WINDOW,
            caller_spin: limits::CALLER_SPIN,
            io_spin: limits::IO_SPIN,
            notifications: None,
            logs: None,
            elicitation: None,
            sampling: None,
            sampling_deadline: limits::SAMPLING_DEADLINE,
            roots: None,
            disconnects: None,
            oauth: None,
            output_schema_validation: OutputSchemaPolicy::Error,
            client_name: limits::CLIENT_NAME.to_owned(),
            client_version: limits::CLIENT_VERSION.to_owned(),
            era: EraPreference::Auto,
            protocol_version: None,
            era_hint: None,
            wire_hint: None,
            discover_timeout: limits::DISCOVER_PROBE_TIMEOUT,
            log_level: Some(LogLevel::Debug),
            inherit_env: false,
            env_allowlist: limits::STDIO_ENV_ALLOWLIST
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        }
    }
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("start_timeout", &self.start_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("ping_timeout", &self.ping_timeout)
            .field("max_tool_pages", &self.max_tool_pages)
            .field("max_tools", &self.max_tools)
            .field("max_tool_list_bytes", &self.max_tool_list_bytes)
            .field("max_message_size", &self.max_message_size)
            .field("write_queue_capacity", &self.write_queue_capacity)
            .field("max_pending_requests", &self.max_pending_requests)
            .field("elicitation_deadline", &self.elicitation_deadline)
            .field("max_concurrent_handlers", &self.max_concurrent_handlers)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("notifications", &self.notifications.is_some())
            .field("logs", &self.logs.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("sampling_deadline", &self.sampling_deadline)
            .field("roots", &self.roots.is_some())
            .field("disconnects", &self.disconnects.is_some())
            .field("oauth", &self.oauth)
            .field("output_schema_validation", &self.output_schema_validation)
            .field("era", &self.era)
            .field("protocol_version", &self.protocol_version)
            .field("era_hint", &self.era_hint)
            .field("wire_hint", &self.wire_hint)
            .field("discover_timeout", &self.discover_timeout)
            .field("log_level", &self.log_level)
            .field("inherit_env", &self.inherit_env)
            .field("env_allowlist", &self.env_allowlist)
            .finish()
    }
}

impl ClientOptions {
    /// The defaults.
    pub fn new() -> ClientOptions {
        ClientOptions::default()
    }

    /// Makes every stdio server inherit the host's whole environment (see
    /// [`ClientOptions::inherit_env`]).
    pub fn inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// Replaces the allowlist of host variables passed to stdio servers
    /// (see [`ClientOptions::env_allowlist`]).
    pub fn env_allowlist<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.env_allowlist = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the `initialize` timeout.
    pub fn start_timeout(mut self, d: Duration) -> Self {
        self.start_timeout = d;
        self
    }

    /// Sets the default call timeout.
    pub fn call_timeout(mut self, d: Duration) -> Self {
        self.call_timeout = d;
        self
    }

    /// Sets [`caller_read_window`](Self::caller_read_window);
    /// `Duration::ZERO` leaves all reading to the reader thread.
    pub fn caller_read_window(mut self, d: Duration) -> Self {
        self.caller_read_window = d;
        self
    }

    /// Sets [`caller_spin`](Self::caller_spin).
    pub fn caller_spin(mut self, d: Duration) -> Self {
        self.caller_spin = d;
        self
    }

    /// Sets [`io_spin`](Self::io_spin).
    pub fn io_spin(mut self, d: Duration) -> Self {
        self.io_spin = d;
        self
    }

    /// Sends notifications to `tx`.
    pub fn notifications(mut self, tx: McpNotificationTx) -> Self {
        self.notifications = Some(tx);
        self
    }

    /// Sends log lines to `tx`.
    pub fn logs(mut self, tx: McpLogTx) -> Self {
        self.logs = Some(tx);
        self
    }

    /// Installs an elicitation handler (and advertises the capability).
    pub fn elicitation_handler(mut self, h: impl ElicitationHandler + 'static) -> Self {
        self.elicitation = Some(Arc::new(h));
        self
    }

    /// Installs a sampling handler (and advertises the capability).
    pub fn sampling_handler(mut self, h: impl SamplingHandler + 'static) -> Self {
        self.sampling = Some(Arc::new(h));
        self
    }

    /// Installs a roots provider (and advertises the capability).
    pub fn roots_provider(mut self, p: impl RootsProvider + 'static) -> Self {
        self.roots = Some(Arc::new(p));
        self
    }

    /// Sets the largest accepted message size.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Sets the elicitation deadline.
    pub fn elicitation_deadline(mut self, d: Duration) -> Self {
        self.elicitation_deadline = d;
        self
    }

    /// Restricts the connection to one era (or lets it choose: `Auto`).
    pub fn era(mut self, era: EraPreference) -> Self {
        self.era = era;
        self
    }

    /// Speaks exactly protocol version `v` (e.g. `"2025-06-18"`).
    pub fn protocol_version(mut self, v: impl Into<String>) -> Self {
        self.protocol_version = Some(v.into());
        self
    }

    /// Sets [`discover_timeout`](Self::discover_timeout).
    pub fn discover_timeout(mut self, d: Duration) -> Self {
        self.discover_timeout = d;
        self
    }
}

pub use crate::model::Implementation;

/// The capabilities a server declared in `initialize`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerCapabilities(pub Value);

impl ServerCapabilities {
    /// Whether the server declared capability `name` (`tools`, `resources`, …).
    pub fn has(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|v| !v.is_null())
    }

    /// Whether the server accepts task-augmented `tools/call`.
    pub fn tasks_for_tool_calls(&self) -> bool {
        self.0.pointer("/tasks/requests/tools/call").is_some()
    }

    /// Whether the server declared `listChanged` for `name`.
    pub fn list_changed(&self, name: &str) -> bool {
        self.0
            .get(name)
            .and_then(|c| c.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// What the connection agreed with the server: by `initialize` (legacy
/// era) or `server/discover` (modern era).
#[derive(Debug, Clone, PartialEq)]
pub struct InitializeInfo {
    /// The era the connection runs in.
    pub era: Era,
    /// The protocol version in use (the server's choice in `initialize`;
    /// in the modern era, the newest version both sides support).
    pub protocol_version: String,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// The server's `serverInfo`.
    pub server_info: Implementation,
    /// The server's `instructions`, if any.
    pub instructions: Option<String>,
}

/// A connection to one MCP server, whatever its transport.
///
/// Every method blocks the calling thread and is safe to call from many
/// threads at once: requests are pipelined on the one connection and each
/// response is routed to its caller by id.
///
/// The crate's transports implement it: [`McpServer`](crate::McpServer)
/// (stdio) and [`McpHttpServer`](crate::McpHttpServer) (Streamable HTTP),
/// through one crate-private blanket implementation (shown below as
/// `impl<C: Connection>`). Implement it yourself for a test double or a
/// proxy; [`connect`](crate::connect) picks the transport from a
/// configuration.
pub trait McpServerClient: Send + Sync {
    /// The configured server name.
    fn name(&self) -> &str;

    /// Performs the `initialize` handshake if it has not been done, and
    /// returns what was negotiated. Later calls return the cached result.
    fn initialize(&self) -> Result<InitializeInfo>;

    /// Lists every tool, following `nextCursor` up to the page cap.
    fn list_tools(&self) -> Result<Vec<McpTool>>;

    /// The transport this connection speaks: `Stdio`, `Http` (Streamable
    /// HTTP) or `Sse` (HTTP+SSE, also when a server configured as `http`
    /// was reached by the fallback). `None` for implementations outside
    /// this crate that do not say.
    fn transport(&self) -> Option<crate::McpTransport> {
        None
    }

    /// Calls a tool with the connection's default options.
    fn call_tool(&self, name: &str, arguments: Value) -> Result<McpCallResult> {
        self.call_tool_with(name, arguments, &CallOptions::default())
    }

    /// Calls a tool with per-call options (timeout, cancellation, progress).
    /// A task-mode call is polled to completion before this returns.
    fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<McpCallResult>;

    /// Sends `ping` and waits for the answer (with the ping timeout).
    fn ping(&self) -> Result<()>;

    /// Sends any request and returns its `result`.
    fn request(&self, method: &str, params: Option<Value>, options: &CallOptions) -> Result<Value>;

    /// Sends a notification.
    fn notify(&self, method: &str, params: Option<Value>) -> Result<()>;

    /// Ends the connection: pending calls fail with `Disconnected`, a stdio
    /// child is stopped and reaped, the connection's threads are joined.
    /// Idempotent; a call made while another thread's close is under way
    /// waits for that close to finish.
    ///
    /// On stdio it returns once no live process of the child's process
    /// group is left. A descendant that left the group (`setsid`) is not
    /// killed, since it is no longer the client's to kill; our ends of the
    /// pipes it may still hold are closed.
    fn close(&self) -> Result<()>;

    /// Whether the connection is still usable.
    fn is_connected(&self) -> bool;

    /// The negotiated protocol version, after `initialize`.
    fn protocol_version(&self) -> Option<String>;

    /// The server's capabilities, after `initialize`.
    fn server_capabilities(&self) -> Option<ServerCapabilities>;

    /// The server's `serverInfo`, after `initialize`.
    fn server_info(&self) -> Option<Implementation>;

    /// The tool list as last fetched (by [`list_tools`](Self::list_tools) or
    /// by the background refresh that `notifications/tools/list_changed`
    /// triggers), or `None` when tools were never listed.
    fn cached_tools(&self) -> Option<Arc<Vec<McpTool>>> {
        None
    }

    /// [`list_tools`](Self::list_tools) without the copy: the list the
    /// connection keeps as its cached one, shared. For callers that only
    /// read it (a long list is then held once, not twice).
    fn list_tools_shared(&self) -> Result<Arc<Vec<McpTool>>> {
        self.list_tools().map(Arc::new)
    }

    /// Lists every resource (`resources/list`, all pages).
    fn list_resources(&self) -> Result<Vec<Resource>> {
        list_all(self, "resources/list", "resources", Resource::from_json)
    }

    /// Lists every resource template (`resources/templates/list`, all pages).
    fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        list_all(
            self,
            "resources/templates/list",
            "resourceTemplates",
            ResourceTemplate::from_json,
        )
    }

    /// Reads a resource; blobs are decoded.
    fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>> {
        let r = self.request(
            "resources/read",
            Some(serde_json::json!({"uri": uri})),
            &CallOptions::default(),
        )?;
        let items = r.get("contents").and_then(Value::as_array).ok_or_else(|| {
            protocol_err(
                self,
                "resources/read",
                format!("result has no contents: {}", excerpt(&r)),
            )
        })?;
        items
            .iter()
            .map(|c| {
                ResourceContents::from_json(c).map_err(|m| protocol_err(self, "resources/read", m))
            })
            .collect()
    }

    /// Subscribes to `notifications/resources/updated` for `uri`; the
    /// notifications arrive on [`ClientOptions::notifications`].
    fn subscribe_resource(&self, uri: &str) -> Result<()> {
        self.request(
            "resources/subscribe",
            Some(serde_json::json!({"uri": uri})),
            &CallOptions::default(),
        )
        .map(|_| ())
    }

    /// Ends a subscription.
    fn unsubscribe_resource(&self, uri: &str) -> Result<()> {
        self.request(
            "resources/unsubscribe",
            Some(serde_json::json!({"uri": uri})),
            &CallOptions::default(),
        )
        .map(|_| ())
    }

    /// Lists every prompt (`prompts/list`, all pages).
    fn list_prompts(&self) -> Result<Vec<Prompt>> {
        list_all(self, "prompts/list", "prompts", Prompt::from_json)
    }

    /// Renders a prompt with string arguments.
    fn get_prompt(&self, name: &str, arguments: &[(&str, &str)]) -> Result<GetPromptResult> {
        let args: serde_json::Map<String, Value> = arguments
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
            .collect();
        let r = self.request(
            "prompts/get",
            Some(serde_json::json!({"name": name, "arguments": args})),
            &CallOptions::default(),
        )?;
        GetPromptResult::from_json(&r).map_err(|m| protocol_err(self, "prompts/get", m))
    }

    /// Asks for completions of argument `argument` currently typed as `value`;
    /// `context` holds arguments already chosen.
    fn complete(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &[(&str, &str)],
    ) -> Result<Completion> {
        let mut params = serde_json::json!({
            "ref": reference.to_json(),
            "argument": {"name": argument, "value": value},
        });
        if !context.is_empty() {
            let args: serde_json::Map<String, Value> = context
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
                .collect();
            params["context"] = serde_json::json!({"arguments": args});
        }
        let r = self.request("completion/complete", Some(params), &CallOptions::default())?;
        let c = r.get("completion").ok_or_else(|| {
            protocol_err(
                self,
                "completion/complete",
                format!("no completion: {}", excerpt(&r)),
            )
        })?;
        Ok(Completion {
            values: crate::json::strings(c, "values"),
            total: c.get("total").and_then(Value::as_u64),
            has_more: c.get("hasMore").and_then(Value::as_bool).unwrap_or(false),
        })
    }

    /// Tells the server the roots changed (`notifications/roots/list_changed`);
    /// it will ask again with `roots/list`.
    fn notify_roots_changed(&self) -> Result<()> {
        self.notify("notifications/roots/list_changed", None)
    }

    /// Sets the minimum level of the `notifications/message` the server sends.
    fn set_logging_level(&self, level: LogLevel) -> Result<()> {
        self.request(
            "logging/setLevel",
            Some(serde_json::json!({"level": level.as_str()})),
            &CallOptions::default(),
        )
        .map(|_| ())
    }
}
