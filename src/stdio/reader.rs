//! Reading the child's stdout: the `mcp-<name>-io` thread (which also
//! serves stderr and the stdin outbox, see [`Aux`]), and callers that read
//! their own reply.
//!
//! A sequential call through a dedicated reader thread costs three thread
//! wake-ups (the server, the reader, the caller) where a program reading
//! the pipe itself needs two. So the pipe's read end is shared: the bytes
//! and the partial line live in [`StdoutShared`] behind a mutex, and
//! whoever holds it reads and routes every message through the same
//! [`Peer::dispatch_bytes`] the reader thread uses.
//!
//! * A caller whose request is the only one in flight takes the mutex (never
//!   waiting for it) and reads until its own reply has been routed, for at
//!   most [`ClientOptions::caller_read_window`](crate::ClientOptions); then
//!   it hands reading back and waits on its channel as every other caller
//!   does. For the first [`ClientOptions::caller_spin`](crate::ClientOptions)
//!   of that it yields the CPU between non-blocking reads instead of
//!   sleeping in `poll`: waking a sleeping thread on an idle core costs
//!   tens of microseconds on a virtual machine, more than most replies of a
//!   local server take.
//! * The reader thread waits for input with `poll` without holding the
//!   mutex, then drains what is there. When it wakes and finds that a
//!   caller has taken (or already taken) the input, it stays away for up to
//!   [`READER_BACKOFF`] (serving stderr and stdin meanwhile), so a run of
//!   sequential calls does not wake it for every reply. A caller leaving
//!   while other requests are in flight, with lines read but not routed, or
//!   on end of file or an error, wakes it at once through a wake-up of its
//!   own ([`WakePipe`]: an `eventfd` on Linux, a pipe elsewhere).
//!
//! * With replies to two or more requests due, the reader thread polls
//!   stdout without sleeping for [`ClientOptions::io_spin`](crate::ClientOptions)
//!   before it sleeps in `poll`: on a busy connection the next reply then
//!   finds a thread (and a vCPU) awake.
//!
//! So the reader thread still sees every end of file and every message that
//! arrives while no caller is reading, within [`READER_BACKOFF`] at worst.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::ChildStdout;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::McpError;
use crate::large_strings::Scanner;
use crate::limits::{LARGE_STRING_MIN, READER_BACKOFF};
use crate::peer::{InlineRead, Peer};
use crate::poll::{poll_fds, pollfd};

use super::linebuf::{Line, LineBuf};
use super::stderr::StderrReader;
use super::stdin::StdinShared;
use super::tail::{StderrTail, STDERR_EOF_WAIT};
use super::{set_nonblocking, signal_group};

/// What draining the available input ended with.
enum Drained {
    /// No more input for now, after this many lines.
    WouldBlock(usize),
    /// `ready()` said stop (a caller's reply is in its channel).
    Ready,
    Eof,
    TooLong,
    Failed(io::Error),
}

/// The server's stdout and the bytes read from it.
struct ReadState {
    src: ChildStdout,
    input: LineBuf,
    /// Finds the large strings of `line` while it arrives (see
    /// `large_strings`).
    scan: Scanner,
    /// Whether the server has written a line yet. Until it has, it is
    /// still starting (loading, initialising: a millisecond or more), and
    /// a caller waiting for its first answer sleeps at once instead of
    /// spinning (see `ClientOptions::caller_spin`).
    heard: bool,
}

impl ReadState {
    /// Reads and routes complete lines until the pipe has nothing more, or
    /// `ready()` is true after a routed message.
    fn drain(&mut self, peer: &Arc<Peer>, max: usize, ready: &dyn Fn() -> bool) -> Drained {
        let mut routed = 0;
        loop {
            // The rest of a large frame is on its way: look at what came
            // meanwhile.
            let scan = &mut self.scan;
            let mut partial = |line: &[u8]| {
                if line.len() >= LARGE_STRING_MIN / 2 {
                    scan.feed(line);
                }
            };
            match self.input.next_line(&mut self.src, max, &mut partial) {
                Ok(Line::Complete) => {
                    self.heard = true;
                    self.route(peer);
                    routed += 1;
                    if ready() {
                        return Drained::Ready;
                    }
                }
                Ok(Line::Eof) => return Drained::Eof,
                Ok(Line::TooLong) => return Drained::TooLong,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Drained::WouldBlock(routed)
                }
                Err(e) => return Drained::Failed(e),
            }
        }
    }
}

