//! The Streamable HTTP transport (MCP 2025-11-25 and 2026-07-28): every JSON-RPC message the
//! client sends is one `POST` to the server's endpoint; the answer to a
//! request is either one JSON body or a Server-Sent Events stream that
//! carries the server's notifications and requests before the response.
//!
//! A request whose caller does nothing but wait for the answer (no cancel
//! token, no progress callback, no elicitation or sampling handler on the
//! connection) is posted on the caller's own thread, over a pooled
//! kept-alive connection, and bounded by its deadline: no thread hand-off
//! on the common path, alone or with other calls in flight.
//!
//! Threads, all named after the server:
//!
//! * `mcp-<name>-post`: for the other requests, a pool of long-lived threads, one per request in
//!   flight (at most [`HTTP_MAX_CONCURRENT_POSTS`]); a request goes to an
//!   idle one, so it costs no thread start, and a thread idle for
//!   [`HTTP_POST_THREAD_IDLE`] ends. It posts the request and reads the
//!   answer incrementally, handing each message to the connection as it
//!   arrives, so progress and log notifications reach the waiting caller
//!   mid-call. It ends when the response was seen (or the caller gave up);
//!   a stream that drops before the response is resumed with `GET` and
//!   `Last-Event-ID` after the server's `retry` delay, with a bounded
//!   backoff, and when it cannot be resumed the call fails with
//!   [`McpError::Http`] instead of waiting for its timeout.
//! * `mcp-<name>-listen`: holds the optional `GET` stream open once the
//!   session is initialized, for messages the server sends outside any
//!   request. Its notifications go to [`ClientOptions::notifications`]
//!   (`notifications/message` to [`ClientOptions::logs`]), and server
//!   requests (`ping`, `elicitation/create`) are answered with a `POST`. A
//!   `405` (or another client error but `408` and `429`: servers that route
//!   only `POST` answer `400` or `404`) means the server offers no such
//!   stream; a dropped stream is reopened with `Last-Event-ID`. The
//!   handshake waits up to [`HTTP_LISTEN_READY_WAIT`] for the first `GET` to
//!   be answered, because servers drop what they send on the stream while
//!   it is not open: the first call must not race it.
//! * `mcp-<name>-notify`: short-lived, for a `notifications/cancelled` sent
//!   while a call is abandoned (that must not block the caller).
//!
//! Notifications and replies to server requests are posted on the calling
//! thread and expect `202 Accepted`.
//!
//! Every request after `initialize` carries the `Mcp-Session-Id` the server
//! assigned and `MCP-Protocol-Version: <negotiated>`; `initialize` carries
//! neither. A `404` on a request that carried a session id means the session
//! expired: the client re-initializes once, transparently, and retries the
//! request. [`close`](McpServerClient::close) ends the session with `DELETE`.
//!
//! HTTP servers have no stderr: connection, session and stream events, and
//! requests that fail at the HTTP level, are sent to the log channel as
//! lifecycle lines.
//!
//! Timeouts come from one ureq [`Agent`]: connect (and name resolution)
//! [`HTTP_CONNECT_TIMEOUT`], per read and per write the call timeout. A
//! request's response may take as long as its call timeout (at least the
//! elicitation deadline when a handler is installed) between two bytes; the
//! caller's own deadline is enforced by the connection exactly as over
//! stdio. The GET stream has no overall timeout, only
//! [`HTTP_LISTEN_IDLE_TIMEOUT`] of silence, after which it is reopened.
//! Notifications, replies and the `DELETE` have an overall timeout.
//!
//! `close()` sends the `DELETE`, then interrupts every read still in
//! flight (ureq's `Agent::shutdown`) and joins the listening thread (up to
//! [`HTTP_CLOSE_TIMEOUT`]) and the POST threads: when it returns, none of
//! the connection's threads runs. Dropping the client waits for nothing:
//! the `DELETE` and the interruption are done by a short-lived thread.

use std::borrow::Cow;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use serde_json::Value;
use ureq::http::{HeaderValue, Response, StatusCode};
use ureq::{Agent, Body, RequestBuilder};

use crate::client::ClientOptions;
use crate::config::{shown_url, McpServerConfig, McpTransport};
use crate::error::{McpError, Result};
use crate::limits::{
    HTTP_CLOSE_TIMEOUT, HTTP_CONNECT_TIMEOUT, HTTP_ERROR_BODY_LIMIT, HTTP_LISTEN_IDLE_TIMEOUT,
    HTTP_LISTEN_READY_WAIT, HTTP_MAX_CONCURRENT_POSTS, HTTP_MAX_RETRIES, HTTP_NOTIFY_TIMEOUT,
    HTTP_POST_THREAD_IDLE, HTTP_RETRY_DEFAULT, HTTP_RETRY_MAX_WAIT, HTTP_THREAD_STACK,
    SSE_DEFAULT_RETRY, SSE_MAX_RECONNECTS, SSE_MAX_RETRY, SSE_MIN_RETRY,
};
use crate::peer::{client_capabilities, Outbound, Peer, SendFailure, Sending};
use crate::sse::{SseError, SseReader, SseStep};

mod get_stream;
mod h1;
mod headers;
mod legacy_sse;
mod resolve;
mod resume;
mod session;
mod tcp;

use headers::VERSION_HEADER;
use resume::StreamPosition;
use session::InitObserver;

pub use legacy_sse::McpSseServer;

/// The session header (case-insensitive on the wire).
const SESSION_HEADER: &str = "Mcp-Session-Id";
/// What a POST accepts.
const POST_ACCEPT: &str = "application/json, text/event-stream";
/// Longest quoted excerpt of a body, in characters.
const EXCERPT_CHARS: usize = 200;

/// What the session currently is. Its texts are shared, not copied: every
/// request takes a snapshot.
#[derive(Clone, Debug, Default)]
struct Session {
    /// The `Mcp-Session-Id` the server assigned, if it uses sessions.
    id: Option<Arc<str>>,
    /// The negotiated protocol version, once `initialize` was answered.
    protocol_version: Option<Arc<str>>,
    /// Bumped each time a new session is established.
    generation: u64,
}

/// Returns a request slot to the pool when dropped.
struct Permit(Sender<()>);

impl Drop for Permit {
    fn drop(&mut self) {
        let _ = self.0.try_send(());
    }
}

#[derive(Default)]
struct Listener {
    running: bool,
    handle: Option<JoinHandle<()>>,
    /// Disconnected when the listening thread has finished.
    done: Option<Receiver<()>>,
}

/// State shared by the connection, its outbound half and its threads.
struct Shared {
    name: String,
    url: String,
    /// The URL without user info and query, for log lines.
    shown_url: String,
    agent: Agent,
    /// The POSTs of requests over plain `http://` (see [`h1`]); `None`:
    /// through `agent`.
    h1: Option<Arc<h1::H1>>,
    /// `Bearer <api_key>`, resolved.
    auth: Option<String>,
    /// `McpServerConfig::headers`, resolved: sent with every request.
    extra_headers: Vec<(String, String)>,
    /// OAuth, when configured: its token replaces `auth`.
    oauth: Option<Arc<crate::auth::OAuthClient>>,
    peer: OnceLock<Weak<Peer>>,
    session: Mutex<Session>,
    /// Signalled when a new session is established.
    session_changed: (Sender<()>, Receiver<()>),
    /// Serializes session recovery after a `404`.
    recovery: Mutex<()>,
    /// A pool of [`HTTP_MAX_CONCURRENT_POSTS`] request slots.
    permits: (Sender<()>, Receiver<()>),
    /// The long-lived POST threads that run the requests.
    posters: PostPool,
    closing: AtomicBool,
    /// Dropped on close, which wakes every wait of the threads at once.
    shutdown_tx: Mutex<Option<Sender<()>>>,
    shutdown_rx: Receiver<()>,
    listener: Mutex<Listener>,
    /// Whether the GET stream is open right now.
    listening: AtomicBool,
    max_message_size: usize,
    /// Whether a request may be posted on its caller's thread
    /// ([`Sending::caller_only_waits`]): not with an elicitation or sampling handler,
    /// whose exchanges may wait for a person past the call's deadline.
    inline_posts: bool,
    /// The least per-read timeout of a response stream: while an elicitation
    /// may be pending the server may legitimately stay silent that long.
    stream_read_floor: Duration,
}

