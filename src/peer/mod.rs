//! The transport-neutral half of a connection: request ids, the pending map,
//! routing of every incoming message, the `initialize` handshake, tool
//! listing and calling, and server-initiated requests.
//!
//! A transport owns the I/O and hands each incoming message to
//! [`Peer::dispatch_bytes`]; the peer hands outgoing messages to the
//! transport's [`Outbound`]. Callers block in [`Peer::request`] on a channel
//! of their own, so any number of threads can have requests in flight on one
//! connection and each response reaches exactly its caller.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{at, bounded, never, select, Receiver, RecvTimeoutError, Sender};
use parking_lot::{Mutex, RwLock};
use serde::Deserialize as _;
use serde_json::{json, Map, Value};

mod cache;
mod handlers;
mod ids;
mod listen;
mod mrtr;
mod negotiate;
mod tools;

use crate::cancel::{cancelled_notification, CancelToken, TIMEOUT_REASON};
use crate::client::{
    CallOptions, ClientOptions, Implementation, InitializeInfo, OutputSchemaPolicy, Progress,
    ServerCapabilities,
};
use crate::elicitation;
use crate::era::Era;
use crate::error::{McpError, Result};
use crate::jsonrpc::{
    self, codes, FrameError, Incoming, MetaExtra, RequestId, RpcError, SharedMeta,
};
use crate::log::{LogLevel, LogTag, McpLogLine};
use crate::model::ResultType;
use crate::notification::McpNotification;
use crate::result::{excerpt, extract_call_result_owned, McpCallResult};
use crate::task::{drive_task, Flavour};
use crate::tool::McpTool;

/// How many events (progress updates, re-arms, the reply) may queue for one
/// waiting caller that asked for progress before the reader waits for the
/// caller to take them: a progress callback may be slow.
const CALL_EVENT_CAPACITY: usize = 64;

/// The same for a caller that did not ask for progress: no progress is
/// passed on to it (see `Pending::wants_progress`), so its events are the
/// answer and a re-arm or two, and a few slots are enough. Small
/// on purpose: a 64-slot channel is a 7 KiB allocation for every request,
/// large enough to send `malloc` to its slow path each time.
const CALL_EVENT_CAPACITY_QUIET: usize = 4;

/// The JSON-RPC error code for a sampling request the handler refused
/// (the spec's example uses -1 for "user rejected").
const SAMPLING_REJECTED: i64 = -1;

/// How long the reader may wait to queue a reply to a server request.
const REPLY_SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an outgoing message could not be handed to the transport.
#[derive(Debug)]
pub(crate) enum SendFailure {
    /// The queue stayed full until the deadline.
    Full,
    /// The transport is closed; the reason.
    Closed(String),
    /// The transport failed with a typed error (HTTP).
    #[allow(dead_code)]
    Error(McpError),
}

/// The sending half of a transport.
pub(crate) trait Outbound: Send + Sync {
    /// Queues `msg`, waiting for room until `deadline`.
    fn send(&self, msg: &Value, deadline: Instant) -> std::result::Result<(), SendFailure>;
    /// Queues `msg` only if that does not wait (used from `Drop`).
    fn try_send(&self, msg: &Value) -> std::result::Result<(), SendFailure>;
    /// [`Outbound::send`] for a request that is the only one in flight: a
    /// transport may then write it at once instead of batching it.
    fn send_alone(&self, msg: &Value, deadline: Instant) -> std::result::Result<(), SendFailure> {
        self.send(msg, deadline)
    }
    /// Sends request `id` (`how`: whether it is the only one in flight, see
    /// [`Outbound::send_alone`], and how its caller waits). Byte transports
    /// encode it directly.
    fn send_request(
        &self,
        id: i64,
        method: &str,
        params: Option<&Value>,
        extra: MetaExtra<'_>,
        how: Sending,
        deadline: Instant,
    ) -> std::result::Result<(), SendFailure> {
        let msg = jsonrpc::request_value_owned(
            &RequestId::Number(id),
            method,
            jsonrpc::params_value(params, extra),
        );
        if how.alone {
            self.send_alone(&msg, deadline)
        } else {
            self.send(&msg, deadline)
        }
    }
    /// Reads and routes incoming messages on the calling thread until
    /// `ready()` is true after a routed message, or `until` passes. A
    /// transport that cannot, or whose input another thread is reading at
    /// the moment, returns [`InlineRead::Unavailable`] at once.
    fn read_inline(&self, _ready: &dyn Fn() -> bool, _until: Instant) -> InlineRead {
        InlineRead::Unavailable
    }
    /// Whether every request gets some answer from the transport (an HTTP
    /// response, if only an error status), so that the `server/discover`
    /// probe needs no timeout of its own: a stdio server may stay silent.
    fn answers_every_request(&self) -> bool {
        false
    }
    /// Whether tool parameters declared with `x-mcp-header` are mirrored
    /// into headers (Streamable HTTP in the modern era), so that tools
    /// whose declarations are invalid must be left out of `tools/list`.
    fn mirrors_headers(&self) -> bool {
        false
    }
}

/// How a request is sent: whether it is the only one in flight, and how
/// its caller waits for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Sending {
    /// The only request in flight: a byte transport writes it at once
    /// instead of batching it.
    pub alone: bool,
    /// Its caller does nothing but wait for the answer until its deadline
    /// (no cancel token, no progress): a transport may run the whole
    /// exchange on the caller's thread (Streamable HTTP does its `POST`
    /// there), as long as it returns by the deadline.
    pub caller_only_waits: bool,
}

/// How [`Outbound::read_inline`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InlineRead {
    /// `ready()` became true.
    Ready,
    /// `until` passed first.
    TimedOut,
    /// Not read here (now or any more); wait for the transport's threads.
    Unavailable,
}

/// What a waiting caller can be told.
enum CallEvent {
    Reply(std::result::Result<Value, RpcError>),
    Progress(Progress),
    /// Restart the timeout (an elicitation started or ended).
    Rearm,
    Failed(McpError),
}

/// An event with the id of the request it is for. A thread keeps its
/// quiet calls' channel from one call to the next (see [`EventChannel`]),
/// so an event that a reader sent after that call ended (a re-arm) may
/// meet the next call: the id tells them apart.
type Tagged = (i64, CallEvent);

