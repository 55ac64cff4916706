//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! Each server gets exactly one thread, `mcp-<name>-io`, which waits with
//! one `poll` on everything the server can do:
//!
//! * stdout: read line by line (bounded by
//!   [`ClientOptions::max_message_size`]), every message that no caller
//!   reads itself routed; a request that is the only one in flight is
//!   answered on its caller's thread when the reply comes quickly, which
//!   saves a thread hand-off per call (see `reader.rs` and
//!   [`ClientOptions::caller_read_window`]);
//! * stderr: drained into `log::debug!` (target `mcp_client`) and the log
//!   channel, so a chatty server can never fill its stderr pipe and stall
//!   (`stderr.rs`);
//! * stdin: callers write their messages themselves with one non-blocking
//!   `write`; only what the pipe does not take waits in a bounded outbox,
//!   which the thread writes out when the pipe has room. A caller finding
//!   the outbox full waits up to its timeout and then gets
//!   [`McpError::Backpressure`] (`stdin.rs`);
//! * the child's exit (a pidfd) and the client's close ([`Stop`]).
//!
//! One thread rather than one per pipe: fifty servers started at once
//! create fifty threads, not a hundred and fifty, and a hundred idle
//! servers hold a hundred stacks (measured in BENCHMARKS.md).
//!
//! The child runs in its own process group, so a terminal's Ctrl+C does not
//! reach it, and so that closing or dropping the client can kill the whole
//! group (grandchildren of `npx`/`uvx`-style wrappers included) and reap the
//! child: no zombies, no orphans.
//!
//! A descendant that left the group (it called `setsid`, as a daemon does)
//! is not the client's to kill, and may keep the pipes open after the group
//! is dead. So the I/O thread never waits on a pipe alone: it also polls a
//! [`Stop`] pipe that `close()`/`Drop` fires once the child is reaped, and
//! is joined; our pipe ends close with it, and that process sees end of
//! file / `EPIPE` on its inherited copies.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError};
use parking_lot::Mutex;
use serde_json::Value;

use crate::client::ClientOptions;
use crate::config::{McpServerConfig, McpTransport};
use crate::error::{McpError, Result};
use crate::jsonrpc;
use crate::limits::READER_THREAD_STACK;
use crate::peer::{client_capabilities, InlineRead, Outbound, Peer, SendFailure};

mod linebuf;
mod reader;
mod spawn;
mod stderr;
mod stdin;
mod tail;

use reader::{reader_loop, Aux, StdoutShared, Stop};
use spawn::{EnvBase, Proc, Spawned, Spec};
use stderr::StderrReader;
use stdin::{Sent, StdinShared};
use tail::StderrTail;

/// How long `Drop` and `close()` wait for the I/O threads to finish after
/// the child is dead and [`Stop`] fired, before leaving them detached. They
/// end within microseconds of the stop, whoever holds the pipes; the bound
/// only matters when a callback of the host (a handler, a full channel it
/// blocks on) keeps the reader thread busy.
const THREAD_JOIN_BOUND: Duration = Duration::from_secs(2);

struct StdioOutbound {
    stdin: Arc<StdinShared>,
    stdout: Arc<StdoutShared>,
}

impl StdioOutbound {
    /// Writes `line` now or keeps it in the outbox (see `stdin.rs`),
    /// waking the I/O thread when the outbox has just stopped being empty.
    fn send_line(
        &self,
        line: &[u8],
        deadline: Option<Instant>,
        alone: bool,
    ) -> std::result::Result<(), SendFailure> {
        if let Sent::Queued { wake: true } = self.stdin.send(line, deadline, alone)? {
            self.stdout.wake_io();
        }
        Ok(())
    }
}

impl Outbound for StdioOutbound {
    fn send(&self, msg: &Value, deadline: Instant) -> std::result::Result<(), SendFailure> {
        self.send_line(&jsonrpc::encode_value(msg), Some(deadline), false)
    }

    fn send_alone(&self, msg: &Value, deadline: Instant) -> std::result::Result<(), SendFailure> {
        self.send_line(&jsonrpc::encode_value(msg), Some(deadline), true)
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
        self.send_line(&line, Some(deadline), how.alone)
    }

    fn read_inline(&self, ready: &dyn Fn() -> bool, until: Instant) -> InlineRead {
        self.stdout.read_inline(ready, until)
    }

