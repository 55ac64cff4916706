//! Variants of the raw floor of the 50-parallel-starts scenario, to test
//! where start-up time goes (`--start50-floor VARIANT`, one figure per
//! process; run each variant in its own process, interleaved).
//!
//! The question they answer: a child started with `clone(CLONE_VM |
//! CLONE_VFORK)` shares this process's address space until its `exec`,
//! and its `exec` takes this process's `mmap_lock`, which every thread
//! creation (stack `mmap`, guard `mprotect`, std's signal stack) takes for
//! writing. skald-mcp creates a thread per server while other servers
//! start. Does that cost the burst, and would starting the children from
//! a small single-threaded helper process (whose address space they then
//! share instead) win it back?
//!
//! - `thread`: the floor, plus one thread created per start right after
//!   the spawn (a 128 KiB stack, as skald-mcp's I/O thread), parked until
//!   the end.
//! - `helper`: the floor with every child started by a helper process
//!   forked once beforehand: the child ends of the pipes go to it over a
//!   Unix socket, it starts the child with `CLONE_VM | CLONE_VFORK |
//!   CLONE_PARENT` (so the child is still this process's child) and
//!   answers its pid.
//! - `helper-thread`: both.
//!
//! The answer (BENCHMARKS.md, "Where 50 parallel starts go (stop 42)"):
//! the thread costs the floor about a tenth, wherever in the start it is
//! created; the helper does not win it back and is slower itself, its one
//! thread starting every child in turn.

use std::ffi::CString;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{ChildStdin, ChildStdout};
use std::thread;

use super::RawLines;

/// A forked helper process that starts children on request.
pub struct Helper {
    sock: libc::c_int,
    /// One request and its answer at a time on the socket.
    lock: parking_lot::Mutex<()>,
}

/// What the helper's child needs to `exec`, on the helper's stack.
#[repr(C)]
struct ChildArgs {
    stdin: libc::c_int,
    stdout: libc::c_int,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
}

/// The helper's child: its pipes on 0 and 1, `/dev/null` on 2, then `exec`.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the `ChildArgs` of the helper, suspended
    // (CLONE_VFORK) until this child execs or exits; only async-signal-safe
    // calls follow.
    unsafe {
        let a = &*(arg as *const ChildArgs);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::dup2(a.stdin, 0);
        libc::dup2(a.stdout, 1);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        libc::dup2(null, 2);
        libc::execve(*a.argv, a.argv, a.envp);
        libc::_exit(127)
    }
}

/// Forks the helper, which starts `server` with `args` on each request.
pub fn start(server: &str, args: &[&str]) -> Helper {
    let mut sv = [0; 2];
    // SAFETY: socketpair fills the two-element array.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            sv.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "socketpair");
    // Everything the helper needs is built before the fork: after it, the
    // helper calls nothing but system calls.
    let strs: Vec<CString> = std::iter::once(server)
        .chain(args.iter().copied())
        .map(|s| CString::new(s).unwrap())
        .collect();
    let mut argv: Vec<*const libc::c_char> = strs.iter().map(|s| s.as_ptr()).collect();
    argv.push(std::ptr::null());
    let env: Vec<CString> = std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.into_encoded_bytes();
            kv.push(b'=');
            kv.extend(v.into_encoded_bytes());
            CString::new(kv).unwrap()
        })
        .collect();
    let mut envp: Vec<*const libc::c_char> = env.iter().map(|s| s.as_ptr()).collect();
    envp.push(std::ptr::null());
    let mut stack = vec![0u8; 64 * 1024];
    // SAFETY: the child of the fork runs `helper_loop` alone, which makes
    // system calls only (no allocation, no lock another thread may hold).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        // SAFETY: see above; `argv`, `envp` and `stack` are this process's
        // copies and outlive the loop (it never returns).
        unsafe { helper_loop(sv[1], sv[0], &argv, &envp, &mut stack) }
    }
    // SAFETY: the helper's end, not used here.
    unsafe { libc::close(sv[1]) };
    // The helper has its own copies (the fork copied the address space).
    drop((argv, envp, stack, env, strs));
    Helper {
        sock: sv[0],
        lock: parking_lot::Mutex::new(()),
    }
}

