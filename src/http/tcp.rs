//! The socket under plain `http://` requests: ureq's TCP transport with
//! fewer system calls per request.
//!
//! Traced with `strace` on a kept-alive loopback connection, ureq's own TCP
//! transport made fourteen calls per `tools/call` where the request and its
//! answer need two:
//!
//! * the head and the body in two `send`s: the server wakes for the head,
//!   finds no body yet and sleeps again until the second segment comes;
//! * a liveness probe of the pooled socket both when it is returned to the
//!   pool and when it is taken again, each three calls (`FIONBIO` on, a
//!   one-byte `recv`, `FIONBIO` off);
//! * `SO_SNDTIMEO` twice and `SO_RCVTIMEO` once, because each request's
//!   remaining time differs from the last by a few microseconds.
//!
//! Here a request head that announces a body is held (copied) until the
//! body comes and both go in one `writev`; the probe is one
//! `recv(MSG_PEEK | MSG_DONTWAIT)`; and a socket timeout is set again only
//! when the wanted one is shorter than the one set, or longer by more than
//! a small slack ([`timeout_slack`]). So a blocked read may end up to that
//! slack after the request's deadline (at most
//! [`HTTP_SOCKET_TIMEOUT_SLACK`], and 1/64 of the timeout for short ones);
//! ureq still checks the deadline itself.
//!
//! And like a stdio caller that reads its own reply, a request waiting for
//! its answer first polls the socket without blocking, yielding the CPU
//! between polls, for [`ClientOptions::caller_spin`] (when a
//! [`SpinSlot`] is free): an answer that comes within it is seen without the
//! wake-up of a sleeping thread, which on a virtual machine cost more than
//! the rest of the request (`bench_client --floor-variants`: a blocking
//! raw-socket client 72-75 µs a call, a polling one 23-24).
//!
//! `https://` and proxied requests go through ureq's [`DefaultConnector`]
//! unchanged. Connecting follows ureq's: each resolved address in turn,
//! with a share of the connect timeout. This builds on ureq's transport
//! interface, which is outside its semver promise (`unversioned`), hence
//! the pinned minor version in `Cargo.toml`.
//!
//! [`ClientOptions::caller_spin`]: crate::ClientOptions::caller_spin

use std::fmt;
use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, DefaultConnector, LazyBuffers, NextTimeout,
    ShutdownHandle, Transport,
};
use ureq::{Error, Timeout};

use crate::limits::HTTP_SOCKET_TIMEOUT_SLACK;
use crate::spin::SpinSlot;

/// Plain `http://` without a proxy over [`LeanTcp`]; everything else through
/// ureq's [`DefaultConnector`].
pub(crate) struct LeanConnector {
    default: DefaultConnector,
    /// How long a request polls for its answer before it sleeps.
    spin: Duration,
}

impl LeanConnector {
    pub(crate) fn new(spin: Duration) -> LeanConnector {
        LeanConnector {
            default: DefaultConnector::default(),
            spin,
        }
    }
}

impl fmt::Debug for LeanConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeanConnector").finish_non_exhaustive()
    }
}

impl Connector<()> for LeanConnector {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, Error> {
        let plain = details.uri.scheme_str() == Some("http") && details.config.proxy().is_none();
        if !plain {
            return self.default.connect(details, chained);
        }
        let stream = connect(&details.addrs, details.timeout.not_zero().map(|d| *d))?;
        if details.config.no_delay() {
            stream.set_nodelay(true)?;
        }
        let stream = Arc::new(stream);
        let handle: Weak<dyn ShutdownHandle> = Arc::downgrade(&stream) as Weak<dyn ShutdownHandle>;
        (details.register_shutdown)(handle)?;
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Box::new(LeanTcp {
            stream,
            buffers,
            held: Vec::new(),
            read_timeout: None,
            write_timeout: None,
            spin: self.spin,
            sent: false,
        })))
    }
}

/// The shortest time given to one address when several are tried.
const MIN_PER_ADDRESS: Duration = Duration::from_millis(10);

