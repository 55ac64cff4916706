//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! Each server gets exactly three named threads:
//!
//! * `mcp-<name>-in` writes queued messages to the child's stdin. Callers
//!   push onto a bounded channel, so no caller blocks on a full pipe; when
//!   the queue itself is full they wait up to their timeout and then get
//!   [`McpError::Backpressure`]. A request that is the only one in flight,
//!   with nothing queued, is written by its caller directly with one
//!   non-blocking write (what the pipe does not take goes to this thread),
//!   which saves a thread hand-off per sequential call.
//! * `mcp-<name>-out` reads stdout line by line (bounded by
//!   [`ClientOptions::max_message_size`]) and routes every message that no
//!   caller reads itself: a request that is the only one in flight is
//!   answered on its caller's thread when the reply comes quickly, which
//!   saves another hand-off (see `reader.rs` and
//!   [`ClientOptions::caller_read_window`]).
//! * `mcp-<name>-err` drains stderr into `log::debug!` (target `mcp_client`)
//!   and the log channel, so a chatty server can never fill its stderr pipe
//!   and stall.
//!
//! The child runs in its own process group, so a terminal's Ctrl+C does not
//! reach it, and so that closing or dropping the client can kill the whole
//! group (grandchildren of `npx`/`uvx`-style wrappers included) and reap the
//! child: no zombies, no orphans.
//!
//! A descendant that left the group (it called `setsid`, as a daemon does)
//! is not the client's to kill, and may keep the pipes open after the group
//! is dead. So no I/O thread waits on a pipe alone: each also polls a
//! [`Stop`] pipe that `close()`/`Drop` fires once the child is reaped, and
//! the threads are joined; our pipe ends close with them, and that process
//! sees end of file / `EPIPE` on its inherited copies.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{ChildStderr, ChildStdin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{
    bounded, Receiver, RecvTimeoutError, SendTimeoutError, Sender, TrySendError,
};
use parking_lot::Mutex;
use serde_json::Value;

use crate::client::ClientOptions;
use crate::config::{McpServerConfig, McpTransport};
use crate::error::{McpError, Result};
use crate::jsonrpc;
use crate::limits::{IO_THREAD_STACK, MAX_STDERR_LINE, READER_THREAD_STACK};
use crate::log::LogTag;
use crate::peer::{client_capabilities, InlineRead, Outbound, Peer, SendFailure};

mod reader;
mod spawn;
mod tail;

use reader::{poll_fds, pollfd, reader_loop, StdoutShared, Stop};
use spawn::{EnvBase, Proc, Spawned, Spec};
use tail::StderrTail;

/// How long `Drop` and `close()` wait for the I/O threads to finish after
/// the child is dead and [`Stop`] fired, before leaving them detached. They
/// end within microseconds of the stop, whoever holds the pipes; the bound
/// only matters when a callback of the host (a handler, a full channel it
/// blocks on) keeps the reader thread busy.
const THREAD_JOIN_BOUND: Duration = Duration::from_secs(2);

enum WriterMsg {
    Line(Vec<u8>),
    /// Wakes the writer for a backlog left by a caller's partial write.
    Kick,
    Close,
}

/// The child's stdin, shared by the writer thread and the callers.
///
/// The pipe is non-blocking. A caller whose request is the only one in
/// flight writes it itself when nothing is waiting for the writer thread
/// (`queued == 0`), saving the hand-off to another thread; a write that would block, or fails, leaves
/// the rest in `backlog` for the writer thread, which waits for the pipe
/// and reports errors as before. Otherwise the message goes through the
/// bounded queue, so no caller ever blocks on a full pipe, and messages
/// keep their order: nothing is written directly while anything queued or
/// backlogged is unwritten.
struct StdinShared {
    state: Mutex<StdinState>,
    /// The write end's descriptor, used by the writer thread outside the
    /// lock (only the writer thread closes it).
    fd: std::os::fd::RawFd,
    /// Ends a wait for room in the pipe when the client closes.
    stop: Arc<Stop>,
}