    fn try_send(&self, msg: &Value) -> std::result::Result<(), SendFailure> {
        self.send_line(&jsonrpc::encode_value(msg), None, false)
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
    /// The child's stdin, written by callers (and the I/O thread).
    stdin: Arc<StdinShared>,
    child: Arc<Mutex<Option<Proc>>>,
    pid: u32,
    /// The `mcp-<name>-io` thread, until joined.
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Disconnected when the stdout reader has finished.
    reader_done: Receiver<()>,
    /// Disconnected when the I/O thread has finished.
    all_done: Receiver<()>,
    closing: Arc<AtomicBool>,
    /// Fired once the child is reaped: the I/O thread stops waiting.
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

/// Kills the group of `pid` and reaps the child (once: later calls find it
/// reaped).
fn kill_and_reap(pid: u32, child: &Mutex<Option<Proc>>) {
    signal_group(pid, libc::SIGKILL);
    if let Some(mut c) = child.lock().take() {
        let _ = c.wait();
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
/// created the child exits, not the process, so children are created by
/// process-wide threads that never exit (`skald-mcp-spawner`) rather than
/// by the caller's thread, which may be short-lived (the manager connects
/// from threads of its own). Only the direct child is covered:
/// grandchildren in its group are killed by `close()`/`Drop`, not by the
/// kernel.
///
/// The pool grows on demand, up to
/// [`SPAWNER_THREADS`](crate::limits::SPAWNER_THREADS): a start that finds
/// no spawner idle starts another. A spawner is busy from `clone` until its
/// child has `exec`'d, which under load is a millisecond or more (the child
/// must be scheduled first); fifty servers started at once behind a few
/// spawners queued for that long each, and a pool created whole on the
/// first start made that first caller wait for every thread of it. A
/// program that starts its servers one at a time keeps one spawner.
///
/// The first spawner, once its first child is started, grows the process's
/// file table to [`FD_TABLE_RESERVE`](crate::limits::FD_TABLE_RESERVE)
/// slots: each growth the kernel makes on demand stalls every thread that
/// needs a descriptor for an RCU grace period (10-20 ms each, three of them,
/// when fifty servers started at once on two busy cores).
mod spawner {
    use std::io;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::OnceLock;

    use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

    use super::spawn::{self, Spawned, Spec};

    struct Request {
        spec: Spec,
        reply: Sender<io::Result<Spawned>>,
    }

    /// The spawners' shared queue and how many of them there are.
    struct Pool {
        tx: Sender<Request>,
        rx: Receiver<Request>,
        /// Spawner threads started or being started: the cap counts these.
        threads: AtomicUsize,
        /// Spawner threads running (they never exit): a request queued while
        /// one runs is served.
        live: AtomicUsize,
        /// Spawners waiting for a request.
        idle: AtomicUsize,
        /// Whether a spawner has grown the file table
        /// ([`FD_TABLE_RESERVE`](crate::limits::FD_TABLE_RESERVE)).
        reserved: AtomicBool,
    }

    static POOL: OnceLock<Pool> = OnceLock::new();

    impl Pool {
        /// Starts one more spawner when none is idle and the cap allows.
        /// Returns whether a running spawner will serve a queued request
        /// (`false` only when none could ever be started).
        fn grow_if_busy(&'static self) -> bool {
            let max = crate::limits::SPAWNER_THREADS.max(1);
            if self.idle.load(Ordering::Acquire) > 0 {
                return true;
            }
            // Reserve a slot first, so racing callers do not pass the cap.
            let n = self.threads.fetch_add(1, Ordering::AcqRel);
            if n >= max {
                self.threads.fetch_sub(1, Ordering::AcqRel);
                // The slots may all be starts still under way (which could
                // fail): queue only behind a spawner that runs.
                return self.live.load(Ordering::Acquire) > 0;
            }
            let started = crate::threads::spawn(
                "skald-mcp-spawner".into(),
                crate::limits::IO_THREAD_STACK,
                move || self.serve(),
            );
            match started {
                Ok(handle) => {
                    // Never joined: the thread lives as long as the process.
                    drop(handle);
                    self.live.fetch_add(1, Ordering::AcqRel);
                    true
                }
                Err(e) => {
                    log::warn!("could not start a spawner thread: {e}");
                    self.threads.fetch_sub(1, Ordering::AcqRel);
                    self.live.load(Ordering::Acquire) > 0
                }
            }
        }

        /// A spawner's loop. It never returns: `self` is a static whose
        /// sender is never dropped.
        fn serve(&self) {
            loop {
                self.idle.fetch_add(1, Ordering::AcqRel);
                let req = self.rx.recv();
                self.idle.fetch_sub(1, Ordering::AcqRel);
                let Ok(req) = req else { return };
                let _ = req.reply.send(spawn::spawn(&req.spec));
                // After the reply, so the first start does not wait for it.
                if !self.reserved.swap(true, Ordering::AcqRel) {
                    spawn::reserve_fd_table(crate::limits::FD_TABLE_RESERVE);
                }
            }
        }
    }

    pub(super) fn spawn(spec: Spec) -> io::Result<Spawned> {
        if !cfg!(target_os = "linux") {
            return spawn::spawn(&spec);
        }
        let pool = POOL.get_or_init(|| {
            let (tx, rx) = unbounded::<Request>();
            Pool {
                tx,
                rx,
                threads: AtomicUsize::new(0),
                live: AtomicUsize::new(0),
                idle: AtomicUsize::new(0),
                reserved: AtomicBool::new(false),
            }
        });
        if !pool.grow_if_busy() {
            // No spawner thread runs: the caller's thread starts the child
            // (its death signal then follows that thread).
            return spawn::spawn(&spec);
        }
        let (reply, answer) = bounded(1);
        if let Err(e) = pool.tx.send(Request { spec, reply }) {
            return spawn::spawn(&e.into_inner().spec);
        }
        answer
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the spawner thread is gone")))
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
        let era_key = spec.era_key();
        let tail = Arc::new(StderrTail::new(spec.env.values()));
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

        let shared = StdinShared::new(stdin, options.write_queue_capacity).and_then(|i| {
            let o = StdoutShared::new(stdout, pid, Arc::clone(&stop))?;
            let e = StderrReader::new(stderr)?;
            Ok((i, o, e))
        });
        let (stdin, stdout, stderr) = match shared {
            Ok((i, o, e)) => (Arc::new(i), Arc::new(o), e),
            Err(source) => {
                kill_and_reap(pid, &child);
                return Err(McpError::Spawn {
                    server: name,
                    command,
                    source,
                });
            }
        };
        let caps = client_capabilities(&options, true);
        let peer = Peer::new(
            name.clone(),
            options,
            Box::new(StdioOutbound {
                stdin: Arc::clone(&stdin),
                stdout: Arc::clone(&stdout),
            }),
            caps,
            Some(era_key),
        );
        stdout.attach(&peer);
        let stdout_keep = Arc::clone(&stdout);
        let closing = Arc::new(AtomicBool::new(false));
        let (reader_done_tx, reader_done) = bounded::<()>(0);
        let (all_done_tx, all_done) = bounded::<()>(0);

        let io_thread = {
            let p = Arc::clone(&peer);
            let c = Arc::clone(&child);
            let cl = Arc::clone(&closing);
            let st = Arc::clone(&stop);
            let si = Arc::clone(&stdin);
            crate::threads::spawn(format!("mcp-{name}-io"), READER_THREAD_STACK, move || {
                let mut aux = Aux {
                    stdin: &si,
                    stderr,
                    tail: &tail,
                };
                reader_loop(&stdout, &p, &c, &cl, pid, &mut aux);
                drop(reader_done_tx);
                // Nothing will read the replies of what is still queued.
                si.abandon();
                aux.drain_stderr_to_end(&p, &st);
                drop(all_done_tx);
            })
        };
        let io_thread = match io_thread {
            Ok(t) => t,
            Err(source) => {
                kill_and_reap(pid, &child);
                stop.fire();
                return Err(McpError::Spawn {
                    server: name,
                    command,
                    source,
                });
            }
        };
        Ok(McpServer {
            peer,
            stdin,
            child,
            pid,
            thread: Mutex::new(Some(io_thread)),
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
        kill_and_reap(self.pid, &self.child);
        // The group is dead. A process still holding the pipes left it
        // (`setsid`): not ours to kill, and not worth waiting for. The
        // thread stops waiting on the pipes and ends; our end of stdin is
        // closed here, so that process sees EPIPE whatever the thread does.
        self.stop.fire();
        self.stdin.abandon();
        wait_group_dead(self.pid);
        match self.all_done.recv_timeout(THREAD_JOIN_BOUND) {
            Err(RecvTimeoutError::Disconnected) => {
                if let Some(t) = self.thread.lock().take() {
                    let _ = t.join();
                }
                // Stderr was closed with the thread.
                self.stdout.release();
            }
            _ => {
                ::log::warn!(
                    target: "mcp_client",
                    "[{}] the I/O thread is still busy {THREAD_JOIN_BOUND:?} after the close (a callback blocks it); detaching it",
                    self.peer.name
                );
                drop(self.thread.lock().take());
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
        // The child sees end of file on stdin once what is queued for it is
        // written (at once when nothing is).
        if self.stdin.close_when_flushed() {
            self.stdout.wake_io();
        }
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

    #[allow(dead_code)]
    fn assert_send_sync<T: Send + Sync>() {}
    #[test]
    fn server_is_send_sync() {
        assert_send_sync::<McpServer>();
    }

    /// The first start through the spawners grows the file table
    /// (`FD_TABLE_RESERVE`), after its reply: seen within a deadline.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_spawners_grow_the_file_table_once() {
        use spawn::tests::{fd_table_size, nofile_limit};
        let s = Spec {
            program: "sh".into(),
            args: vec!["-c".into(), "exit 0".into()],
            env: Default::default(),
            base: EnvBase::Allow(vec!["PATH".into()]),
            cwd: None,
        };
        let mut child = spawner::spawn(s).expect("sh starts").proc;
        assert!(child.wait().unwrap().success());
        let want = crate::limits::FD_TABLE_RESERVE.min(nofile_limit());
        let deadline = Instant::now() + Duration::from_secs(10);
        while fd_table_size() < want {
            assert!(
                Instant::now() < deadline,
                "FDSize {} < {want}",
                fd_table_size()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
