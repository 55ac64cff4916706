//! The POSTs of a plain `http://` connection, written and read here rather
//! than through ureq.
//!
//! On one core, where a round trip costs exactly the CPU both ends spend,
//! a `tools/call` over a bare `ureq::Agent` took 16.2 µs against 7.5 µs for
//! a few lines of std code on the same kept-alive socket (`bench_client
//! --floor-variants` under `taskset -c 0`); this client on top of ureq took
//! 16.4. ureq's share is spread thin (request and config builders, its
//! protocol state machine, header maps, timing records, the pool), so
//! nothing short of not going through it moves it. On two cores the cost
//! shows twice: timestamps around the socket calls put 6 µs between the
//! call and its `writev`, 5.6 µs between the answer and the caller, and the
//! longer the gap between two requests, the likelier the server's core has
//! gone idle and the `writev` pays its wake-up (14.5 µs against 2.8 µs for
//! the floor, which sends its next request at once).
//!
//! What is here is the part of HTTP/1.1 a POST to an MCP endpoint needs:
//! the request head written by hand and sent with its body in one
//! `sendmsg`; the response head parsed (informational `1xx` answers
//! skipped); the body framed by `Content-Length`, chunked coding or the end
//! of the connection; kept-alive sockets pooled and probed before reuse, as
//! ureq does. The answer is handed on as ureq's own
//! [`Response<Body>`](ureq::http::Response), so the code that reads it does
//! not know which path it took. Sockets are non-blocking, and every wait is
//! a `poll` bounded by the request's timeouts; a wait for an answer first
//! polls without sleeping for [`ClientOptions::caller_spin`], as
//! [`LeanTcp`](super::tcp) does.
//!
//! A `307`/`308` to the same origin is followed, method and body kept (at
//! most [`HTTP_MAX_REDIRECTS`] times), which ureq does not do for a POST
//! (`RedirectFailed`); any other `3xx` is the caller's answer. ureq keeps
//! everything else: `https://`, proxies, the GET stream, `DELETE` and
//! notifications.
//!
//! [`ClientOptions::caller_spin`]: crate::ClientOptions::caller_spin

use std::fmt;
use std::io::{self, IoSlice, Read};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use ureq::http::{HeaderName, HeaderValue, Response, StatusCode, Uri, Version};
use ureq::unversioned::resolver::Resolver;
use ureq::unversioned::transport::time::Duration as UreqDuration;
use ureq::unversioned::transport::NextTimeout;
use ureq::{Agent, Body, Error, Timeout};

use super::resolve::CachingResolver;
use super::tcp;
use crate::limits::{HTTP_CONNECT_TIMEOUT, HTTP_MAX_REDIRECTS, HTTP_READ_BUFFER};

/// The longest chunk-size line (with its extensions) accepted.
const MAX_CHUNK_LINE: usize = 4096;

/// Request headers this client writes itself: a configured header of one
/// of these names sends the connection's POSTs through ureq instead.
const OWN_HEADERS: [&str; 6] = [
    "host",
    "user-agent",
    "content-length",
    "transfer-encoding",
    "connection",
    "expect",
];

/// The POST client of one connection's endpoint.
pub(crate) struct H1 {
    /// The endpoint, for the resolver.
    uri: Uri,
    /// The `Host` header.
    authority: String,
    /// The request target: path and query.
    target: String,
    user_agent: String,
    /// The agent whose configuration the resolver reads.
    agent: Agent,
    resolver: CachingResolver,
    /// Kept-alive sockets, most recently used last.
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
    /// Every socket opened, to shut down on close: a read blocked on one
    /// then ends at once.
    live: Mutex<Vec<Weak<TcpStream>>>,
    closed: AtomicBool,
    spin: Duration,
    /// Each wait to send more of a request.
    per_write: Duration,
    /// Each wait for more of an answer, unless the request says otherwise.
    per_read: Duration,
    max_head: usize,
}

/// What [`H1`] takes from the connection's options.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// The `User-Agent` of every request.
    pub user_agent: String,
    /// How long a request polls for its answer before it sleeps.
    pub spin: Duration,
    /// Each wait to send more of a request.
    pub per_write: Duration,
    /// Each wait for more of an answer, unless the request says otherwise.
    pub per_read: Duration,
    /// Most kept-alive sockets kept idle.
    pub max_idle: usize,
}

impl fmt::Debug for H1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("H1")
            .field("authority", &self.authority)
            .field("idle", &self.idle.lock().len())
            .finish_non_exhaustive()
    }
}

/// The time limits of one POST.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// From the request sent to the answer's head received (`None`: only
    /// `per_read` bounds it).
    pub recv_response: Option<Duration>,
    /// Each wait for more of the answer (`None`: [`Settings::per_read`]).
    pub per_read: Option<Duration>,
    /// The whole exchange, body included.
    pub deadline: Option<Instant>,
}

impl H1 {
    /// The client of `url`, or `None` when its POSTs must go through ureq:
    /// not `http://`, a proxy configured, user info in the URL, or a
    /// configured header of a name this client writes itself.
    pub(crate) fn new(
        url: &str,
        agent: &Agent,
        extra_headers: &[(String, String)],
        settings: Settings,
    ) -> Option<H1> {
        let config = agent.config();
        if config.proxy().is_some()
            || extra_headers
                .iter()
                .any(|(k, _)| OWN_HEADERS.iter().any(|o| k.eq_ignore_ascii_case(o)))
        {
            return None;
        }
        // A name or version that cannot be sent as a header is ureq's to
        // refuse, as before.
        HeaderValue::from_str(&settings.user_agent).ok()?;
        let uri: Uri = url.parse().ok()?;
        if uri.scheme_str() != Some("http") {
            return None;
        }
        let authority = uri.authority()?;
        if authority.as_str().contains('@') {
            // User info goes to ureq, which knows what to do with it.
            return None;
        }
        let authority = authority.as_str().to_owned();
        let target = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        let target = if target.is_empty() {
            "/".to_owned()
        } else {
            target
        };
        Some(H1 {
            authority,
            target,
            user_agent: settings.user_agent,
            max_head: config.max_response_header_size(),
            uri,
            agent: agent.clone(),
            resolver: CachingResolver::default(),
            idle: Mutex::new(Vec::new()),
            max_idle: settings.max_idle,
            live: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            spin: settings.spin,
            per_write: settings.per_write,
            per_read: settings.per_read,
        })
    }

    /// The endpoint's URL, as a DPoP proof names it.
    pub(crate) fn url(&self) -> String {
        self.uri.to_string()
    }