struct StdinState {
    /// `None` once the writer thread stopped (closed or failed).
    stdin: Option<ChildStdin>,
    /// Messages handed to the writer thread (the backlog counts as one)
    /// that are not fully written yet.
    queued: usize,
    /// The unwritten rest of a caller's direct write.
    backlog: Option<Vec<u8>>,
}

/// What a direct write achieved.
enum Direct {
    /// Written whole.
    Done,
    /// The rest went to the backlog; the writer thread must be woken.
    Backlogged,
    /// Not attempted: the message must be queued (one reservation taken).
    Queue,
}

impl StdinShared {
    fn new(stdin: ChildStdin, stop: Arc<Stop>) -> io::Result<StdinShared> {
        use std::os::fd::AsRawFd;
        let fd = stdin.as_raw_fd();
        // Our write end only: the child has its own open file description.
        set_nonblocking(fd)?;
        Ok(StdinShared {
            state: Mutex::new(StdinState {
                stdin: Some(stdin),
                queued: 0,
                backlog: None,
            }),
            fd,
            stop,
        })
    }

    /// Writes `line` at once if nothing is queued ahead of it; otherwise
    /// takes a reservation for the queue.
    fn write_direct(&self, line: &[u8]) -> Direct {
        let mut st = self.state.lock();
        if st.queued > 0 || st.backlog.is_some() {
            st.queued += 1;
            return Direct::Queue;
        }
        let Some(stdin) = st.stdin.as_ref() else {
            // The writer stopped: the queue reports it.
            st.queued += 1;
            return Direct::Queue;
        };
        let mut w: &ChildStdin = stdin;
        let mut done = 0;
        while done < line.len() {
            match w.write(&line[done..]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock, or an error the writer thread will meet again
                // and report.
                Err(_) => break,
            }
        }
        if done == line.len() {
            return Direct::Done;
        }
        st.backlog = Some(line[done..].to_vec());
        st.queued += 1;
        Direct::Backlogged
    }

    /// Takes a reservation for a message about to be queued.
    fn reserve(&self) {
        self.state.lock().queued += 1;
    }

    /// Gives back a reservation whose message was never queued.
    fn unreserve(&self) {
        let mut st = self.state.lock();
        st.queued = st.queued.saturating_sub(1);
    }
}

struct StdioOutbound {
    tx: Sender<WriterMsg>,
    stdin: Arc<StdinShared>,
    stdout: Arc<StdoutShared>,
}

impl StdioOutbound {
    fn closed() -> SendFailure {
        SendFailure::Closed("the stdin writer has stopped".into())
    }
}

impl StdioOutbound {
    fn queue(&self, line: Vec<u8>, deadline: Instant) -> std::result::Result<(), SendFailure> {
        let timeout = deadline.saturating_duration_since(Instant::now());
        match self.tx.send_timeout(WriterMsg::Line(line), timeout) {
            Ok(()) => Ok(()),
            Err(SendTimeoutError::Timeout(_)) => {
                self.stdin.unreserve();
                Err(SendFailure::Full)
            }
            Err(SendTimeoutError::Disconnected(_)) => {
                self.stdin.unreserve();
                Err(Self::closed())
            }
        }
    }
}

impl StdioOutbound {
    fn send_line(&self, line: Vec<u8>, deadline: Instant) -> std::result::Result<(), SendFailure> {
        self.stdin.reserve();
        self.queue(line, deadline)
    }

    /// A lone request is written by the caller itself when the pipe takes
    /// it whole (see [`StdinShared`]); with others in flight, the writer
    /// thread batches them into fewer writes.
    fn send_line_alone(
        &self,
        line: Vec<u8>,
        deadline: Instant,
    ) -> std::result::Result<(), SendFailure> {
        match self.stdin.write_direct(&line) {
            Direct::Done => Ok(()),
            Direct::Backlogged => {
                // A full queue is being drained by the writer already.
                let _ = self.tx.try_send(WriterMsg::Kick);
                Ok(())
            }
            Direct::Queue => self.queue(line, deadline),
        }
    }
}

impl Outbound for StdioOutbound {
    fn send(&self, msg: &Value, deadline: Instant) -> std::result::Result<(), SendFailure> {
        self.send_line(jsonrpc::encode_value(msg), deadline)
    }

