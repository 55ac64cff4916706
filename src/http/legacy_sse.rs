//! The HTTP+SSE transport of MCP 2024-11-05, deprecated since 2025-03-26 and
//! still spoken by many servers: the client opens a `GET` event stream, the
//! server's first event (`endpoint`) names the URL the client `POST`s its
//! messages to, and everything the server sends (responses, notifications,
//! its own requests) arrives on that one stream as `message` events.
//!
//! Threads, named after the server:
//!
//! * `mcp-<name>-sse`: holds the event stream and hands each message to
//!   the connection. When the stream ends the connection is dead: the
//!   transport ties the server's session to the stream, so the calls in
//!   flight fail at once with [`McpError::Disconnected`], and the manager
//!   (told as it is of a crashed stdio server) reconnects with its restart
//!   policy, which starts a new session.
//! * `mcp-<name>-notify`: short-lived, for a `notifications/cancelled` sent
//!   while a call is abandoned.
//!
//! Requests, notifications and replies to server requests are `POST`ed on
//! the calling thread and must be accepted with a `2xx`; the response comes
//! on the stream. The stream is opened by the first message (the
//! `initialize` handshake), and the endpoint must arrive within
//! [`SSE_ENDPOINT_TIMEOUT`]. The endpoint must be on the stream's origin:
//! a server cannot redirect the client's messages, and its credentials,
//! elsewhere. [`close`](crate::McpServerClient::close) interrupts the
//! stream's read ([`ureq::Agent::shutdown`]) and joins the thread.
//!
//! Only the legacy era exists on this transport (it predates 2026-07-28).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use serde_json::Value;
use ureq::{Agent, Body};

use super::{
    bearer_header, connection_agent, is_timeout, media_type, quote_redacted, read_to_quote,
    status_text,
};
use crate::client::ClientOptions;
use crate::config::{shown_url, McpServerConfig, McpTransport};
use crate::era::EraPreference;
use crate::error::{McpError, Result};
use crate::limits::{
    HTTP_ERROR_BODY_LIMIT, HTTP_NOTIFY_TIMEOUT, HTTP_THREAD_STACK, SSE_ENDPOINT_TIMEOUT,
};
use crate::peer::{client_capabilities, Outbound, Peer, SendFailure};
use crate::sse::{SseError, SseReader};

/// The state the connection, its stream thread and its senders share.
struct Shared {
    name: String,
    /// The event stream's URL, as configured.
    url: String,
    shown_url: String,
    agent: Agent,
    /// `Bearer <api_key>`, when configured.
    auth: Option<String>,
    /// `McpServerConfig::headers`, resolved: sent with every request.
    extra_headers: Vec<(String, String)>,
    /// The endpoint the server announced (absolute, same origin).
    endpoint: OnceLock<String>,
    /// Held while the stream is being opened, so one opening runs.
    opening: Mutex<()>,
    stream: Mutex<Option<JoinHandle<()>>>,
    closing: AtomicBool,
    peer: OnceLock<Weak<Peer>>,
    max_message_size: usize,
}

impl Shared {
    fn peer(&self) -> Option<Arc<Peer>> {
        self.peer.get().and_then(Weak::upgrade)
    }

    fn lifecycle(&self, text: impl Into<String>) {
        if let Some(p) = self.peer() {
            p.lifecycle(text);
        }
    }

