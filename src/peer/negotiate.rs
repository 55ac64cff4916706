//! Agreeing on the era: the `server/discover` probe, the `initialize`
//! handshake, and the race between them on a silent stdio server.
//!
//! The decision rules live in [`crate::era`]; this is the part that sends
//! and waits. On stdio the probe may go unanswered (a legacy server that
//! ignores unknown requests before `initialize`), so after
//! [`ClientOptions::discover_timeout`](crate::ClientOptions::discover_timeout)
//! `initialize` is sent as well and whichever is answered first decides:
//! a slow modern server is not mistaken for a legacy one.

use std::time::Instant;

use crossbeam_channel::{at, bounded, never, select, Receiver};
use serde_json::{json, Map, Value};

use super::{parse_initialize, CallEvent, InlineRead, Negotiated, Peer, Pending};
use crate::client::{
    CallOptions, ClientOptions, Implementation, InitializeInfo, ServerCapabilities,
};
use crate::era::{self, Era, Plan, Verdict};
use crate::error::{McpError, Result};
use crate::jsonrpc::{RpcError, SharedMeta};
use crate::limits::{MODERN_PROTOCOL_VERSIONS, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};

/// The capabilities a modern request declares: elicitation, sampling and
/// roots when their handler is installed (they are answered through
/// `InputRequiredResult` rounds in this era), and the extensions map.
pub(crate) fn modern_capabilities(opts: &ClientOptions) -> Value {
    let mut caps = Map::new();
    for kind in super::handlers::InputKind::ALL {
        if let Some((name, v)) = kind.capability(opts, true) {
            caps.insert(name.into(), v);
        }
    }
    // The tasks extension: the client polls any task handle a server
    // answers a `tools/call` with (`crate::task`).
    caps.insert(
        "extensions".into(),
        json!({crate::model::keys::TASKS_EXTENSION: {}}),
    );
    Value::Object(caps)
}

/// The `_meta` every modern request of a connection with `opts` carries.
pub(crate) fn request_meta(
    opts: &ClientOptions,
    version: &str,
    log_level: Option<crate::log::LogLevel>,
) -> SharedMeta {
    let caps = modern_capabilities(opts);
    let info = json!({"name": opts.client_name, "version": opts.client_version});
    SharedMeta::new(era::request_meta(version, &caps, &info, log_level))
}

/// A request whose answer is awaited by hand.
struct Started {
    id: i64,
    rx: Receiver<super::Tagged>,
}

/// How a probe's answer is judged: what the caller does next.
enum Next {
    Done(Negotiated),
    /// Probe again with this version.
    Retry(String),
    /// Fall back to `initialize` with this version (and why).
    Legacy(String, String),
    Fail(McpError),
}

impl Peer {
    /// Runs the plan [`era::plan`] makes for this connection.
    pub(super) fn negotiate(&self) -> Result<Negotiated> {
        let deadline = Instant::now() + self.opts.start_timeout;
        let prefs = era::Prefs {
            era: self.opts.era,
            protocol_version: self.opts.protocol_version.as_deref(),
            hint: self.opts.era_hint,
        };
        let plan = era::plan(prefs, self.origin.as_deref());
        // Only what `Auto` found is remembered: a pinned era says what the
        // user asked for, not what the server prefers (a dual-era server
        // pinned to legacy once must still be met in the modern era later).
        let learns = matches!(
            plan,
            Plan::Legacy { fallback: true, .. } | Plan::Modern { fallback: true, .. }
        );
        let n = match plan {
            Plan::Legacy { version, fallback } => match self.handshake(&version, deadline) {
                Err(e @ McpError::Rpc { .. }) if fallback => {
                    self.lifecycle(format!(
                        "initialize was refused ({e}); probing for a modern server"
                    ));
                    self.probe(MODERN_PROTOCOL_VERSIONS[0], false, deadline)
                }
                other => other,
            },
            Plan::Modern { version, fallback } => self.probe(&version, fallback, deadline),
        }
        .map_err(|e| match e {
            McpError::CallTimeout { server, .. } => McpError::StartTimeout {
                server,
                timeout: self.opts.start_timeout,
            },
            other => other,
        })?;
        if let (true, Some(o)) = (learns, &self.origin) {
            era::remember(o, n.info.era);
        }
        Ok(n)
    }