/// The POST threads: a request is handed to an idle one, and a new one is
/// started only when none is idle, so a request costs no thread start in
/// the steady state. A thread idle for [`HTTP_POST_THREAD_IDLE`] ends, so
/// a burst leaves no crowd of threads behind; at most
/// [`HTTP_MAX_CONCURRENT_POSTS`] + [`POST_POOL_SPARE`] run.
struct PostPool {
    jobs: (Sender<PostWork>, Receiver<PostWork>),
    /// Threads waiting for a job.
    idle: std::sync::atomic::AtomicUsize,
    /// Jobs sent and not yet taken by a thread. A new thread starts when
    /// these outnumber the idle threads: comparing with `idle` alone would
    /// hand a burst to one idle thread that has not woken yet (it still
    /// counts as idle), and the burst's requests would run one by one.
    queued: std::sync::atomic::AtomicUsize,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// A request and the slot it holds (none for `initialize`).
type PostWork = (Option<Permit>, Job);

/// Threads beyond the request slots: `initialize` (session recovery) takes
/// no slot, and must find a thread while every slot's request waits for it.
const POST_POOL_SPARE: usize = 4;

impl PostPool {
    fn new() -> PostPool {
        PostPool {
            jobs: crossbeam_channel::unbounded(),
            idle: std::sync::atomic::AtomicUsize::new(0),
            queued: std::sync::atomic::AtomicUsize::new(0),
            threads: Mutex::new(Vec::new()),
        }
    }
}

/// A request handed to a POST thread.
struct Job {
    body: Vec<u8>,
    id: i64,
    /// Borrowed when it is a method the client sends often (no copy per
    /// request).
    method: Cow<'static, str>,
    timeout: Duration,
    /// The headers of a modern (2026-07-28) request; `None`: legacy, with
    /// the session's headers.
    modern: Option<Vec<headers::Header>>,
    /// Run on the caller's thread (see [`Sending::caller_only_waits`]): the whole
    /// exchange must end by this instant, and a failure past it is left to
    /// the caller's own timeout.
    inline_deadline: Option<Instant>,
}

/// Why a POST did not lead to a response.
enum Failure {
    /// `404` on a request that carried a session id.
    SessionExpired(String),
    /// `401`/`403` with OAuth configured: authorize, then retry.
    Unauthorized {
        status: u16,
        www_authenticate: Option<String>,
        sent: Option<String>,
    },
    /// `429` or `503`: may be retried (after `Retry-After`, when given) if
    /// the request is safe to repeat; otherwise the call fails with `error`.
    Busy {
        retry_after: Option<Duration>,
        error: McpError,
    },
    /// Anything else; the call fails with this error.
    Error(McpError),
}

/// Requests that may be sent again after a `429`/`503`: they change nothing
/// on the server, or (`initialize`) start over from nothing.
fn is_retry_safe(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "tools/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "prompts/list"
            | "prompts/get"
            | "completion/complete"
            | "tasks/get"
            | "tasks/list"
            | "tasks/result"
    )
}

/// The `Retry-After` of a response: delay-seconds, or an HTTP date (a date
/// in the past is no delay).
fn retry_after(resp: &Response<Body>) -> Option<Duration> {
    let v = resp.headers().get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when =
        time::OffsetDateTime::parse(v, &time::format_description::well_known::Rfc2822).ok()?;
    let delta = when - time::OffsetDateTime::now_utc();
    Some(Duration::try_from(delta).unwrap_or(Duration::ZERO))
}

/// How reading an event stream ended.
enum PumpEnd {
    /// The consumer needs nothing more (the response was seen, the caller
    /// gave up, or the connection is gone).
    Stopped,
    /// The client is closing.
    Closing,
    /// The stream ended or broke; why, when it broke.
    Ended(Option<String>),
    /// A response-stream event exceeded the limit.
    TooLarge(usize),
}

/// How a read timeout of a stream is described.
const READ_TIMED_OUT: &str = "no data within the read timeout";

fn media_type(resp: &Response<Body>) -> String {
    media_type_of(resp.headers()).into_owned()
}

/// The media type of `headers`' `Content-Type` (lowercase, parameters
/// cut; empty without one), borrowed when the header is in lowercase
/// already (as it nearly always is): no allocation per response.
fn media_type_of(headers: &ureq::http::HeaderMap) -> Cow<'_, str> {
    let t = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.split(';').next())
        .map_or("", str::trim);
    if t.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(t.to_ascii_lowercase())
    } else {
        Cow::Borrowed(t)
    }
}

/// The `Mcp-Session-Id` of an answer, when it is a usable one (visible
/// ASCII).
fn session_id_of(headers: &ureq::http::HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b)))
        .map(str::to_owned)
}

/// How a POST was answered: over [`h1`] (read here), or through ureq.
enum Answered {
    H1(h1::Answer),
    Ureq(Response<Body>),
}

impl Answered {
    fn into_response(self) -> Response<Body> {
        match self {
            Answered::H1(a) => a.into_response(),
            Answered::Ureq(r) => r,
        }
    }
}

/// A short, single-line excerpt of a body.
fn text_excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    for (n, word) in text.split_whitespace().enumerate() {
        if n > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.chars().count() > EXCERPT_CHARS {
            break;
        }
    }
    if out.chars().count() > EXCERPT_CHARS {
        out = out.chars().take(EXCERPT_CHARS).collect::<String>() + "…";
    }
    if out.is_empty() {
        "(empty body)".into()
    } else {
        out
    }
}

/// `Bearer <api_key>` of `config`, refused when the key cannot be sent in
/// an HTTP header.
fn bearer_header(config: &McpServerConfig) -> Result<Option<String>> {
    let Some(k) = config.resolved_api_key()? else {
        return Ok(None);
    };
    let value = format!("Bearer {k}");
    if HeaderValue::from_str(&value).is_err() {
        return Err(McpError::Config {
            server: config.name.clone(),
            message: "api_key contains characters that cannot be sent in an HTTP header".into(),
        });
    }
    Ok(Some(value))
}

/// The `User-Agent` of every request: the client's name and version.
fn user_agent(options: &ClientOptions) -> String {
    format!("{}/{}", options.client_name, options.client_version)
}

/// The agent of one connection: statuses are answers, not errors; name
/// resolution and connecting bounded by [`HTTP_CONNECT_TIMEOUT`], writes by
/// the call timeout, reads by `per_read` (`None`: an event stream, which
/// may stay silent between events as long as it likes).
fn connection_agent(options: &ClientOptions, per_read: Option<Duration>) -> Agent {
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .timeout_resolve(Some(HTTP_CONNECT_TIMEOUT))
        .timeout_connect(Some(HTTP_CONNECT_TIMEOUT))
        .timeout_per_read(per_read)
        .timeout_per_write(Some(options.call_timeout))
        // ureq keeps 3 idle connections per host by default: with more
        // calls in flight, every request past the third opened a new TCP
        // connection (measured: 12.5k calls/s at 8 in flight against 78k
        // for the raw floor). Keep one per request slot.
        .max_idle_connections(HTTP_MAX_CONCURRENT_POSTS + POST_POOL_SPARE)
        .max_idle_connections_per_host(HTTP_MAX_CONCURRENT_POSTS + POST_POOL_SPARE)
        .user_agent(user_agent(options))
        .build();
    Agent::with_parts(
        config,
        tcp::LeanConnector::new(options.caller_spin),
        resolve::CachingResolver::default(),
    )
}

/// Reads at most [`HTTP_ERROR_BODY_LIMIT`] bytes of a body to quote, plus
/// as many as the longest secret has, so that a secret starting before the
/// limit is read whole and can be redacted.
fn read_to_quote(body: Body, secrets: &[String]) -> Vec<u8> {
    let extra = secrets.iter().map(String::len).max().unwrap_or(0);
    let mut buf = Vec::new();
    let _ = body
        .into_reader()
        .take((HTTP_ERROR_BODY_LIMIT + extra) as u64)
        .read_to_end(&mut buf);
    buf
}