    /// [`H1::post_answer`] as ureq's [`Response<Body>`].
    #[cfg(test)]
    pub(crate) fn post(
        self: &Arc<Self>,
        headers: &[(&str, &str)],
        body: &[u8],
        limits: Limits,
    ) -> Result<Response<Body>, Error> {
        self.post_answer(headers, body, limits)
            .map(Answer::into_response)
    }

    /// Sends a POST of `body` with `headers` (besides `Host`, `User-Agent`
    /// and `Content-Length`) and returns the answer once its head is in;
    /// its body is read from the socket as the caller reads it (a caller
    /// that reads it whole itself skips ureq's body layers; see
    /// [`Answer::into_response`] for the others).
    pub(crate) fn post_answer(
        self: &Arc<Self>,
        headers: &[(&str, &str)],
        body: &[u8],
        limits: Limits,
    ) -> Result<Answer, Error> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let mut target = std::borrow::Cow::Borrowed(self.target.as_str());
        let mut redirects = 0;
        loop {
            let head = self.request_head(&target, headers, body.len())?;
            let resp = self.exchange(&head, body, limits)?;
            let next = match resp.status.as_u16() {
                307 | 308 if redirects < HTTP_MAX_REDIRECTS => self.same_origin(&resp.headers),
                _ => None,
            };
            let Some(next) = next else {
                return Ok(resp);
            };
            // The answer's body is not read: its socket is closed, not
            // pooled.
            drop(resp);
            redirects += 1;
            target = next.into();
        }
    }

    /// The path a `307`/`308` answer moves the endpoint to, when it stays
    /// on this origin: a redirect elsewhere is not followed (the request's
    /// authorization would go with it), and the answer is the caller's.
    fn same_origin(&self, headers: &ureq::http::HeaderMap) -> Option<String> {
        let loc = headers.get(ureq::http::header::LOCATION)?.to_str().ok()?;
        if loc.starts_with('/') && !loc.starts_with("//") {
            // Only a valid request target goes on the request line.
            let target: ureq::http::uri::PathAndQuery = loc.parse().ok()?;
            return Some(target.as_str().to_owned());
        }
        let uri: Uri = loc.parse().ok()?;
        let same = uri.scheme_str() == Some("http")
            && uri
                .authority()
                .is_some_and(|a| a.as_str().eq_ignore_ascii_case(&self.authority));
        same.then(|| uri.path_and_query().map_or("/", |p| p.as_str()).to_owned())
    }

    /// One request and the head of its answer.
    fn exchange(
        self: &Arc<Self>,
        head: &[u8],
        body: &[u8],
        limits: Limits,
    ) -> Result<Answer, Error> {
        let mut conn = match self.take_idle() {
            Some(c) => c,
            None => self.connect(limits.deadline)?,
        };
        conn.send(head, body, self.per_write, limits.deadline)?;
        conn.sent = true;
        let started = Instant::now();
        let per_read = limits.per_read.unwrap_or(self.per_read);
        loop {
            let wait = Wait {
                // Both bound the wait for the head: the time to the answer
                // and the time of each read.
                per_op: limits.recv_response.map_or(per_read, |r| {
                    per_read.min(
                        r.saturating_sub(started.elapsed())
                            .max(Duration::from_nanos(1)),
                    )
                }),
                deadline: limits.deadline,
                reason: Timeout::RecvResponse,
            };
            let head = conn.read_head(self.max_head, wait)?;
            if head.status.is_informational() {
                if head.status == StatusCode::SWITCHING_PROTOCOLS {
                    return Err(protocol("the server switched protocols on a POST"));
                }
                continue;
            }
            return Ok(self.answer(conn, head, limits));
        }
    }

    /// The request head, headers checked as ureq would check them.
    fn request_head(
        &self,
        target: &str,
        headers: &[(&str, &str)],
        len: usize,
    ) -> Result<Vec<u8>, Error> {
        let mut h = Vec::with_capacity(
            160 + headers
                .iter()
                .map(|(k, v)| k.len() + v.len() + 4)
                .sum::<usize>(),
        );
        h.extend_from_slice(b"POST ");
        h.extend_from_slice(target.as_bytes());
        h.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        h.extend_from_slice(self.authority.as_bytes());
        h.extend_from_slice(b"\r\nUser-Agent: ");
        h.extend_from_slice(self.user_agent.as_bytes());
        h.extend_from_slice(b"\r\n");
        for (k, v) in headers {
            // The same checks ureq's request builder makes: no header
            // injection through a name or value. The `http` crate's own
            // parsers (which build a name and a value only to drop them)
            // run only to name what is wrong.
            if !is_token(k.as_bytes()) {
                HeaderName::from_bytes(k.as_bytes()).map_err(ureq::http::Error::from)?;
            }
            if !is_field_value(v.as_bytes()) {
                HeaderValue::from_str(v).map_err(ureq::http::Error::from)?;
            }
            h.extend_from_slice(k.as_bytes());
            h.extend_from_slice(b": ");
            h.extend_from_slice(v.as_bytes());
            h.extend_from_slice(b"\r\n");
        }
        h.extend_from_slice(b"Content-Length: ");
        h.extend_from_slice(len.to_string().as_bytes());
        h.extend_from_slice(b"\r\n\r\n");
        Ok(h)
    }

    /// An idle kept-alive socket the server has not closed meanwhile.
    fn take_idle(&self) -> Option<Conn> {
        let mut idle = self.idle.lock();
        while let Some(c) = idle.pop() {
            if c.is_open() {
                return Some(c);
            }
        }
        None
    }

    /// Puts a socket whose answer was read to its end back in the pool.
    fn put_idle(&self, mut conn: Conn) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        conn.sent = false;
        if conn.buf.len() > HTTP_READ_BUFFER {
            // A long head grew it: pooled sockets keep the usual size.
            conn.buf = vec![0; HTTP_READ_BUFFER];
        }
        let mut idle = self.idle.lock();
        if idle.len() < self.max_idle {
            idle.push(conn);
        }
    }

    fn connect(&self, deadline: Option<Instant>) -> Result<Conn, Error> {
        let left = |d: Duration| {
            deadline.map_or(d, |t| d.min(t.saturating_duration_since(Instant::now())))
        };
        let resolve = NextTimeout {
            after: UreqDuration::Exact(left(HTTP_CONNECT_TIMEOUT)),
            reason: Timeout::Resolve,
            per_read: None,
            per_write: None,
        };
        let addrs = self
            .resolver
            .resolve(&self.uri, self.agent.config(), resolve)?;
        let stream = tcp::connect(&addrs, Some(left(HTTP_CONNECT_TIMEOUT)))?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        let stream = Arc::new(stream);
        {
            let mut live = self.live.lock();
            if live.len() >= 2 * self.max_idle {
                live.retain(|w| w.strong_count() > 0);
            }
            live.push(Arc::downgrade(&stream));
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        Ok(Conn {
            stream,
            buf: vec![0; HTTP_READ_BUFFER],
            pos: 0,
            len: 0,
            spin: self.spin,
            sent: false,
        })
    }

    /// The answer whose head is `head`, its body read from `conn`.
    fn answer(self: &Arc<Self>, conn: Conn, head: Head, limits: Limits) -> Answer {
        let Head {
            status,
            version,
            headers,
            framing,
            keep_alive,
        } = head;
        let body = BodyReader {
            conn: Some(conn),
            framing,
            chunk: Chunk::Size,
            keep_alive,
            owner: Arc::clone(self),
            per_read: limits.per_read.unwrap_or(self.per_read),
            deadline: limits.deadline,
        };
        Answer {
            status,
            version,
            headers,
            body,
        }
    }

    /// Fails every request in flight and every one to come: their sockets
    /// are shut down, so a blocked wait ends at once.
    pub(crate) fn shutdown(&self) {
        self.closed.store(true, Ordering::Release);
        self.idle.lock().clear();
        for s in self.live.lock().drain(..).filter_map(|w| w.upgrade()) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Whether `name` is a header name the `http` crate accepts: a non-empty
/// RFC 9110 token (`tchar`s) of fewer than 64 KiB.
fn is_token(name: &[u8]) -> bool {
    /// `TCHAR[b]`: whether byte `b` may appear in a token.
    const TCHAR: [bool; 256] = {
        let mut t = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            t[b] = c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                );
            b += 1;
        }
        t
    };
    // Without an early exit: names are short, and the loop stays branchless.
    !name.is_empty()
        && name.len() < 1 << 16
        && name.iter().fold(true, |ok, &b| ok & TCHAR[b as usize])
}