    /// Sends a request without waiting for it.
    fn begin(&self, method: &str, params: Value, deadline: Instant) -> Result<Started> {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = bounded(super::CALL_EVENT_CAPACITY_QUIET);
        let alone = {
            let mut p = self.pending.lock();
            if !self.is_alive() {
                drop(p);
                return Err(self.disconnected(method));
            }
            p.insert(
                id,
                Pending {
                    method: crate::methods::name(method),
                    tx,
                    wants_progress: false,
                },
            );
            p.len() == 1
        };
        // The probe (or a handshake) alone in flight is written at once on
        // this thread, as a lone call is: no wake-up of the stdio I/O
        // thread to write it.
        let how = super::Sending {
            alone,
            ..super::Sending::default()
        };
        if let Err(f) = self.out.send_request(
            id,
            method,
            Some(&params),
            crate::jsonrpc::MetaExtra::default(),
            how,
            deadline,
        ) {
            self.pending.lock().remove(&id);
            return Err(self.send_failure(method, f));
        }
        Ok(Started { id, rx })
    }

    /// Stops waiting for request `id` (a late answer is then ignored).
    fn abandon(&self, id: i64) {
        self.pending.lock().remove(&id);
    }

    /// The next answer on `rx` (progress and re-arms skipped) until
    /// `until`; `None` on timeout.
    ///
    /// The probe is the connection's only request, so (as a lone call
    /// does, see `ClientOptions::caller_read_window`) it first reads its
    /// answer on this thread where the transport allows: a hand-off
    /// through the reader thread costs a thread wake-up on the answer's
    /// path, once per start.
    fn answer(
        &self,
        rx: &Receiver<super::Tagged>,
        until: Instant,
    ) -> Option<std::result::Result<Value, Answer>> {
        let window = self.opts.caller_read_window;
        if !window.is_zero() {
            let inline_until = (Instant::now() + window).min(until);
            // Ready: an event is queued; progress and re-arms are skipped
            // and the read goes on. TimedOut/Unavailable: fall back to the
            // channel below, which still sees anything that arrives.
            while let InlineRead::Ready = self.out.read_inline(&|| !rx.is_empty(), inline_until) {
                if let Some(a) = rx.try_recv().ok().and_then(Self::as_answer) {
                    return Some(a);
                }
            }
        }
        loop {
            match rx.recv_deadline(until) {
                Ok(ev) => {
                    if let Some(a) = Self::as_answer(ev) {
                        return Some(a);
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => return None,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Some(Err(Answer::Failed(McpError::Disconnected {
                        server: self.name.clone(),
                        method: Some("server/discover".into()),
                        reason: self.dead_reason(),
                    })))
                }
            }
        }
    }

    fn as_answer((_, ev): super::Tagged) -> Option<std::result::Result<Value, Answer>> {
        match ev {
            CallEvent::Reply(Ok(mut v)) => {
                // As the server sent it: the reader's compact forms are
                // for `tools/list` and `tools/call`.
                crate::jsonrpc_cap::restore(&mut v);
                Some(Ok(v))
            }
            CallEvent::Reply(Err(e)) => Some(Err(Answer::Rpc(e))),
            CallEvent::Failed(e) => Some(Err(Answer::Failed(e))),
            CallEvent::Progress(_) | CallEvent::Rearm => None,
        }
    }

    /// The `server/discover` request of the probe.
    fn discover_params(&self, version: &str) -> Value {
        let meta = request_meta(&self.opts, version, *self.log_level.lock());
        let extra = crate::jsonrpc::MetaExtra {
            shared: Some(&meta),
            progress_token: None,
        };
        crate::jsonrpc::params_value(None, extra).unwrap_or(Value::Null)
    }

    /// Probes with `server/discover`; `fallback`: a legacy answer leads to
    /// `initialize` instead of an error.
    fn probe(&self, version: &str, fallback: bool, deadline: Instant) -> Result<Negotiated> {
        let mut version = version.to_owned();
        let mut retried = false;
        loop {
            let d = self.begin("server/discover", self.discover_params(&version), deadline)?;
            let race = fallback && !self.out.answers_every_request();
            let first_wait = if race {
                (Instant::now() + self.opts.discover_timeout).min(deadline)
            } else {
                deadline
            };
            let next = match self.answer(&d.rx, first_wait) {
                Some(a) => self.judge(a, &version, fallback),
                None if race && Instant::now() < deadline => {
                    match self.race(d, &version, deadline)? {
                        Raced::Done(n) => return Ok(*n),
                        Raced::Retry(v) => Next::Retry(v),
                    }
                }
                None => {
                    self.abandon(d.id);
                    Next::Fail(McpError::CallTimeout {
                        server: self.name.clone(),
                        method: "server/discover".into(),
                        timeout: self.opts.start_timeout,
                    })
                }
            };
            match next {
                Next::Done(n) => return Ok(n),
                Next::Retry(v) if !retried => {
                    self.lifecycle(format!(
                        "the server does not support protocol {version}; asking again with {v}"
                    ));
                    retried = true;
                    version = v;
                }
                Next::Retry(v) => {
                    return Err(self.protocol_error(format!(
                        "the server refused protocol {version}, then {v}"
                    )))
                }
                Next::Legacy(v, why) => {
                    self.lifecycle(format!("{why}: a legacy server; sending initialize"));
                    return self.handshake(&v, deadline);
                }
                Next::Fail(e) => return Err(e),
            }
        }
    }

    /// After the probe went unanswered for the discover timeout: sends
    /// `initialize` too and takes whichever answer decides first.
    fn race(&self, d: Started, version: &str, deadline: Instant) -> Result<Raced> {
        self.lifecycle(format!(
            "no answer to server/discover within {} ms; sending initialize as well",
            self.opts.discover_timeout.as_millis()
        ));
        let i = match self.begin(
            "initialize",
            self.initialize_params(PROTOCOL_VERSION),
            deadline,
        ) {
            Ok(i) => i,
            Err(e) => {
                self.abandon(d.id);
                return Err(e);
            }
        };
        let mut discover_rx = Some(d.rx.clone());
        let mut init_rx = Some(i.rx.clone());
        let timer = at(deadline);
        let mut init_error: Option<McpError> = None;
        loop {
            let dr = discover_rx.clone().unwrap_or_else(never);
            let ir = init_rx.clone().unwrap_or_else(never);
            select! {
                recv(dr) -> ev => {
                    let a = match ev {
                        Ok(ev) => match Self::as_answer(ev) { Some(a) => a, None => continue },
                        Err(_) => Err(Answer::Failed(self.disconnected("server/discover"))),
                    };
                    discover_rx = None;
                    match self.judge(a, version, true) {
                        Next::Done(n) => {
                            self.abandon(i.id);
                            self.lifecycle("server/discover was answered after all: a modern server");
                            return Ok(Raced::Done(Box::new(n)));
                        }
                        Next::Retry(v) => {
                            self.abandon(i.id);
                            return Ok(Raced::Retry(v));
                        }
                        Next::Fail(e) if init_rx.is_none() => return Err(init_error.unwrap_or(e)),
                        Next::Fail(e @ McpError::Disconnected { .. }) => {
                            self.abandon(i.id);
                            return Err(e);
                        }
                        // Legacy: initialize decides.
                        _ if init_rx.is_none() => {
                            return Err(init_error.unwrap_or_else(|| self.disconnected("initialize")))
                        }
                        _ => {}
                    }
                }
                recv(ir) -> ev => {
                    let a = match ev {
                        Ok(ev) => match Self::as_answer(ev) { Some(a) => a, None => continue },
                        Err(_) => Err(Answer::Failed(self.disconnected("initialize"))),
                    };
                    init_rx = None;
                    match a {
                        Ok(result) => {
                            self.abandon(d.id);
                            return self
                                .finish_handshake(PROTOCOL_VERSION, &result)
                                .map(|n| Raced::Done(Box::new(n)));
                        }
                        Err(e) => {
                            let e = self.answer_error("initialize", e);
                            if discover_rx.is_none() || e.is_fatal() {
                                self.abandon(d.id);
                                return Err(e);
                            }
                            // A modern server refuses initialize: the probe's
                            // answer is still to come.
                            init_error = Some(e);
                        }
                    }
                }
                recv(timer) -> _ => {
                    self.abandon(d.id);
                    self.abandon(i.id);
                    return Err(McpError::StartTimeout {
                        server: self.name.clone(),
                        timeout: self.opts.start_timeout,
                    });
                }
            }
        }
    }

    /// What a probe's answer means for a connection that may (`fallback`)
    /// or may not fall back to `initialize`.
    fn judge(
        &self,
        a: std::result::Result<Value, Answer>,
        requested: &str,
        fallback: bool,
    ) -> Next {
        let verdict = match a {
            Ok(v) => era::classify(Ok(&v), requested),
            Err(Answer::Rpc(e)) => era::classify(
                Err(Some((e.code, e.message.as_str(), e.data.as_ref()))),
                requested,
            ),
            // An HTTP status without a JSON-RPC body: a legacy endpoint.
            Err(Answer::Failed(McpError::Http {
                status: Some(s), ..
            })) => era::classify(Err(None), requested).with_reason(format!("HTTP {s}")),
            Err(Answer::Failed(e)) => return Next::Fail(e),
        };
        match verdict {
            Verdict::Modern { version, discover } => {
                let info = InitializeInfo {
                    era: Era::Modern,
                    protocol_version: version.clone(),
                    capabilities: ServerCapabilities(Value::Object(discover.capabilities.clone())),
                    server_info: discover.server_info().unwrap_or(Implementation::default()),
                    instructions: discover.instructions.clone(),
                };
                let meta = request_meta(&self.opts, &version, *self.log_level.lock());
                Next::Done(Negotiated {
                    info,
                    meta: Some(meta),
                })
            }
            Verdict::Retry { version } => Next::Retry(version),
            Verdict::ModernRefused { supported, message } => {
                if supported.is_empty() {
                    Next::Fail(self.protocol_error(message))
                } else {
                    Next::Fail(McpError::UnsupportedProtocolVersion {
                        server: self.name.clone(),
                        method: "server/discover".into(),
                        detail: Box::new(crate::error::VersionMismatch {
                            requested: requested.to_owned(),
                            supported,
                            message,
                        }),
                    })
                }
            }
            Verdict::LegacyVersion(v) => Next::Legacy(
                v.clone(),
                format!("the server supports only legacy versions (best: {v})"),
            ),
            Verdict::Legacy(why) if fallback => Next::Legacy(PROTOCOL_VERSION.to_owned(), why),
            Verdict::Legacy(why) => Next::Fail(self.protocol_error(format!(
                "the server does not speak the modern era ({}): {why}",
                MODERN_PROTOCOL_VERSIONS.join(", ")
            ))),
        }
    }

    fn protocol_error(&self, message: String) -> McpError {
        McpError::Protocol {
            server: self.name.clone(),
            method: Some("server/discover".into()),
            message,
        }
    }

    fn answer_error(&self, method: &str, a: Answer) -> McpError {
        match a {
            Answer::Rpc(e) => McpError::Rpc {
                server: self.name.clone(),
                method: method.to_owned(),
                code: e.code,
                message: e.message,
                data: e.data.map(Box::new),
            },
            Answer::Failed(e) => e,
        }
    }

    fn initialize_params(&self, version: &str) -> Value {
        json!({
            "protocolVersion": version,
            "capabilities": self.client_capabilities,
            "clientInfo": {"name": self.opts.client_name, "version": self.opts.client_version},
        })
    }

    /// The legacy `initialize` handshake with `version`.
    fn handshake(&self, version: &str, deadline: Instant) -> Result<Negotiated> {
        let timeout = deadline.saturating_duration_since(Instant::now());
        let opts = CallOptions::default().timeout(timeout.max(std::time::Duration::from_millis(1)));
        let result = self.request_raw(
            "initialize",
            Some(&self.initialize_params(version)),
            None,
            &opts,
        )?;
        self.finish_handshake(version, &result)
    }

    /// Reads the answer to `initialize` and confirms it.
    fn finish_handshake(&self, requested: &str, result: &Value) -> Result<Negotiated> {
        let info = parse_initialize(&self.name, result)?;
        if info.protocol_version != requested {
            // An older version this client speaks is ordinary negotiation
            // (said at debug level, or it would be printed on every call to
            // such a server); only a version it does not know is a warning.
            if SUPPORTED_PROTOCOL_VERSIONS.contains(&info.protocol_version.as_str()) {
                ::log::debug!(
                    target: "mcp_client",
                    "[{}] server negotiated protocol {} instead of {requested}",
                    self.name,
                    info.protocol_version
                );
            } else {
                ::log::warn!(
                    target: "mcp_client",
                    "[{}] server negotiated protocol {} instead of {requested} (a version this client does not know); proceeding",
                    self.name,
                    info.protocol_version
                );
            }
        }
        self.notify("notifications/initialized", None)?;
        Ok(Negotiated { info, meta: None })
    }
}

/// What became of a request besides a result.
enum Answer {
    Rpc(RpcError),
    Failed(McpError),
}

/// How a race ended.
enum Raced {
    Done(Box<Negotiated>),
    Retry(String),
}

impl Verdict {
    /// A legacy verdict with a better reason.
    fn with_reason(self, reason: String) -> Verdict {
        match self {
            Verdict::Legacy(_) => Verdict::Legacy(format!(
                "server/discover was refused with {reason} and no modern error"
            )),
            other => other,
        }
    }
}
