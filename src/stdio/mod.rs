//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! Each server gets exactly one thread, `mcp-<name>-io`, which starts the
//! child (see below) and then waits with one `poll` on everything the
//! server can do:
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
//! The I/O thread starts the child because on Linux every child asks the
//! kernel for `SIGKILL` when its parent dies (`PR_SET_PDEATHSIG`), so that
//! a host that is itself SIGKILLed does not leave its servers behind, and
//! the kernel sends that signal when the *thread* that created the child
//! exits, not the process. The caller's thread may be short-lived (the
//! manager connects from threads of its own); the I/O thread ends only
//! after the connection, once the child is dead or has closed every pipe
//! to us. Only the direct child is covered: grandchildren in its group are
//! killed by `close()`/`Drop`, not by the kernel. (A pool of process-wide
//! spawner threads that never exit used to start every child: with fifty
//! servers starting at once it cost a hand-off each way per start and up
//! to 32 more threads created in the burst; measured in BENCHMARKS.md.)
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
use std::process::{ChildStderr, ChildStdin, ChildStdout};
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
use crate::handoff::handoff;
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

/// Grows the process's file table once, to
/// [`FD_TABLE_RESERVE`](crate::limits::FD_TABLE_RESERVE) slots, on a
/// short-lived thread of its own started by the first server's start: each
/// growth the kernel makes on demand stalls every thread that needs a
/// descriptor for an RCU grace period (10-20 ms each, three of them, when
/// fifty servers started at once on two busy cores), and one growth made
/// off every server's path pays one grace period instead.
fn reserve_fd_table_once() {
    static RESERVED: AtomicBool = AtomicBool::new(false);
    if !cfg!(target_os = "linux") || RESERVED.swap(true, Ordering::AcqRel) {
        return;
    }
    let grow = || spawn::reserve_fd_table(crate::limits::FD_TABLE_RESERVE);
    // Without a thread, the table grows on demand, as it would anyway.
    if let Ok(t) =
        crate::threads::spawn("skald-mcp-fds".into(), crate::limits::IO_THREAD_STACK, grow)
    {
        // Detached: it ends by itself once the table has grown.
        drop(t);
    }
}

/// What the I/O thread hands the caller once the child runs: the host's
/// ends of its pipes, which the caller makes into the connection.
struct Started {
    pid: u32,
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: ChildStderr,
}

/// What the caller hands the I/O thread back: the connection to serve.
struct Serve {
    peer: Arc<Peer>,
    stdin: Arc<StdinShared>,
    stdout: Arc<StdoutShared>,
    stderr: StderrReader,
}

impl McpServer {
    /// Spawns the server and performs the `initialize` handshake, bounded by
    /// [`ClientOptions::start_timeout`]. On failure the child is killed.
    pub fn connect(config: &McpServerConfig, options: ClientOptions) -> Result<McpServer> {
        let server = McpServer::spawn(config, options)?;
        match server.peer.negotiation() {
            Ok(n) => {
                let info = &n.info;
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
        let spawn_error = |source| McpError::Spawn {
            server: name.clone(),
            command: command.clone(),
            source,
        };
        let stop = Arc::new(Stop::new().map_err(spawn_error)?);
        let prepared = spawn::prepare(&spec).map_err(spawn_error)?;
        let child: Arc<Mutex<Option<Proc>>> = Arc::new(Mutex::new(None));
        let closing = Arc::new(AtomicBool::new(false));
        let (reader_done_tx, reader_done) = bounded::<()>(0);
        let (all_done_tx, all_done) = bounded::<()>(0);
        let (started_tx, started_rx) = handoff::<io::Result<Started>>();
        let (serve_tx, serve_rx) = handoff::<Serve>();

        // The I/O thread starts the child itself: the kernel's death signal
        // (`PR_SET_PDEATHSIG`) follows the thread that started a child, and
        // this thread lives exactly as long as the connection, whereas the
        // caller's may end at once (the manager connects from threads of
        // its own). No other thread is created or woken for the start.
        let io_thread = {
            let c = Arc::clone(&child);
            let cl = Arc::clone(&closing);
            let st = Arc::clone(&stop);
            crate::threads::spawn(format!("mcp-{name}-io"), READER_THREAD_STACK, move || {
                let Spawned {
                    proc,
                    stdin,
                    stdout,
                    stderr,
                } = match prepared.start() {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                        return;
                    }
                };
                let pid = proc.id();
                *c.lock() = Some(proc);
                let handed = started_tx.send(Ok(Started {
                    pid,
                    stdin,
                    stdout,
                    stderr,
                }));
                reserve_fd_table_once();
                let serve = handed.ok().and_then(|()| serve_rx.recv());
                let Some(Serve {
                    peer,
                    stdin,
                    stdout,
                    stderr,
                }) = serve
                else {
                    // The caller gave up (it could not build the connection).
                    kill_and_reap(pid, &c);
                    return;
                };
                let mut aux = Aux {
                    stdin: &stdin,
                    stderr,
                    tail: &tail,
                };
                reader_loop(&stdout, &peer, &c, &cl, pid, &mut aux);
                drop(reader_done_tx);
                // Nothing will read the replies of what is still queued.
                stdin.abandon();
                aux.drain_stderr_to_end(&peer, &st);
                drop(all_done_tx);
            })
            .map_err(spawn_error)?
        };
        let started = started_rx.recv().unwrap_or_else(|| {
            Err(io::Error::other(
                "the I/O thread ended before the server started",
            ))
        });
        let connection = started.and_then(|s| {
            let stdin = StdinShared::new(s.stdin, options.write_queue_capacity)?;
            let stdout = StdoutShared::new(s.stdout, s.pid, Arc::clone(&stop))?;
            let stderr = StderrReader::new(s.stderr)?;
            Ok((s.pid, Arc::new(stdin), Arc::new(stdout), stderr))
        });
        let (pid, stdin, stdout, stderr) = match connection {
            Ok(c) => c,
            Err(source) => {
                // The thread kills and reaps a child it started, and ends.
                drop(serve_tx);
                let _ = io_thread.join();
                return Err(spawn_error(source));
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
        // The thread waits for it; it ends only after the close.
        let _ = serve_tx.send(Serve {
            peer: Arc::clone(&peer),
            stdin: Arc::clone(&stdin),
            stdout: Arc::clone(&stdout),
            stderr,
        });
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
            stdout,
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

    /// The first start grows the file table (`FD_TABLE_RESERVE`), off the
    /// caller's path: seen within a deadline.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_first_start_grows_the_file_table_once() {
        use spawn::tests::{fd_table_size, nofile_limit};
        let cfg = McpServerConfig::stdio("fds", "sh", ["-c", "exec cat"]);
        let server = McpServer::spawn(&cfg, ClientOptions::default()).expect("sh starts");
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
        drop(server);
    }
}