thread_local! {
    /// The event channel of this thread's last quiet call, free for its next.
    static QUIET_CHANNEL: std::cell::Cell<Option<(Sender<Tagged>, Receiver<Tagged>)>> =
        const { std::cell::Cell::new(None) };
}

/// The event channel of one call. A call that asked for no progress
/// borrows its thread's quiet channel ([`CALL_EVENT_CAPACITY_QUIET`]
/// slots) and gives it back drained: making a channel (two allocations,
/// one cache-line aligned) cost about 5 % of a whole `tools/call`'s CPU.
/// While a borrowed channel is out, a nested call on the same thread (from
/// a handler) makes its own.
struct EventChannel {
    tx: Sender<Tagged>,
    rx: Receiver<Tagged>,
    quiet: bool,
}

impl EventChannel {
    fn new(wants_progress: bool) -> EventChannel {
        if wants_progress {
            let (tx, rx) = bounded(CALL_EVENT_CAPACITY);
            return EventChannel {
                tx,
                rx,
                quiet: false,
            };
        }
        let (tx, rx) = QUIET_CHANNEL
            .with(std::cell::Cell::take)
            .unwrap_or_else(|| bounded(CALL_EVENT_CAPACITY_QUIET));
        // What a reader sent for the last call after it ended: its few
        // slots must be free for this call's reply (which this thread may
        // route itself, and must not wait for room to do so).
        while rx.try_recv().is_ok() {}
        EventChannel {
            tx,
            rx,
            quiet: true,
        }
    }
}

impl Drop for EventChannel {
    fn drop(&mut self) {
        if !self.quiet {
            return;
        }
        // Whatever is left belongs to the call that ended.
        while self.rx.try_recv().is_ok() {}
        let (tx, rx) = (self.tx.clone(), self.rx.clone());
        QUIET_CHANNEL.with(|c| {
            if let Some(kept) = c.replace(Some((tx, rx))) {
                // A nested call's channel was put back first: keep one.
                c.set(Some(kept));
            }
        });
    }
}

/// What woke a waiting caller.
enum Woke {
    /// An event from the reply channel; `None` when it disconnected.
    Event(Option<CallEvent>),
    Cancel,
    Timer,
}

struct Pending {
    /// For the errors that fail the call (`methods::name`: no copy for a
    /// known request).
    method: Cow<'static, str>,
    tx: Sender<Tagged>,
    /// Whether the request carried a `progressToken` (its own id): only
    /// then are `notifications/progress` for the id passed on. A server's
    /// stray progress for a request that asked for none is dropped rather
    /// than queued for a caller that would only discard it (and whose
    /// small channel, when the caller itself reads the response stream,
    /// must never fill up with them).
    wants_progress: bool,
}

/// The transport-neutral state of one connection.
pub(crate) struct Peer {
    pub(crate) name: String,
    pub(crate) opts: ClientOptions,
    out: Box<dyn Outbound>,
    client_capabilities: Value,
    next_id: AtomicI64,
    pending: Mutex<HashMap<i64, Pending, ids::BuildIdHasher>>,
    dead: AtomicBool,
    dead_reason: Mutex<Option<String>>,
    /// What the handshake or the probe agreed; `None` until then.
    init: RwLock<Option<Arc<Negotiated>>>,
    init_lock: Mutex<()>,
    /// The key under which the era found is remembered: the HTTP origin,
    /// or a stdio configuration's hash (`Spec::era_key`).
    pub(crate) origin: Option<String>,
    /// The level set with `set_logging_level` (sent in every modern
    /// request's `_meta`).
    log_level: Mutex<Option<LogLevel>>,
    /// Results kept for their `ttlMs`.
    cache: Mutex<cache::ResultCache>,
    /// The modern era's `subscriptions/listen` stream.
    listen: listen::ListenState,
    /// This peer, for the threads it starts itself.
    me: std::sync::Weak<Peer>,
    /// The last complete `tools/list`, by name; `None` until listed.
    tools: RwLock<Option<Arc<tools::ToolCache>>>,
    /// Set while a background refresh of the tool list runs.
    refreshing_tools: AtomicBool,
    /// Set when the list changed again while a refresh was running.
    tools_stale: AtomicBool,
    /// Elicitations in flight: while any is, calls do not time out.
    elicitations: AtomicUsize,
    /// Server requests being handled on threads of their own.
    handlers: AtomicUsize,
    /// Ids of server requests in flight (removed on reply or on the server's
    /// `notifications/cancelled`).
    server_requests: Mutex<HashSet<RequestId>>,
}

/// The agreed state of a connection.
pub(crate) struct Negotiated {
    pub(crate) info: InitializeInfo,
    /// The `_meta` of every request, in the modern era; `None`: legacy.
    pub(crate) meta: Option<SharedMeta>,
}

/// Removes a pending entry when a call ends without its reply, and tells the
/// server (for `tools/call`) with `notifications/cancelled`.
struct PendingGuard<'a> {
    peer: &'a Peer,
    id: i64,
    cancellable: bool,
    armed: bool,
}

impl PendingGuard<'_> {
    /// Abandons the call; returns false when the reply had already been
    /// routed (it is then waiting in the caller's channel).
    fn fire(&mut self, reason: &str) -> bool {
        self.armed = false;
        let removed = self.peer.pending.lock().remove(&self.id).is_some();
        if removed && self.cancellable && !self.peer.dead.load(Ordering::Acquire) {
            let params = cancelled_notification(&RequestId::Number(self.id), reason);
            let msg = jsonrpc::notification_value("notifications/cancelled", Some(&params));
            if let Err(e) = self.peer.out.try_send(&msg) {
                ::log::debug!(target: "mcp_client", "[{}] could not send notifications/cancelled: {e:?}", self.peer.name);
            }
        }
        removed
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.fire("abandoned by the client");
        }
    }
}

/// The capabilities this client declares: tasks awareness always;
/// elicitation, sampling and roots only when their handler is installed and
/// the transport can carry the answer.
pub(crate) fn client_capabilities(opts: &ClientOptions, can_answer_requests: bool) -> Value {
    let mut caps = Map::new();
    if can_answer_requests {
        for kind in handlers::InputKind::ALL {
            if let Some((name, v)) = kind.capability(opts, false) {
                caps.insert(name.into(), v);
            }
        }
    }
    caps.insert("experimental".into(), json!({"tasks": {}}));
    Value::Object(caps)
}