    fn send_alone(&self, msg: &Value, deadline: Instant) -> std::result::Result<(), SendFailure> {
        self.send_line_alone(jsonrpc::encode_value(msg), deadline)
    }

    fn send_request(
        &self,
        id: i64,
        method: &str,
        params: Option<&Value>,
        extra: jsonrpc::MetaExtra<'_>,
        how: crate::peer::Sending,
        deadline: Instant,
    ) -> std::result::Result<(), SendFailure> {
        let line = jsonrpc::encode_request_direct(id, method, params, extra);
        if how.alone {
            self.send_line_alone(line, deadline)
        } else {
            self.send_line(line, deadline)
        }
    }

    fn read_inline(&self, ready: &dyn Fn() -> bool, until: Instant) -> InlineRead {
        self.stdout.read_inline(ready, until)
    }

    fn try_send(&self, msg: &Value) -> std::result::Result<(), SendFailure> {
        self.stdin.reserve();
        match self
            .tx
            .try_send(WriterMsg::Line(jsonrpc::encode_value(msg)))
        {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.stdin.unreserve();
                Err(SendFailure::Full)
            }
            Err(TrySendError::Disconnected(_)) => {
                self.stdin.unreserve();
                Err(Self::closed())
            }
        }
    }
}

/// A connection to an MCP server running as a child process.
///
/// ```
/// use skald_mcp::{ClientOptions, McpServer, McpServerClient, McpServerConfig};
/// let cfg = McpServerConfig::stdio("demo", "python3", ["scripts/demo_mcp_server.py"]);
/// let server = McpServer::connect(&cfg, ClientOptions::default())?;
/// for tool in server.list_tools()? {
///     println!("{}", tool.name);
/// }
/// let result = server.call_tool("echo", serde_json::json!({"text": "hi"}))?;
/// println!("{}", result.to_text());
/// server.close()?;
/// # Ok::<(), skald_mcp::McpError>(())
/// ```
pub struct McpServer {
    peer: Arc<Peer>,
    writer: Sender<WriterMsg>,
    child: Arc<Mutex<Option<Proc>>>,
    pid: u32,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Disconnected when the stdout reader has finished.
    reader_done: Receiver<()>,
    /// Disconnected when all three I/O threads have finished.
    all_done: Receiver<()>,
    closing: Arc<AtomicBool>,
    /// Fired once the child is reaped: every I/O thread stops waiting.
    stop: Arc<Stop>,
    /// Released (our read end closed) once the threads are joined.
    stdout: Arc<StdoutShared>,
    /// Held for the whole of `close()`: a second caller waits for the
    /// close in progress to finish (the child reaped, the threads joined)
    /// instead of returning while it still runs.
    close_lock: parking_lot::Mutex<()>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.peer.name)
            .field("pid", &self.pid)
            .field("connected", &self.peer.is_alive())
            .finish()
    }
}

/// Signals the whole process group of `pid` (and `pid` itself, in case it
/// left the group).
fn signal_group(pid: u32, sig: libc::c_int) {
    let pid = pid as libc::pid_t;
    // SAFETY: plain syscalls on a pid we spawned and have not reaped yet
    // (the caller reaps only after its last signal), so the pid and group
    // id cannot have been reused.
    unsafe {
        libc::killpg(pid, sig);
        libc::kill(pid, sig);
    }
}

/// How long `close()`/`Drop` wait, after `SIGKILL` to the group, for its
/// other members (a wrapper's real server) to be gone: they cannot ignore
/// the signal, but die only once the kernel schedules them.
const GROUP_EXIT_WAIT: Duration = Duration::from_millis(500);