    fn secrets(&self) -> Vec<String> {
        self.auth
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "))
            .into_iter()
            .chain(self.extra_headers.iter().map(|(_, v)| v.as_str()))
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn http_err(&self, status: Option<u16>, message: String) -> McpError {
        McpError::Http {
            server: self.name.clone(),
            method: None,
            status,
            message,
            source: None,
        }
    }

    fn transport_err(&self, verb: &str, url: &str, e: ureq::Error) -> McpError {
        let what = if is_timeout(&e) {
            "timed out"
        } else {
            "failed"
        };
        McpError::Http {
            server: self.name.clone(),
            method: None,
            status: None,
            message: format!("{verb} {} {what} ({e})", shown_url(url)),
            source: Some(Box::new(e)),
        }
    }

    /// A short excerpt of an error body, the api key redacted.
    fn quote_body(&self, body: Body) -> String {
        let secrets = self.secrets();
        quote_redacted(
            &read_to_quote(body, &secrets),
            &secrets,
            HTTP_ERROR_BODY_LIMIT,
        )
    }

    /// The endpoint, opening the stream first when it is not open yet
    /// (waiting for the `endpoint` event until `deadline`, at most
    /// [`SSE_ENDPOINT_TIMEOUT`]).
    fn endpoint(self: &Arc<Self>, deadline: Instant) -> std::result::Result<String, SendFailure> {
        if let Some(e) = self.endpoint.get() {
            return Ok(e.clone());
        }
        let _opening = self.opening.lock();
        if let Some(e) = self.endpoint.get() {
            return Ok(e.clone());
        }
        if self.closing.load(Ordering::Acquire) {
            return Err(SendFailure::Closed("closed by the client".into()));
        }
        if self.stream.lock().is_some() {
            // Opened once and ended: the session went with it.
            return Err(SendFailure::Closed(
                self.peer()
                    .map(|p| p.dead_reason())
                    .unwrap_or_else(|| "the event stream ended".into()),
            ));
        }
        let e = self.open_stream(deadline).map_err(SendFailure::Error)?;
        let _ = self.endpoint.set(e.clone());
        Ok(e)
    }

    fn open_stream(self: &Arc<Self>, deadline: Instant) -> Result<String> {
        let mut rb = self
            .agent
            .get(&self.url)
            .header("Accept", "text/event-stream")
            .header("Cache-Control", "no-cache");
        for (k, v) in &self.extra_headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        if let Some(a) = &self.auth {
            rb = rb.header("Authorization", a.as_str());
        }
        let resp = rb
            .call()
            .map_err(|e| self.transport_err("GET", &self.url, e))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let excerpt = self.quote_body(resp.into_body());
            let hint = if status == 401 {
                " (this client does OAuth over Streamable HTTP only; give an api key)"
            } else {
                ""
            };
            return Err(self.http_err(
                Some(status),
                format!(
                    "GET {} (the HTTP+SSE event stream) was answered {}{hint}: {excerpt}",
                    self.shown_url,
                    status_text(status)
                ),
            ));
        }
        let ct = media_type(&resp);
        if ct != "text/event-stream" {
            return Err(self.http_err(
                Some(status),
                format!(
                    "GET {} answered {ct:?}, not an event stream: this is no HTTP+SSE endpoint",
                    self.shown_url
                ),
            ));
        }
        let (tx, rx) = bounded::<std::result::Result<String, String>>(1);
        let shared = Arc::clone(self);
        let body = resp.into_body();
        let handle = crate::threads::spawn(
            format!("mcp-{}-sse", self.name),
            HTTP_THREAD_STACK,
            move || shared.read_stream(body, tx),
        )
        .map_err(|e| self.http_err(None, format!("cannot start the stream thread: {e}")))?;
        *self.stream.lock() = Some(handle);
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .min(SSE_ENDPOINT_TIMEOUT);
        match rx.recv_timeout(wait) {
            Ok(Ok(endpoint)) => {
                self.lifecycle(format!(
                    "HTTP+SSE stream open at {}; posting to {}",
                    self.shown_url,
                    shown_url(&endpoint)
                ));
                Ok(endpoint)
            }
            Ok(Err(why)) => Err(self.http_err(Some(status), why)),
            Err(RecvTimeoutError::Timeout) => {
                self.stop_stream();
                Err(self.http_err(
                    Some(status),
                    format!(
                        "the event stream of {} sent no endpoint event within {} s",
                        self.shown_url,
                        wait.as_secs_f32()
                    ),
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.http_err(
                Some(status),
                "the event stream thread ended before the endpoint".into(),
            )),
        }
    }

    /// The stream thread: the endpoint first, then every message.
    fn read_stream(&self, body: Body, endpoint_tx: Sender<std::result::Result<String, String>>) {
        let mut reader = SseReader::new(body.into_reader(), self.max_message_size);
        let mut endpoint_tx = Some(endpoint_tx);
        let why = loop {
            match reader.next_event() {
                Ok(Some(ev)) if ev.event == "endpoint" => {
                    let announced = ev.data_str().trim().to_owned();
                    match resolve_endpoint(&self.url, &announced) {
                        Ok(url) => match endpoint_tx.take() {
                            Some(tx) => {
                                let _ = tx.send(Ok(url));
                            }
                            None => self.lifecycle(format!(
                                "a second endpoint event ({}) was ignored",
                                shown_url(&url)
                            )),
                        },
                        Err(why) => {
                            if let Some(tx) = endpoint_tx.take() {
                                let _ = tx.send(Err(why.clone()));
                            }
                            break why;
                        }
                    }
                }
                Ok(Some(ev)) if ev.event == "message" => match self.peer() {
                    Some(p) => p.dispatch_bytes(&ev.data),
                    None => break "the connection is gone".into(),
                },
                Ok(Some(ev)) => {
                    ::log::debug!(target: "mcp_client", "[{}] SSE event {:?} ignored", self.name, ev.event)
                }
                Ok(None) => break "the server ended the event stream".into(),
                Err(SseError::EventTooLarge { limit }) => {
                    // A message cannot be skipped safely (a response would
                    // be lost): the connection ends, as over stdio.
                    let why = format!("an event larger than {limit} bytes");
                    if let Some(p) = self.peer() {
                        p.fail_all_with(&why, |_| McpError::MessageTooLarge {
                            server: self.name.clone(),
                            limit,
                        });
                    }
                    break why;
                }
                Err(SseError::Io(e)) => break format!("reading the event stream failed: {e}"),
            }
        };
        if let Some(tx) = endpoint_tx.take() {
            let _ = tx.send(Err(format!(
                "{why} before its endpoint event (is {} an HTTP+SSE endpoint?)",
                self.shown_url
            )));
        }
        if !self.closing.load(Ordering::Acquire) {
            self.lifecycle(format!("HTTP+SSE stream ended: {why}"));
            if let Some(p) = self.peer() {
                let reason = format!("the HTTP+SSE event stream ended: {why}");
                p.fail_all(&reason);
                // The session went with the stream: whoever supervises
                // the connection (the manager) starts a new one.
                if let Some(tx) = &p.opts.disconnects {
                    let _ = tx.try_send(crate::client::Disconnect {
                        server: self.name.clone(),
                        reason,
                    });
                }
            }
        }
    }

    /// Interrupts the stream's read and joins its thread.
    fn stop_stream(&self) {
        self.closing.store(true, Ordering::Release);
        // Interrupts every read and request of this agent in flight: the
        // stream thread's read fails at once.
        self.agent.clone().shutdown();
        let handle = self.stream.lock().take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// POSTs one message to the endpoint; accepted with any `2xx`.
    fn post(
        self: &Arc<Self>,
        msg: &Value,
        deadline: Instant,
    ) -> std::result::Result<(), SendFailure> {
        if self.closing.load(Ordering::Acquire) {
            return Err(SendFailure::Closed("closed by the client".into()));
        }
        let endpoint = self.endpoint(deadline)?;
        let body = serde_json::to_vec(msg).map_err(|e| {
            SendFailure::Error(self.http_err(None, format!("cannot encode the message: {e}")))
        })?;
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let mut rb = self
            .agent
            .post(&endpoint)
            .header("Content-Type", "application/json")
            .config()
            .timeout_global(Some(left))
            .build();
        for (k, v) in &self.extra_headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        if let Some(a) = &self.auth {
            rb = rb.header("Authorization", a.as_str());
        }
        let resp = rb
            .send(&body[..])
            .map_err(|e| SendFailure::Error(self.transport_err("POST", &endpoint, e)))?;
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(());
        }
        let excerpt = self.quote_body(resp.into_body());
        Err(SendFailure::Error(self.http_err(
            Some(status),
            format!(
                "POST {} was answered {}: {excerpt}",
                shown_url(&endpoint),
                status_text(status)
            ),
        )))
    }
}

/// The endpoint an `endpoint` event names, made absolute against the
/// stream's URL; refused unless it is on the stream's origin.
fn resolve_endpoint(stream_url: &str, announced: &str) -> std::result::Result<String, String> {
    if announced.is_empty() {
        return Err("the endpoint event is empty".into());
    }
    let (origin, path) = split_origin(stream_url).ok_or("the stream URL has no origin")?;
    let url = if announced.starts_with("http://") || announced.starts_with("https://") {
        announced.to_owned()
    } else if announced.starts_with("//") {
        format!("{}:{announced}", origin.split(':').next().unwrap_or("http"))
    } else if announced.starts_with('/') {
        format!("{origin}{announced}")
    } else {
        // Relative to the stream's directory.
        let dir = match path.split(['?', '#']).next().unwrap_or("").rfind('/') {
            Some(i) => &path[..=i],
            None => "/",
        };
        format!("{origin}{dir}{announced}")
    };
    let theirs = split_origin(&url).map(|(o, _)| o);
    if theirs.as_deref().map(normal_origin) != Some(normal_origin(&origin)) {
        return Err(format!(
            "the server announced the endpoint {}, which is not on the stream's origin {origin}: refused (the client's messages and credentials must not go elsewhere)",
            shown_url(&url)
        ));
    }
    if url.chars().any(char::is_control) {
        return Err("the endpoint contains control characters".into());
    }
    Ok(url)
}

/// `scheme://authority` (lowercased, without user info) and the rest.
fn split_origin(url: &str) -> Option<(String, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = rest[..end].rsplit('@').next()?;
    if authority.is_empty() {
        return None;
    }
    Some((
        format!(
            "{}://{}",
            scheme.to_ascii_lowercase(),
            authority.to_ascii_lowercase()
        ),
        &rest[end..],
    ))
}

/// An origin with its scheme's default port made explicit.
fn normal_origin(origin: &str) -> String {
    let (scheme, host) = origin.split_once("://").unwrap_or(("", origin));
    let has_port = host
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && !host.ends_with(']');
    if has_port {
        origin.to_owned()
    } else {
        let port = if scheme == "https" { 443 } else { 80 };
        format!("{scheme}://{host}:{port}")
    }
}

struct SseOutbound {
    shared: Arc<Shared>,
}

impl Outbound for SseOutbound {
    fn send(&self, msg: &Value, deadline: Instant) -> std::result::Result<(), SendFailure> {
        self.shared.post(msg, deadline)
    }

    fn try_send(&self, msg: &Value) -> std::result::Result<(), SendFailure> {
        // From Drop (an abandoned call's notifications/cancelled): never
        // block the caller; a short-lived thread posts it.
        if self.shared.closing.load(Ordering::Acquire) || self.shared.endpoint.get().is_none() {
            return Err(SendFailure::Closed("not connected".into()));
        }
        let shared = Arc::clone(&self.shared);
        let msg = msg.clone();
        crate::threads::spawn(
            format!("mcp-{}-notify", self.shared.name),
            HTTP_THREAD_STACK,
            move || {
                if let Err(e) = shared.post(&msg, Instant::now() + HTTP_NOTIFY_TIMEOUT) {
                    ::log::debug!(target: "mcp_client", "[{}] {e:?}", shared.name);
                }
            },
        )
        .map(|_| ())
        .map_err(|e| SendFailure::Closed(format!("cannot start a thread: {e}")))
    }
}

/// A connection to a server speaking the HTTP+SSE transport of MCP
/// 2024-11-05 (`transport = "sse"`; `http` falls back to it when Streamable
/// HTTP is refused, see [`connect`](crate::connect)).
///
/// ```no_run
/// use skald_mcp::{ClientOptions, McpServerClient, McpServerConfig, McpSseServer};
/// let cfg = McpServerConfig::sse("old", "http://127.0.0.1:8000/sse");
/// let server = McpSseServer::connect(&cfg, ClientOptions::default())?;
/// for tool in server.list_tools()? {
///     println!("{}", tool.name);
/// }
/// server.close()?;
/// # Ok::<(), skald_mcp::McpError>(())
/// ```
pub struct McpSseServer {
    peer: Arc<Peer>,
    shared: Arc<Shared>,
    /// Held for the whole of `close()`: a second caller waits for it.
    close_lock: Mutex<()>,
}

impl std::fmt::Debug for McpSseServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSseServer")
            .field("name", &self.peer.name)
            .field("url", &self.shared.shown_url)
            .field(
                "endpoint",
                &self.shared.endpoint.get().map(|e| shown_url(e)),
            )
            .field("connected", &self.peer.is_alive())
            .finish()
    }
}