/// Whether `value` is a header value `HeaderValue::from_str` accepts:
/// visible characters, spaces and tabs (no control characters, so no line
/// break a header could be injected through).
fn is_field_value(value: &[u8]) -> bool {
    // Without an early exit, so that it vectorizes.
    value.iter().fold(true, |ok, &b| {
        ok & ((b >= 0x20 && b != 0x7f) | (b == b'\t'))
    })
}

/// An answer to a POST: its head, and its body still on the socket.
pub(crate) struct Answer {
    status: StatusCode,
    version: Version,
    headers: ureq::http::HeaderMap,
    body: BodyReader,
}

impl Answer {
    /// The answer's status.
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The answer's headers.
    pub(crate) fn headers(&self) -> &ureq::http::HeaderMap {
        &self.headers
    }

    /// The length of the body, when the head declares one.
    pub(crate) fn content_length(&self) -> Option<u64> {
        match self.body.framing {
            Framing::Length(n) => Some(n),
            _ => None,
        }
    }

    /// The body, read as it is framed; the socket goes back to the pool
    /// once it is read to its end.
    pub(crate) fn into_reader(self) -> impl Read + Send + 'static {
        self.body
    }

    /// The answer as ureq's [`Response<Body>`], for the code that reads
    /// any answer (ureq's own included).
    pub(crate) fn into_response(self) -> Response<Body> {
        let mime = super::media_type_of(&self.headers);
        let mut builder = Body::builder();
        if !mime.is_empty() {
            builder = builder.mime_type(mime.into_owned());
        }
        let mut resp = Response::new(builder.reader(self.body));
        *resp.status_mut() = self.status;
        *resp.version_mut() = self.version;
        *resp.headers_mut() = self.headers;
        resp
    }
}

/// The length of the body of an answer with `status` and `headers`, when
/// its head declares one: its `Content-Length`, unless a
/// `Transfer-Encoding` overrides it (ureq's [`Body`] built from a reader,
/// as this module's answers are, does not know it).
pub(crate) fn declared_length(status: StatusCode, headers: &ureq::http::HeaderMap) -> Option<u64> {
    match framing(status, headers) {
        Ok(Framing::Length(n)) => Some(n),
        _ => None,
    }
}

fn closed() -> Error {
    Error::Io(io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the connection was closed by the client",
    ))
}

fn protocol(what: &str) -> Error {
    Error::Io(io::Error::new(io::ErrorKind::InvalidData, what.to_owned()))
}

/// How an answer's body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// After this many bytes.
    Length(u64),
    /// With a chunk of size 0 (and trailers).
    Chunked,
    /// When the server closes the connection.
    Close,
}

/// An answer's head.
struct Head {
    status: StatusCode,
    version: Version,
    headers: ureq::http::HeaderMap,
    framing: Framing,
    keep_alive: bool,
}

/// One wait's limits: its own, the exchange's, and what to call it when it
/// runs out.
#[derive(Clone, Copy)]
struct Wait {
    per_op: Duration,
    deadline: Option<Instant>,
    reason: Timeout,
}

impl Wait {
    /// How long to wait now, or the timeout that has already passed.
    fn left(&self) -> Result<Duration, Timeout> {
        match self.deadline {
            Some(d) => {
                let rest = d.saturating_duration_since(Instant::now());
                if rest.is_zero() {
                    Err(Timeout::Global)
                } else if rest < self.per_op {
                    Ok(rest)
                } else {
                    Ok(self.per_op)
                }
            }
            None => Ok(self.per_op),
        }
    }

    /// The timeout that expired after a wait of `left`.
    fn expired(&self, left: Duration) -> Timeout {
        if left < self.per_op {
            Timeout::Global
        } else {
            self.reason
        }
    }
}

/// A socket and what was read from it and not yet consumed.
struct Conn {
    stream: Arc<TcpStream>,
    buf: Vec<u8>,
    /// `buf[pos..len]` is read and not yet consumed.
    pos: usize,
    len: usize,
    spin: Duration,
    /// Whether a request went out since the last read: only then is an
    /// answer due soon enough to poll for.
    sent: bool,
}

impl Conn {
    fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// Whether an idle socket is still open: nothing to read is what an
    /// idle kept-alive connection shows; end of file, an error or
    /// unexpected bytes mean it is not reusable.
    fn is_open(&self) -> bool {
        tcp::peek_is_idle(self.fd())
    }