impl ReadState {
    /// Whether a complete line is buffered (read, not yet routed).
    fn has_line(&self) -> bool {
        self.input.has_line()
    }

    /// Routes the line last found and steps past it.
    fn route(&mut self, peer: &Arc<Peer>) {
        let line = self.input.line();
        let line = match line.last() {
            Some(b'\r') => &line[..line.len() - 1],
            _ => line,
        };
        let taken = if line.len() >= LARGE_STRING_MIN {
            self.scan.finish(line)
        } else {
            self.scan.reset();
            None
        };
        if !line.iter().all(u8::is_ascii_whitespace) {
            peer.dispatch_taken(line, taken);
        }
        self.input.consume();
    }
}

/// What wakes the reader thread from `poll`: a caller handing reading back
/// makes it readable. On Linux an `eventfd` (one descriptor, one system
/// call to create: a server's start makes two of these); elsewhere a pipe.
pub(super) struct WakePipe {
    /// Polled for `POLLIN`; on Linux also the end that is written.
    rd: OwnedFd,
    /// The end that is written.
    #[cfg(not(target_os = "linux"))]
    wr: OwnedFd,
}

impl WakePipe {
    #[cfg(target_os = "linux")]
    fn new() -> io::Result<WakePipe> {
        // SAFETY: eventfd takes an initial value and flags and returns a
        // new descriptor.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: just returned to us and owned by nothing else.
        let rd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(WakePipe { rd })
    }