pub(crate) fn parse_initialize(server: &str, v: &Value) -> Result<InitializeInfo> {
    let protocol = |message: String| McpError::Protocol {
        server: server.to_owned(),
        method: Some("initialize".into()),
        message,
    };
    let w = crate::model::wire::InitializeResult::deserialize(v).unwrap_or_default();
    let protocol_version = w
        .protocol_version
        .ok_or_else(|| protocol(format!("result has no protocolVersion: {}", excerpt(v))))?;
    let capabilities = match w.capabilities {
        Some(c @ Value::Object(_)) => c,
        None => json!({}),
        Some(other) => {
            return Err(protocol(format!(
                "capabilities is not an object: {}",
                excerpt(&other)
            )))
        }
    };
    Ok(InitializeInfo {
        era: Era::Legacy,
        protocol_version,
        capabilities: ServerCapabilities(capabilities),
        server_info: w.server_info.unwrap_or_default(),
        instructions: w.instructions,
    })
}

impl Peer {
    pub(crate) fn new(
        name: String,
        opts: ClientOptions,
        out: Box<dyn Outbound>,
        client_capabilities: Value,
        origin: Option<String>,
    ) -> Arc<Peer> {
        let log_level = opts.log_level;
        Arc::new_cyclic(|me| Peer {
            me: me.clone(),
            name,
            opts,
            out,
            client_capabilities,
            next_id: AtomicI64::new(1),
            pending: Mutex::new(HashMap::default()),
            dead: AtomicBool::new(false),
            dead_reason: Mutex::new(None),
            init: RwLock::new(None),
            init_lock: Mutex::new(()),
            origin,
            log_level: Mutex::new(log_level),
            cache: Mutex::new(cache::ResultCache::default()),
            listen: listen::ListenState::default(),
            tools: RwLock::new(None),
            refreshing_tools: AtomicBool::new(false),
            tools_stale: AtomicBool::new(false),
            elicitations: AtomicUsize::new(0),
            handlers: AtomicUsize::new(0),
            server_requests: Mutex::new(HashSet::new()),
        })
    }

    /// Sends a log line to the log channel, if there is one.
    pub(crate) fn log_line(&self, tag: LogTag, text: impl Into<String>) {
        if let Some(tx) = &self.opts.logs {
            let _ = tx.send(McpLogLine::now(self.name.clone(), tag, text));
        }
    }

    /// A lifecycle line, also logged at info level.
    pub(crate) fn lifecycle(&self, text: impl Into<String>) {
        let text = text.into();
        ::log::info!(target: "mcp_client", "[{}] {text}", self.name);
        self.log_line(LogTag::Lifecycle, text);
    }

    pub(crate) fn is_alive(&self) -> bool {
        !self.dead.load(Ordering::Acquire)
    }

    pub(crate) fn dead_reason(&self) -> String {
        self.dead_reason
            .lock()
            .clone()
            .unwrap_or_else(|| "connection closed".into())
    }

    fn disconnected(&self, method: &str) -> McpError {
        McpError::Disconnected {
            server: self.name.clone(),
            method: Some(method.to_owned()),
            reason: self.dead_reason(),
        }
    }

    /// Marks the connection dead and fails every pending call at once.
    /// Only the first reason is kept.
    pub(crate) fn fail_all(&self, reason: &str) {
        // The first reason wins: read it back after marking the connection dead.
        self.fail_all_with(reason, |method| McpError::Disconnected {
            server: self.name.clone(),
            method: Some(method.to_owned()),
            reason: self.dead_reason(),
        });
    }

    /// Fails every pending call with `make(method)` and marks the connection
    /// dead (used for faults such as an oversized message).
    pub(crate) fn fail_all_with(&self, reason: &str, make: impl Fn(&str) -> McpError) {
        self.stop_listening();
        let drained: Vec<(i64, Pending)> = {
            let mut p = self.pending.lock();
            if !self.dead.swap(true, Ordering::AcqRel) {
                *self.dead_reason.lock() = Some(reason.to_owned());
            }
            p.drain().collect()
        };
        for (id, p) in drained {
            let _ = p.tx.send((id, CallEvent::Failed(make(&p.method))));
        }
    }

    /// Fails the one pending call `id` with `err` (a transport that learns a
    /// request can no longer be answered, e.g. an HTTP stream that ended
    /// before its response). Returns false when `id` was not pending.
    pub(crate) fn fail_pending(&self, id: i64, err: McpError) -> bool {
        let entry = self.pending.lock().remove(&id);
        match entry {
            Some(p) => {
                let _ = p.tx.send((id, CallEvent::Failed(err)));
                true
            }
            None => false,
        }
    }

    /// Whether the call `id` still waits for its response (false once the
    /// response was routed, or the caller gave up).
    pub(crate) fn is_pending(&self, id: i64) -> bool {
        self.pending.lock().contains_key(&id)
    }

    /// How many requests are waiting for a response.
    pub(crate) fn pending_count(&self) -> usize {
        self.pending.lock().len()
    }

    fn rearm_all(&self) {
        let senders: Vec<(i64, Sender<Tagged>)> = self
            .pending
            .lock()
            .iter()
            .map(|(id, p)| (*id, p.tx.clone()))
            .collect();
        for (id, tx) in senders {
            // A full channel already has events that wake the caller, which
            // then re-reads the elicitation count.
            let _ = tx.try_send((id, CallEvent::Rearm));
        }
    }

    fn send_failure(&self, method: &str, f: SendFailure) -> McpError {
        match f {
            SendFailure::Full => McpError::Backpressure {
                server: self.name.clone(),
                method: method.to_owned(),
                message: "the outgoing queue stayed full (the server is not reading its input)"
                    .into(),
            },
            SendFailure::Closed(reason) => McpError::Disconnected {
                server: self.name.clone(),
                method: Some(method.to_owned()),
                reason,
            },
            SendFailure::Error(e) => e,
        }
    }

    // ---- requests -------------------------------------------------------