/// A short excerpt of at most `limit` bytes of `bytes` with every secret
/// replaced: first in all of `bytes`, and only then cut, so that a secret
/// straddling the cut is not half quoted.
fn quote_redacted(bytes: &[u8], secrets: &[String], limit: usize) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    for k in secrets
        .iter()
        .filter(|k| !k.is_empty() && bytes.windows(k.len()).any(|w| w == k.as_bytes()))
    {
        text = text.replace(k.as_str(), "<redacted>");
    }
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text_excerpt(text.as_bytes())
}

fn status_text(status: u16) -> String {
    match StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        Some(r) => format!("HTTP {status} {r}"),
        None => format!("HTTP {status}"),
    }
}

fn fmt_delay(d: Duration) -> String {
    if d.as_millis() % 1000 == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// The delay before the next attempt to resume a stream: the server's
/// `retry` (or the default), doubled for each consecutive failure beyond
/// the first, within [`SSE_MIN_RETRY`, `SSE_MAX_RETRY`].
fn backoff(retry: Option<Duration>, failures: u32) -> Duration {
    let base = retry.unwrap_or(SSE_DEFAULT_RETRY);
    let factor = 1u32 << failures.saturating_sub(1).min(16);
    base.saturating_mul(factor)
        .clamp(SSE_MIN_RETRY, SSE_MAX_RETRY)
}

/// Whether the status answering a GET for the listening stream means "no
/// stream here, ever" rather than "not now": any client error but 408 and
/// 429. (405, the spec's answer, and 404 on a session, an expired session,
/// are handled before this is asked.)
fn refuses_get_stream(status: u16) -> bool {
    (400..500).contains(&status) && status != 408 && status != 429
}

fn is_timeout(e: &ureq::Error) -> bool {
    matches!(e, ureq::Error::Timeout(_))
}

/// Whether a broken stream read was a (per-read) timeout.
fn io_is_timeout(e: &std::io::Error) -> bool {
    if e.kind() == std::io::ErrorKind::TimedOut || e.kind() == std::io::ErrorKind::WouldBlock {
        return true;
    }
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(is_timeout)
}

/// A request's id and method, when `msg` is a request.
fn as_request(msg: &Value) -> Option<(i64, &str)> {
    let method = msg.get("method")?.as_str()?;
    let id = msg.get("id")?.as_i64()?;
    Some((id, method))
}

fn id_matches(v: &Value, id: i64) -> bool {
    match v.get("id") {
        Some(Value::Number(n)) => n.as_i64() == Some(id),
        Some(Value::String(s)) => s.parse::<i64>().ok() == Some(id),
        _ => false,
    }
}

impl Shared {
    /// A short excerpt of a body for an error or log line, with the api key
    /// and the OAuth access token replaced: some servers and gateways quote
    /// the `Authorization` header back in their error bodies.
    fn quote(&self, bytes: &[u8]) -> String {
        self.quote_cut(bytes, usize::MAX)
    }

    /// The secrets that must never be quoted: the api key and the OAuth
    /// access token, without their `Bearer ` prefix.
    fn secrets(&self) -> Vec<String> {
        let oauth = self.oauth.as_ref().and_then(|o| o.authorization());
        [self.auth.as_deref(), oauth.as_deref()]
            .into_iter()
            .flatten()
            .map(|a| {
                a.strip_prefix("Bearer ")
                    .or_else(|| a.strip_prefix("DPoP "))
                    .unwrap_or(a)
                    .to_owned()
            })
            .chain(self.extra_headers.iter().map(|(_, v)| v.clone()))
            .filter(|k| !k.is_empty())
            .collect()
    }

    /// [`quote`](Self::quote) of at most `limit` bytes of `bytes`: the
    /// secrets are replaced first, in all of `bytes`, and only then is the
    /// text cut, so a secret that straddles the cut is not half quoted.
    fn quote_cut(&self, bytes: &[u8], limit: usize) -> String {
        quote_redacted(bytes, &self.secrets(), limit)
    }

    /// Reads at most [`HTTP_ERROR_BODY_LIMIT`] bytes of a body to quote,
    /// plus as many as the longest secret has, so that a secret starting
    /// before the limit is read whole and can be redacted.
    fn read_to_quote(&self, body: Body) -> Vec<u8> {
        read_to_quote(body, &self.secrets())
    }

    /// Reads at most [`HTTP_ERROR_BODY_LIMIT`] bytes of a body and quotes
    /// them (redacted before the cut).
    fn quote_body(&self, body: Body) -> String {
        let buf = self.read_to_quote(body);
        self.quote_cut(&buf, HTTP_ERROR_BODY_LIMIT)
    }

    fn peer(&self) -> Option<Arc<Peer>> {
        self.peer.get().and_then(Weak::upgrade)
    }

    fn closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    fn snapshot(&self) -> Session {
        self.session.lock().clone()
    }

    fn lifecycle(&self, text: impl Into<String>) {
        if let Some(p) = self.peer() {
            p.lifecycle(text);
        }
    }

    fn http_err(&self, method: Option<&str>, status: Option<u16>, message: String) -> McpError {
        McpError::Http {
            server: self.name.clone(),
            method: method.map(str::to_owned),
            status,
            message,
            source: None,
        }
    }

    /// An error for a request that got no HTTP response at all.
    fn transport_err(&self, method: Option<&str>, verb: &str, e: ureq::Error) -> McpError {
        let message = if is_timeout(&e) {
            format!("{verb} {} timed out ({e})", self.shown_url)
        } else {
            format!("{verb} {} failed: {e}", self.shown_url)
        };
        McpError::Http {
            server: self.name.clone(),
            method: method.map(str::to_owned),
            status: None,
            message,
            source: Some(Box::new(e)),
        }
    }

    /// An error for a response with an unexpected status.
    fn status_err(&self, method: Option<&str>, resp: Response<Body>) -> McpError {
        let status = resp.status().as_u16();
        let what = match status {
            401 | 403 => "; check the server's api_key",
            _ => "",
        };
        let excerpt = self.quote_body(resp.into_body());
        self.http_err(
            method,
            Some(status),
            format!(
                "the server answered {}{what}: {excerpt}",
                status_text(status)
            ),
        )
    }

    /// Adds the authorization header, and the session and protocol-version
    /// headers (legacy) or the request's own headers (`modern`).
    fn with_headers<B>(
        &self,
        mut rb: RequestBuilder<B>,
        s: &Session,
        initialize: bool,
        modern: Option<&[headers::Header]>,
    ) -> RequestBuilder<B> {
        // A DPoP proof names the request's method and URL.
        let method = rb.method_ref().map_or("POST", |m| m.as_str()).to_owned();
        let url = || {
            rb.uri_ref()
                .map_or_else(|| self.url.clone(), |u| u.to_string())
        };
        let headers = self.header_list(&method, url, s, initialize, modern);
        for (k, v) in headers {
            rb = rb.header(k.as_ref(), v.as_ref());
        }
        rb
    }

    /// The headers of a request besides its content headers: the
    /// configured ones, authorization (for a request of `method` to the URL
    /// `url` gives), and the session and protocol-version headers (legacy)
    /// or the request's own headers (`modern`).
    fn header_list<'a>(
        &'a self,
        method: &str,
        url: impl FnOnce() -> String,
        s: &'a Session,
        initialize: bool,
        modern: Option<&'a [headers::Header]>,
    ) -> Vec<(Cow<'a, str>, Cow<'a, str>)> {
        let mut out: Vec<(Cow<'a, str>, Cow<'a, str>)> =
            Vec::with_capacity(self.extra_headers.len() + 3 + modern.map_or(0, <[_]>::len));
        for (k, v) in &self.extra_headers {
            out.push((k.as_str().into(), v.as_str().into()));
        }
        if let Some(o) = &self.oauth {
            for (k, v) in o.request_headers(method, &url()) {
                out.push((k.into(), v.into()));
            }
        } else if let Some(a) = &self.auth {
            out.push(("Authorization".into(), a.as_str().into()));
        }
        if let Some(h) = modern {
            // Stateless: no session, the version from the body's `_meta`.
            for (k, v) in h {
                out.push((k.as_ref().into(), v.as_ref().into()));
            }
            return out;
        }
        if !initialize {
            if let Some(id) = &s.id {
                out.push((SESSION_HEADER.into(), (**id).into()));
            }
            if let Some(v) = &s.protocol_version {
                out.push((VERSION_HEADER.into(), (**v).into()));
            }
        }
        out
    }

    /// The per-read timeout of a request's response (a long-lived
    /// `subscriptions/listen` stream is reopened after
    /// [`HTTP_LISTEN_IDLE_TIMEOUT`] of silence instead).
    fn read_timeout(&self, job: &Job) -> Duration {
        if job.method == "subscriptions/listen" {
            HTTP_LISTEN_IDLE_TIMEOUT
        } else {
            self.stream_timeout(job.timeout)
        }
    }

    /// The per-read timeout of a request's response.
    fn stream_timeout(&self, call_timeout: Duration) -> Duration {
        call_timeout
            .max(self.stream_read_floor)
            .max(Duration::from_secs(1))
    }

    // ---- requests ---------------------------------------------------------

    /// Posts request `id` of `method`, serialized as `body`, with the
    /// headers of its era: the session's (legacy) or its own (`version`,
    /// the modern protocol version it declares, and what `params` name).
    #[allow(clippy::too_many_arguments)]
    fn start_request(
        self: &Arc<Self>,
        body: Vec<u8>,
        params: Option<&Value>,
        version: Option<&str>,
        id: i64,
        method: &str,
        deadline: Instant,
        how: Sending,
    ) -> std::result::Result<(), SendFailure> {
        if self.closing() {
            return Err(SendFailure::Closed("closed by the client".into()));
        }
        let Some(peer) = self.peer() else {
            return Err(SendFailure::Closed("the connection is gone".into()));
        };
        // `initialize` never waits for a slot: a POST thread that recovers
        // an expired session holds one while it re-initializes.
        let permit = if method == "initialize" {
            None
        } else {
            match self.permits.1.recv_deadline(deadline) {
                Ok(()) => Some(Permit(self.permits.0.clone())),
                Err(_) => {
                    return Err(SendFailure::Error(McpError::Backpressure {
                        server: self.name.clone(),
                        method: method.to_owned(),
                        message: format!(
                            "{HTTP_MAX_CONCURRENT_POSTS} HTTP requests are already in flight"
                        ),
                    }))
                }
            }
        };
        let modern = match version {
            None => None,
            Some(_) => {
                let schema = (method == "tools/call")
                    .then(|| {
                        params
                            .and_then(|p| crate::json::member(p, "name"))
                            .and_then(Value::as_str)
                    })
                    .flatten()
                    .and_then(|name| peer.header_schema(name));
                match headers::request_headers(params, version, method, schema.as_deref()) {
                    Ok(h) => Some(h),
                    Err(message) => {
                        return Err(SendFailure::Error(McpError::InvalidInput {
                            server: self.name.clone(),
                            message: format!("{method}: {message}"),
                        }))
                    }
                }
            }
        };
        // A request whose caller only waits is posted right here, on the
        // caller's thread and its own pooled connection: no hand-off to a
        // POST thread and back (two wake-ups), alone or with others in
        // flight. Not when a server request on the response stream may wait
        // for a person (elicitation, sampling: the exchange could outlast
        // the deadline legitimately), nor for the handshake and the listen
        // stream.
        let inline = how.caller_only_waits
            && self.inline_posts
            && method != "initialize"
            && method != "subscriptions/listen";
        let job = Job {
            body,
            id,
            method: crate::methods::name(method),
            timeout: deadline.saturating_duration_since(Instant::now()),
            modern,
            inline_deadline: inline.then_some(deadline),
        };
        if inline {
            let _permit = permit;
            self.run_request(&peer, job);
            return Ok(());
        }
        drop(peer);
        self.submit(permit, job).map_err(|e| {
            SendFailure::Error(self.http_err(
                Some(method),
                None,
                format!("cannot start a POST thread: {e}"),
            ))
        })
    }

    /// Hands `job` to an idle POST thread, starting one when none is idle.
    fn submit(self: &Arc<Self>, permit: Option<Permit>, job: Job) -> std::io::Result<()> {
        let pool = &self.posters;
        // Counted before it is sent, so that the thread taking it never
        // counts below zero. SeqCst: a thread that stops counting itself
        // idle then looks at the channel once more, so a job that saw it
        // idle is never stranded.
        let queued = pool.queued.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = pool.jobs.0.send((permit, job));
        if queued <= pool.idle.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut threads = pool.threads.lock();
        threads.retain(|t| !t.is_finished());
        if threads.len() >= HTTP_MAX_CONCURRENT_POSTS + POST_POOL_SPARE {
            // Every thread is busy: the job waits for the first to finish.
            return Ok(());
        }
        let shared = Arc::clone(self);
        let h = crate::threads::spawn(
            format!("mcp-{}-post", self.name),
            HTTP_THREAD_STACK,
            move || shared.post_thread(),
        )?;
        threads.push(h);
        Ok(())
    }

    /// A POST thread: runs jobs until it was idle for
    /// [`HTTP_POST_THREAD_IDLE`] or the connection closes.
    fn post_thread(&self) {
        let pool = &self.posters;
        loop {
            pool.idle.fetch_add(1, Ordering::SeqCst);
            let got = crossbeam_channel::select! {
                recv(pool.jobs.1) -> w => w.ok(),
                recv(self.shutdown_rx) -> _ => None,
                default(HTTP_POST_THREAD_IDLE) => None,
            };
            pool.idle.fetch_sub(1, Ordering::SeqCst);
            // A job sent while this thread was timing out counted it as
            // idle and started no thread: take it before leaving.
            let got = got.or_else(|| pool.jobs.1.try_recv().ok());
            let Some((permit, job)) = got else { return };
            pool.queued.fetch_sub(1, Ordering::SeqCst);
            let _permit = permit;
            match self.peer() {
                Some(peer) => self.run_request(&peer, job),
                None => return,
            }
        }
    }

    /// RFC 9449 §9: a resource sends a (new) DPoP nonce in the `DPoP-Nonce`
    /// header of any response, a `401` asking for one or a success rotating
    /// it; the next proofs carry it, so a rotation costs no extra round
    /// trip. A no-op unless DPoP is on.
    fn note_dpop_nonce(&self, headers: &ureq::http::HeaderMap) {
        if let Some(o) = &self.oauth {
            o.note_dpop_nonce(headers.get("dpop-nonce").and_then(|v| v.to_str().ok()));
        }
    }

    /// The `Unauthorized` failure for a `401`/`403` response.
    fn unauthorized(&self, status: u16, resp: &Response<Body>) -> Failure {
        self.note_dpop_nonce(resp.headers());
        Failure::Unauthorized {
            status,
            www_authenticate: resp
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            sent: self.oauth.as_ref().and_then(|o| o.current()),
        }
    }

    /// Runs the OAuth flow for a challenge; `Ok` means: retry.
    fn authorize(
        &self,
        peer: &Peer,
        status: u16,
        www: Option<&str>,
        sent: Option<&str>,
    ) -> Result<()> {
        let Some(o) = &self.oauth else {
            return Err(self.http_err(None, Some(status), "unauthorized".into()));
        };
        peer.lifecycle(format!("HTTP {status}: authorizing with OAuth"));
        o.handle_challenge(status, www, sent)
    }

    /// Posts one request and reads its answer; on an expired session,
    /// re-initializes once and posts it again; on an authorization
    /// challenge, authorizes and posts it again (a bounded number of times).
    fn run_request(&self, peer: &Arc<Peer>, job: Job) {
        let mut recovered = false;
        let mut auth_attempts = 0;
        let deadline = Instant::now() + job.timeout;
        let mut retries = 0u32;
        loop {
            let session = self.snapshot();
            let err = match self.post_request(peer, &job, &session) {
                Ok(()) => return,
                Err(Failure::Error(e)) => e,
                Err(Failure::Unauthorized {
                    status,
                    www_authenticate,
                    sent,
                }) => {
                    auth_attempts += 1;
                    if auth_attempts > crate::limits::AUTH_MAX_ATTEMPTS {
                        McpError::Auth {
                            server: self.name.clone(),
                            message: format!(
                                "still HTTP {status} after {} authorization attempts",
                                auth_attempts - 1
                            ),
                        }
                    } else {
                        match self.authorize(
                            peer,
                            status,
                            www_authenticate.as_deref(),
                            sent.as_deref(),
                        ) {
                            Ok(()) if peer.is_pending(job.id) => continue,
                            Ok(()) => return,
                            Err(e) => e,
                        }
                    }
                }
                Err(Failure::Busy { retry_after, error }) => {
                    let wait = retry_after
                        .unwrap_or_else(|| HTTP_RETRY_DEFAULT.saturating_mul(1 << retries.min(16)));
                    let fits = Instant::now()
                        .checked_add(wait)
                        .is_some_and(|t| t < deadline);
                    if !(is_retry_safe(&job.method)
                        && retries < HTTP_MAX_RETRIES
                        && wait <= HTTP_RETRY_MAX_WAIT
                        && fits)
                    {
                        error
                    } else {
                        retries += 1;
                        if let McpError::Http { message, .. } = &error {
                            peer.lifecycle(format!(
                                "{}: {message}; retrying in {} ({retries}/{HTTP_MAX_RETRIES})",
                                job.method,
                                fmt_delay(wait)
                            ));
                        }
                        // Woken at once by close().
                        if !matches!(
                            self.shutdown_rx.recv_timeout(wait),
                            Err(RecvTimeoutError::Timeout)
                        ) || self.closing()
                            || !peer.is_pending(job.id)
                        {
                            return;
                        }
                        continue;
                    }
                }
                Err(Failure::SessionExpired(excerpt)) => {
                    if recovered || self.closing() {
                        self.http_err(
                            Some(&job.method),
                            Some(404),
                            format!(
                                "the session expired again right after re-initializing: {excerpt}"
                            ),
                        )
                    } else {
                        recovered = true;
                        match self.recover_session(peer, session.generation) {
                            Ok(()) if peer.is_pending(job.id) => continue,
                            Ok(()) => return,
                            Err(e) => self.http_err(
                                Some(&job.method),
                                Some(404),
                                format!("the session expired and re-initializing failed: {e}"),
                            ),
                        }
                    }
                }
            };
            if self.closing() {
                return;
            }
            // HTTP servers have no stderr: transport failures are logged.
            if let McpError::Http {
                status, message, ..
            } = &err
            {
                let status = status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
                peer.lifecycle(format!("{} failed{status}: {message}", job.method));
            }
            if job.inline_deadline.is_some_and(|d| Instant::now() >= d) {
                // The caller's deadline cut the exchange: its own timeout
                // answers (`CallTimeout`, and the cancellation is sent).
                return;
            }
            peer.fail_pending(job.id, err);
            return;
        }
    }

    fn post_request(
        &self,
        peer: &Arc<Peer>,
        job: &Job,
        session: &Session,
    ) -> std::result::Result<(), Failure> {
        let initialize = job.method == "initialize";
        let method = Some(job.method.as_ref());
        let answered = self
            .send_post(
                &job.body,
                session,
                initialize,
                job.modern.as_deref(),
                Some(self.read_timeout(job)),
                job.inline_deadline,
            )
            .map_err(|e| Failure::Error(self.transport_err(method, "POST", e)))?;
        let resp = match answered {
            // The usual answer, a `200` with a JSON body, read straight
            // from the socket: what follows would only wrap its body in
            // ureq's reader layers.
            Answered::H1(a)
                if a.status() == StatusCode::OK
                    && media_type_of(a.headers()) == "application/json" =>
            {
                self.note_dpop_nonce(a.headers());
                let observer = initialize.then(|| InitObserver {
                    id: job.id,
                    session_id: session_id_of(a.headers()),
                });
                let len = a.content_length();
                return self.read_json(peer, job, 200, len, a.into_reader(), observer);
            }
            other => other.into_response(),
        };
        self.note_dpop_nonce(resp.headers());
        let status = resp.status().as_u16();
        let modern = job.modern.is_some();
        if status == 404 && session.id.is_some() && !initialize && !modern {
            return Err(Failure::SessionExpired(self.quote_body(resp.into_body())));
        }
        if status == 429 || status == 503 {
            let after = retry_after(&resp);
            let mut error = self.status_err(method, resp);
            if let (McpError::Http { message, .. }, Some(a)) = (&mut error, after) {
                message.push_str(&format!("; Retry-After {}", fmt_delay(a)));
            }
            return Err(Failure::Busy {
                retry_after: after,
                error,
            });
        }
        if (status == 401 || status == 403) && self.oauth.is_some() {
            return Err(self.unauthorized(status, &resp));
        }
        if !(200..300).contains(&status) {
            if modern && (400..500).contains(&status) {
                // A modern server explains a 4xx with a JSON-RPC error
                // (unsupported version, header mismatch, unknown method):
                // that error is the request's answer.
                return self.error_body(peer, job, status, resp);
            }
            return Err(Failure::Error(self.status_err(method, resp)));
        }
        let observer = initialize.then(|| InitObserver {
            id: job.id,
            session_id: session_id_of(resp.headers()),
        });
        if status == 202 || status == 204 {
            if !modern && self.listening.load(Ordering::Acquire) {
                // Not what the spec says, but the answer can still come on
                // the GET stream; the call's timeout bounds the wait.
                ::log::debug!(target: "mcp_client", "[{}] {} accepted with {status}; waiting for the answer on the GET stream", self.name, job.method);
                return Ok(());
            }
            return Err(Failure::Error(self.http_err(
                method,
                Some(status),
                "the server accepted the request without answering it, and no GET stream is open to carry the answer".into(),
            )));
        }
        let json = match media_type_of(resp.headers()).as_ref() {
            "application/json" => Some(true),
            "text/event-stream" => Some(false),
            _ => None,
        };
        match json {
            Some(true) => {
                let len = resp
                    .body()
                    .content_length()
                    .or_else(|| h1::declared_length(resp.status(), resp.headers()));
                self.read_json(
                    peer,
                    job,
                    status,
                    len,
                    resp.into_body().into_reader(),
                    observer,
                )
            }
            Some(false) => {
                let mut reader =
                    SseReader::new(resp.into_body().into_reader(), self.max_message_size);
                let end = self.pump_request(peer, job, &mut reader, observer.as_ref(), &mut 0);
                if modern {
                    return self.modern_stream_end(job, status, end);
                }
                let position = StreamPosition {
                    last_id: reader.last_event_id().map(str::to_owned),
                    retry: reader.retry(),
                };
                self.resume_request(peer, job, session, status, end, position, observer.as_ref())
            }
            None => {
                let other = media_type(&resp);
                let shown = if other.is_empty() {
                    "no Content-Type".to_owned()
                } else {
                    format!("Content-Type {other:?}")
                };
                let excerpt = self.quote_body(resp.into_body());
                Err(Failure::Error(self.http_err(
                    method,
                    Some(status),
                    format!("unexpected {shown} (expected application/json or text/event-stream): {excerpt}"),
                )))
            }
        }
    }

    /// Sends a POST of `body` (a message with the session's headers, or a
    /// modern request's own) and returns the answer once its head is in:
    /// over [`h1`] for plain `http://` (as it was read), through ureq
    /// otherwise.
    /// `read_timeout` bounds the wait for the answer and each read of it
    /// (`None`: the agent's per-read timeout), `deadline` the whole
    /// exchange.
    fn send_post(
        &self,
        body: &[u8],
        session: &Session,
        initialize: bool,
        modern: Option<&[headers::Header]>,
        read_timeout: Option<Duration>,
        deadline: Option<Instant>,
    ) -> std::result::Result<Answered, ureq::Error> {
        if let Some(h1) = &self.h1 {
            let list = self.header_list("POST", || h1.url(), session, initialize, modern);
            let mut headers: Vec<(&str, &str)> = Vec::with_capacity(list.len() + 2);
            headers.push(("Content-Type", "application/json"));
            headers.push(("Accept", POST_ACCEPT));
            headers.extend(list.iter().map(|(k, v)| (k.as_ref(), v.as_ref())));
            let limits = h1::Limits {
                recv_response: read_timeout,
                per_read: read_timeout,
                deadline,
            };
            return h1.post_answer(&headers, body, limits).map(Answered::H1);
        }
        let rb = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", POST_ACCEPT);
        let mut rb = self.with_headers(rb, session, initialize, modern).config();
        if let Some(t) = read_timeout {
            rb = rb.timeout_recv_response(Some(t)).timeout_per_read(Some(t));
        }
        rb.timeout_global(deadline.map(|d| d.saturating_duration_since(Instant::now())))
            .build()
            .send(body)
            .map(Answered::Ureq)
    }

    /// The answer to a modern request that got a `4xx`: the JSON-RPC error
    /// of its body, routed as the request's response, or an HTTP error when
    /// the body holds none.
    fn error_body(
        &self,
        peer: &Arc<Peer>,
        job: &Job,
        status: u16,
        resp: Response<Body>,
    ) -> std::result::Result<(), Failure> {
        let buf = self.read_to_quote(resp.into_body());
        let parsed: Option<Value> = serde_json::from_slice(&buf).ok();
        if let Some(Value::Object(mut m)) = parsed {
            if m.get("error").is_some_and(Value::is_object) {
                // An error for "no id" (or another id) answers this request.
                m.insert("id".into(), Value::from(job.id));
                m.insert("jsonrpc".into(), Value::from("2.0"));
                if let Ok(bytes) = serde_json::to_vec(&Value::Object(m)) {
                    peer.dispatch_bytes(&bytes);
                    if !peer.is_pending(job.id) {
                        return Ok(());
                    }
                }
            }
        }
        Err(Failure::Error(self.http_err(
            Some(&job.method),
            Some(status),
            format!(
                "the server answered {}: {}",
                status_text(status),
                self.quote_cut(&buf, HTTP_ERROR_BODY_LIMIT)
            ),
        )))
    }

    /// How a modern request's event stream ended without its response:
    /// streams are not resumable in 2026-07-28, so the call fails with
    /// [`McpError::StreamEnded`] and the connection sends a request that
    /// may be repeated again, with a new id.
    fn modern_stream_end(
        &self,
        job: &Job,
        status: u16,
        end: PumpEnd,
    ) -> std::result::Result<(), Failure> {
        match end {
            PumpEnd::Stopped | PumpEnd::Closing => Ok(()),
            PumpEnd::TooLarge(_) => {
                Err(self.too_large(&job.method, status, "an event of the response stream"))
            }
            PumpEnd::Ended(why) => Err(Failure::Error(McpError::StreamEnded {
                server: self.name.clone(),
                method: job.method.clone().into_owned(),
                reason: why.unwrap_or_else(|| "the server closed it".into()),
            })),
        }
    }

    fn too_large(&self, method: &str, status: u16, what: &str) -> Failure {
        Failure::Error(self.http_err(
            Some(method),
            Some(status),
            format!("{what} exceeds the {}-byte limit", self.max_message_size),
        ))
    }

    fn read_json(
        &self,
        peer: &Arc<Peer>,
        job: &Job,
        status: u16,
        content_length: Option<u64>,
        body: impl Read,
        observer: Option<InitObserver>,
    ) -> std::result::Result<(), Failure> {
        let max = self.max_message_size;
        if let Some(len) = content_length {
            if len > max as u64 {
                return Err(self.too_large(
                    &job.method,
                    status,
                    &format!("the response body ({len} bytes)"),
                ));
            }
        }
        // Sized for the body when its length is known (it was checked
        // against the limit above): read in one go, without regrowing.
        let mut buf = Vec::with_capacity(content_length.map_or(0, |l| l as usize + 1));
        if let Err(e) = body.take(max as u64 + 1).read_to_end(&mut buf) {
            return Err(Failure::Error(self.http_err(
                Some(&job.method),
                Some(status),
                format!("reading the response body failed: {e}"),
            )));
        }
        if buf.len() > max {
            return Err(self.too_large(&job.method, status, "the response body"));
        }
        if let Some(o) = &observer {
            self.observe_initialize(&buf, o);
        }
        peer.dispatch_bytes(&buf);
        if peer.is_pending(job.id) {
            return Err(Failure::Error(self.http_err(
                Some(&job.method),
                Some(status),
                format!(
                    "the JSON body is not a response to request {}: {}",
                    job.id,
                    self.quote(&buf)
                ),
            )));
        }
        Ok(())
    }

    /// Reads a request's event stream until its response was seen.
    fn pump_request<R: Read>(
        &self,
        peer: &Arc<Peer>,
        job: &Job,
        reader: &mut SseReader<R>,
        observer: Option<&InitObserver>,
        events: &mut usize,
    ) -> PumpEnd {
        let wanted = || peer.is_pending(job.id);
        self.pump(reader, true, events, &wanted, &mut |data| {
            if let Some(o) = observer {
                self.observe_initialize(data, o);
            }
            peer.dispatch_bytes(data);
            peer.is_pending(job.id)
        })
    }

    /// Reads events, handing each message to `dispatch` until it returns
    /// false. Priming events (empty data) and events of other types than
    /// `message` are skipped. Between events (a stream of keep-alive
    /// comments that never completes one included) reading stops as soon
    /// as `wanted` says nobody waits for the stream any more.
    fn pump<R: Read>(
        &self,
        reader: &mut SseReader<R>,
        fail_on_too_large: bool,
        events: &mut usize,
        wanted: &dyn Fn() -> bool,
        dispatch: &mut dyn FnMut(&[u8]) -> bool,
    ) -> PumpEnd {
        loop {
            if self.closing() {
                return PumpEnd::Closing;
            }
            match reader.step() {
                Ok(SseStep::NoEvent) => {
                    if !wanted() {
                        return PumpEnd::Stopped;
                    }
                }
                Ok(SseStep::Event(ev)) => {
                    *events += 1;
                    if ev.event != "message" || ev.data.iter().all(u8::is_ascii_whitespace) {
                        if ev.event != "message" {
                            ::log::debug!(target: "mcp_client", "[{}] ignoring SSE event of type {:?}", self.name, ev.event);
                        }
                        if !wanted() {
                            return PumpEnd::Stopped;
                        }
                        continue;
                    }
                    if !dispatch(&ev.data) {
                        return PumpEnd::Stopped;
                    }
                }
                Ok(SseStep::End) => {
                    return if self.closing() {
                        PumpEnd::Closing
                    } else {
                        PumpEnd::Ended(None)
                    }
                }
                Err(SseError::EventTooLarge { limit }) => {
                    if fail_on_too_large {
                        return PumpEnd::TooLarge(limit);
                    }
                    self.lifecycle(format!(
                        "skipped an event of the GET stream larger than {limit} bytes"
                    ));
                }
                Err(SseError::Io(e)) => {
                    if self.closing() {
                        return PumpEnd::Closing;
                    }
                    let why = if io_is_timeout(&e) {
                        READ_TIMED_OUT.to_owned()
                    } else {
                        e.to_string()
                    };
                    return PumpEnd::Ended(Some(why));
                }
            }
        }
    }

    // ---- notifications and replies -----------------------------------------

    /// Posts a notification or a reply and expects `202 Accepted`.
    fn post_message(self: &Arc<Self>, msg: &Value, deadline: Instant) -> Result<()> {
        self.post_message_once(msg, deadline, true)
    }

    /// One attempt of [`post_message`](Self::post_message); with
    /// `retry_auth`, an authorization challenge is answered and the message
    /// posted once more.
    fn post_message_once(
        self: &Arc<Self>,
        msg: &Value,
        deadline: Instant,
        retry_auth: bool,
    ) -> Result<()> {
        let method = msg.get("method").and_then(Value::as_str);
        let session = self.snapshot();
        let modern = match (headers::modern_version(msg), method) {
            (Some(v), Some(m)) => {
                headers::request_headers(msg.get("params"), Some(v), m, None).ok()
            }
            _ => None,
        };
        // At least a millisecond: a deadline already past still sends.
        let deadline = deadline.max(Instant::now() + Duration::from_millis(1));
        let body = serde_json::to_vec(msg).unwrap_or_default();
        let resp = self
            .send_post(
                &body,
                &session,
                false,
                modern.as_deref(),
                None,
                Some(deadline),
            )
            .map(Answered::into_response)
            .map_err(|e| self.transport_err(method, "POST", e))?;
        self.note_dpop_nonce(resp.headers());
        let status = resp.status().as_u16();
        if (status == 401 || status == 403) && self.oauth.is_some() && retry_auth {
            if let Failure::Unauthorized {
                status,
                www_authenticate,
                sent,
            } = self.unauthorized(status, &resp)
            {
                if let Some(o) = &self.oauth {
                    o.handle_challenge(status, www_authenticate.as_deref(), sent.as_deref())?;
                }
            }
            return self.post_message_once(msg, deadline, false);
        }
        if (200..300).contains(&status) {
            if method == Some("notifications/initialized") {
                // The first request must not race the GET stream: a server
                // drops what it sends on that stream while it is not open.
                if let Some(ready) = self.ensure_listener() {
                    let wait = HTTP_LISTEN_READY_WAIT
                        .min(deadline.saturating_duration_since(Instant::now()));
                    let _ = ready.recv_timeout(wait);
                }
            }
            return Ok(());
        }
        if status == 404 && session.id.is_some() {
            let excerpt = self.quote_body(resp.into_body());
            return Err(self.http_err(
                method,
                Some(404),
                format!("the session has expired: {excerpt}"),
            ));
        }
        Err(self.status_err(method, resp))
    }

    /// Hands a message to a short-lived thread (from `Drop`: must not block).
    fn post_detached(self: &Arc<Self>, msg: &Value) -> std::result::Result<(), SendFailure> {
        if self.closing() {
            return Err(SendFailure::Closed("closed by the client".into()));
        }
        let Ok(()) = self.permits.1.try_recv() else {
            return Err(SendFailure::Full);
        };
        let permit = Permit(self.permits.0.clone());
        let msg = msg.clone();
        let shared = Arc::clone(self);
        crate::threads::spawn(
            format!("mcp-{}-notify", self.name),
            HTTP_THREAD_STACK,
            move || {
                let _permit = permit;
                if let Err(e) = shared.post_message(&msg, Instant::now() + HTTP_NOTIFY_TIMEOUT) {
                    ::log::debug!(target: "mcp_client", "[{}] {e}", shared.name);
                }
            },
        )
        .map(|_| ())
        .map_err(|e| SendFailure::Closed(format!("cannot start a thread: {e}")))
    }
}