    #[cfg(not(target_os = "linux"))]
    fn new() -> io::Result<WakePipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` has room for the two descriptors `pipe` returns.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just returned to us and are owned
        // by nothing else.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        for fd in [&rd, &wr] {
            let fd = fd.as_raw_fd();
            set_nonblocking(fd)?;
            // SAFETY: fcntl on a descriptor we own.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(WakePipe { rd, wr })
    }

    /// The descriptor to poll for `POLLIN`.
    fn fd(&self) -> RawFd {
        self.rd.as_raw_fd()
    }

    /// Makes it readable (it stays so until [`WakePipe::clear`]; a full
    /// pipe or counter already is).
    fn wake(&self) {
        #[cfg(target_os = "linux")]
        let (fd, bytes) = (self.rd.as_raw_fd(), 1u64.to_ne_bytes());
        #[cfg(not(target_os = "linux"))]
        let (fd, bytes) = (self.wr.as_raw_fd(), [1u8]);
        // SAFETY: writes from a valid buffer of that length to our own
        // non-blocking descriptor.
        unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    }

    /// Makes it unreadable again, until the next [`WakePipe::wake`].
    fn clear(&self) {
        // An eventfd is emptied by one 8-byte read; a pipe by reading it
        // dry.
        let mut buf = [0u8; 64];
        // SAFETY: reads into a valid buffer from our own non-blocking
        // descriptor.
        while unsafe { libc::read(self.rd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
    }
}

/// Told once, by `close()` or `Drop` after the child's group is killed and
/// the child reaped: every I/O thread waits on it with its pipe, so none
/// stays blocked on a pipe that a process outside the group (a descendant
/// that called `setsid`, as daemons do) still holds open. Never cleared:
/// its pipe stays readable, so every `poll` that includes it returns.
pub(super) struct Stop {
    pipe: WakePipe,
    set: AtomicBool,
}

impl Stop {
    pub(super) fn new() -> io::Result<Stop> {
        Ok(Stop {
            pipe: WakePipe::new()?,
            set: AtomicBool::new(false),
        })
    }

    /// Wakes every thread waiting on it, for good.
    pub(super) fn fire(&self) {
        self.set.store(true, Ordering::Release);
        self.pipe.wake();
    }

    pub(super) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// The descriptor to poll (readable once fired).
    pub(super) fn fd(&self) -> RawFd {
        self.pipe.fd()
    }
}

/// The child's stdout, read by the reader thread or by a caller.
pub(super) struct StdoutShared {
    fd: RawFd,
    state: Mutex<ReadState>,
    /// Written by a caller that hands reading back to the reader thread.
    wake: WakePipe,
    /// Set when the reader thread has stopped: callers no longer read.
    finished: AtomicBool,
    /// The connection whose messages are routed (set once it exists).
    peer: OnceLock<Weak<Peer>>,
    /// A pidfd of the direct child (Linux 5.3+; `None` where there is
    /// none): readable once the child has exited, even while a grandchild
    /// (the real server behind an `npx`/`uvx`/shell wrapper) still holds
    /// the stdout pipe open, so that pending calls fail at once instead of
    /// waiting for their timeout.
    pidfd: Option<OwnedFd>,
    /// Told when the client closes: the reader thread stops waiting.
    stop: Arc<Stop>,
    /// How many times a caller has taken stdout to read: the I/O thread
    /// tells a caller that is still reading from one that came after it.
    reads: AtomicU64,
    /// The I/O thread waits, without a time limit, for the caller now
    /// reading to hand back (see [`StdoutShared::back_off`]).
    parked: AtomicBool,
}

/// A pidfd for `pid`, when the kernel has `pidfd_open`.
fn open_pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just returned to us and is owned by
    // nothing else (pidfd_open sets close-on-exec).
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

impl StdoutShared {
    /// Makes the read end non-blocking (ours alone: the child holds the
    /// write end) and wraps it.
    pub(super) fn new(stdout: ChildStdout, pid: u32, stop: Arc<Stop>) -> io::Result<StdoutShared> {
        let fd = stdout.as_raw_fd();
        set_nonblocking(fd)?;
        Ok(StdoutShared {
            pidfd: open_pidfd(pid),
            stop,
            fd,
            state: Mutex::new(ReadState {
                src: stdout,
                input: LineBuf::new(),
                scan: Scanner::new(LARGE_STRING_MIN),
                heard: false,
            }),
            wake: WakePipe::new()?,
            finished: AtomicBool::new(false),
            peer: OnceLock::new(),
            reads: AtomicU64::new(0),
            parked: AtomicBool::new(false),
        })
    }

    /// Closes our read end of the pipe, once the reader thread has ended:
    /// a process outside the server's group that still holds the write end
    /// then gets `EPIPE` instead of filling a pipe nobody reads. What is
    /// left reads as end of file (`/dev/null`).
    pub(super) fn release(&self) {
        self.finished.store(true, Ordering::Release);
        let Ok(null) = std::fs::File::open("/dev/null") else {
            return;
        };
        let mut st = self.state.lock();
        st.src = ChildStdout::from(OwnedFd::from(null));
        st.input = LineBuf::empty();
        st.scan.reset();
    }

    /// Names the connection that messages are routed to.
    pub(super) fn attach(&self, peer: &Arc<Peer>) {
        let _ = self.peer.set(Arc::downgrade(peer));
    }

    /// Wakes the reader thread, from its back-off or from waiting for input.
    fn hand_back(&self) {
        self.wake.wake();
    }

    /// The I/O thread stays away from stdout while a caller reads: until a
    /// caller hands back, or [`READER_BACKOFF`] passed. Stderr and the
    /// outbox are served meanwhile.
    ///
    /// A caller that is still reading after that (the same read: a server
    /// still starting, a slow reply inside the caller's read window) is
    /// waited for without a time limit, the caller being told to hand back
    /// when it leaves ([`StdoutShared::parked`]): a thread woken every
    /// [`READER_BACKOFF`] for nothing cost the I/O thread half its CPU
    /// while fifty servers started (BENCHMARKS.md, stop 38). Quick
    /// sequential calls, each a read of its own, keep the timed back-off,
    /// so they do not each pay a hand-back.
    fn back_off(&self, aux: &mut Aux<'_>, peer: &Peer) {
        let read = self.reads.load(Ordering::Acquire);
        if self.wait_aside(aux, peer, Some(READER_BACKOFF)) {
            return;
        }
        if self.reads.load(Ordering::Acquire) != read || !self.state.is_locked() {
            return;
        }
        self.parked.store(true, Ordering::SeqCst);
        // Pairs with the fence in `read_inline` after the caller unlocks:
        // either the caller sees `parked` and hands back, or this sees the
        // mutex free (or taken by a later read) and does not wait.
        std::sync::atomic::fence(Ordering::SeqCst);
        while self.reads.load(Ordering::Acquire) == read
            && self.state.is_locked()
            && !self.stop.is_set()
            && !self.wait_aside(aux, peer, None)
        {}
        self.parked.store(false, Ordering::Release);
    }

    /// Waits, for at most `limit`, for a hand-back or the client's close,
    /// serving stderr and the outbox meanwhile. Returns whether one of
    /// those came (false: time passed, or only stderr or the outbox had
    /// something).
    fn wait_aside(&self, aux: &mut Aux<'_>, peer: &Peer, limit: Option<Duration>) -> bool {
        let [err, out] = aux.fds();
        let mut fds = [pollfd(self.wake.fd()), pollfd(self.stop.fd()), err, out];
        if poll_fds(&mut fds, limit).is_err() {
            // Not expected of `poll` on our own descriptors; do not spin.
            return true;
        }
        if fds[0].revents != 0 {
            self.wake.clear();
        }
        aux.serve(&fds[2..], peer, self.stop.is_set());
        fds[0].revents != 0 || fds[1].revents != 0
    }

    /// Waits for input, a wake-up, the child's exit, or the client's
    /// close, serving stderr and the outbox meanwhile. Returns whether
    /// there is input, and whether the child has exited.
    fn wait_input(&self, aux: &mut Aux<'_>, peer: &Peer) -> io::Result<(bool, bool)> {
        let pidfd = self.pidfd.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        let [err, out] = aux.fds();
        let mut fds = [
            pollfd(self.fd),
            pollfd(self.wake.fd()),
            pollfd(pidfd),
            pollfd(self.stop.fd()),
            err,
            out,
        ];
        // With replies to several requests due, poll without sleeping for
        // a moment first (see `ClientOptions::io_spin`).
        let spin = peer.opts.io_spin;
        if !spin.is_zero() && peer.pending_count() >= 2 {
            if let Some(_slot) = crate::spin::SpinSlot::take() {
                let until = Instant::now() + spin;
                loop {
                    poll_fds(&mut fds, Some(Duration::ZERO))?;
                    if fds.iter().any(|f| f.revents != 0) || Instant::now() >= until {
                        break;
                    }
                    std::thread::yield_now();
                }
            }
        }
        // A negative descriptor is ignored by poll.
        if fds.iter().all(|f| f.revents == 0) {
            poll_fds(&mut fds, None)?;
        }
        if fds[1].revents != 0 {
            self.wake.clear();
        }
        aux.serve(&fds[4..], peer, self.stop.is_set());
        Ok((fds[0].revents != 0, pidfd >= 0 && fds[2].revents != 0))
    }

    /// Wakes the I/O thread to write out the outbox.
    pub(super) fn wake_io(&self) {
        self.wake.wake();
    }

    /// Reads on the calling thread until `ready()` is true after a routed
    /// message, or `until` passes. See [`Peer`]'s use of [`InlineRead`].
    pub(super) fn read_inline(&self, ready: &dyn Fn() -> bool, until: Instant) -> InlineRead {
        if self.finished.load(Ordering::Acquire) {
            return InlineRead::Unavailable;
        }
        let Some(peer) = self.peer.get().and_then(Weak::upgrade) else {
            return InlineRead::Unavailable;
        };
        let Some(mut st) = self.state.try_lock() else {
            return InlineRead::Unavailable;
        };
        self.reads.fetch_add(1, Ordering::AcqRel);
        if self.finished.load(Ordering::Acquire) {
            // Released meanwhile: `self.fd` is no longer ours.
            return InlineRead::Unavailable;
        }
        let max = peer.opts.max_message_size;
        // Briefly, yield instead of sleeping: a reply that comes now is
        // seen without waking a sleeping thread (see `caller_spin`). Not
        // for a server that has not answered yet: its first answer is
        // behind its start-up, far longer than the spin (measured: the
        // spin was a tenth of the client's CPU per start).
        let spin_until = (Instant::now() + peer.opts.caller_spin).min(until);
        let mut spin_slot = (!peer.opts.caller_spin.is_zero() && st.heard)
            .then(crate::spin::SpinSlot::take)
            .flatten();
        let pidfd = self.pidfd.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        let outcome = loop {
            let mut exited = false;
            // Wait first (a reply is rarely there the moment its request
            // was written), unless a complete line is already buffered.
            if !st.has_line() {
                // The reply may have been routed before the mutex was ours
                // (by the reader thread).
                if ready() {
                    break InlineRead::Ready;
                }
                let now = Instant::now();
                if now >= until {
                    break InlineRead::TimedOut;
                }
                if spin_slot.is_some() && now < spin_until && peer.pending_count() <= 1 {
                    // Runnable threads on this core (the server, on a busy
                    // machine) go first; the next drain reads again. Only
                    // while this call is alone: other callers need the CPU
                    // more than this one needs a quick wake-up.
                    std::thread::yield_now();
                } else {
                    spin_slot = None;
                    // The child's exit ends the wait too (a grandchild may
                    // hold stdout open): a negative pidfd is ignored.
                    let mut fds = [pollfd(self.fd), pollfd(pidfd)];
                    if let Err(e) = poll_fds(&mut fds, Some(until - now)) {
                        ::log::debug!(target: "mcp_client", "[{}] poll on stdout failed: {e}", peer.name);
                        break InlineRead::Unavailable;
                    }
                    exited = pidfd >= 0 && fds[1].revents != 0;
                }
            }
            match st.drain(&peer, max, ready) {
                Drained::Ready => break InlineRead::Ready,
                // What the exited child wrote is routed; the reader thread
                // (woken on the way out) ends the connection.
                Drained::WouldBlock(_) if exited => break InlineRead::Unavailable,
                Drained::WouldBlock(_) => {}
                // The reader thread meets the same state again and ends the
                // connection the one way it always does.
                Drained::Eof | Drained::TooLong | Drained::Failed(_) => {
                    break InlineRead::Unavailable
                }
            }
        };
        let left_lines = st.has_line();
        drop(st);
        // Pairs with the fence in `back_off`: an I/O thread waiting for
        // this read to end is seen here.
        std::sync::atomic::fence(Ordering::SeqCst);
        let parked = self.parked.swap(false, Ordering::AcqRel);
        // After unlocking: a request registered before this check either
        // found the mutex taken (and is counted here) or registered alone
        // and reads for itself. Lines read but not routed would wait for
        // the next byte on the pipe: the reader thread routes them.
        if parked || outcome != InlineRead::Ready || left_lines || peer.pending_count() > 0 {
            self.hand_back();
        }
        outcome
    }
}

/// The child's exit status, if it is reaped within a moment of its stdout
/// closing.
fn exit_description(child: &Arc<Mutex<Option<super::spawn::Proc>>>) -> Option<String> {
    // The child closes stdout a moment before it is reaped; look briefly,
    // often at first (it is usually a matter of microseconds).
    let deadline = Instant::now() + Duration::from_millis(50);
    let mut pause = Duration::from_micros(50);
    loop {
        {
            let mut g = child.lock();
            match g.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(status))) => return Some(status.to_string()),
                Some(Ok(None)) => {}
                _ => return None,
            }
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(2));
    }
}

/// `reason` with the server's last stderr lines, which usually say why it
/// ended (stderr is read to its end first, for at most
/// [`STDERR_EOF_WAIT`]); unchanged when the client is closing it (the lines
/// would explain nothing, and waiting for them would slow the close).
fn ended_by_server(reason: String, closing: &AtomicBool, aux: &mut Aux<'_>, peer: &Peer) -> String {
    if closing.load(Ordering::Acquire) {
        return reason;
    }
    aux.stderr
        .catch_up(peer, aux.tail, Instant::now() + STDERR_EOF_WAIT);
    aux.tail.explain(reason)
}

/// What the I/O thread serves besides stdout: the child's stderr, and the
/// outbox of its stdin when the pipe did not take everything at once.
pub(super) struct Aux<'a> {
    pub(super) stdin: &'a StdinShared,
    pub(super) stderr: StderrReader,
    pub(super) tail: &'a StderrTail,
}

impl Aux<'_> {
    /// The pollfds for stderr (while open) and for room in stdin (while the
    /// outbox holds something); -1 descriptors are ignored by `poll`.
    fn fds(&self) -> [libc::pollfd; 2] {
        let out = if self.stdin.wants_write() {
            self.stdin.fd()
        } else {
            -1
        };
        [
            pollfd(self.stderr.fd()),
            libc::pollfd {
                fd: out,
                events: libc::POLLOUT,
                revents: 0,
            },
        ]
    }

    /// Reads stderr and writes the outbox, as `fds` (from [`Aux::fds`],
    /// polled) say they are ready.
    fn serve(&mut self, fds: &[libc::pollfd], peer: &Peer, stopped: bool) {
        if fds[0].revents != 0 {
            self.stderr.drain(peer, self.tail, stopped);
        }
        if fds[1].revents != 0 {
            if let Err(e) = self.stdin.flush() {
                peer.fail_all(&super::stdin::write_failed(e));
            }
        }
    }

    /// After stdout ended: stderr is still read (a process the server
    /// started may hold it and write) until end of file or the client's
    /// close, and then what the read budget after a stop allows.
    pub(super) fn drain_stderr_to_end(&mut self, peer: &Peer, stop: &Stop) {
        while !self.stderr.ended() && !stop.is_set() {
            let mut fds = [pollfd(self.stderr.fd()), pollfd(stop.fd())];
            if poll_fds(&mut fds, None).is_err() {
                break;
            }
            if fds[0].revents != 0 {
                self.stderr.drain(peer, self.tail, false);
            }
        }
        if !self.stderr.ended() {
            self.stderr.drain(peer, self.tail, true);
        }
    }
}

/// The `mcp-<name>-io` thread: routes whatever no caller reads, and ends
/// the connection at end of file, on a read error, or on an oversized line.
pub(super) fn reader_loop(
    shared: &StdoutShared,
    peer: &Arc<Peer>,
    child: &Arc<Mutex<Option<super::spawn::Proc>>>,
    closing: &AtomicBool,
    pid: u32,
    aux: &mut Aux<'_>,
) {
    let max = peer.opts.max_message_size;
    let never = || false;
    let reason = loop {
        if shared.stop.is_set() {
            // The client closed and the group is dead; whatever still holds
            // the pipe is not the server we talk to.
            break "closed by the client".to_owned();
        }
        // Lines a caller read but left are routed without waiting.
        let buffered = match shared.state.try_lock() {
            Some(st) => st.has_line(),
            None => {
                // A caller is reading its reply.
                shared.back_off(aux, peer);
                continue;
            }
        };
        let (input, exited) = match buffered {
            true => (false, false),
            false => match shared.wait_input(aux, peer) {
                Ok(w) => w,
                Err(e) => break format!("waiting for the server's stdout failed: {e}"),
            },
        };
        let Some(mut st) = shared.state.try_lock() else {
            shared.back_off(aux, peer);
            continue;
        };
        let drained = st.drain(peer, max, &never);
        if exited && matches!(drained, Drained::WouldBlock(_) | Drained::Ready) {
            // The child is gone and what it wrote is routed, but another
            // process (a grandchild) holds its stdout open: nothing will
            // answer the calls in flight.
            drop(st);
            let reason = match exit_description(child) {
                Some(status) => format!(
                    "the server exited ({status}); a process it started still holds its stdout"
                ),
                None => "the server exited; a process it started still holds its stdout".to_owned(),
            };
            break ended_by_server(reason, closing, aux, peer);
        }
        match drained {
            Drained::WouldBlock(0) if input => {
                // A caller took the input that woke us.
                drop(st);
                shared.back_off(aux, peer);
            }
            Drained::WouldBlock(_) | Drained::Ready => {}
            Drained::Eof => {
                drop(st);
                let reason = match exit_description(child) {
                    Some(status) => format!("the server exited ({status})"),
                    None => "the server closed its stdout".to_owned(),
                };
                break ended_by_server(reason, closing, aux, peer);
            }
            Drained::TooLong => {
                shared.finished.store(true, Ordering::Release);
                let reason = format!("the server sent a message larger than {max} bytes");
                let name = peer.name.clone();
                peer.fail_all_with(&reason, |_| McpError::MessageTooLarge {
                    server: name.clone(),
                    limit: max,
                });
                peer.lifecycle(format!("disconnected: {reason}; killing it"));
                if let Some(tx) = &peer.opts.disconnects {
                    let _ = tx.try_send(crate::client::Disconnect {
                        server: peer.name.clone(),
                        reason: reason.clone(),
                    });
                }
                signal_group(pid, libc::SIGKILL);
                // Drain to end of file so the pipe does not block the dying
                // group (or until the client closes).
                let st = &mut *st;
                drain_to_eof(shared.fd, &mut st.src, &mut st.input, &shared.stop);
                return;
            }
            Drained::Failed(e) => break format!("reading the server's stdout failed: {e}"),
        }
    };
    shared.finished.store(true, Ordering::Release);
    peer.fail_all(&reason);
    if !closing.load(Ordering::Acquire) {
        peer.lifecycle(format!("disconnected: {reason}"));
        if let Some(tx) = &peer.opts.disconnects {
            let _ = tx.try_send(crate::client::Disconnect {
                server: peer.name.clone(),
                reason,
            });
        }
    }
}

/// Discards input until end of file, an error, or `stop`.
///
/// Reads through the connection's own buffer: a scratch array here would
/// be part of the I/O thread's frame (this is inlined into
/// [`reader_loop`]), and its pages resident for the thread's whole life, on
/// every server.
fn drain_to_eof(fd: RawFd, src: &mut ChildStdout, input: &mut LineBuf, stop: &Stop) {
    while !input.discard_from(src) {
        if stop.is_set() || poll_fds(&mut [pollfd(fd), pollfd(stop.fd())], None).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_pipe_is_readable_from_wake_until_clear() {
        let readable = |w: &WakePipe| {
            let mut fds = [pollfd(w.fd())];
            poll_fds(&mut fds, Some(std::time::Duration::ZERO)).unwrap();
            fds[0].revents & libc::POLLIN != 0
        };
        let w = WakePipe::new().unwrap();
        assert!(!readable(&w), "new");
        w.wake();
        assert!(readable(&w), "woken");
        w.wake();
        assert!(readable(&w), "woken twice");
        w.clear();
        assert!(!readable(&w), "cleared after two wakes");
        w.clear();
        assert!(!readable(&w), "cleared twice");
        w.wake();
        assert!(readable(&w), "woken again");
    }
}
