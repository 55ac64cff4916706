//! Starting a server process: pipes, its own process group, and (Linux) a
//! death signal, without copying the host's address space.
//!
//! `std::process::Command` forks when it must run code in the child before
//! `exec` (`pre_exec`), which the death signal needs. Forking a host with a
//! hundred busy threads is slow: the kernel copies its page tables and
//! sends every core a TLB shoot-down (a third of all samples when fifty
//! servers start at once). So on Linux the child is started with
//! `clone(CLONE_VM | CLONE_VFORK)`, as `posix_spawn` does: it borrows the
//! parent's memory (the calling thread waits) and runs a few
//! async-signal-safe calls on a stack of its own before `execve`:
//! default signal handlers and an empty mask, `PR_SET_PDEATHSIG`, its own
//! process group, the three pipes on fds 0-2, the working directory. An
//! error before `execve` comes back as an `errno` the child stores in the
//! memory it shares with the parent (as glibc's `posix_spawn` does), not
//! through a pipe: a pipe's write end is copied into every other child that
//! another thread starts meanwhile, and the parent's read then waited for
//! *those* children to `exec` too (6 ms a start, measured, with fifty
//! starting at once). Elsewhere `Command` spawns it.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{ChildStderr, ChildStdin, ChildStdout, ExitStatus};

/// What to start.
#[derive(Clone)]
pub(super) struct Spec {
    pub(super) program: String,
    pub(super) args: Vec<String>,
    /// Set on top of the base environment.
    pub(super) env: BTreeMap<String, String>,
    /// Which of the host's variables the child starts from.
    pub(super) base: EnvBase,
    pub(super) cwd: Option<std::path::PathBuf>,
}

impl Spec {
    /// The key under which the era this configuration's server speaks is
    /// remembered for the life of the process (as the specification
    /// recommends: a restart of the same configuration is not probed
    /// again). A hash, so the configured variables (secrets among them)
    /// are not kept a second time; a collision only costs the probe the
    /// wrong guess falls back to.
    pub(super) fn era_key(&self) -> String {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&self.program, &self.args, &self.env, &self.base, &self.cwd).hash(&mut h);
        format!("stdio:{:016x}", h.finish())
    }
}

/// The part of the host's environment a child starts from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum EnvBase {
    /// All of it (`McpServerConfig::inherit_env`).
    Inherit,
    /// Only these variables, those of them that are set: the default, so
    /// the host's secrets do not reach every server.
    Allow(Vec<String>),
}

/// The child's environment: the base taken from the host (read when the
/// child is started, so a variable the host changed since is seen as it is
/// now), then the configured variables on top; each name once. A list, not
/// a map: a dozen variables are looked through faster than a map is built
/// (with the C strings built in one allocation each, 4.8k fewer
/// instructions a start, of 135k: `benches/instructions.sh start`).
pub(super) fn child_env(spec: &Spec) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let configured =
        |name: &std::ffi::OsStr| name.to_str().is_some_and(|n| spec.env.contains_key(n));
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = match &spec.base {
        EnvBase::Inherit => std::env::vars_os()
            .filter(|(k, _)| !configured(k))
            .collect(),
        EnvBase::Allow(names) => {
            let mut env = Vec::with_capacity(names.len() + spec.env.len());
            for n in names {
                let taken = env
                    .iter()
                    .any(|(k, _): &(std::ffi::OsString, _)| k == n.as_str());
                if taken || spec.env.contains_key(n) {
                    continue;
                }
                if let Some(v) = std::env::var_os(n) {
                    env.push((n.into(), v));
                }
            }
            env
        }
    };
    env.extend(spec.env.iter().map(|(k, v)| (k.into(), v.into())));
    env
}

/// A started server: its process and the host's ends of its pipes.
#[derive(Debug)]
pub(super) struct Spawned {
    pub(super) proc: Proc,
    pub(super) stdin: ChildStdin,
    pub(super) stdout: ChildStdout,
    pub(super) stderr: ChildStderr,
}