struct HttpOutbound {
    shared: Arc<Shared>,
}

impl Outbound for HttpOutbound {
    fn send(&self, msg: &Value, deadline: Instant) -> std::result::Result<(), SendFailure> {
        match as_request(msg) {
            Some((id, method)) => self.shared.start_request(
                serde_json::to_vec(msg).unwrap_or_default(),
                msg.get("params"),
                headers::modern_version(msg),
                id,
                method,
                deadline,
                Sending::default(),
            ),
            None => self
                .shared
                .post_message(msg, deadline)
                .map_err(SendFailure::Error),
        }
    }

    fn send_request(
        &self,
        id: i64,
        method: &str,
        params: Option<&Value>,
        extra: crate::jsonrpc::MetaExtra<'_>,
        how: Sending,
        deadline: Instant,
    ) -> std::result::Result<(), SendFailure> {
        // The version a modern request declares: from the connection's
        // shared `_meta`, or the caller's own.
        let version = match extra
            .shared
            .and_then(|m| crate::json::map_member(m, crate::model::keys::PROTOCOL_VERSION))
        {
            Some(v) => v.as_str(),
            None => params.and_then(headers::params_version),
        };
        // Written straight from the params, `extra` merged as it goes: no
        // value of the whole request is built only to be serialized.
        let mut body = crate::jsonrpc::encode_request_direct(id, method, params, extra);
        body.pop(); // the newline of the stdio framing
        self.shared
            .start_request(body, params, version, id, method, deadline, how)
    }