/// The helper: for each request (two descriptors), a child, and its pid.
///
/// # Safety
///
/// Only in the child of a `fork`; `argv` and `envp` null-terminated.
unsafe fn helper_loop(
    sock: libc::c_int,
    other: libc::c_int,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    stack: &mut [u8],
) -> ! {
    // SAFETY (whole body): system calls on descriptors this process owns,
    // with buffers on its stack.
    unsafe {
        libc::close(other);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        loop {
            let mut buf = Message::default();
            let mut iov = buf.iov();
            let mut msg = buf.header(&mut iov, std::mem::size_of::<[u64; 8]>());
            if libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) <= 0 {
                libc::_exit(0);
            }
            let c = libc::CMSG_FIRSTHDR(&msg);
            if c.is_null() {
                libc::_exit(1);
            }
            let fds = libc::CMSG_DATA(c) as *const libc::c_int;
            let args = ChildArgs {
                stdin: *fds,
                stdout: *fds.add(1),
                argv: argv.as_ptr(),
                envp: envp.as_ptr(),
            };
            let top = stack.as_mut_ptr().add(stack.len()) as usize & !15;
            let pid = libc::clone(
                child_main,
                top as *mut libc::c_void,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PARENT,
                &args as *const ChildArgs as *mut libc::c_void,
            );
            libc::close(args.stdin);
            libc::close(args.stdout);
            libc::send(sock, (&pid as *const libc::c_int).cast(), 4, 0);
        }
    }
}

/// The buffers of a one-byte message with room for a control message of
/// a few descriptors, as the helper and its client exchange them.
#[derive(Default)]
struct Message {
    byte: [u8; 1],
    control: [u64; 8],
}

impl Message {
    /// The one-byte payload's `iovec`.
    fn iov(&mut self) -> libc::iovec {
        libc::iovec {
            iov_base: self.byte.as_mut_ptr().cast(),
            iov_len: 1,
        }
    }

    /// A header over `iov` and the first `control_len` bytes of the
    /// control buffer; valid while `self` and `iov` are.
    fn header(&mut self, iov: &mut libc::iovec, control_len: usize) -> libc::msghdr {
        // SAFETY: an all-zero msghdr is a valid value of that C struct.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov;
        msg.msg_iovlen = 1;
        msg.msg_control = self.control.as_mut_ptr().cast();
        msg.msg_controllen = control_len.min(std::mem::size_of_val(&self.control)) as _;
        msg
    }
}

/// A child started by the helper, over its pipes.
pub struct HelperPipe {
    pid: libc::pid_t,
    stdin: ChildStdin,
    stdout: RawLines,
}

impl Helper {
    /// Starts a child through the helper.
    pub fn spawn(&self) -> HelperPipe {
        let (mut to_child, mut from_child) = ([0; 2], [0; 2]);
        // SAFETY: pipe2 fills each two-element array; F_SETPIPE_SZ on the
        // read end just made.
        unsafe {
            assert_eq!(libc::pipe2(to_child.as_mut_ptr(), libc::O_CLOEXEC), 0);
            assert_eq!(libc::pipe2(from_child.as_mut_ptr(), libc::O_CLOEXEC), 0);
            let size = skald_mcp::limits::STDIO_PIPE_CAPACITY as libc::c_int;
            libc::fcntl(from_child[0], libc::F_SETPIPE_SZ, size);
        }
        let pid = {
            let _one = self.lock.lock();
            self.request([to_child[0], from_child[1]])
        };
        assert!(pid > 0, "the helper could not start the server");
        // SAFETY: the child's ends went to the helper (which keeps its own
        // copies until the child has them); the other two are ours alone.
        unsafe {
            libc::close(to_child[0]);
            libc::close(from_child[1]);
            HelperPipe {
                pid,
                stdin: ChildStdin::from(OwnedFd::from_raw_fd(to_child[1])),
                stdout: RawLines::new(ChildStdout::from(OwnedFd::from_raw_fd(from_child[0]))),
            }
        }
    }