/// A child process, reaped with `waitpid` (once).
#[derive(Debug)]
pub(super) struct Proc {
    pid: libc::pid_t,
    status: Option<ExitStatus>,
}

impl Proc {
    /// The process id (also its process group id).
    pub(super) fn id(&self) -> u32 {
        self.pid as u32
    }

    /// The exit status if the child has exited (it is then reaped).
    pub(super) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.wait_flags(libc::WNOHANG)
    }

    /// Waits for the child to exit and reaps it.
    pub(super) fn wait(&mut self) -> io::Result<ExitStatus> {
        self.wait_flags(0)
            .map(|s| s.expect("waitpid without WNOHANG returns a status"))
    }

    fn wait_flags(&mut self, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
        if let Some(s) = self.status {
            return Ok(Some(s));
        }
        loop {
            let mut st: libc::c_int = 0;
            // SAFETY: waits for our own child; `st` is a valid out-pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut st, flags) };
            if r == self.pid {
                let s = ExitStatus::from_raw(st);
                self.status = Some(s);
                return Ok(Some(s));
            }
            if r == 0 {
                return Ok(None);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Grows the process's file-descriptor table to at least `slots` entries
/// (fewer when `RLIMIT_NOFILE` is lower), so that the descriptors of the
/// servers to come need no growth of it, each of which waits for an RCU
/// grace period in a multi-threaded process (see
/// [`FD_TABLE_RESERVE`](crate::limits::FD_TABLE_RESERVE)). Best effort: a
/// failure changes nothing but the speed of later starts.
pub(super) fn reserve_fd_table(slots: usize) {
    #[cfg(target_os = "linux")]
    {
        let Some(limit) = nofile_limit() else {
            return;
        };
        let top = (slots as u64).min(limit);
        let Some(fd) = top
            .checked_sub(1)
            .and_then(|t| libc::c_int::try_from(t).ok())
        else {
            return;
        };
        // The lowest free descriptor at or above `fd`: the kernel grows
        // the table to hold it. Duplicating stderr (any open descriptor
        // would do; 0-2 may all be closed, then there is nothing to grow
        // for and it fails harmlessly) and closing the copy at once.
        // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor that only this
        // function knows of, closed before it returns.
        unsafe {
            for src in [2, 1, 0] {
                let d = libc::fcntl(src, libc::F_DUPFD_CLOEXEC, fd);
                if d >= 0 {
                    libc::close(d);
                    break;
                }
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = slots;
}

/// `RLIMIT_NOFILE`'s soft limit: how many descriptors the process may
/// hold (`None` if it cannot be read).
#[cfg(target_os = "linux")]
fn nofile_limit() -> Option<u64> {
    // SAFETY: an all-zero rlimit is a valid value of that C struct.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: getrlimit fills the struct we pass.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    ok.then_some(lim.rlim_cur as u64)
}

/// Starts `spec` with its stdin, stdout and stderr piped ([`prepare`]
/// then [`Prepared::start`] on the same thread).
#[cfg(test)]
pub(super) fn spawn(spec: &Spec) -> io::Result<Spawned> {
    prepare(spec)?.start()
}

/// Everything a start needs that allocates, done on the caller's thread:
/// the child's environment, its program looked up in `PATH`, its argument
/// and environment vectors as C data. What is wrong with the command (a
/// NUL byte, a program not found) is found here. The I/O thread then only
/// makes the pipes and the child ([`Prepared::start`]): it allocates
/// nothing, so its stack stays shallow and the allocator keeps no memory
/// of a start per thread (measured: 0.6 MiB more for a hundred servers
/// when the whole start ran on the I/O threads).
pub(super) fn prepare(spec: &Spec) -> io::Result<Prepared> {
    #[cfg(target_os = "linux")]
    {
        linux::prepare(spec).map(Prepared)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(Prepared(spec.clone()))
    }
}

/// A start made ready by [`prepare`].
pub(super) struct Prepared(
    #[cfg(target_os = "linux")] linux::CData,
    #[cfg(not(target_os = "linux"))] Spec,
);

impl Prepared {
    /// Starts the child. On Linux its parent-death signal follows the
    /// calling thread (see `stdio`).
    pub(super) fn start(self) -> io::Result<Spawned> {
        #[cfg(target_os = "linux")]
        {
            linux::start(self.0)
        }
        #[cfg(not(target_os = "linux"))]
        {
            spawn_with_command(&self.0)
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn spawn_with_command(spec: &Spec) -> io::Result<Spawned> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .env_clear()
        .envs(child_env(spec))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn()?;
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        unreachable!("all three were piped");
    };
    // The `Child` is only a pid: it neither kills nor reaps when dropped,
    // and `Proc` reaps it.
    Ok(Spawned {
        proc: Proc {
            pid: child.id() as libc::pid_t,
            status: None,
        },
        stdin,
        stdout,
        stderr,
    })
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use std::ffi::{CString, OsStr, OsString};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    /// `parts` joined as a C string, allocated once (with room for the NUL
    /// that `CString::new` would otherwise reallocate for).
    fn cstring(parts: &[&[u8]], what: &str) -> io::Result<CString> {
        let mut bytes = Vec::with_capacity(parts.iter().map(|p| p.len()).sum::<usize>() + 1);
        for p in parts {
            bytes.extend_from_slice(p);
        }
        CString::new(bytes).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{what} contains a NUL byte"),
            )
        })
    }

    /// The program as `execve` wants it: a path with a `/` is taken as it is
    /// (relative to the working directory, after the child changed to it);
    /// otherwise the first executable file named so in `PATH` (the child's
    /// `PATH` when the config sets one).
    fn resolve(program: &str, path_var: Option<&OsStr>) -> io::Result<CString> {
        use std::os::unix::ffi::OsStrExt;
        if program.is_empty() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "empty command"));
        }
        if program.contains('/') {
            return cstring(&[program.as_bytes()], "the command");
        }
        let default = OsString::from("/usr/local/bin:/usr/bin:/bin");
        let dirs = path_var.unwrap_or(&default);
        for dir in std::env::split_paths(dirs) {
            let candidate = if dir.as_os_str().is_empty() {
                Path::new(".").join(program)
            } else {
                dir.join(program)
            };
            let c = cstring(&[candidate.as_os_str().as_bytes()], "PATH")?;
            let is_file = std::fs::metadata(&candidate).is_ok_and(|m| m.is_file());
            // SAFETY: access(2) on a valid C string.
            if is_file && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0 {
                return Ok(c);
            }
        }
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{program}: not found in PATH"),
        ))
    }

    /// A pipe whose both ends are close-on-exec.
    fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` has room for the two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both were just returned to us and are owned by nothing else.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    }

    /// Raises the capacity of the server's stdout pipe to
    /// [`STDIO_PIPE_CAPACITY`](crate::limits::STDIO_PIPE_CAPACITY), best
    /// effort (the kernel may refuse past the user's pipe quota; the default
    /// 64 KiB then stays). A large reply then crosses in a few reads rather
    /// than one wake-up of the reader per 64 KiB.
    fn grow_pipe(fd: &OwnedFd) {
        let size = crate::limits::STDIO_PIPE_CAPACITY;
        // SAFETY: F_SETPIPE_SZ on a pipe we own; no memory is passed.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, size as libc::c_int) };
    }

    /// `fd` itself when it is 3 or above, else a close-on-exec duplicate
    /// that is (the original is closed).
    fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
        if fd.as_raw_fd() > 2 {
            return Ok(fd);
        }
        // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own.
        let d = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if d < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `d` was just returned to us and is owned by nothing else.
        Ok(unsafe { OwnedFd::from_raw_fd(d) })
    }

    /// Size of the stack the child runs on until `execve`.
    const CHILD_STACK: usize = 64 * 1024;

    /// The memory a child runs on until `execve`: not zeroed, since the
    /// child writes before it reads (zeroing a fresh 64 KiB per start cost
    /// more than the rest of the parent's side of a start, measured with
    /// fifty servers starting at once), and freed once the child exec'd.
    /// Allocated by the caller with the rest of [`CData`], not by the I/O
    /// thread that starts the child (the allocator would keep a start's
    /// memory in that thread's arena).
    struct ChildStack(Box<[std::mem::MaybeUninit<u8>]>);

    impl ChildStack {
        fn new() -> ChildStack {
            ChildStack(Box::new_uninit_slice(CHILD_STACK))
        }
    }

    /// What the child reads; everything prepared by the parent, so the
    /// child allocates nothing.
    struct ChildArgs {
        path: *const libc::c_char,
        argv: *const *const libc::c_char,
        envp: *const *const libc::c_char,
        cwd: *const libc::c_char,
        /// Child-side pipe ends for fds 0, 1, 2.
        fds: [RawFd; 3],
        /// Where the child stores `errno` when it fails before `execve`
        /// (0 while it has not): the parent reads it after `clone`
        /// returns, which is after the child exec'd or exited.
        errno: std::sync::atomic::AtomicI32,
        host: libc::pid_t,
    }

    /// What the child gets, as C data (see [`prepare`](super::prepare)).
    pub(in super::super) struct CData {
        path: CString,
        /// Owners of the strings `argv` and `envp` point into.
        _strings: (Vec<CString>, Vec<CString>),
        cwd: Option<CString>,
        argv: Vec<*const libc::c_char>,
        envp: Vec<*const libc::c_char>,
        /// Allocated here too, so that the thread that starts the child
        /// allocates nothing.
        stack: ChildStack,
    }

    // SAFETY: the raw pointers point into the `CString`s this value owns
    // (heap memory that moves with it and is never written), so the value
    // may go to another thread whole.
    unsafe impl Send for CData {}

    pub(super) fn prepare(spec: &Spec) -> io::Result<CData> {
        let env = child_env(spec);
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_os_str());
        let path = resolve(&spec.program, path_var)?;
        let mut argv_c = Vec::with_capacity(spec.args.len() + 1);
        argv_c.push(cstring(&[spec.program.as_bytes()], "the command")?);
        for a in &spec.args {
            argv_c.push(cstring(&[a.as_bytes()], "an argument")?);
        }
        let envp_c = env
            .iter()
            .map(|(k, v)| {
                cstring(
                    &[k.as_bytes(), b"=", v.as_bytes()],
                    "an environment variable",
                )
            })
            .collect::<io::Result<Vec<_>>>()?;
        let cwd = spec
            .cwd
            .as_ref()
            .map(|d| cstring(&[d.as_os_str().as_bytes()], "the working directory"))
            .transpose()?;
        let argv: Vec<*const libc::c_char> = argv_c
            .iter()
            .map(|c| c.as_ptr())
            .chain([std::ptr::null()])
            .collect();
        let envp: Vec<*const libc::c_char> = envp_c
            .iter()
            .map(|c| c.as_ptr())
            .chain([std::ptr::null()])
            .collect();
        Ok(CData {
            path,
            _strings: (argv_c, envp_c),
            cwd,
            argv,
            envp,
            stack: ChildStack::new(),
        })
    }

    pub(super) fn start(mut c: CData) -> io::Result<Spawned> {
        let (in_r, in_w) = pipe()?;
        let (out_r, out_w) = pipe()?;
        grow_pipe(&out_r);
        let (err_r, err_w) = pipe()?;
        // A host that closed its own stdin/stdout/stderr gets pipes on fds
        // 0-2; the child's dup2s onto 0-2 must not overwrite one another.
        let (in_r, out_w, err_w) = (above_stdio(in_r)?, above_stdio(out_w)?, above_stdio(err_w)?);
        let args = ChildArgs {
            path: c.path.as_ptr(),
            argv: c.argv.as_ptr(),
            envp: c.envp.as_ptr(),
            cwd: c.cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            fds: [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
            errno: std::sync::atomic::AtomicI32::new(0),
            // SAFETY: getpid is always safe.
            host: unsafe { libc::getpid() },
        };
        // SAFETY: the top of our own allocation, aligned down to 16 bytes
        // as the ABI wants.
        let top = unsafe { c.stack.0.as_mut_ptr().add(CHILD_STACK) };
        let top = ((top as usize) & !15) as *mut libc::c_void;

        // No signal handler of the host may run in the child while it
        // borrows the host's memory: block everything around the clone
        // (the child resets the handlers before unblocking).
        // SAFETY: plain signal-mask calls with valid sets.
        let pid = unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let pid = libc::clone(
                child_main,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                &args as *const ChildArgs as *mut libc::c_void,
            );
            let clone_err = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            if pid < 0 {
                return Err(clone_err);
            }
            pid
        };
        // The child has exec'd or exited: its stack and arguments are free.
        drop(c);
        drop((in_r, out_w, err_w));
        let mut proc = Proc { pid, status: None };
        let errno = args.errno.load(std::sync::atomic::Ordering::Acquire);
        if errno != 0 {
            let _ = proc.wait();
            return Err(io::Error::from_raw_os_error(errno));
        }
        Ok(Spawned {
            proc,
            stdin: ChildStdin::from(in_w),
            stdout: ChildStdout::from(out_r),
            stderr: ChildStderr::from(err_r),
        })
    }

    /// Reports `errno` to the parent and exits without running anything of
    /// the host's.
    ///
    /// # Safety
    ///
    /// Only in the child, before `exec`: it calls only async-signal-safe
    /// functions (`_exit`), reads `errno` of the calling thread and stores
    /// into `a`, which the parent reads once this process has exited.
    unsafe fn fail(a: &ChildArgs) -> ! {
        let e = *libc::__errno_location();
        // 0 means "no error" to the parent; a failure always reports one.
        let e = if e == 0 { libc::EINVAL } else { e };
        a.errno.store(e, std::sync::atomic::Ordering::Release);
        libc::_exit(127)
    }

    /// Runs in the child on its own stack, sharing the parent's memory
    /// until `execve`: only async-signal-safe calls, no allocation.
    extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` points at the parent's `ChildArgs`, alive until the
        // parent resumes, which is after this process exec'd or exited.
        unsafe {
            let a = &*(arg as *const ChildArgs);
            // Default handlers (ignored signals stay ignored, except
            // SIGPIPE, as std does), then the death signal. A signal
            // already at its default is left alone: most are, and a
            // start made 125 system calls here when each was set again
            // (glibc's `posix_spawn` looks the same way).
            // Signal numbers 1..=64; invalid ones just fail.
            for sig in 1..65 {
                if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                    continue;
                }
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction != libc::SIG_DFL
                    && (old.sa_sigaction != libc::SIG_IGN || sig == libc::SIGPIPE)
                {
                    let mut dfl: libc::sigaction = std::mem::zeroed();
                    dfl.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(sig, &dfl, std::ptr::null_mut());
                }
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) == -1 {
                fail(a);
            }
            // The host may have died before the death signal was armed.
            if libc::getppid() != a.host {
                *libc::__errno_location() = libc::ESRCH;
                fail(a);
            }
            if libc::setpgid(0, 0) == -1 {
                fail(a);
            }
            // The sources are all 3 or above (`above_stdio`), so no dup2
            // overwrites a source still to come, and each clears
            // close-on-exec on its target.
            for (target, &fd) in a.fds.iter().enumerate() {
                if libc::dup2(fd, target as RawFd) == -1 {
                    fail(a);
                }
            }
            if !a.cwd.is_null() && libc::chdir(a.cwd) == -1 {
                fail(a);
            }
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::execve(a.path, a.argv, a.envp);
            fail(a)
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read};

    fn spec(program: &str, args: &[&str]) -> Spec {
        Spec {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            base: EnvBase::Allow(
                crate::limits::STDIO_ENV_ALLOWLIST
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
            ),
            cwd: None,
        }
    }

    fn output_of(s: &Spec) -> String {
        let mut c = spawn(s).unwrap();
        drop(c.stdin);
        let mut out = String::new();
        BufReader::new(c.stdout).read_to_string(&mut out).unwrap();
        c.proc.wait().unwrap();
        out
    }

    /// A variable of the host outside the allowlist (cargo sets
    /// `CARGO_MANIFEST_DIR` for the tests it runs) stays out of the child
    /// unless the whole environment is inherited; allowlisted ones and the
    /// configured ones get in.
    #[test]
    fn the_child_gets_the_allowlist_and_its_env_not_the_host_environment() {
        let Some(host) = std::env::var_os("CARGO_MANIFEST_DIR") else {
            eprintln!("skipping: CARGO_MANIFEST_DIR is not set (not run by cargo)");
            return;
        };
        let script = "echo \"${CARGO_MANIFEST_DIR-unset}|${PATH:+path}|$SKALD_T\"";
        let mut s = spec("sh", &["-c", script]);
        s.env.insert("SKALD_T".into(), "configured".into());
        assert_eq!(output_of(&s), "unset|path|configured\n");
        s.base = EnvBase::Inherit;
        assert_eq!(
            output_of(&s),
            format!("{}|path|configured\n", host.to_string_lossy())
        );
        // The configured env wins over the host's.
        s.env.insert("CARGO_MANIFEST_DIR".into(), "mine".into());
        assert_eq!(output_of(&s), "mine|path|configured\n");
        // An allowlist of nothing: an empty environment, not even PATH (the
        // program is still found, through the default search path).
        let mut bare = spec("env", &[]);
        bare.base = EnvBase::Allow(Vec::new());
        assert_eq!(output_of(&bare), "");
    }

    /// Each name reaches the child once: a name allowed twice, or allowed
    /// and configured (the configured value wins), is not repeated.
    #[test]
    fn each_variable_once_and_the_configured_value_wins() {
        let mut s = spec("env", &[]);
        s.base = EnvBase::Allow(vec!["PATH".into(), "PATH".into(), "HOME".into()]);
        s.env.insert("HOME".into(), "/configured".into());
        s.env.insert("SKALD_ONLY_HERE".into(), "x".into());
        let env = child_env(&s);
        let names: Vec<&std::ffi::OsStr> = env.iter().map(|(k, _)| k.as_os_str()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "a name repeated: {names:?}");
        let value = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(
            value("HOME").as_deref(),
            Some(std::ffi::OsStr::new("/configured"))
        );
        assert_eq!(
            value("SKALD_ONLY_HERE").as_deref(),
            Some(std::ffi::OsStr::new("x"))
        );
        assert_eq!(value("PATH"), std::env::var_os("PATH"));
        // And what the child sees: HOME once, the configured one.
        let out = output_of(&s);
        let homes: Vec<&str> = out.lines().filter(|l| l.starts_with("HOME=")).collect();
        assert_eq!(homes, ["HOME=/configured"]);
    }

    #[test]
    fn env_cwd_pipes_and_exit_status() {
        let mut s = spec(
            "sh",
            &[
                "-c",
                "echo \"$SKALD_T\"; pwd; echo err >&2; read x; echo \"$x\"; exit 3",
            ],
        );
        s.env.insert("SKALD_T".into(), "from the config".into());
        s.cwd = Some("/".into());
        let mut c = spawn(&s).unwrap();
        use std::io::Write;
        writeln!(c.stdin, "through stdin").unwrap();
        drop(c.stdin);
        let mut out = String::new();
        BufReader::new(c.stdout).read_to_string(&mut out).unwrap();
        assert_eq!(out, "from the config\n/\nthrough stdin\n");
        let mut err = String::new();
        BufReader::new(c.stderr).read_line(&mut err).unwrap();
        assert_eq!(err, "err\n");
        let status = c.proc.wait().unwrap();
        assert_eq!(status.code(), Some(3));
        // Reaped once; asking again gives the same status.
        assert_eq!(c.proc.try_wait().unwrap(), Some(status));
    }

    #[test]
    fn own_process_group_no_blocked_or_ignored_signals() {
        let mut c = spawn(&spec("sleep", &["30"])).unwrap();
        let pid = c.proc.id() as libc::pid_t;
        // SAFETY: getpgid on our own child.
        assert_eq!(unsafe { libc::getpgid(pid) }, pid);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
                .unwrap()
        };
        assert_eq!(field("SigBlk:"), 0, "the host's blocked mask leaked");
        // The Rust runtime ignores SIGPIPE in the host; the child must not.
        assert_eq!(field("SigIgn:") & (1 << (libc::SIGPIPE - 1)), 0);
        // SAFETY: kill our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        assert_eq!(c.proc.wait().unwrap().signal(), Some(libc::SIGKILL));
        drop((c.stdin, c.stdout, c.stderr));
    }

    /// A host that closed its own stdin and stderr: the pipes then land on
    /// fds 0 and 2, and the child must still get them the right way round.
    /// Runs in a copy of this test binary, which closes them first.
    #[test]
    fn works_when_the_host_closed_stdin_and_stderr() {
        use std::io::Write;
        const NAME: &str = "stdio::spawn::tests::works_when_the_host_closed_stdin_and_stderr";
        if std::env::var_os("SKALD_CLOSED_STDIO").is_some() {
            // SAFETY: closing our own stdin and stderr, in a test process of
            // our own running this one test.
            unsafe {
                libc::close(0);
                libc::close(2);
            }
            let mut c = spawn(&spec("sh", &["-c", "read x; echo \"got $x\"; echo e >&2"])).unwrap();
            writeln!(c.stdin, "hi").unwrap();
            drop(c.stdin);
            let mut out = String::new();
            BufReader::new(c.stdout).read_to_string(&mut out).unwrap();
            let mut err = String::new();
            BufReader::new(c.stderr).read_to_string(&mut err).unwrap();
            assert!(c.proc.wait().unwrap().success());
            if out != "got hi\n" || err != "e\n" {
                std::process::exit(3);
            }
            return;
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--test-threads=1"])
            .env("SKALD_CLOSED_STDIO", "1")
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{status}");
    }

    /// The size of this process's file table (`FDSize` in
    /// `/proc/self/status`).
    #[cfg(target_os = "linux")]
    pub(crate) fn fd_table_size() -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("FDSize:")).unwrap();
        line["FDSize:".len()..].trim().parse().unwrap()
    }

    /// `RLIMIT_NOFILE`'s soft limit, as a table size.
    #[cfg(target_os = "linux")]
    pub(crate) fn nofile_limit() -> usize {
        let limit = super::nofile_limit().expect("getrlimit(RLIMIT_NOFILE)");
        usize::try_from(limit).unwrap_or(usize::MAX)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_file_table_grows_and_no_descriptor_is_left_open() {
        let want = 300.min(nofile_limit());
        reserve_fd_table(300);
        assert!(
            fd_table_size() >= want,
            "FDSize {} < {want}",
            fd_table_size()
        );
        // The descriptor that grew it is closed again.
        // SAFETY: F_GETFD only reads the flags of a descriptor number.
        let r = unsafe { libc::fcntl(want as libc::c_int - 1, libc::F_GETFD) };
        assert_eq!(r, -1, "descriptor {} left open", want - 1);
        // Asking for more than the limit allows, or for nothing, is harmless.
        reserve_fd_table(usize::MAX);
        reserve_fd_table(0);
    }

    #[test]
    fn errors_before_exec_are_reported() {
        let e = spawn(&spec("/nonexistent/skald-server", &[])).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        let e = spawn(&spec("skald-no-such-command-anywhere", &[])).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        let plain = std::env::temp_dir().join(format!("skald-not-exec-{}", std::process::id()));
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let e = spawn(&spec(plain.to_str().unwrap(), &[])).unwrap_err();
        let _ = std::fs::remove_file(&plain);
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        let mut s = spec("sh", &["-c", "true"]);
        s.cwd = Some("/nonexistent-dir".into());
        let e = spawn(&s).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        let e = spawn(&spec("sh", &["a\0b"])).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
    }
}