/// Tries each resolved address in turn, each with an equal share of what
/// is left of the connect timeout `total` (at least [`MIN_PER_ADDRESS`]).
pub(super) fn connect(addrs: &[SocketAddr], total: Option<Duration>) -> Result<TcpStream, Error> {
    let started = Instant::now();
    let mut last: Option<Error> = None;
    for (i, addr) in addrs.iter().enumerate() {
        let attempt = match total {
            None => TcpStream::connect(addr),
            Some(total) => {
                let left = total.saturating_sub(started.elapsed());
                if left.is_zero() {
                    return Err(Error::Timeout(Timeout::Connect));
                }
                let share = (left / (addrs.len() - i) as u32).max(MIN_PER_ADDRESS);
                TcpStream::connect_timeout(addr, share)
            }
        };
        match attempt {
            Ok(s) => return Ok(s),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) =>
            {
                last = Some(Error::Timeout(Timeout::Connect));
            }
            Err(e) => last = Some(Error::Io(e)),
        }
    }
    Err(last.unwrap_or_else(|| {
        Error::Io(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            "no address to connect to",
        ))
    }))
}

/// A kept-alive TCP connection for plain HTTP (see the module docs).
pub(crate) struct LeanTcp {
    stream: Arc<TcpStream>,
    buffers: LazyBuffers,
    /// A request head waiting for its body, to go out in one write.
    held: Vec<u8>,
    /// The socket's `SO_RCVTIMEO` / `SO_SNDTIMEO` as last set.
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// How long to poll for an answer before sleeping (see the module docs).
    spin: Duration,
    /// Whether bytes went out since the last read: only then is an answer
    /// due soon enough to poll for (not on a quiet event stream).
    sent: bool,
}

/// How much longer than wanted a socket timeout may stay: 1/64 of it, at
/// most [`HTTP_SOCKET_TIMEOUT_SLACK`].
fn timeout_slack(want: Duration) -> Duration {
    (want / 64).min(HTTP_SOCKET_TIMEOUT_SLACK)
}

/// What the socket timeout must be set to for `want`, or `None` when the
/// one set (`current`) will do: not shorter than wanted, and not longer by
/// more than the slack. A new value is `want` plus half the slack, so the
/// next request, whose time left differs by microseconds, keeps it.
fn timeout_to_set(current: Option<Duration>, want: Option<Duration>) -> Option<Option<Duration>> {
    match (current, want) {
        (None, None) => None,
        (Some(c), Some(w)) if c >= w && c - w <= timeout_slack(w) => None,
        (_, w) => Some(w.map(|w| w + timeout_slack(w) / 2)),
    }
}

/// Whether `out` is a whole request head that announces a body: it is then
/// held until the body is transmitted, so both leave in one write.
fn is_head_with_body(out: &[u8]) -> bool {
    if !out.ends_with(b"\r\n\r\n") || !out.starts_with(b"POST ") && !out.starts_with(b"PUT ") {
        return false;
    }
    let head = &out[..out.len() - 2];
    head.split(|&b| b == b'\n').any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return false;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"content-length") {
            value.iter().all(u8::is_ascii_digit) && value.iter().any(|&b| b != b'0')
        } else {
            name.eq_ignore_ascii_case(b"transfer-encoding")
                && value.eq_ignore_ascii_case(b"chunked")
        }
    })
}

/// Calls `set` with the timeout to set for `want` when `current` will not
/// do (`timeout_to_set`), and remembers it.
fn set_lazily(
    current: &mut Option<Duration>,
    want: Option<Duration>,
    set: impl FnOnce(Option<Duration>) -> io::Result<()>,
) -> Result<(), Error> {
    if let Some(t) = timeout_to_set(*current, want) {
        set(t)?;
        *current = t;
    }
    Ok(())
}

/// A socket timeout that expired, as ureq reports it.
fn io_or_timeout(e: io::Error, reason: Timeout) -> Error {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Error::Timeout(reason),
        _ => Error::Io(e),
    }
}

/// Polls `fd` for input without blocking, yielding the CPU between polls,
/// for up to `spin`, when a [`SpinSlot`] is free. `Some(n)`: `n` bytes
/// were read into `dst` (0: end of file); `None`: nothing came, sleep in a
/// blocking wait.
pub(super) fn spin_recv(fd: RawFd, dst: &mut [u8], spin: Duration) -> Result<Option<usize>, Error> {
    if spin.is_zero() {
        return Ok(None);
    }
    let Some(_slot) = SpinSlot::take() else {
        return Ok(None);
    };
    let started = Instant::now();
    loop {
        // SAFETY: reads at most `dst.len()` bytes into `dst`, without
        // blocking, from a socket the caller owns.
        let n = unsafe { libc::recv(fd, dst.as_mut_ptr().cast(), dst.len(), libc::MSG_DONTWAIT) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock if started.elapsed() < spin => std::thread::yield_now(),
            io::ErrorKind::WouldBlock => return Ok(None),
            io::ErrorKind::Interrupted => {}
            _ => return Err(Error::Io(e)),
        }
    }
}