    /// Sends the two descriptors, returns the pid the helper answers.
    fn request(&self, fds: [libc::c_int; 2]) -> libc::pid_t {
        // SAFETY: a message with one byte and one SCM_RIGHTS control
        // message of two descriptors, built in buffers on this stack.
        unsafe {
            let mut buf = Message::default();
            let mut iov = buf.iov();
            // Exactly one control message: the kernel reads all of
            // `msg_controllen` as control messages.
            let msg = buf.header(&mut iov, libc::CMSG_SPACE(8) as usize);
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(8) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c) as *mut libc::c_int, 2);
            assert_eq!(libc::sendmsg(self.sock, &msg, 0), 1, "send to the helper");
            let mut pid: libc::pid_t = 0;
            let n = libc::recv(self.sock, (&mut pid as *mut libc::pid_t).cast(), 4, 0);
            assert_eq!(n, 4, "the helper's answer");
            pid
        }
    }
}

impl HelperPipe {
    /// `initialize`, `notifications/initialized` and `tools/list`, as
    /// the floor's `RawPipe::handshake`.
    pub fn handshake(&mut self) {
        self.stdin
            .write_all(super::HANDSHAKE_INITIALIZE.as_bytes())
            .unwrap();
        assert!(self.stdout.next().unwrap(), "the server closed its stdout");
        self.stdin
            .write_all(super::HANDSHAKE_LIST.as_bytes())
            .unwrap();
        assert!(self.stdout.next().unwrap(), "the server closed its stdout");
    }
}

impl Drop for HelperPipe {
    fn drop(&mut self) {
        // SAFETY: the pid is this process's child (CLONE_PARENT), not yet
        // waited for.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// One thread created and parked until the returned guard drops: what
/// skald-mcp's I/O thread costs a start, without its work.
pub fn parked_thread() -> Parked {
    parked_after(|| ())
}

/// A thread created to run `work` and then parked, holding what it
/// returned, until the returned guard drops (which joins it).
pub fn parked_after<T: 'static>(work: impl FnOnce() -> T + Send + 'static) -> Parked {
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    let h = thread::Builder::new()
        .stack_size(skald_mcp::limits::IO_THREAD_STACK)
        .spawn(move || {
            let held = work();
            let _ = rx.recv();
            drop(held);
        })
        .expect("spawn a thread");
    Parked(Some((tx, h)))
}

/// [`parked_thread`], created before `between` runs and handed a value
/// each way around it (it tells it runs, `between` runs, it is told to go
/// on): the two hand-offs of a skald-mcp start (the started child's pipes
/// to the caller, the connection back to the I/O thread).
pub fn handed_thread<T>(between: impl FnOnce() -> T) -> (T, Parked) {
    let (up_tx, up_rx) = crossbeam_channel::bounded::<()>(1);
    let (go_tx, go_rx) = crossbeam_channel::bounded::<()>(1);
    let parked = parked_after(move || {
        let _ = up_tx.send(());
        let _ = go_rx.recv();
    });
    up_rx.recv().expect("the thread runs");
    let value = between();
    go_tx.send(()).expect("the thread waits");
    (value, parked)
}

/// A thread parked until this drops.
pub struct Parked(Option<(crossbeam_channel::Sender<()>, thread::JoinHandle<()>)>);

impl Drop for Parked {
    fn drop(&mut self) {
        if let Some((tx, h)) = self.0.take() {
            drop(tx);
            let _ = h.join();
        }
    }
}