    fn try_send(&self, msg: &Value) -> std::result::Result<(), SendFailure> {
        let cancel = msg.get("method").and_then(Value::as_str) == Some("notifications/cancelled");
        if cancel && self.shared.peer().and_then(|p| p.era()) == Some(crate::era::Era::Modern) {
            // 2026-07-28: ending the response stream is the cancellation;
            // no notification is posted (the POST thread stops reading at
            // the stream's next event or read timeout).
            return Ok(());
        }
        self.shared.post_detached(msg)
    }

    fn answers_every_request(&self) -> bool {
        true
    }

    fn mirrors_headers(&self) -> bool {
        true
    }
}

/// A connection to an MCP server over Streamable HTTP.
///
/// ```no_run
/// use skald_mcp::{ClientOptions, McpHttpServer, McpServerClient, McpServerConfig};
/// let cfg = McpServerConfig::http("remote", "https://example.test/mcp")
///     .with_api_key("${REMOTE_MCP_TOKEN}");
/// let server = McpHttpServer::connect(&cfg, ClientOptions::default())?;
/// for tool in server.list_tools()? {
///     println!("{}", tool.name);
/// }
/// let result = server.call_tool("echo", serde_json::json!({"text": "hi"}))?;
/// println!("{}", result.to_text());
/// server.close()?;
/// # Ok::<(), skald_mcp::McpError>(())
/// ```
pub struct McpHttpServer {
    peer: Arc<Peer>,
    shared: Arc<Shared>,
    /// Held for the whole of `close()` (see `shutdown`).
    close_lock: Mutex<()>,
}