impl McpSseServer {
    /// Opens the event stream and performs the `initialize` handshake,
    /// bounded by [`ClientOptions::start_timeout`].
    pub fn connect(config: &McpServerConfig, options: ClientOptions) -> Result<McpSseServer> {
        let server = McpSseServer::new(config, options)?;
        match server.peer.negotiation() {
            Ok(n) => {
                let info = &n.info;
                server.peer.lifecycle(format!(
                    "connected to {} over HTTP+SSE (protocol {}, server {} {})",
                    server.shared.shown_url,
                    info.protocol_version,
                    info.server_info.name,
                    info.server_info.version
                ));
                Ok(server)
            }
            Err(e) => {
                server.peer.lifecycle(format!("failed to start: {e}"));
                server.shutdown();
                Err(e)
            }
        }
    }

    /// Prepares the connection; nothing is sent until the first request
    /// (or [`McpServerClient::initialize`](crate::McpServerClient::initialize)),
    /// which opens the event stream. `config.transport` may be `sse` or
    /// `http` (for a caller that knows the server speaks only HTTP+SSE).
    pub fn new(config: &McpServerConfig, mut options: ClientOptions) -> Result<McpSseServer> {
        config.validate()?;
        let name = config.name.clone();
        let config_err = |message: String| McpError::Config {
            server: name.clone(),
            message,
        };
        if config.transport == McpTransport::Stdio {
            return Err(config_err(
                "McpSseServer needs transport sse (or http), not stdio".into(),
            ));
        }
        match options.era {
            EraPreference::Modern => {
                return Err(config_err(
                    "the HTTP+SSE transport (2024-11-05) has no 2026-07-28 era; use transport http"
                        .into(),
                ))
            }
            EraPreference::Auto | EraPreference::Legacy => options.era = EraPreference::Legacy,
        }
        // OAuth belongs to Streamable HTTP (the 2024-11-05 transport
        // predates it): options that carry it (the CLI's, the manager's
        // for every HTTP server) are accepted and unused, and a `401` says
        // so.
        options.oauth = None;
        let url = config.url.clone().unwrap_or_default();
        let auth = bearer_header(config)?;
        let extra_headers = config.resolved_headers()?;
        // No per-read timeout: the event stream may stay silent between
        // events for as long as the server likes.
        let agent = connection_agent(&options, None);
        let shared = Arc::new(Shared {
            name: name.clone(),
            shown_url: shown_url(&url),
            url,
            agent,
            auth,
            extra_headers,
            endpoint: OnceLock::new(),
            opening: Mutex::new(()),
            stream: Mutex::new(None),
            closing: AtomicBool::new(false),
            peer: OnceLock::new(),
            max_message_size: options.max_message_size,
        });
        let caps = client_capabilities(&options, true);
        let peer = Peer::new(
            name,
            options,
            Box::new(SseOutbound {
                shared: Arc::clone(&shared),
            }),
            caps,
            None,
        );
        let _ = shared.peer.set(Arc::downgrade(&peer));
        Ok(McpSseServer {
            peer,
            shared,
            close_lock: Mutex::new(()),
        })
    }