/// Waits until no live process (zombies aside) is left in the group `pgid`,
/// at most [`GROUP_EXIT_WAIT`]: `close()` returns only once the server's
/// group is dead, so a host that exits right after it leaves nothing.
fn wait_group_dead(pgid: u32) {
    let deadline = Instant::now() + GROUP_EXIT_WAIT;
    loop {
        // SAFETY: signal 0 only checks that the group exists; it is ours
        // (the child that led it was reaped, but no new group can take its
        // id while members are left).
        if unsafe { libc::killpg(pgid as libc::pid_t, 0) } != 0 || !group_has_live_member(pgid) {
            return;
        }
        if Instant::now() >= deadline {
            ::log::warn!(target: "mcp_client", "process group {pgid} still has live members {GROUP_EXIT_WAIT:?} after SIGKILL");
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether a process of group `pgid` is alive and not a zombie (Linux:
/// read from `/proc`; elsewhere, that the group exists at all).
fn group_has_live_member(pgid: u32) -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let is_pid = e
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        if !is_pid {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        // After the parenthesised name: state, ppid, pgrp.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut f = rest.split_whitespace();
        let (state, _ppid, pgrp) = (f.next(), f.next(), f.next());
        pgrp.and_then(|g| g.parse::<u32>().ok()) == Some(pgid) && !matches!(state, Some("Z" | "X"))
    })
}

/// Where children are started (see `spawn.rs` for how). On Linux every
/// child asks the kernel for `SIGKILL` when its parent dies
/// (`PR_SET_PDEATHSIG`), so a host that is itself SIGKILLed does not leave
/// its servers behind. The kernel sends that signal when the *thread* that
/// created the child exits, not the process, so children are created by one
/// few process-wide threads that never exit (`skald-mcp-spawner`,
/// [`SPAWNER_THREADS`](crate::limits::SPAWNER_THREADS) of them, so that
/// fifty servers started at once do not queue behind one `vfork`+`exec`)
/// rather than by the caller's thread, which may be short-lived (the
/// manager connects from threads of its own). Only the direct child is
/// covered: grandchildren in its group are killed by `close()`/`Drop`, not
/// by the kernel.
mod spawner {
    use std::io;
    use std::sync::OnceLock;

    use crossbeam_channel::{bounded, unbounded, Sender};

    use super::spawn::{self, Spawned, Spec};

    struct Request {
        spec: Spec,
        reply: Sender<io::Result<Spawned>>,
    }

    /// `None` when no spawner thread could be started: children are then
    /// started by the caller's thread (their death signal then follows that
    /// thread).
    static SPAWNER: OnceLock<Option<Sender<Request>>> = OnceLock::new();

    pub(super) fn spawn(spec: Spec) -> io::Result<Spawned> {
        if !cfg!(target_os = "linux") {
            return spawn::spawn(&spec);
        }
        let tx = SPAWNER.get_or_init(|| {
            let (tx, rx) = unbounded::<Request>();
            // The sender lives in a static: these loops never end, so the
            // threads never exit before the process does. They share one
            // queue: each start goes to whichever is free.
            let started = (0..crate::limits::SPAWNER_THREADS.max(1))
                .filter(|_| {
                    let rx = rx.clone();
                    crate::threads::spawn(
                        "skald-mcp-spawner".into(),
                        crate::limits::IO_THREAD_STACK,
                        move || {
                            for req in rx {
                                let _ = req.reply.send(spawn::spawn(&req.spec));
                            }
                        },
                    )
                    .is_ok()
                })
                .count();
            (started > 0).then_some(tx)
        });
        let Some(tx) = tx else {
            return spawn::spawn(&spec);
        };
        let (reply, answer) = bounded(1);
        if let Err(e) = tx.send(Request { spec, reply }) {
            return spawn::spawn(&e.into_inner().spec);
        }
        answer
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the spawner thread is gone")))
    }
}

/// Reads a stderr line, keeping at most `max` bytes and discarding the rest
/// of a longer line. Returns `None` at EOF.
fn read_stderr_line<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<bool>> {
    buf.clear();
    let mut truncated = false;
    loop {
        let available = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if buf.is_empty() && !truncated {
                None
            } else {
                Some(truncated)
            });
        }
        let (chunk, consumed, done) = match memchr::memchr(b'\n', available) {
            Some(pos) => (&available[..pos], pos + 1, true),
            None => (available, available.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        if chunk.len() > room {
            truncated = true;
        }
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        r.consume(consumed);
        if done {
            return Ok(Some(truncated));
        }
    }
}

impl McpServer {
    /// Spawns the server and performs the `initialize` handshake, bounded by
    /// [`ClientOptions::start_timeout`]. On failure the child is killed.
    pub fn connect(config: &McpServerConfig, options: ClientOptions) -> Result<McpServer> {
        let server = McpServer::spawn(config, options)?;
        match server.peer.initialize() {
            Ok(info) => {
                server.peer.lifecycle(format!(
                    "connected (pid {}, {} era, protocol {}, server {} {})",
                    server.pid,
                    info.era,
                    info.protocol_version,
                    info.server_info.name,
                    info.server_info.version
                ));
                Ok(server)
            }
            Err(e) => {
                server.peer.lifecycle(format!("failed to start: {e}"));
                Err(e)
            }
        }
    }

    /// Spawns the server without the handshake; the first request performs
    /// it (or call [`McpServerClient::initialize`](crate::McpServerClient::initialize)).
    pub fn spawn(config: &McpServerConfig, options: ClientOptions) -> Result<McpServer> {
        config.validate()?;
        if config.transport != McpTransport::Stdio {
            return Err(McpError::Config {
                server: config.name.clone(),
                message: format!("McpServer needs transport stdio, not {}", config.transport),
            });
        }
        let name = config.name.clone();
        let command = config.command.clone().unwrap_or_default();
        // Not the host's whole environment unless asked: it usually holds
        // secrets that a server should get only when configured to.
        let base = if config.inherit_env || options.inherit_env {
            EnvBase::Inherit
        } else {
            EnvBase::Allow(options.env_allowlist.clone())
        };
        let spec = Spec {
            program: command.clone(),
            args: config.args.clone(),
            env: config.resolved_env()?,
            base,
            cwd: config.cwd.clone(),
        };
        let (stderr_ended_tx, stderr_ended) = bounded::<()>(0);
        let tail = Arc::new(StderrTail::new(spec.env.values(), stderr_ended));
        let stop = Arc::new(Stop::new().map_err(|source| McpError::Spawn {
            server: name.clone(),
            command: command.clone(),
            source,
        })?);
        let spawned = spawner::spawn(spec).map_err(|source| McpError::Spawn {
            server: name.clone(),
            command: command.clone(),
            source,
        })?;
        let Spawned {
            proc: child,
            stdin,
            stdout,
            stderr,
        } = spawned;
        let pid = child.id();
        let child = Arc::new(Mutex::new(Some(child)));

        let shared = StdinShared::new(stdin, Arc::clone(&stop)).and_then(|i| {
            let o = StdoutShared::new(stdout, pid, Arc::clone(&stop))?;
            let e = StderrPipe::new(stderr, Arc::clone(&stop))?;
            Ok((i, o, e))
        });
        let (stdin, stdout, stderr) = match shared {
            Ok((i, o, e)) => (Arc::new(i), Arc::new(o), Arc::new(e)),
            Err(source) => {
                signal_group(pid, libc::SIGKILL);
                let _ = child.lock().take().map(|mut c| c.wait());
                return Err(McpError::Spawn {
                    server: name,
                    command,
                    source,
                });
            }
        };
        let (wtx, wrx) = bounded(options.write_queue_capacity.max(1));
        let caps = client_capabilities(&options, true);
        let peer = Peer::new(
            name.clone(),
            options,
            Box::new(StdioOutbound {
                tx: wtx.clone(),
                stdin: Arc::clone(&stdin),
                stdout: Arc::clone(&stdout),
            }),
            caps,
            None,
        );
        stdout.attach(&peer);
        let stdout_keep = Arc::clone(&stdout);
        tail.watch(Arc::clone(&stderr));
        let closing = Arc::new(AtomicBool::new(false));
        let (reader_done_tx, reader_done) = bounded::<()>(0);
        let (all_done_tx, all_done) = bounded::<()>(0);

        let kill_all = |child: &Arc<Mutex<Option<Proc>>>| {
            signal_group(pid, libc::SIGKILL);
            if let Some(mut c) = child.lock().take() {
                let _ = c.wait();
            }
            stop.fire();
        };

        let mut threads = Vec::with_capacity(3);
        let spawned = (|| -> io::Result<()> {
            let weak = Arc::downgrade(&peer);
            let done = all_done_tx.clone();
            threads.push(crate::threads::spawn(
                format!("mcp-{name}-in"),
                IO_THREAD_STACK,
                move || {
                    writer_loop(stdin, wrx, weak);
                    drop(done);
                },
            )?);
            let p = Arc::clone(&peer);
            let done = all_done_tx.clone();
            let c = Arc::clone(&child);
            let cl = Arc::clone(&closing);
            let t = Arc::clone(&tail);
            threads.push(crate::threads::spawn(
                format!("mcp-{name}-out"),
                READER_THREAD_STACK,
                move || {
                    reader_loop(&stdout, &p, &c, &cl, pid, &t);
                    drop(reader_done_tx);
                    drop(done);
                },
            )?);
            let p = Arc::clone(&peer);
            let done = all_done_tx.clone();
            threads.push(crate::threads::spawn(
                format!("mcp-{name}-err"),
                IO_THREAD_STACK,
                move || {
                    stderr_loop(stderr, &p, &tail);
                    drop(stderr_ended_tx);
                    drop(done);
                },
            )?);
            Ok(())
        })();
        drop(all_done_tx);
        if let Err(source) = spawned {
            kill_all(&child);
            return Err(McpError::Spawn {
                server: name,
                command,
                source,
            });
        }
        Ok(McpServer {
            peer,
            writer: wtx,
            child,
            pid,
            threads: Mutex::new(threads),
            reader_done,
            all_done,
            closing,
            stop,
            stdout: stdout_keep,
            close_lock: parking_lot::Mutex::new(()),
        })
    }

    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// How many requests are waiting for a response.
    pub fn pending_requests(&self) -> usize {
        self.peer.pending_count()
    }

    /// Waits until the reader finished or the child exited, at most `d`.
    fn wait_exit(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        loop {
            if let Some(c) = self.child.lock().as_mut() {
                if matches!(c.try_wait(), Ok(Some(_))) {
                    return true;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            let slice = (deadline - now).min(Duration::from_millis(10));
            match self.reader_done.recv_timeout(slice) {
                Err(RecvTimeoutError::Disconnected) => return true,
                _ => continue,
            }
        }
    }

    fn reap_and_join(&self) {
        signal_group(self.pid, libc::SIGKILL);
        if let Some(mut c) = self.child.lock().take() {
            let _ = c.wait();
        }
        // The group is dead. A process still holding the pipes left it
        // (`setsid`): not ours to kill, and not worth waiting for. The
        // threads stop waiting on the pipes and end; the writer is told in
        // case its queue was full when `Close` was sent.
        self.stop.fire();
        let _ = self.writer.try_send(WriterMsg::Close);
        wait_group_dead(self.pid);
        match self.all_done.recv_timeout(THREAD_JOIN_BOUND) {
            Err(RecvTimeoutError::Disconnected) => {
                for t in self.threads.lock().drain(..) {
                    let _ = t.join();
                }
                // Stdin was closed by the writer, stderr with its thread.
                self.stdout.release();
            }
            _ => {
                ::log::warn!(
                    target: "mcp_client",
                    "[{}] I/O threads still busy {THREAD_JOIN_BOUND:?} after the close (a callback blocks them); detaching them",
                    self.peer.name
                );
                self.threads.lock().clear();
            }
        }
    }

    /// Stops the child gracefully: closes stdin, waits for it to exit, then
    /// `SIGTERM`, then `SIGKILL` to the whole group, each after
    /// [`ClientOptions::shutdown_grace`]; reaps it and joins the threads.
    fn shutdown(&self) {
        let _serial = self.close_lock.lock();
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        self.peer.fail_all("closed by the client");
        let grace = self.peer.opts.shutdown_grace;
        let _ = self.writer.send_timeout(WriterMsg::Close, grace);
        if !self.wait_exit(grace) {
            signal_group(self.pid, libc::SIGTERM);
            self.wait_exit(grace);
        }
        self.reap_and_join();
        self.peer.lifecycle("closed");
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        // Dropping is the fast path: no grace, the group is killed at once.
        self.peer.fail_all("the client was dropped");
        let _ = self.writer.try_send(WriterMsg::Close);
        self.reap_and_join();
    }
}

/// Sets `O_NONBLOCK` on `fd`, a descriptor of ours.
fn set_nonblocking(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Writes all of `buf` to the non-blocking `fd`, waiting for room with
/// `poll`; fails once `stop` fired (the reader of the pipe, if any, is
/// outside the server's group and may never read).
fn write_all_fd(fd: std::os::fd::RawFd, mut buf: &[u8], stop: &Stop) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `fd` is the pipe's write end, open until this thread
        // closes it; `buf` is valid for `buf.len()` bytes.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n >= 0 {
            buf = &buf[n as usize..];
            continue;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => {
                if stop.is_set() {
                    return Err(io::Error::other("the client closed the connection"));
                }
                let mut pfds = [
                    libc::pollfd {
                        fd,
                        events: libc::POLLOUT,
                        revents: 0,
                    },
                    pollfd(stop.fd()),
                ];
                // SAFETY: two valid pollfds. POLLERR/POLLHUP also end the
                // wait; the next write then reports the error.
                unsafe { libc::poll(pfds.as_mut_ptr(), 2, -1) };
            }
            _ => return Err(e),
        }
    }
    Ok(())
}

fn writer_loop(stdin: Arc<StdinShared>, rx: Receiver<WriterMsg>, peer: Weak<Peer>) {
    let fd = stdin.fd;
    let stop = |shared: &StdinShared| {
        let mut st = shared.state.lock();
        st.backlog = None;
        // Dropping the ChildStdin closes the pipe: the child sees EOF.
        drop(st.stdin.take());
    };
    let fail = |e: io::Error| {
        stop(&stdin);
        if let Some(p) = peer.upgrade() {
            p.fail_all(&format!("writing to the server's stdin failed: {e}"));
        }
    };
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    while let Ok(msg) = rx.recv() {
        let mut msg = msg;
        let mut lines = 0usize;
        let mut close = false;
        // Coalesce whatever else is queued into the same write.
        loop {
            match msg {
                WriterMsg::Line(bytes) => {
                    lines += 1;
                    if buf.is_empty() {
                        buf = bytes;
                    } else {
                        buf.extend_from_slice(&bytes);
                    }
                }
                WriterMsg::Kick => {}
                WriterMsg::Close => {
                    close = true;
                    break;
                }
            }
            match rx.try_recv() {
                Ok(m) => msg = m,
                Err(_) => break,
            }
        }
        // A caller's partial write goes first: it was written before
        // anything now in the queue was reserved.
        let backlog = stdin.state.lock().backlog.take();
        if let Some(rest) = &backlog {
            if let Err(e) = write_all_fd(fd, rest, &stdin.stop) {
                fail(e);
                return;
            }
        }
        if let Err(e) = write_all_fd(fd, &buf, &stdin.stop) {
            fail(e);
            return;
        }
        buf.clear();
        if buf.capacity() > 1024 * 1024 {
            buf = Vec::with_capacity(64 * 1024);
        }
        {
            let mut st = stdin.state.lock();
            st.queued = st
                .queued
                .saturating_sub(lines + usize::from(backlog.is_some()));
        }
        if close || stdin.stop.is_set() {
            break;
        }
    }
    stop(&stdin);
}

/// How much the stderr thread still reads after [`Stop`] fired (the last
/// lines of the killed group), so that a descendant outside the group that
/// writes without pause cannot keep it from ending.
const STDERR_AFTER_STOP: usize = 64 * 1024;

/// The child's stderr, read without blocking: the `mcp-<name>-err` thread
/// waits with `poll` on it and on [`Stop`], so it ends at end of file or
/// when the client closes, whichever comes first.
struct StderrPipe {
    stderr: ChildStderr,
    stop: Arc<Stop>,
    /// False only while the thread waits for input with the pipe empty and
    /// every line read so far handed on (see [`StderrPipe::caught_up`]).
    busy: AtomicBool,
    /// Bytes still read after the stop.
    after_stop: AtomicUsize,
}

impl StderrPipe {
    fn new(stderr: ChildStderr, stop: Arc<Stop>) -> io::Result<StderrPipe> {
        use std::os::fd::AsRawFd;
        // Our read end only: the child has its own open file description.
        set_nonblocking(stderr.as_raw_fd())?;
        Ok(StderrPipe {
            stderr,
            stop,
            busy: AtomicBool::new(true),
            after_stop: AtomicUsize::new(STDERR_AFTER_STOP),
        })
    }

    /// Whether everything written to stderr so far has been read and its
    /// complete lines handed on: the thread is waiting and the pipe holds
    /// nothing. Once the server has exited, its last lines are then known.
    fn caught_up(&self) -> bool {
        use std::os::fd::AsRawFd;
        if self.busy.load(Ordering::SeqCst) {
            return false;
        }
        let mut fds = [pollfd(self.stderr.as_raw_fd())];
        poll_fds(&mut fds, Some(Duration::ZERO)).is_ok() && fds[0].revents == 0
    }
}

impl Read for &StderrPipe {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        loop {
            let stopped = self.stop.is_set();
            let out = if stopped {
                let left = self.after_stop.load(Ordering::Relaxed);
                if left == 0 {
                    return Ok(0);
                }
                let n = out.len().min(left);
                &mut out[..n]
            } else {
                &mut *out
            };
            self.busy.store(true, Ordering::SeqCst);
            // SAFETY: reads into `out`, valid for `out.len()` bytes, from
            // our read end of the pipe, open as long as `self`.
            let n =
                unsafe { libc::read(self.stderr.as_raw_fd(), out.as_mut_ptr().cast(), out.len()) };
            let got = if n >= 0 {
                Ok(n as usize)
            } else {
                Err(io::Error::last_os_error())
            };
            match got {
                Ok(n) => {
                    if stopped {
                        self.after_stop.fetch_sub(n, Ordering::Relaxed);
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if stopped {
                        return Ok(0);
                    }
                    self.busy.store(false, Ordering::SeqCst);
                    poll_fds(
                        &mut [pollfd(self.stderr.as_raw_fd()), pollfd(self.stop.fd())],
                        None,
                    )?;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn stderr_loop(stderr: Arc<StderrPipe>, peer: &Peer, tail: &StderrTail) {
    let mut r = BufReader::with_capacity(16 * 1024, &*stderr);
    let mut buf = Vec::with_capacity(512);
    loop {
        match read_stderr_line(&mut r, &mut buf, MAX_STDERR_LINE) {
            Ok(Some(truncated)) => {
                let mut line = String::from_utf8_lossy(&buf).into_owned();
                if line.ends_with('\r') {
                    line.pop();
                }
                if truncated {
                    line.push_str(" […truncated]");
                }
                ::log::debug!(target: "mcp_client", "[{}] {line}", peer.name);
                tail.push(&line);
                peer.log_line(LogTag::Stderr, line);
            }
            Ok(None) | Err(_) => return,
        }
    }
}

impl crate::peer::Connection for McpServer {
    fn peer(&self) -> &Peer {
        &self.peer
    }

    fn transport(&self) -> crate::McpTransport {
        crate::McpTransport::Stdio
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
    fn stderr_truncation() {
        let data = b"0123456789\nok\n";
        let mut r = BufReader::with_capacity(3, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(read_stderr_line(&mut r, &mut buf, 4).unwrap(), Some(true));
        assert_eq!(buf, b"0123");
        assert_eq!(read_stderr_line(&mut r, &mut buf, 4).unwrap(), Some(false));
        assert_eq!(buf, b"ok");
        assert_eq!(read_stderr_line(&mut r, &mut buf, 4).unwrap(), None);
    }

    #[allow(dead_code)]
    fn assert_send_sync<T: Send + Sync>() {}
    #[test]
    fn server_is_send_sync() {
        assert_send_sync::<McpServer>();
    }
}