impl std::fmt::Debug for McpHttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpServer")
            .field("name", &self.peer.name)
            .field("url", &self.shared.shown_url)
            .field("session", &self.shared.snapshot().id.is_some())
            .field("connected", &self.peer.is_alive())
            .finish()
    }
}

impl McpHttpServer {
    /// Connects and performs the `initialize` handshake, bounded by
    /// [`ClientOptions::start_timeout`].
    pub fn connect(config: &McpServerConfig, options: ClientOptions) -> Result<McpHttpServer> {
        let server = McpHttpServer::new(config, options)?;
        match server.peer.negotiation() {
            Ok(n) => {
                let info = &n.info;
                server.peer.lifecycle(format!(
                    "connected to {} ({} era, protocol {}, server {} {}, {})",
                    server.shared.shown_url,
                    info.era,
                    info.protocol_version,
                    info.server_info.name,
                    info.server_info.version,
                    if server.shared.snapshot().id.is_some() {
                        "with a session"
                    } else {
                        "without a session id"
                    }
                ));
                Ok(server)
            }
            Err(e) => {
                server.peer.lifecycle(format!("failed to start: {e}"));
                server.shutdown(true);
                Err(e)
            }
        }
    }

    /// Prepares the connection without the handshake; the first request
    /// performs it (or call [`McpServerClient::initialize`](crate::McpServerClient::initialize)). No request is
    /// made yet.
    pub fn new(config: &McpServerConfig, options: ClientOptions) -> Result<McpHttpServer> {
        config.validate()?;
        if config.transport != McpTransport::Http {
            return Err(McpError::Config {
                server: config.name.clone(),
                message: format!(
                    "McpHttpServer needs transport http, not {}",
                    config.transport
                ),
            });
        }
        let name = config.name.clone();
        let url = config.url.clone().unwrap_or_default();
        let auth = bearer_header(config)?;
        let extra_headers = config.resolved_headers()?;
        let oauth = options
            .oauth
            .clone()
            .map(|o| Arc::new(crate::auth::OAuthClient::new(&name, &url, o)));
        let agent = connection_agent(&options, Some(options.call_timeout));
        let h1 = h1::H1::new(
            &url,
            &agent,
            &extra_headers,
            h1::Settings {
                user_agent: user_agent(&options),
                spin: options.caller_spin,
                per_write: options.call_timeout,
                per_read: options.call_timeout,
                max_idle: HTTP_MAX_CONCURRENT_POSTS + POST_POOL_SPARE,
            },
        )
        .map(Arc::new);
        let permits = bounded(HTTP_MAX_CONCURRENT_POSTS);
        for _ in 0..HTTP_MAX_CONCURRENT_POSTS {
            let _ = permits.0.try_send(());
        }
        let (shutdown_tx, shutdown_rx) = bounded::<()>(0);
        let stream_read_floor = if options.elicitation.is_some() {
            options.elicitation_deadline
        } else {
            Duration::ZERO
        };
        let inline_posts = options.elicitation.is_none() && options.sampling.is_none();
        let shared = Arc::new(Shared {
            inline_posts,
            name: name.clone(),
            shown_url: shown_url(&url),
            url,
            agent,
            h1,
            oauth,
            auth,
            extra_headers,
            peer: OnceLock::new(),
            session: Mutex::new(Session::default()),
            session_changed: bounded(1),
            recovery: Mutex::new(()),
            permits,
            posters: PostPool::new(),
            closing: AtomicBool::new(false),
            shutdown_tx: Mutex::new(Some(shutdown_tx)),
            shutdown_rx,
            listener: Mutex::new(Listener::default()),
            listening: AtomicBool::new(false),
            max_message_size: options.max_message_size,
            stream_read_floor,
        });
        // Server requests can always be answered over HTTP (with a POST).
        let caps = client_capabilities(&options, true);
        let peer = Peer::new(
            name,
            options,
            Box::new(HttpOutbound {
                shared: Arc::clone(&shared),
            }),
            caps,
            crate::era::origin(&shared.url),
        );
        let _ = shared.peer.set(Arc::downgrade(&peer));
        Ok(McpHttpServer {
            peer,
            shared,
            close_lock: Mutex::new(()),
        })
    }