/// Whether a pooled socket is still fit for a request: one
/// `recv(MSG_PEEK | MSG_DONTWAIT)`. Nothing to read is what an idle
/// kept-alive connection shows; end of file, an error or unexpected bytes
/// mean it is not reusable.
pub(super) fn peek_is_idle(fd: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: peeks at most one byte into a local, without blocking, from
    // a socket the caller owns.
    let n = unsafe {
        libc::recv(
            fd,
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}

impl LeanTcp {
    /// Sets the socket's write timeout for `timeout`, if it must be
    /// (`timeout_to_set`).
    fn set_write_timeout(&mut self, timeout: &NextTimeout) -> Result<(), Error> {
        let want = timeout.not_zero().map(|d| *d);
        set_lazily(&mut self.write_timeout, want, |t| {
            self.stream.set_write_timeout(t)
        })
    }

    /// Sets the socket's read timeout to `want`, if it must be.
    fn set_read_timeout(&mut self, want: Option<Duration>) -> Result<(), Error> {
        set_lazily(&mut self.read_timeout, want, |t| {
            self.stream.set_read_timeout(t)
        })
    }

    /// Polls for input without blocking, yielding the CPU between polls, for
    /// up to `self.spin` (and `limit`). `Some(n)`: `n` bytes were read (0:
    /// end of file); `None`: nothing came, sleep in a blocking read.
    fn spin_read(&mut self, limit: Option<Duration>) -> Result<Option<usize>, Error> {
        let spin = limit.map_or(self.spin, |l| l.min(self.spin));
        let fd = self.stream.as_raw_fd();
        spin_recv(fd, self.buffers.input_append_buf(), spin)
    }

    /// Writes the held head (if any) and `out` with as few writes as the
    /// socket allows.
    fn write_out(&mut self, amount: usize, reason: Timeout) -> Result<(), Error> {
        let out = &self.buffers.output()[..amount];
        let mut bufs = [IoSlice::new(&self.held), IoSlice::new(out)];
        let mut bufs: &mut [IoSlice] = if self.held.is_empty() {
            &mut bufs[1..]
        } else {
            &mut bufs[..]
        };
        let mut stream = &*self.stream;
        while bufs.iter().any(|b| !b.is_empty()) {
            match stream.write_vectored(bufs) {
                Ok(0) => {
                    return Err(Error::Io(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the connection took no more bytes",
                    )))
                }
                Ok(n) => IoSlice::advance_slices(&mut bufs, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_or_timeout(e, reason)),
            }
        }
        self.held.clear();
        Ok(())
    }
}

impl Transport for LeanTcp {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), Error> {
        let timeout = timeout.for_write();
        if timeout.after.is_zero() {
            return Err(Error::Timeout(timeout.reason));
        }
        let out = &self.buffers.output()[..amount];
        if self.held.is_empty() && is_head_with_body(out) {
            self.held.extend_from_slice(out);
            return Ok(());
        }
        self.set_write_timeout(&timeout)?;
        self.sent = true;
        self.write_out(amount, timeout.reason)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
        if !self.held.is_empty() {
            // A head whose body never came (the server is to answer first,
            // as with `Expect: 100-continue`): it goes now.
            let w = timeout.for_write();
            self.set_write_timeout(&w)?;
            self.write_out(0, w.reason)?;
        }
        let timeout = timeout.for_read();
        if timeout.after.is_zero() {
            return Err(Error::Timeout(timeout.reason));
        }
        let limit = timeout.not_zero().map(|d| *d);
        if std::mem::take(&mut self.sent) {
            if let Some(n) = self.spin_read(limit)? {
                self.buffers.input_appended(n);
                return Ok(n > 0);
            }
        }
        self.set_read_timeout(limit)?;
        let started = Instant::now();
        let mut stream: &TcpStream = &self.stream;
        let input = self.buffers.input_append_buf();
        let n = loop {
            match stream.read(input) {
                Ok(n) => break n,
                // A signal: Linux does not restart a socket read that has a
                // timeout. Go on with what is left of it.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    let Some(limit) = limit else {
                        return Err(Error::Io(e));
                    };
                    let left = limit.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        return Err(Error::Timeout(timeout.reason));
                    }
                    stream.set_read_timeout(Some(left))?;
                    self.read_timeout = Some(left);
                }
                Err(e) => return Err(io_or_timeout(e, timeout.reason)),
            }
        };
        self.buffers.input_appended(n);
        Ok(n > 0)
    }

    fn is_open(&mut self) -> bool {
        peek_is_idle(self.stream.as_raw_fd())
    }
}