    /// Sends the head and the body, in one `sendmsg` when the socket takes
    /// them.
    fn send(
        &mut self,
        head: &[u8],
        body: &[u8],
        per_write: Duration,
        deadline: Option<Instant>,
    ) -> Result<(), Error> {
        let mut bufs = [IoSlice::new(head), IoSlice::new(body)];
        let mut bufs: &mut [IoSlice] = &mut bufs;
        let wait = Wait {
            per_op: per_write,
            deadline,
            reason: Timeout::SendRequest,
        };
        while !bufs.is_empty() {
            // SAFETY: a zeroed msghdr is valid; it points at the slices
            // above (IoSlice is ABI-compatible with iovec) for the call.
            let n = unsafe {
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
                msg.msg_iovlen = bufs.len() as _;
                libc::sendmsg(self.fd(), &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
            };
            if n >= 0 {
                IoSlice::advance_slices(&mut bufs, n as usize);
                continue;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => poll_for(self.fd(), libc::POLLOUT, wait)?,
                _ => return Err(Error::Io(e)),
            }
        }
        Ok(())
    }

    /// Reads more into the buffer (grown up to `max` when full). `Ok(0)`:
    /// end of file.
    fn fill(&mut self, max: usize, wait: Wait) -> Result<usize, Error> {
        if self.pos > 0 && self.pos == self.len {
            self.pos = 0;
            self.len = 0;
        }
        if self.len == self.buf.len() {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.len, 0);
                self.len -= self.pos;
                self.pos = 0;
            } else if self.buf.len() < max {
                let grown = (self.buf.len() * 2).min(max);
                self.buf.resize(grown, 0);
            } else {
                return Err(protocol("buffer full"));
            }
        }
        let (fd, spin, sent) = (self.fd(), self.spin, std::mem::take(&mut self.sent));
        let n = read_into(fd, &mut self.buf[self.len..], spin, sent, wait)?;
        self.len += n;
        Ok(n)
    }

    /// Reads and parses an answer's head.
    fn read_head(&mut self, max: usize, wait: Wait) -> Result<Head, Error> {
        loop {
            if let Some(end) = head_end(&self.buf[self.pos..self.len]) {
                let head = parse_head(&self.buf[self.pos..self.pos + end])?;
                self.pos += end;
                return Ok(head);
            }
            if self.len - self.pos >= max {
                return Err(protocol(&format!("the answer's head exceeds {max} bytes")));
            }
            if self.fill(max, wait)? == 0 {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection before answering",
                )));
            }
        }
    }

    /// One line (without its line end) of what is buffered, read on until
    /// it is whole; at most `max` bytes.
    fn line(&mut self, max: usize, wait: Wait) -> io::Result<Vec<u8>> {
        loop {
            let avail = &self.buf[self.pos..self.len];
            if let Some(i) = avail.iter().position(|&b| b == b'\n') {
                let mut line = avail[..i].to_vec();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.pos += i + 1;
                return Ok(line);
            }
            if avail.len() >= max {
                return Err(bad_body("a chunk-size or trailer line is too long"));
            }
            match self.fill(max.max(HTTP_READ_BUFFER), wait) {
                Ok(0) => return Err(truncated()),
                Ok(_) => {}
                Err(e) => return Err(into_io(e)),
            }
        }
    }
}

/// Reads into `dst` once something is there: first by polling without
/// sleeping for `spin` after a request went out (when a [`SpinSlot`] is
/// free), then by waiting. `Ok(0)`: end of file.
///
/// [`SpinSlot`]: crate::spin::SpinSlot
fn read_into(
    fd: RawFd,
    dst: &mut [u8],
    spin: Duration,
    sent: bool,
    wait: Wait,
) -> Result<usize, Error> {
    if sent {
        let spin = wait.left().map_or(Duration::ZERO, |l| l.min(spin));
        if let Some(n) = tcp::spin_recv(fd, dst, spin)? {
            return Ok(n);
        }
    }
    loop {
        // SAFETY: reads at most `dst.len()` bytes into `dst`, without
        // blocking, from a socket the caller owns.
        let n = unsafe { libc::recv(fd, dst.as_mut_ptr().cast(), dst.len(), libc::MSG_DONTWAIT) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => poll_for(fd, libc::POLLIN, wait)?,
            _ => return Err(Error::Io(e)),
        }
    }
}

/// Waits until `fd` is ready for `events` (`POLLIN`, `POLLOUT`; an error
/// or hang-up also ends the wait, for the next call to report), or fails
/// with the timeout of `wait` that ran out.
fn poll_for(fd: RawFd, events: libc::c_short, wait: Wait) -> Result<(), Error> {
    loop {
        let left = wait.left().map_err(Error::Timeout)?;
        let started = Instant::now();
        let mut fds = [libc::pollfd {
            fd,
            events,
            revents: 0,
        }];
        crate::poll::poll_fds(&mut fds, Some(left))?;
        if fds[0].revents != 0 {
            return Ok(());
        }
        if started.elapsed() >= left {
            return Err(Error::Timeout(wait.expired(left)));
        }
        // A signal: wait out the rest.
    }
}

/// Where the head in `buf` ends (after the empty line), if it is whole.
/// Lines may end in CRLF or a bare LF.
fn head_end(buf: &[u8]) -> Option<usize> {
    let mut start = 0;
    while let Some(i) = buf[start..].iter().position(|&b| b == b'\n') {
        let line = &buf[start..start + i];
        if line.is_empty() || line == b"\r" {
            // A head does not start with an empty line: RFC 9112 lets a
            // client skip empty lines before the status line.
            if start > 0 && !buf[..start].iter().all(|&b| b == b'\r' || b == b'\n') {
                return Some(start + i + 1);
            }
        }
        start += i + 1;
    }
    None
}

/// Parses a whole head: status line, header lines, and what they say of
/// the body.
fn parse_head(raw: &[u8]) -> Result<Head, Error> {
    let mut lines = raw
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .skip_while(|l| l.is_empty());
    let status_line = lines.next().unwrap_or_default();
    let bad = |what: &str| protocol(&format!("malformed answer head ({what})"));
    let (version, rest) = if let Some(r) = status_line.strip_prefix(b"HTTP/1.1 ") {
        (Version::HTTP_11, r)
    } else if let Some(r) = status_line.strip_prefix(b"HTTP/1.0 ") {
        (Version::HTTP_10, r)
    } else {
        return Err(bad("not an HTTP/1.x status line"));
    };
    let code = rest.get(..3).ok_or_else(|| bad("no status code"))?;
    if rest.get(3).is_some_and(|&b| b != b' ') {
        return Err(bad("status code"));
    }
    let status = StatusCode::from_bytes(code).map_err(|_| bad("status code"))?;
    let mut headers = ureq::http::HeaderMap::new();
    for line in lines {
        if line.is_empty() {
            break;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            return Err(bad("folded header line"));
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or_else(|| bad("header line without a colon"))?;
        let name = HeaderName::from_bytes(&line[..colon]).map_err(|_| bad("header name"))?;
        let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii())
            .map_err(|_| bad("header value"))?;
        headers.append(name, value);
    }
    let framing = framing(status, &headers).map_err(bad)?;
    let close = headers
        .iter()
        .filter(|(name, _)| *name == ureq::http::header::CONNECTION)
        .filter_map(|(_, v)| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("close"));
    let keep_alive = version == Version::HTTP_11 && !close && framing != Framing::Close;
    Ok(Head {
        status,
        version,
        headers,
        framing,
        keep_alive,
    })
}