    /// The endpoint URL, as configured.
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// The `Mcp-Session-Id` the server assigned, if it uses sessions.
    pub fn session_id(&self) -> Option<String> {
        self.shared.session.lock().id.as_deref().map(str::to_owned)
    }

    /// Whether the GET listening stream is open right now.
    pub fn is_listening(&self) -> bool {
        self.shared.listening.load(Ordering::Acquire)
    }

    /// How many requests are waiting for a response.
    pub fn pending_requests(&self) -> usize {
        self.peer.pending_count()
    }

    /// Ends the connection. `graceful`: wait (bounded) for the `DELETE` and
    /// the listening thread; otherwise both are left to finish on their own.
    fn shutdown(&self, graceful: bool) {
        // A second close waits for the one in progress (its DELETE, the
        // listener's end) instead of returning while it still runs.
        let _serial = self.close_lock.lock();
        if self.shared.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        self.peer.fail_all(if graceful {
            "closed by the client"
        } else {
            "the client was dropped"
        });
        // Wakes every wait (backoff, waiting for a session) at once.
        self.shared.shutdown_tx.lock().take();
        if !graceful {
            let shared = Arc::clone(&self.shared);
            let _ = crate::threads::spawn(
                format!("mcp-{}-close", self.shared.name),
                HTTP_THREAD_STACK,
                move || {
                    shared.delete_session();
                    // Then every read still blocked (the GET stream, a POST
                    // thread's response) fails at once.
                    shared.agent.clone().shutdown();
                    if let Some(h1) = &shared.h1 {
                        h1.shutdown();
                    }
                },
            );
            return;
        }
        let outcome = self.shared.delete_session();
        // Interrupts every read and request of the connection's agent still
        // in flight (ureq's `Agent::shutdown`): the GET listener and the
        // POST threads see their read fail and finish, so they can be
        // joined here instead of left to end at their next read timeout.
        self.shared.agent.clone().shutdown();
        if let Some(h1) = &self.shared.h1 {
            h1.shutdown();
        }
        let (handle, done) = {
            let mut l = self.shared.listener.lock();
            (l.handle.take(), l.done.take())
        };
        if let (Some(h), Some(done)) = (handle, done) {
            match done.recv_timeout(HTTP_CLOSE_TIMEOUT) {
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = h.join();
                }
                _ => ::log::warn!(
                    target: "mcp_client",
                    "[{}] the GET listener did not finish within {HTTP_CLOSE_TIMEOUT:?}; detaching it",
                    self.shared.name
                ),
            }
        }
        let posters: Vec<JoinHandle<()>> = self.shared.posters.threads.lock().drain(..).collect();
        for h in posters {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
        self.peer.lifecycle(match outcome {
            Some((_, o)) => format!("closed ({o})"),
            None => "closed".into(),
        });
    }
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        // The fast path: nothing here waits for the network.
        self.shutdown(false);
    }
}