impl fmt::Debug for LeanTcp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeanTcp")
            .field("peer", &self.stream.peer_addr().ok())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use ureq::unversioned::transport::time::Duration as UreqDuration;

    /// A `LeanTcp` connected to a listener on loopback, and the server's end.
    fn pair(spin: Duration) -> (LeanTcp, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        let t = LeanTcp {
            stream: Arc::new(client),
            buffers: LazyBuffers::new(4096, 4096),
            held: Vec::new(),
            read_timeout: None,
            write_timeout: None,
            spin,
            sent: false,
        };
        (t, server)
    }

    fn within(d: Duration) -> NextTimeout {
        NextTimeout {
            after: UreqDuration::Exact(d),
            reason: Timeout::Global,
            per_read: None,
            per_write: None,
        }
    }

    fn send(t: &mut LeanTcp, bytes: &[u8]) {
        t.buffers.output()[..bytes.len()].copy_from_slice(bytes);
        t.transmit_output(bytes.len(), within(Duration::from_secs(5)))
            .unwrap();
    }

    /// What the server can read without waiting.
    fn readable_now(server: &mut TcpStream) -> Vec<u8> {
        server.set_nonblocking(true).unwrap();
        let mut buf = vec![0u8; 4096];
        let got = match server.read(&mut buf) {
            Ok(n) => buf[..n].to_vec(),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Vec::new(),
            Err(e) => panic!("{e}"),
        };
        server.set_nonblocking(false).unwrap();
        got
    }

    #[test]
    fn head_and_body_leave_in_one_write() {
        let (mut t, mut server) = pair(Duration::ZERO);
        let head = b"POST /mcp HTTP/1.1\r\ncontent-length: 2\r\n\r\n";
        send(&mut t, head);
        assert_eq!(readable_now(&mut server), b"", "the head was held");
        send(&mut t, b"{}");
        // Both went in one write: one read (with a deadline) gets them whole.
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = vec![0u8; 4096];
        let n = server.read(&mut buf).unwrap();
        let mut want = head.to_vec();
        want.extend_from_slice(b"{}");
        assert_eq!(&buf[..n], &want[..]);
    }

    #[test]
    fn a_held_head_goes_out_before_waiting_for_the_answer() {
        let (mut t, mut server) = pair(Duration::ZERO);
        let head = b"POST /mcp HTTP/1.1\r\ncontent-length: 2\r\nexpect: 100-continue\r\n\r\n";
        send(&mut t, head);
        let answer = std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            server
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let n = server.read(&mut buf).unwrap();
            server.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").unwrap();
            (buf[..n].to_vec(), server)
        });
        assert!(t.await_input(within(Duration::from_secs(5))).unwrap());
        assert_eq!(t.buffers.input(), b"HTTP/1.1 100 Continue\r\n\r\n");
        let (got, _server) = answer.join().unwrap();
        assert_eq!(got, head);
    }

    #[test]
    fn an_answer_is_read_with_and_without_polling_first() {
        for spin in [Duration::ZERO, Duration::from_millis(5)] {
            let (mut t, mut server) = pair(spin);
            send(&mut t, b"GET / HTTP/1.1\r\n\r\n");
            server.write_all(b"HTTP/1.1 200 OK\r\n").unwrap();
            assert!(t.await_input(within(Duration::from_secs(5))).unwrap());
            assert_eq!(t.buffers.input(), b"HTTP/1.1 200 OK\r\n", "spin {spin:?}");
        }
    }

    #[test]
    fn a_silent_server_times_out_after_polling_and_sleeping() {
        let (mut t, _server) = pair(Duration::from_millis(1));
        send(&mut t, b"GET / HTTP/1.1\r\n\r\n");
        let started = Instant::now();
        let e = t
            .await_input(within(Duration::from_millis(200)))
            .unwrap_err();
        assert!(matches!(e, Error::Timeout(Timeout::Global)), "{e:?}");
        let took = started.elapsed();
        // Not before the deadline; after it by at most the slack (and the
        // scheduler's share).
        assert!(took >= Duration::from_millis(190), "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
    }

    #[test]
    fn end_of_file_is_not_an_error() {
        let (mut t, mut server) = pair(Duration::from_millis(5));
        send(&mut t, b"GET / HTTP/1.1\r\n\r\n");
        // Read before closing: unread bytes would make the close a reset.
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 64];
        assert!(server.read(&mut buf).unwrap() > 0);
        drop(server);
        assert!(!t.await_input(within(Duration::from_secs(5))).unwrap());
    }

    #[test]
    fn is_open_tells_an_idle_connection_from_a_dead_or_chatty_one() {
        let (mut t, mut server) = pair(Duration::ZERO);
        assert!(t.is_open(), "idle and open");
        // Bytes nobody asked for: not reusable.
        server.write_all(b"x").unwrap();
        wait_readable(&t);
        assert!(!t.is_open(), "unexpected bytes");
        let (mut t, server) = pair(Duration::ZERO);
        drop(server);
        wait_readable(&t);
        assert!(!t.is_open(), "closed by the server");
    }

    /// Until the client's socket is readable (bounded).
    fn wait_readable(t: &LeanTcp) {
        let mut pfd = libc::pollfd {
            fd: t.stream.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for a socket `t` owns.
        let n = unsafe { libc::poll(&mut pfd, 1, 5000) };
        assert_eq!(n, 1, "the socket became readable");
    }

    #[test]
    fn a_head_is_held_only_when_a_body_follows() {
        let post = b"POST /mcp HTTP/1.1\r\nhost: a\r\ncontent-length: 99\r\n\r\n";
        assert!(is_head_with_body(post));
        assert!(is_head_with_body(
            b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        ));
        assert!(is_head_with_body(
            b"PUT / HTTP/1.1\r\nContent-Length:  7 \r\n\r\n"
        ));
        // No body, an empty one, a GET, or not a whole head.
        assert!(!is_head_with_body(
            b"POST /mcp HTTP/1.1\r\ncontent-length: 0\r\n\r\n"
        ));
        assert!(!is_head_with_body(b"POST /mcp HTTP/1.1\r\nhost: a\r\n\r\n"));
        assert!(!is_head_with_body(
            b"GET /mcp HTTP/1.1\r\ncontent-length: 5\r\n\r\n"
        ));
        assert!(!is_head_with_body(
            b"POST /mcp HTTP/1.1\r\ncontent-length: 5\r\n"
        ));
        assert!(!is_head_with_body(b"{\"jsonrpc\":\"2.0\"}"));
        // A header whose value merely mentions the name does not count.
        assert!(!is_head_with_body(
            b"POST / HTTP/1.1\r\nx-note: content-length: 5\r\n\r\n"
        ));
        assert!(!is_head_with_body(
            b"POST / HTTP/1.1\r\ncontent-length: 5x\r\n\r\n"
        ));
    }

    #[test]
    fn socket_timeouts_are_set_again_only_when_they_must() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        // Nothing set yet: set, with half the slack on top.
        let first = timeout_to_set(None, Some(s(60))).unwrap().unwrap();
        assert_eq!(first, s(60) + HTTP_SOCKET_TIMEOUT_SLACK.min(s(60) / 64) / 2);
        // The next request's time left differs by microseconds: kept.
        assert_eq!(timeout_to_set(Some(first), Some(s(60) - ms(1))), None);
        assert_eq!(timeout_to_set(Some(first), Some(s(60))), None);
        // A longer wait is never cut short by the socket: set again.
        assert!(timeout_to_set(Some(first), Some(s(61))).is_some());
        // Much shorter than set: set again, so a read does not overrun by
        // more than the slack.
        assert!(timeout_to_set(Some(first), Some(s(1))).is_some());
        // No timeout wanted while one is set, and the other way round.
        assert_eq!(timeout_to_set(Some(first), None), Some(None));
        assert_eq!(timeout_to_set(None, None), None);
        // Short timeouts get a proportionally short slack.
        let short = timeout_to_set(None, Some(ms(64))).unwrap().unwrap();
        assert!(short <= ms(64) + ms(1), "{short:?}");
    }
}