/// How the body of an answer to a POST is framed (RFC 9112 §6.3).
fn framing(status: StatusCode, headers: &ureq::http::HeaderMap) -> Result<Framing, &'static str> {
    use ureq::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
    if status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok(Framing::Length(0));
    }
    // One pass over the few members of a head, comparing names: a lookup
    // by name hashes it (two lookups here and one for `Connection` were
    // 0.4k of an HTTP call's instructions). The last coding of all the
    // `Transfer-Encoding` values; every `Content-Length` value, which only
    // counts without a `Transfer-Encoding`.
    let (mut chunked_or_not, mut length) = (None, Ok(None));
    for (name, value) in headers {
        if name == TRANSFER_ENCODING {
            let last = value
                .to_str()
                .ok()
                .and_then(|v| v.split(',').map(str::trim).rfind(|t| !t.is_empty()));
            // A line without a coding leaves the last one as it was.
            let before = chunked_or_not.unwrap_or(false);
            chunked_or_not = Some(last.map_or(before, |t| t.eq_ignore_ascii_case("chunked")));
        } else if name == CONTENT_LENGTH {
            length = length.and_then(|known| content_length(value, known));
        }
    }
    if let Some(chunked) = chunked_or_not {
        return Ok(if chunked {
            Framing::Chunked
        } else {
            Framing::Close
        });
    }
    Ok(length?.map_or(Framing::Close, Framing::Length))
}

/// `known` (the length of the `Content-Length` values before) with those
/// of `value`: each a number, all the same.
fn content_length(
    value: &ureq::http::HeaderValue,
    mut known: Option<u64>,
) -> Result<Option<u64>, &'static str> {
    for part in value.to_str().map_err(|_| "Content-Length")?.split(',') {
        let part = part.trim();
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err("Content-Length");
        }
        let n: u64 = part.parse().map_err(|_| "Content-Length")?;
        if known.is_some_and(|l| l != n) {
            return Err("conflicting Content-Length values");
        }
        known = Some(n);
    }
    Ok(known)
}

/// Where the reading of a chunked body is.
#[derive(Clone, Copy, Debug)]
enum Chunk {
    /// Before a chunk-size line.
    Size,
    /// In a chunk's data, this much left.
    Data(u64),
    /// After a chunk's data, before its line end.
    DataEnd,
    /// After the last chunk, in the trailers.
    Trailers,
}

/// The body of an answer, read from its socket as it is asked for; the
/// socket goes back to the pool when the body was read to its end.
struct BodyReader {
    conn: Option<Conn>,
    framing: Framing,
    /// Where a chunked body is.
    chunk: Chunk,
    keep_alive: bool,
    owner: Arc<H1>,
    per_read: Duration,
    deadline: Option<Instant>,
}

impl BodyReader {
    fn wait(&self) -> Wait {
        Wait {
            per_op: self.per_read,
            deadline: self.deadline,
            reason: Timeout::RecvBody,
        }
    }

    /// The body was read to its end: the socket may serve another request.
    fn done(&mut self) {
        if let Some(c) = self.conn.take() {
            if self.keep_alive && c.pos == c.len {
                self.owner.put_idle(c);
            }
        }
    }

    /// Reads at most `max` bytes of the body's data into `dst`: from what is
    /// buffered, or (nothing buffered) straight from the socket. `Ok(0)`:
    /// end of file.
    fn data(&mut self, dst: &mut [u8], max: u64) -> io::Result<usize> {
        let wait = self.wait();
        let Some(c) = self.conn.as_mut() else {
            return Ok(0);
        };
        let want = dst.len().min(usize::try_from(max).unwrap_or(usize::MAX));
        if c.pos < c.len {
            let n = want.min(c.len - c.pos);
            dst[..n].copy_from_slice(&c.buf[c.pos..c.pos + n]);
            c.pos += n;
            return Ok(n);
        }
        let (fd, spin) = (c.fd(), c.spin);
        read_into(fd, &mut dst[..want], spin, false, wait).map_err(into_io)
    }

    fn read_chunked(&mut self, dst: &mut [u8], state: &mut Chunk) -> io::Result<usize> {
        let wait = self.wait();
        loop {
            let Some(c) = self.conn.as_mut() else {
                return Ok(0);
            };
            match *state {
                Chunk::Size => {
                    let line = c.line(MAX_CHUNK_LINE, wait)?;
                    let digits = line
                        .split(|&b| b == b';')
                        .next()
                        .unwrap_or_default()
                        .trim_ascii();
                    if digits.is_empty()
                        || digits.len() > 15
                        || !digits.iter().all(u8::is_ascii_hexdigit)
                    {
                        return Err(bad_body("a malformed chunk size"));
                    }
                    let size = u64::from_str_radix(std::str::from_utf8(digits).unwrap_or("x"), 16)
                        .map_err(|_| bad_body("a malformed chunk size"))?;
                    *state = if size == 0 {
                        Chunk::Trailers
                    } else {
                        Chunk::Data(size)
                    };
                }
                Chunk::Data(left) => {
                    if dst.is_empty() {
                        return Ok(0);
                    }
                    let n = self.data(dst, left)?;
                    if n == 0 {
                        return Err(truncated());
                    }
                    let left = left - n as u64;
                    *state = if left == 0 {
                        Chunk::DataEnd
                    } else {
                        Chunk::Data(left)
                    };
                    return Ok(n);
                }
                Chunk::DataEnd => {
                    if !c.line(MAX_CHUNK_LINE, wait)?.is_empty() {
                        return Err(bad_body("a chunk longer than its size"));
                    }
                    *state = Chunk::Size;
                }
                Chunk::Trailers => {
                    let mut total = 0;
                    loop {
                        let line = c.line(MAX_CHUNK_LINE, wait)?;
                        if line.is_empty() {
                            break;
                        }
                        total += line.len();
                        if total > self.owner.max_head {
                            return Err(bad_body("the trailers are too long"));
                        }
                    }
                    self.framing = Framing::Length(0);
                    self.done();
                    return Ok(0);
                }
            }
        }
    }
}