impl crate::peer::Connection for McpHttpServer {
    fn peer(&self) -> &Peer {
        &self.peer
    }

    fn transport(&self) -> crate::McpTransport {
        crate::McpTransport::Http
    }

    fn close_connection(&self) -> Result<()> {
        self.shutdown(true);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_secrets() {
        assert_eq!(
            shown_url("https://user:pw@example.test:8443/mcp?token=x#f"),
            "https://example.test:8443/mcp"
        );
        assert_eq!(shown_url("http://127.0.0.1:9/"), "http://127.0.0.1:9/");
        assert_eq!(shown_url("http://a@h"), "http://h");
    }

    #[test]
    fn excerpts_are_short_and_single_line() {
        assert_eq!(text_excerpt(b"  a\n\n b\tc "), "a b c");
        assert_eq!(text_excerpt(b""), "(empty body)");
        let long = "é".repeat(1000);
        let e = text_excerpt(long.as_bytes());
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
    }

    #[test]
    fn backoff_is_bounded() {
        assert_eq!(backoff(None, 0), SSE_DEFAULT_RETRY);
        assert_eq!(
            backoff(Some(Duration::from_millis(200)), 1),
            Duration::from_millis(200)
        );
        assert_eq!(
            backoff(Some(Duration::from_millis(200)), 3),
            Duration::from_millis(800)
        );
        assert_eq!(backoff(Some(Duration::from_secs(3600)), 0), SSE_MAX_RETRY);
        assert_eq!(backoff(Some(Duration::ZERO), 0), SSE_MIN_RETRY);
        assert_eq!(backoff(None, u32::MAX), SSE_MAX_RETRY);
    }

    #[test]
    fn requests_are_told_apart() {
        use serde_json::json;
        assert_eq!(
            as_request(&json!({"jsonrpc":"2.0","id":3,"method":"ping"})),
            Some((3, "ping"))
        );
        assert_eq!(
            as_request(&json!({"jsonrpc":"2.0","method":"notifications/x"})),
            None
        );
        assert_eq!(
            as_request(&json!({"jsonrpc":"2.0","id":3,"result":{}})),
            None
        );
    }

    #[test]
    fn config_errors() {
        let stdio = McpServerConfig::stdio("s", "true", Vec::<String>::new());
        assert!(McpHttpServer::new(&stdio, ClientOptions::default()).is_err());
        let bad = McpServerConfig::http("h", "http://127.0.0.1:1/mcp").with_api_key("a\nb");
        let e = McpHttpServer::new(&bad, ClientOptions::default()).unwrap_err();
        assert!(e.to_string().contains("api_key"), "{e}");
        assert!(!e.to_string().contains("a\nb"));
    }

    #[test]
    fn connection_refused_is_a_typed_error() {
        // Bind then drop a listener so the port is (very likely) closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = McpServerConfig::http("nobody", format!("http://127.0.0.1:{port}/mcp"));
        let e = McpHttpServer::connect(
            &cfg,
            ClientOptions::default().start_timeout(Duration::from_secs(10)),
        )
        .unwrap_err();
        match &e {
            McpError::Http {
                server,
                method,
                status,
                ..
            } => {
                assert_eq!(server, "nobody");
                // The first request is the era probe.
                assert_eq!(method.as_deref(), Some("server/discover"));
                assert_eq!(*status, None);
                // The transport's own error is kept as the source.
                let source = std::error::Error::source(&e).expect("a source");
                assert!(source.downcast_ref::<ureq::Error>().is_some(), "{source:?}");
            }
            other => panic!("expected an HTTP error, got {other:?}"),
        }
    }

    #[allow(dead_code)]
    fn assert_send_sync<T: Send + Sync>() {}
    #[test]
    fn server_is_send_sync() {
        assert_send_sync::<McpHttpServer>();
    }
}