    /// Sends a request and waits for its response, honouring the timeout,
    /// the cancellation token and progress reporting of `opts`. In the
    /// modern era the request carries the connection's `_meta`, cacheable
    /// results are served from the cache while fresh, and the modern
    /// errors become typed ones.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &CallOptions,
    ) -> Result<Value> {
        let mut v = self.request_compact(method, params.as_ref(), opts)?;
        crate::jsonrpc_cap::restore(&mut v);
        Ok(v)
    }

    /// [`Peer::request`] whose result may be kept in the reader's compact
    /// forms: its `tools` elements as their JSON text
    /// (`jsonrpc_cap::TOOLS_RAW`), for `tools/list`, which makes tools of
    /// the text without parsing it into trees; a single text block of
    /// `content` as its text (`text_content::TEXT_ONLY`), for `tools/call`.
    /// `jsonrpc_cap::restore` turns it into what the server sent.
    pub(crate) fn request_compact(
        &self,
        method: &str,
        params: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<Value> {
        let mut negotiated = self.init.read().clone();
        if negotiated.is_none() && method != "initialize" && method != "ping" {
            self.initialize()?;
            negotiated = self.init.read().clone();
        }
        match negotiated {
            Some(n) if n.meta.is_some() => self.request_modern(method, params, opts),
            _ => self.request_raw(method, params, None, opts),
        }
    }

    /// The era agreed, once it is.
    pub(crate) fn era(&self) -> Option<Era> {
        self.init.read().as_ref().map(|n| n.info.era)
    }

    /// The agreed state right now (its `meta` is the modern `_meta`).
    fn negotiated(&self) -> Option<Arc<Negotiated>> {
        self.init.read().clone()
    }

    fn request_modern(
        &self,
        method: &str,
        params: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<Value> {
        match method {
            // Replaced by `_meta.logLevel` in the modern era.
            "logging/setLevel" => {
                let level = params
                    .as_ref()
                    .and_then(|p| p.get("level"))
                    .and_then(Value::as_str)
                    .and_then(LogLevel::parse)
                    .ok_or_else(|| McpError::InvalidInput {
                        server: self.name.clone(),
                        message: "logging/setLevel needs a valid level".into(),
                    })?;
                self.set_log_level(level);
                return Ok(json!({}));
            }
            // Replaced by `subscriptions/listen`.
            "resources/subscribe" | "resources/unsubscribe" => {
                let uri = params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| McpError::InvalidInput {
                        server: self.name.clone(),
                        message: format!("{method} needs a uri"),
                    })?;
                self.listen_resource(uri, method == "resources/subscribe")?;
                return Ok(json!({}));
            }
            _ => {}
        }
        let cache_key = cache::key(method, params);
        if let Some(k) = &cache_key {
            if let Some(v) = self.cache.lock().get(k) {
                return Ok(v);
            }
        }
        let mut version_retried = false;
        let mut stream_retried = false;
        let mut header_retried = false;
        let mut rounds = 0usize;
        // The params of the rounds after the first (multi round-trip):
        // the caller's are only borrowed.
        let mut later: Option<Value> = None;
        loop {
            let params = later.as_ref().or(params);
            let n = self.negotiated();
            let meta = n.as_ref().and_then(|n| n.meta.as_ref());
            let requested = || {
                meta.and_then(|m| m.get(crate::model::keys::PROTOCOL_VERSION))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            match self.request_raw(method, params, meta, opts) {
                Ok(v)
                    if ResultType::of(&v) == ResultType::InputRequired
                        && rounds < crate::limits::MAX_INPUT_ROUNDS =>
                {
                    // Multi round-trip: answer the server's input requests
                    // with the handlers, then send the request again (a new
                    // id) with the answers and the server's state.
                    rounds += 1;
                    later = Some(self.next_round(method, params, &v)?);
                    // The caller may have given up while the handlers ran.
                    if let Some(reason) = opts.cancel.as_ref().and_then(CancelToken::reason) {
                        return Err(McpError::Cancelled {
                            server: self.name.clone(),
                            method: method.to_owned(),
                            reason,
                        });
                    }
                }
                Ok(v) => {
                    // A result reached through input rounds depends on the
                    // answers: never cached.
                    let key = if rounds == 0 { cache_key } else { None };
                    return self.complete_result(method, v, key);
                }
                Err(McpError::Rpc {
                    code,
                    message,
                    data,
                    ..
                }) if code == codes::UNSUPPORTED_PROTOCOL_VERSION => {
                    let d = crate::model::UnsupportedVersionData::from_data(data.as_deref());
                    match crate::era::pick_modern(&d.supported) {
                        // Even the version just sent, once.
                        Some(v) if !version_retried => {
                            self.lifecycle(format!(
                                "{method}: the server does not support {}; retrying with {v}",
                                requested()
                            ));
                            self.switch_version(&v);
                            version_retried = true;
                            continue;
                        }
                        _ => {
                            return Err(McpError::UnsupportedProtocolVersion {
                                server: self.name.clone(),
                                method: method.to_owned(),
                                detail: Box::new(crate::error::VersionMismatch {
                                    requested: requested(),
                                    supported: d.supported,
                                    message,
                                }),
                            })
                        }
                    }
                }
                Err(McpError::Rpc { code, message, .. }) if code == codes::HEADER_MISMATCH => {
                    // Over HTTP a mismatch on a call may mean the tool's
                    // `x-mcp-header` declarations changed: the spec asks
                    // to list the tools again and send the request once
                    // more (its headers are made from the new list).
                    if method == "tools/call" && !header_retried && self.out.mirrors_headers() {
                        let name = params
                            .as_ref()
                            .and_then(|p| p.get("name"))
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        self.lifecycle(format!(
                            "tools/call {name}: the server reports a header mismatch ({message}); listing the tools again and retrying once"
                        ));
                        header_retried = true;
                        self.cache.lock().invalidate("tools/list");
                        // The list is cached for the next send; no copy.
                        self.refresh_tools()?;
                        continue;
                    }
                    return Err(McpError::HeaderMismatch {
                        server: self.name.clone(),
                        method: method.to_owned(),
                        message,
                    });
                }
                Err(McpError::Rpc {
                    code,
                    message,
                    data,
                    ..
                }) if code == codes::MISSING_REQUIRED_CLIENT_CAPABILITY => {
                    let required = data
                        .as_deref()
                        .and_then(|d| d.get("requiredCapabilities"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    return Err(McpError::MissingClientCapability {
                        server: self.name.clone(),
                        method: method.to_owned(),
                        detail: Box::new((required, message)),
                    });
                }
                Err(McpError::StreamEnded { reason, .. })
                    if cache::is_repeatable(method) && !stream_retried =>
                {
                    self.lifecycle(format!(
                        "the response stream of {method} ended before its response ({reason}); sending it again with a new id"
                    ));
                    stream_retried = true;
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Checks a modern result's `resultType`, notes the `serverInfo` it
    /// carries and caches it when it says so.
    fn complete_result(
        &self,
        method: &str,
        v: Value,
        cache_key: Option<cache::Key>,
    ) -> Result<Value> {
        match ResultType::of(&v) {
            ResultType::Complete => {}
            ResultType::InputRequired => {
                let requests = match v.get("inputRequests") {
                    Some(Value::Object(m)) => m
                        .values()
                        .map(|r| crate::json::opt_str(r, "method").unwrap_or_else(|| "?".into()))
                        .collect(),
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|r| crate::json::opt_str(r, "method").unwrap_or_else(|| "?".into()))
                        .collect(),
                    _ => Vec::new(),
                };
                return Err(McpError::InputRequired {
                    server: self.name.clone(),
                    method: method.to_owned(),
                    requests,
                });
            }
            // The tasks extension covers `tools/call` only; a handle in
            // answer to anything else is an invalid response (the spec's
            // words), never a result.
            ResultType::Task if method == "tools/call" => return Ok(v),
            ResultType::Task => {
                return Err(McpError::Protocol {
                    server: self.name.clone(),
                    method: Some(method.to_owned()),
                    message: "a task handle (resultType \"task\"), which the tasks extension allows only for tools/call".into(),
                })
            }
            ResultType::Other(t) => {
                return Err(McpError::Protocol {
                    server: self.name.clone(),
                    method: Some(method.to_owned()),
                    message: format!("unknown resultType {t:?}"),
                })
            }
        }
        if let Some(Value::Object(meta)) = crate::json::member(&v, "_meta") {
            if let Some(info) = crate::model::server_info(meta) {
                self.note_server_info(info);
            }
        }
        if let Some(k) = cache_key {
            self.cache.lock().put(k, &v);
        }
        Ok(v)
    }

    /// Records a `serverInfo` seen on a result, when it changed.
    fn note_server_info(&self, info: Implementation) {
        if self
            .init
            .read()
            .as_ref()
            .is_some_and(|n| n.info.server_info == info)
        {
            return;
        }
        let mut g = self.init.write();
        if let Some(n) = g.as_ref() {
            let mut info_new = n.info.clone();
            info_new.server_info = info;
            *g = Some(Arc::new(Negotiated {
                info: info_new,
                meta: n.meta.clone(),
            }));
        }
    }

    /// Sets the log level of the modern `_meta`.
    fn set_log_level(&self, level: LogLevel) {
        *self.log_level.lock() = Some(level);
        self.rebuild_meta(None);
    }

    /// Switches the modern `_meta` to protocol version `v`.
    fn switch_version(&self, v: &str) {
        self.rebuild_meta(Some(v));
    }

    fn rebuild_meta(&self, version: Option<&str>) {
        let level = *self.log_level.lock();
        let mut g = self.init.write();
        let Some(n) = g.as_ref() else { return };
        if n.meta.is_none() {
            return;
        }
        let mut info = n.info.clone();
        if let Some(v) = version {
            info.protocol_version = v.to_owned();
        }
        let meta = negotiate::request_meta(&self.opts, &info.protocol_version, level);
        *g = Some(Arc::new(Negotiated {
            info,
            meta: Some(meta),
        }));
    }

    /// Sends one request and waits for its response. `shared`: the modern
    /// `_meta` it carries (merged while it is written: the params are never
    /// copied, so a caller can send them again).
    fn request_raw(
        &self,
        method: &str,
        params: Option<&Value>,
        shared: Option<&SharedMeta>,
        opts: &CallOptions,
    ) -> Result<Value> {
        let timeout = opts.timeout.unwrap_or(self.opts.call_timeout);
        // A listen stream is ended the same way a call is abandoned.
        let cancellable = method == "tools/call" || method == "subscriptions/listen";
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let extra = MetaExtra {
            shared,
            progress_token: opts.on_progress.is_some().then_some(id),
        };
        let meta_is_bad = params
            .and_then(|p| crate::json::member(p, "_meta"))
            .is_some_and(|m| !m.is_object());
        if (shared.is_some() || extra.progress_token.is_some())
            && (params.is_some_and(|p| !p.is_object()) || meta_is_bad)
        {
            return Err(McpError::InvalidInput {
                server: self.name.clone(),
                message: format!("params of {method} must be an object (with an object _meta)"),
            });
        }
        let channel = EventChannel::new(opts.on_progress.is_some());
        let (tx, rx) = (channel.tx.clone(), &channel.rx);
        // Events of an earlier call on a reused channel are dropped.
        let mine = |(for_id, ev): Tagged| (for_id == id).then_some(ev);
        let alone = {
            let mut p = self.pending.lock();
            if self.dead.load(Ordering::Acquire) {
                drop(p);
                return Err(self.disconnected(method));
            }
            if p.len() >= self.opts.max_pending_requests {
                return Err(McpError::Backpressure {
                    server: self.name.clone(),
                    method: method.to_owned(),
                    message: format!("{} requests already in flight", p.len()),
                });
            }
            p.insert(
                id,
                Pending {
                    method: crate::methods::name(method),
                    tx,
                    wants_progress: extra.progress_token.is_some(),
                },
            );
            p.len() == 1
        };
        let mut guard = PendingGuard {
            peer: self,
            id,
            cancellable,
            armed: true,
        };
        let start = Instant::now();
        let how = Sending {
            alone,
            caller_only_waits: opts.cancel.is_none() && extra.progress_token.is_none(),
        };
        let sent = self
            .out
            .send_request(id, method, params, extra, how, start + timeout);
        if let Err(f) = sent {
            guard.armed = false;
            self.pending.lock().remove(&id);
            return Err(self.send_failure(method, f));
        }
        let sub = opts.cancel.as_ref().map(CancelToken::subscribe);
        let cancel_rx = sub.as_ref().map(|s| s.rx.clone()).unwrap_or_else(never);
        let mut deadline = start + timeout;
        // A lone call without a cancel token may read its own reply for a
        // moment (see `ClientOptions::caller_read_window`).
        let window = self.opts.caller_read_window;
        let mut inline_until = (alone && opts.cancel.is_none() && !window.is_zero())
            .then(|| (start + window).min(deadline));
        let outcome = |ev: CallEvent, guard: &mut PendingGuard| -> Option<Result<Value>> {
            match ev {
                CallEvent::Reply(r) => {
                    guard.armed = false;
                    Some(r.map_err(|e| McpError::Rpc {
                        server: self.name.clone(),
                        method: method.to_owned(),
                        code: e.code,
                        message: e.message,
                        data: e.data.map(Box::new),
                    }))
                }
                CallEvent::Failed(e) => {
                    guard.armed = false;
                    Some(Err(e))
                }
                _ => None,
            }
        };
        loop {
            let suspended = self.elicitations.load(Ordering::Acquire) > 0;
            let woke = if let Some(until) = inline_until.filter(|_| !suspended) {
                match self.out.read_inline(&|| !rx.is_empty(), until) {
                    InlineRead::Ready => match rx.try_recv().ok().and_then(mine) {
                        Some(ev) => Woke::Event(Some(ev)),
                        None => continue,
                    },
                    InlineRead::TimedOut if until >= deadline => {
                        inline_until = None;
                        Woke::Timer
                    }
                    InlineRead::TimedOut | InlineRead::Unavailable => {
                        inline_until = None;
                        continue;
                    }
                }
            } else if opts.cancel.is_none() {
                // The common case waits on the reply channel alone: a
                // `select!` would also have to unregister from it after
                // every wake-up, contending with the reader that is still
                // holding the channel's waker lock while it wakes us.
                let got = if suspended {
                    rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
                } else {
                    rx.recv_deadline(deadline)
                };
                match got {
                    Ok(ev) => match mine(ev) {
                        Some(ev) => Woke::Event(Some(ev)),
                        None => continue,
                    },
                    Err(RecvTimeoutError::Timeout) => Woke::Timer,
                    Err(RecvTimeoutError::Disconnected) => Woke::Event(None),
                }
            } else {
                let timer = if suspended { never() } else { at(deadline) };
                select! {
                    recv(rx) -> ev => match ev {
                        Ok(ev) => match mine(ev) {
                            Some(ev) => Woke::Event(Some(ev)),
                            None => continue,
                        },
                        Err(_) => Woke::Event(None),
                    },
                    recv(cancel_rx) -> _ => Woke::Cancel,
                    recv(timer) -> _ => Woke::Timer,
                }
            };
            match woke {
                Woke::Event(ev) => match ev {
                    Some(CallEvent::Progress(p)) => {
                        if let Some(cb) = &opts.on_progress {
                            cb(&p);
                        }
                        if opts.progress_resets_timeout {
                            deadline = Instant::now() + timeout;
                        }
                    }
                    Some(CallEvent::Rearm) => deadline = Instant::now() + timeout,
                    Some(ev) => {
                        if let Some(r) = outcome(ev, &mut guard) {
                            return r;
                        }
                    }
                    None => {
                        guard.armed = false;
                        return Err(self.disconnected(method));
                    }
                },
                Woke::Cancel => {
                    let reason = opts
                        .cancel
                        .as_ref()
                        .and_then(CancelToken::reason)
                        .unwrap_or_default();
                    if guard.fire(&reason) {
                        return Err(McpError::Cancelled {
                            server: self.name.clone(),
                            method: method.to_owned(),
                            reason,
                        });
                    }
                    // The reply won the race: it is in the channel.
                    while let Ok(ev) = rx.recv() {
                        if let Some(r) = mine(ev).and_then(|ev| outcome(ev, &mut guard)) {
                            return r;
                        }
                    }
                    return Err(self.disconnected(method));
                }
                Woke::Timer => {
                    if self.elicitations.load(Ordering::Acquire) > 0 {
                        continue;
                    }
                    if guard.fire(TIMEOUT_REASON) {
                        return Err(McpError::CallTimeout {
                            server: self.name.clone(),
                            method: method.to_owned(),
                            timeout,
                        });
                    }
                    while let Ok(ev) = rx.recv() {
                        if let Some(r) = mine(ev).and_then(|ev| outcome(ev, &mut guard)) {
                            return r;
                        }
                    }
                    return Err(self.disconnected(method));
                }
            }
        }
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        if !self.is_alive() {
            return Err(self.disconnected(method));
        }
        if self.era() == Some(Era::Modern)
            && matches!(
                method,
                "notifications/initialized" | "notifications/roots/list_changed"
            )
        {
            // Not part of the modern era: there is no session to confirm,
            // and roots are sent with the request that needs them.
            return Ok(());
        }
        let msg = jsonrpc::notification_value(method, params.as_ref());
        let deadline = Instant::now() + self.opts.call_timeout;
        // With nothing in flight there is nothing to batch it with: written
        // at once, as a lone request is (`notifications/initialized` then
        // costs no wake-up of the stdio I/O thread).
        let sent = if self.pending_count() == 0 {
            self.out.send_alone(&msg, deadline)
        } else {
            self.out.send(&msg, deadline)
        };
        sent.map_err(|f| self.send_failure(method, f))
    }

    // ---- lifecycle --------------------------------------------------------

    /// Agrees on the era and version with the server, once: the
    /// `server/discover` probe and/or the `initialize` handshake (see
    /// [`crate::era`]).
    pub(crate) fn initialize(&self) -> Result<InitializeInfo> {
        self.negotiation().map(|n| n.info.clone())
    }

    /// [`Peer::initialize`] without a copy of what was agreed: the
    /// connects only read it for their log line (a copy was nine
    /// allocations of every start).
    pub(crate) fn negotiation(&self) -> Result<Arc<Negotiated>> {
        if let Some(n) = self.init.read().as_ref() {
            return Ok(Arc::clone(n));
        }
        let _serial = self.init_lock.lock();
        if let Some(n) = self.init.read().as_ref() {
            return Ok(Arc::clone(n));
        }
        let n = Arc::new(self.negotiate()?);
        *self.init.write() = Some(Arc::clone(&n));
        if n.info.era == Era::Modern {
            self.listen_after_discover();
        }
        Ok(n)
    }

    /// Forgets the handshake so the next request performs it again (HTTP
    /// session recovery).
    #[allow(dead_code)]
    pub(crate) fn reset_initialization(&self) {
        *self.init.write() = None;
    }

    pub(crate) fn init_info(&self) -> Option<InitializeInfo> {
        self.init.read().as_ref().map(|n| n.info.clone())
    }

    /// `ping` in the legacy era; in the modern era, which has no `ping`,
    /// an uncached `server/discover` (as cheap, and what modern servers
    /// must answer).
    pub(crate) fn ping(&self) -> Result<()> {
        let opts = CallOptions::default().timeout(self.opts.ping_timeout);
        match self.negotiated() {
            Some(n) if n.meta.is_some() => self
                .request_raw("server/discover", None, n.meta.as_ref(), &opts)
                .map(|_| ()),
            _ => self.request_raw("ping", None, None, &opts).map(|_| ()),
        }
    }

    // ---- incoming -----------------------------------------------------------

    /// Decodes one frame and routes every message in it.
    pub(crate) fn dispatch_bytes(self: &Arc<Self>, bytes: &[u8]) {
        self.dispatch_frame(bytes, |f| jsonrpc::decode_each(bytes, f));
    }

    /// [`Peer::dispatch_bytes`] of a frame whose large strings were taken
    /// out as it arrived (stdio's reader).
    pub(crate) fn dispatch_taken(
        self: &Arc<Self>,
        bytes: &[u8],
        taken: Option<crate::large_strings::Taken>,
    ) {
        self.dispatch_frame(bytes, |f| jsonrpc::decode_each_taken(bytes, taken, f));
    }

    /// Decodes a frame with `decode` under this connection's tool-list cap
    /// and routes each message; a frame that does not decode is reported.
    fn dispatch_frame(
        self: &Arc<Self>,
        bytes: &[u8],
        decode: impl FnOnce(&mut dyn FnMut(Incoming)) -> Result<(), FrameError>,
    ) {
        let decoded = crate::jsonrpc_cap::with_cap(
            self.opts.max_tools,
            self.opts.max_tool_list_bytes,
            || decode(&mut |m| self.dispatch(m)),
        );
        if let Err(e) = decoded {
            self.malformed(bytes, e);
        }
    }

    fn malformed(&self, bytes: &[u8], e: FrameError) {
        if let Some(RequestId::Number(id)) = &e.id {
            // Bound first, so the pending lock is not held across the send.
            let entry = self.pending.lock().remove(id);
            if let Some(p) = entry {
                let _ = p.tx.send((
                    *id,
                    CallEvent::Failed(McpError::Protocol {
                        server: self.name.clone(),
                        method: Some(p.method.into_owned()),
                        message: e.message.clone(),
                    }),
                ));
                return;
            }
        }
        let shown: String = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned();
        ::log::warn!(target: "mcp_client", "[{}] ignoring malformed message ({}): {shown:?}", self.name, e.message);
        self.log_line(
            LogTag::Lifecycle,
            format!(
                "ignored a malformed message of {} bytes: {}",
                bytes.len(),
                e.message
            ),
        );
    }

    /// Routes one decoded message.
    pub(crate) fn dispatch(self: &Arc<Self>, msg: Incoming) {
        match msg {
            Incoming::Response { id, outcome } => self.route_response(id, outcome),
            Incoming::Notification { method, params } => self.route_notification(method, params),
            Incoming::Request { id, method, params } => {
                self.handle_server_request(id, method, params)
            }
        }
    }

    fn route_response(&self, id: RequestId, outcome: std::result::Result<Value, RpcError>) {
        // Ids match in type and value: this client sends numbers, and "3"
        // is not 3 (JSON-RPC ids are compared as they are).
        let key = match &id {
            RequestId::Number(n) => Some(*n),
            RequestId::String(_) => None,
        };
        let entry = key.and_then(|k| Some((k, self.pending.lock().remove(&k)?)));
        match entry {
            Some((k, p)) => {
                let _ = p.tx.send((k, CallEvent::Reply(outcome)));
            }
            None => ::log::debug!(
                target: "mcp_client",
                "[{}] response to unknown or already answered request {id} ignored",
                self.name
            ),
        }
    }

    fn route_notification(self: &Arc<Self>, method: String, params: Value) {
        match method.as_str() {
            "notifications/progress" => {
                let key = match params.get("progressToken") {
                    Some(Value::Number(n)) => n.as_i64(),
                    Some(Value::String(s)) => s.parse().ok(),
                    _ => None,
                };
                let tx = key.and_then(|k| {
                    self.pending
                        .lock()
                        .get(&k)
                        .filter(|p| p.wants_progress)
                        .map(|p| (k, p.tx.clone()))
                });
                let Some((k, tx)) = tx else {
                    ::log::debug!(target: "mcp_client", "[{}] progress for an unknown token ignored", self.name);
                    return;
                };
                let progress = Progress {
                    progress: params
                        .get("progress")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0),
                    total: params.get("total").and_then(Value::as_f64),
                    message: crate::json::opt_str(&params, "message"),
                };
                let _ = tx.send((k, CallEvent::Progress(progress)));
            }
            "notifications/message" => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .and_then(LogLevel::parse)
                    .unwrap_or(LogLevel::Info);
                let data = match params.get("data") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                let mut text = match params.get("logger").and_then(Value::as_str) {
                    Some(l) => format!("{l}: {data}"),
                    None => data,
                };
                // Cut like a stderr line: one record cannot grow a log file
                // (or the log channel) without bound.
                let max = crate::limits::MAX_STDERR_LINE;
                if text.len() > max {
                    let mut end = max;
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.truncate(end);
                    text.push_str(" […truncated]");
                }
                ::log::debug!(target: "mcp_client", "[{}] [{level}] {text}", self.name);
                self.log_line(LogTag::Level(level), text);
            }
            "notifications/cancelled" => {
                if let Some(id) = params.get("requestId").and_then(|v| match v {
                    Value::Number(n) => n.as_i64().map(RequestId::Number),
                    Value::String(s) => Some(RequestId::String(s.clone())),
                    _ => None,
                }) {
                    if self.server_requests.lock().remove(&id) {
                        ::log::debug!(target: "mcp_client", "[{}] server cancelled its request {id}", self.name);
                    }
                }
            }
            "notifications/subscriptions/acknowledged" => self.listen_acknowledged(&params),
            _ => {
                self.cache.lock().on_notification(&method, &params);
                if method == "notifications/tools/list_changed" && self.tools.read().is_some() {
                    self.refresh_tools_in_background();
                }
                match &self.opts.notifications {
                    Some(tx) => {
                        let _ = tx.send(McpNotification {
                            server: self.name.clone(),
                            method,
                            params,
                        });
                    }
                    None => {
                        ::log::debug!(target: "mcp_client", "[{}] notification {method} dropped (no channel)", self.name)
                    }
                }
            }
        }
    }
}

/// What a transport is to the public [`McpServerClient`] trait: a [`Peer`]
/// (which does everything protocol-level) and a way to close.
///
/// Every transport implements this and nothing else of the trait: the
/// blanket implementation below delegates the rest to the peer, so adding a
/// transport is one [`Outbound`] implementation, one `Connection` and one
/// arm of [`crate::connect`]. The trait is crate-private, so it is sealed: a
/// user's own `McpServerClient` (a test double, a proxy) is unaffected.
pub(crate) trait Connection: Send + Sync {
    /// The protocol peer this connection feeds.
    fn peer(&self) -> &Peer;
    /// Ends the connection (the transport's own shutdown).
    fn close_connection(&self) -> Result<()>;
    /// The transport this is.
    fn transport(&self) -> crate::McpTransport;
}

impl<C: Connection> crate::McpServerClient for C {
    fn name(&self) -> &str {
        &self.peer().name
    }

    fn initialize(&self) -> Result<crate::InitializeInfo> {
        self.peer().initialize()
    }

    fn list_tools(&self) -> Result<Vec<McpTool>> {
        self.peer().list_tools()
    }

    fn transport(&self) -> Option<crate::McpTransport> {
        Some(Connection::transport(self))
    }

    fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<crate::McpCallResult> {
        self.peer().call_tool(name, arguments, options)
    }

    fn ping(&self) -> Result<()> {
        self.peer().ping()
    }

    fn request(&self, method: &str, params: Option<Value>, options: &CallOptions) -> Result<Value> {
        self.peer().request(method, params, options)
    }

    fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        self.peer().notify(method, params)
    }

    fn close(&self) -> Result<()> {
        self.close_connection()
    }

    fn is_connected(&self) -> bool {
        self.peer().is_alive()
    }

    fn protocol_version(&self) -> Option<String> {
        self.peer().init_info().map(|i| i.protocol_version)
    }

    fn server_capabilities(&self) -> Option<crate::ServerCapabilities> {
        self.peer().init_info().map(|i| i.capabilities)
    }

    fn server_info(&self) -> Option<crate::Implementation> {
        self.peer().init_info().map(|i| i.server_info)
    }

    fn cached_tools(&self) -> Option<Arc<Vec<McpTool>>> {
        self.peer().cached_tools()
    }

    fn list_tools_shared(&self) -> Result<Arc<Vec<McpTool>>> {
        self.peer().refresh_tools()
    }
}

#[cfg(test)]
mod event_channel_tests {
    use super::*;
    use std::sync::{OnceLock, Weak};

    /// A transport that answers each request at once, from inside `send`
    /// (on the caller's thread, as an inline read does), with
    /// `{"answered": <its id>}`; first it sends `late` (an event for an
    /// earlier request) where the test put a sender.
    #[derive(Default)]
    struct Answering {
        peer: OnceLock<Weak<Peer>>,
        late: Mutex<Option<(Sender<Tagged>, Tagged)>>,
    }

    impl Outbound for Arc<Answering> {
        fn send(&self, msg: &Value, _: Instant) -> std::result::Result<(), SendFailure> {
            if let Some((tx, ev)) = self.late.lock().take() {
                tx.send(ev).unwrap();
            }
            let id = msg.get("id").and_then(Value::as_i64);
            if let (Some(id), Some(peer)) = (id, self.peer.get().and_then(Weak::upgrade)) {
                peer.route_response(RequestId::Number(id), Ok(json!({ "answered": id })));
            }
            Ok(())
        }
        fn try_send(&self, _: &Value) -> std::result::Result<(), SendFailure> {
            Ok(())
        }
    }

    fn kept_channel() -> (Sender<Tagged>, Receiver<Tagged>) {
        QUIET_CHANNEL.with(|c| {
            let kept = c.take().expect("the thread keeps its quiet channel");
            c.set(Some(kept.clone()));
            kept
        })
    }

    fn stale(id: i64) -> Tagged {
        (id, CallEvent::Reply(Ok(json!("stale"))))
    }

    #[test]
    fn late_events_of_ended_calls_never_reach_the_next() {
        // On a thread of its own (the channel is the thread's), bounded: a
        // call that waits for room to route its own reply never returns.
        let (done_tx, done_rx) = bounded(1);
        std::thread::spawn(move || {
            let out = Arc::new(Answering::default());
            let peer = Peer::new(
                "t".into(),
                ClientOptions::default(),
                Box::new(Arc::clone(&out)),
                json!({}),
                None,
            );
            out.peer.set(Arc::downgrade(&peer)).unwrap();
            let opts = CallOptions::new();
            let call = |m: &str, o: &CallOptions| peer.request_raw(m, None, None, o).unwrap();
            assert_eq!(call("x/1", &opts), json!({ "answered": 1 }));
            // A reply to call 1 arrives during call 2, in the same channel:
            // call 2 gets its own answer.
            let (tx, rx) = kept_channel();
            *out.late.lock() = Some((tx.clone(), stale(1)));
            assert_eq!(call("x/2", &opts), json!({ "answered": 2 }));
            // The same channel served both, and went back empty.
            let (_, again) = kept_channel();
            assert!(again.same_channel(&rx) && again.is_empty());
            // Late events that fill the channel between two calls: the
            // next call still has room for the reply it routes itself.
            for _ in 0..CALL_EVENT_CAPACITY_QUIET {
                tx.try_send(stale(2)).unwrap();
            }
            assert_eq!(call("x/3", &opts), json!({ "answered": 3 }));
            // A call that wants progress has a channel of its own.
            let progress = CallOptions::new().on_progress(|_| {});
            assert_eq!(call("x/4", &progress), json!({ "answered": 4 }));
            assert!(kept_channel().1.same_channel(&rx));
            done_tx.send(()).unwrap();
        });
        done_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("every call returned");
    }
}