impl Read for BodyReader {
    fn read(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        let r = match self.framing {
            Framing::Length(0) => {
                self.done();
                Ok(0)
            }
            Framing::Length(left) => {
                if dst.is_empty() {
                    return Ok(0);
                }
                match self.data(dst, left) {
                    Ok(0) => Err(truncated()),
                    Ok(n) => {
                        self.framing = Framing::Length(left - n as u64);
                        if left == n as u64 {
                            self.done();
                        }
                        Ok(n)
                    }
                    Err(e) => Err(e),
                }
            }
            Framing::Close => self.data(dst, u64::MAX),
            Framing::Chunked => {
                let mut state = self.chunk;
                let r = self.read_chunked(dst, &mut state);
                self.chunk = state;
                r
            }
        };
        if r.is_err() {
            // Where the answer stands is unknown: the socket is not reused.
            self.conn = None;
        }
        r
    }
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the server closed the connection before the end of the answer",
    )
}

fn bad_body(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the answer's body has {what}"),
    )
}

/// A ureq error as an I/O error of a body read, as ureq's own body reader
/// reports it (a timeout keeps its kind, for `io_is_timeout`).
fn into_io(e: Error) -> io::Error {
    match e {
        Error::Io(e) => e,
        Error::Timeout(_) => io::Error::new(io::ErrorKind::TimedOut, e),
        other => io::Error::other(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;

    #[test]
    fn header_checks_agree_with_the_http_crate() {
        // Every byte alone, and inside a name and a value.
        for b in 0..=255u8 {
            for name in [vec![b], vec![b'X', b, b'y']] {
                assert_eq!(
                    is_token(&name),
                    HeaderName::from_bytes(&name).is_ok(),
                    "name {name:?}"
                );
            }
            let value = [b'a', b, b'z'];
            if let Ok(v) = std::str::from_utf8(&value) {
                assert_eq!(
                    is_field_value(v.as_bytes()),
                    HeaderValue::from_str(v).is_ok(),
                    "value {value:?}"
                );
            }
        }
        assert!(!is_token(b""));
        assert!(is_field_value(b""));
        assert!(is_field_value("caf\u{e9} \tx".as_bytes()));
        assert!(!is_field_value(b"a\r\nInjected: 1"));
        let long = vec![b'a'; 1 << 16];
        assert_eq!(is_token(&long), HeaderName::from_bytes(&long).is_ok());
        assert_eq!(
            is_token(&long[1..]),
            HeaderName::from_bytes(&long[1..]).is_ok()
        );
    }

    /// A client of `http://127.0.0.1:<port>/mcp`.
    fn client(port: u16) -> Arc<H1> {
        let agent: Agent = Agent::config_builder().proxy(None).build().into();
        let settings = Settings {
            user_agent: "skald-test/1".into(),
            spin: Duration::from_micros(50),
            per_write: Duration::from_secs(5),
            per_read: Duration::from_secs(5),
            max_idle: 4,
        };
        let url = format!("http://127.0.0.1:{port}/mcp");
        Arc::new(H1::new(&url, &agent, &[], settings).expect("plain http"))
    }

    fn limits(read: Duration) -> Limits {
        Limits {
            recv_response: Some(read),
            per_read: Some(read),
            deadline: Some(Instant::now() + Duration::from_secs(10)),
        }
    }

    /// A request as the test server saw it: its head's lines and its body.
    type Request = (Vec<String>, Vec<u8>);

    /// Reads one request (head and `Content-Length` body) from `r`; `None`
    /// at end of file.
    fn read_request(r: &mut BufReader<TcpStream>) -> Option<Request> {
        let mut lines = Vec::new();
        loop {
            let mut l = String::new();
            if r.read_line(&mut l).ok()? == 0 {
                return None;
            }
            let l = l.trim_end().to_owned();
            if l.is_empty() {
                break;
            }
            lines.push(l);
        }
        let len = lines
            .iter()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map_or(0, |v| v.parse().unwrap());
        let mut body = vec![0; len];
        r.read_exact(&mut body).ok()?;
        Some((lines, body))
    }

    /// A server that accepts `conns` connections, one after another, and
    /// answers each request on them with the next of `answers` (written in
    /// pieces of `piece` bytes); what it received comes out of the channel.
    fn server(conns: usize, answers: Vec<Vec<u8>>, piece: usize) -> (u16, mpsc::Receiver<Request>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut answers = answers.into_iter();
            for _ in 0..conns {
                let Ok((s, _)) = l.accept() else { return };
                s.set_nodelay(true).unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                while let Some(req) = read_request(&mut r) {
                    let _ = tx.send(req);
                    let Some(a) = answers.next() else {
                        // Silent from now on, the socket held open until
                        // the client goes.
                        let _ = read_request(&mut r);
                        return;
                    };
                    for p in a.chunks(piece) {
                        if w.write_all(p).is_err() {
                            return;
                        }
                    }
                    if a.ends_with(b"<close>") {
                        break;
                    }
                }
            }
        });
        (port, rx)
    }

    fn body_of(resp: Response<Body>) -> io::Result<Vec<u8>> {
        let mut v = Vec::new();
        resp.into_body().into_reader().read_to_end(&mut v)?;
        Ok(v)
    }

    fn json_answer(body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    #[test]
    fn a_kept_alive_socket_carries_the_next_request() {
        // One connection only: the second request must reuse it.
        let (port, rx) = server(
            1,
            vec![json_answer("{\"a\":1}"), json_answer("[2]")],
            1 << 20,
        );
        let c = client(port);
        let headers = [("Content-Type", "application/json"), ("X-Custom", "v")];
        let r = c
            .post(&headers, b"{\"x\":1}", limits(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "application/json");
        assert_eq!(declared_length(r.status(), r.headers()), Some(7));
        assert_eq!(body_of(r).unwrap(), b"{\"a\":1}");
        let (head, body) = rx.recv().unwrap();
        assert_eq!(head[0], "POST /mcp HTTP/1.1");
        for want in [
            format!("Host: 127.0.0.1:{port}"),
            "User-Agent: skald-test/1".into(),
            "X-Custom: v".into(),
            "Content-Length: 7".into(),
        ] {
            assert!(head.contains(&want), "{want} not in {head:?}");
        }
        assert_eq!(body, b"{\"x\":1}");
        assert_eq!(c.idle.lock().len(), 1, "the socket went back to the pool");
        let r = c
            .post(&headers, b"{}", limits(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(body_of(r).unwrap(), b"[2]");
    }

    #[test]
    fn a_chunked_answer_cut_anywhere_is_read_whole() {
        let chunked = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
            5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n"
            .to_vec();
        // Written a byte at a time, then the same again on the same socket.
        let (port, _rx) = server(1, vec![chunked.clone(), chunked], 1);
        let c = client(port);
        for _ in 0..2 {
            let r = c.post(&[], b"{}", limits(Duration::from_secs(5))).unwrap();
            assert_eq!(r.body().mime_type(), Some("text/event-stream"));
            assert_eq!(declared_length(r.status(), r.headers()), None);
            assert_eq!(body_of(r).unwrap(), b"hello, world");
        }
    }

    #[test]
    fn an_answer_ended_by_close_is_read_to_the_end_and_not_pooled() {
        let a = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"end\":true}<close>"
            .to_vec();
        let (port, _rx) = server(2, vec![a.clone(), a], 1 << 20);
        let c = client(port);
        for _ in 0..2 {
            let r = c.post(&[], b"{}", limits(Duration::from_secs(5))).unwrap();
            assert_eq!(body_of(r).unwrap(), b"{\"end\":true}<close>");
            assert_eq!(c.idle.lock().len(), 0);
        }
    }

    #[test]
    fn informational_answers_are_skipped() {
        let mut a =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n".to_vec();
        a.extend(json_answer("{}"));
        let (port, _rx) = server(1, vec![a], 1 << 20);
        let r = client(port)
            .post(&[], b"{}", limits(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(body_of(r).unwrap(), b"{}");
    }

    #[test]
    fn malformed_answers_are_errors_not_panics() {
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("not http", b"SSH-2.0-OpenSSH\r\n\r\n".to_vec()),
            ("bad status", b"HTTP/1.1 2x0 OK\r\n\r\n".to_vec()),
            ("no colon", b"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n".to_vec()),
            ("folded", b"HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n".to_vec()),
            (
                "bad header name",
                b"HTTP/1.1 200 OK\r\nA b: c\r\n\r\n".to_vec(),
            ),
            (
                "two lengths",
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".to_vec(),
            ),
            (
                "bad length",
                b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n".to_vec(),
            ),
            (
                "bad chunk size",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(),
            ),
            (
                "chunk longer than its size",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n"
                    .to_vec(),
            ),
            (
                "body cut short",
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc<close>".to_vec(),
            ),
            ("no answer", b"<close>".to_vec()),
            (
                "switching protocols",
                b"HTTP/1.1 101 Switching Protocols\r\n\r\n".to_vec(),
            ),
        ];
        for (what, answer) in cases {
            let close = answer.ends_with(b"<close>");
            let answer = if close {
                answer[..answer.len() - 7].to_vec()
            } else {
                answer
            };
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = l.local_addr().unwrap().port();
            let server = std::thread::spawn(move || {
                let (s, _) = l.accept().unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                read_request(&mut r).unwrap();
                let mut w = s;
                w.write_all(&answer).unwrap();
                if !close {
                    // Held open, so only the framing can end the answer.
                    let _ = read_request(&mut r);
                }
            });
            let c = client(port);
            let r = c
                .post(&[], b"{}", limits(Duration::from_secs(2)))
                .map_err(|e| e.to_string())
                .and_then(|r| body_of(r).map_err(|e| e.to_string()));
            assert!(r.is_err(), "{what}: {r:?}");
            c.shutdown();
            server.join().unwrap();
        }
    }

    #[test]
    fn a_head_longer_than_the_limit_is_refused() {
        let mut a = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..10_000 {
            a.extend(format!("X-Pad-{i}: {}\r\n", "p".repeat(20)).as_bytes());
        }
        a.extend(b"\r\n");
        let (port, _rx) = server(1, vec![a], 1 << 20);
        let e = client(port)
            .post(&[], b"{}", limits(Duration::from_secs(5)))
            .unwrap_err();
        assert!(e.to_string().contains("exceeds"), "{e}");
    }

    #[test]
    fn a_header_that_would_inject_lines_is_refused_before_connecting() {
        // Port 9 on loopback: nothing listens; a connect would fail with
        // another error than the header's.
        let c = client(9);
        let e = c
            .post(
                &[("X-A", "v\r\nX-Injected: 1")],
                b"{}",
                limits(Duration::from_secs(1)),
            )
            .unwrap_err();
        assert!(matches!(e, Error::Http(_)), "{e:?}");
    }

    #[test]
    fn a_silent_server_times_out() {
        let (port, _rx) = server(1, vec![], 1);
        let started = Instant::now();
        let e = client(port)
            .post(&[], b"{}", limits(Duration::from_millis(200)))
            .unwrap_err();
        assert!(matches!(e, Error::Timeout(Timeout::RecvResponse)), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn the_deadline_bounds_a_body_that_never_ends() {
        let a = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc".to_vec();
        let (port, _rx) = server(1, vec![a], 1 << 20);
        let lim = Limits {
            recv_response: Some(Duration::from_secs(5)),
            per_read: Some(Duration::from_secs(5)),
            deadline: Some(Instant::now() + Duration::from_millis(300)),
        };
        let r = client(port).post(&[], b"{}", lim).unwrap();
        let e = body_of(r).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e:?}");
        assert!(matches!(
            e.get_ref().and_then(|i| i.downcast_ref::<Error>()),
            Some(Error::Timeout(Timeout::Global))
        ));
    }

    #[test]
    fn shutdown_ends_a_blocked_wait_at_once() {
        let (port, rx) = server(1, vec![], 1);
        let c = client(port);
        let c2 = Arc::clone(&c);
        let call = std::thread::spawn(move || c2.post(&[], b"{}", limits(Duration::from_secs(30))));
        // The server has the request: the client waits for its answer.
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let started = Instant::now();
        c.shutdown();
        assert!(call.join().unwrap().is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(c.post(&[], b"{}", limits(Duration::from_secs(1))).is_err());
    }

    #[test]
    fn a_pooled_socket_the_server_closed_is_not_reused() {
        // The first answer keeps the socket alive, then the server closes
        // it; the second request must go on a new connection.
        let mut first = json_answer("1");
        first.extend(b"<close>");
        let first = first[..first.len() - 7].to_vec();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (closed_tx, closed_rx) = mpsc::channel();
        let server = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            read_request(&mut r).unwrap();
            (&s).write_all(&first).unwrap();
            drop(r);
            drop(s);
            closed_tx.send(()).unwrap();
            let (s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            read_request(&mut r).unwrap();
            (&s).write_all(&json_answer("2")).unwrap();
        });
        let c = client(port);
        let r = c.post(&[], b"{}", limits(Duration::from_secs(5))).unwrap();
        assert_eq!(body_of(r).unwrap(), b"1");
        closed_rx.recv().unwrap();
        // The FIN may still be on its way: wait until the socket shows it.
        let deadline = Instant::now() + Duration::from_secs(5);
        while c.idle.lock().first().is_some_and(Conn::is_open) {
            assert!(Instant::now() < deadline, "the close never showed");
            std::thread::yield_now();
        }
        let r = c.post(&[], b"{}", limits(Duration::from_secs(5))).unwrap();
        assert_eq!(body_of(r).unwrap(), b"2");
        server.join().unwrap();
    }

    #[test]
    fn redirects_are_followed_on_the_same_origin_only() {
        let c = client(8000);
        let moved = |loc: &str| {
            let mut r = Response::new(Body::builder().data(""));
            *r.status_mut() = StatusCode::TEMPORARY_REDIRECT;
            r.headers_mut()
                .insert("location", HeaderValue::from_str(loc).unwrap());
            c.same_origin(r.headers())
        };
        assert_eq!(moved("/v2/mcp?x=1").as_deref(), Some("/v2/mcp?x=1"));
        assert_eq!(
            moved("http://127.0.0.1:8000/other").as_deref(),
            Some("/other")
        );
        assert_eq!(moved("http://127.0.0.1:8001/other"), None);
        assert_eq!(moved("https://127.0.0.1:8000/other"), None);
        assert_eq!(moved("//evil.example/mcp"), None);
        assert_eq!(moved("/a b"), None, "not a request target");
    }

    #[test]
    fn heads_end_at_the_first_empty_line() {
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\n\r\nbody"), Some(19));
        assert_eq!(head_end(b"HTTP/1.1 200 OK\n\nbody"), Some(17));
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n"), None);
        // Empty lines before the status line are skipped, not an end.
        assert_eq!(head_end(b"\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"), Some(23));
    }

    #[test]
    fn the_body_framing_follows_rfc_9112() {
        let head = |raw: &str| parse_head(raw.as_bytes()).map(|h| (h.framing, h.keep_alive));
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n").unwrap(),
            (Framing::Length(5), true)
        );
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n").unwrap(),
            (Framing::Length(5), true)
        );
        // Transfer-Encoding wins over Content-Length.
        assert_eq!(
            head(
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
            )
            .unwrap(),
            (Framing::Chunked, true)
        );
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n").unwrap(),
            (Framing::Close, false)
        );
        assert_eq!(
            head("HTTP/1.1 204 No Content\r\n\r\n").unwrap(),
            (Framing::Length(0), true)
        );
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n")
                .unwrap(),
            (Framing::Length(0), false)
        );
        assert_eq!(
            head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").unwrap(),
            (Framing::Length(0), false)
        );
        assert!(head("HTTP/2 200\r\n\r\n").is_err());
        // The last coding of all the Transfer-Encoding lines decides, and
        // an empty one does not count; Content-Length is then not read.
        for (te, framing) in [
            (
                "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip",
                Framing::Close,
            ),
            (
                "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked",
                Framing::Chunked,
            ),
            (
                "Transfer-Encoding: chunked\r\nTransfer-Encoding: ,",
                Framing::Chunked,
            ),
            ("Transfer-Encoding: ,", Framing::Close),
            (
                "Content-Length: x\r\nTransfer-Encoding: chunked",
                Framing::Chunked,
            ),
            (
                "Transfer-Encoding: chunked\r\nContent-Length: 1\r\nContent-Length: 2",
                Framing::Chunked,
            ),
        ] {
            let raw = format!("HTTP/1.1 200 OK\r\n{te}\r\n\r\n");
            assert_eq!(head(&raw).unwrap().0, framing, "{te}");
        }
        // Content-Length over several lines: all the same, or an error.
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nX: y\r\nContent-Length: 7\r\n\r\n")
                .unwrap(),
            (Framing::Length(7), true)
        );
        for bad in [
            "Content-Length: 7\r\nContent-Length: 8",
            "Content-Length: -1",
            "Content-Length: 1,",
        ] {
            let raw = format!("HTTP/1.1 200 OK\r\n{bad}\r\n\r\n");
            assert!(head(&raw).is_err(), "{bad}");
        }
        // `close` in any Connection line.
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\nConnection: Close\r\n\r\n")
                .unwrap(),
            (Framing::Length(0), false)
        );
        assert_eq!(
            declared_length(
                StatusCode::OK,
                &head_headers("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n")
            ),
            Some(12)
        );
    }

    fn head_headers(raw: &str) -> ureq::http::HeaderMap {
        parse_head(raw.as_bytes()).unwrap().headers
    }

    #[test]
    fn only_plain_http_without_a_proxy_or_own_headers_goes_this_way() {
        let agent: Agent = Agent::config_builder().proxy(None).build().into();
        let s = || Settings {
            user_agent: "t/1".into(),
            spin: Duration::ZERO,
            per_write: Duration::from_secs(1),
            per_read: Duration::from_secs(1),
            max_idle: 1,
        };
        assert!(H1::new("http://127.0.0.1:1/mcp", &agent, &[], s()).is_some());
        assert!(H1::new("https://127.0.0.1:1/mcp", &agent, &[], s()).is_none());
        assert!(H1::new("http://user:pw@127.0.0.1:1/mcp", &agent, &[], s()).is_none());
        let host = [("Host".to_owned(), "other".to_owned())];
        assert!(H1::new("http://127.0.0.1:1/mcp", &agent, &host, s()).is_none());
        let proxy = ureq::Proxy::new("http://127.0.0.1:3128").unwrap();
        let proxied: Agent = Agent::config_builder().proxy(Some(proxy)).build().into();
        assert!(H1::new("http://127.0.0.1:1/mcp", &proxied, &[], s()).is_none());
        let bad_agent = Settings {
            user_agent: "x\r\nX-Injected: 1".into(),
            ..s()
        };
        assert!(H1::new("http://127.0.0.1:1/mcp", &agent, &[], bad_agent).is_none());
        let bare = H1::new("http://127.0.0.1:1", &agent, &[], s()).unwrap();
        assert_eq!(bare.target, "/");
    }
}