    /// The event stream's URL, as configured.
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// How many requests are waiting for a response.
    pub fn pending_requests(&self) -> usize {
        self.peer.pending_count()
    }

    /// The endpoint the server announced, once the stream is open.
    pub fn endpoint(&self) -> Option<&str> {
        self.shared.endpoint.get().map(String::as_str)
    }

    fn shutdown(&self) {
        let _g = self.close_lock.lock();
        if self.shared.closing.load(Ordering::Acquire) && self.shared.stream.lock().is_none() {
            return;
        }
        self.peer.fail_all("closed by the client");
        self.shared.stop_stream();
        self.peer.lifecycle("closed");
    }
}

impl Drop for McpSseServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl crate::peer::Connection for McpSseServer {
    fn peer(&self) -> &Peer {
        &self.peer
    }

    fn transport(&self) -> crate::McpTransport {
        crate::McpTransport::Sse
    }

    fn close_connection(&self) -> Result<()> {
        self.shutdown();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_stream_and_stay_on_its_origin() {
        let base = "http://127.0.0.1:8000/sse";
        assert_eq!(
            resolve_endpoint(base, "/messages/?session_id=ab").unwrap(),
            "http://127.0.0.1:8000/messages/?session_id=ab"
        );
        assert_eq!(
            resolve_endpoint(base, "messages?s=1").unwrap(),
            "http://127.0.0.1:8000/messages?s=1"
        );
        assert_eq!(
            resolve_endpoint("http://h/a/b/sse", "msg").unwrap(),
            "http://h/a/b/msg"
        );
        assert_eq!(
            resolve_endpoint(base, "http://127.0.0.1:8000/m").unwrap(),
            "http://127.0.0.1:8000/m"
        );
        assert_eq!(
            resolve_endpoint("https://h/sse", "https://H:443/m").unwrap(),
            "https://H:443/m"
        );
        for bad in [
            "http://evil.example/m",
            "http://127.0.0.1:8001/m",
            "https://127.0.0.1:8000/m",
            "//evil.example/m",
            "",
        ] {
            assert!(resolve_endpoint(base, bad).is_err(), "{bad:?} accepted");
        }
        assert!(resolve_endpoint(base, "/m\nx").is_err());
    }
}
