//! Helpers of the HTTP integration tests: a guard that runs a test server
//! on 127.0.0.1 (and always stops it), a watchdog that bounds every test,
//! and bounded waits on channels.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use serde_json::Value;
use skald_mcp::{ClientOptions, McpLogLine, McpNotification};

/// How long a server has to print its READY line.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one test may run before its server is killed (which unblocks
/// any I/O) and, if it still does not finish, the test process is aborted.
pub const TEST_LIMIT: Duration = Duration::from_secs(90);

/// An absolute path to a file of the repository.
pub fn repo_path(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// Whether the official Python SDK is importable. Without it the FastMCP
/// tests are skipped with a message, except in CI, where it is a failure.
pub fn python_sdk_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install the Python SDK (pip install mcp)"
        );
        eprintln!("skipping: python package `mcp` is not installed");
    }
    ok
}

/// Kills the server (and then the whole test process) when a test runs
/// longer than its limit; disarmed when dropped.
struct Watchdog {
    _disarm: Sender<()>,
}

fn watchdog(pid: u32, what: String, limit: Duration) -> Watchdog {
    let (tx, rx) = bounded::<()>(0);
    std::thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
            eprintln!("{what}: the test exceeded {limit:?}; killing the server");
            // SAFETY: a plain syscall on the pid of a child we have not reaped
            // (the guard reaps it only after disarming this watchdog).
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(10)) {
                eprintln!("{what}: still hanging after the server was killed; aborting");
                std::process::abort();
            }
        }
    });
    Watchdog { _disarm: tx }
}

/// A test server child process; killed and reaped when dropped (also when
/// the test panics).
pub struct Server {
    child: Option<Child>,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
    stderr: Arc<Mutex<String>>,
    watchdog: Option<Watchdog>,
}

impl Server {
    /// Starts `python3 <script> --port 0 <args>` and waits for `READY <port>`.
    pub fn start(script: &str, args: &[&str]) -> Server {
        let mut child = Command::new("python3")
            .arg(repo_path(script))
            .args(["--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let err_text = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&err_text);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let (tx, rx) = bounded::<u16>(1);
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            while let Some(Ok(line)) = lines.next() {
                if let Some(p) = line.strip_prefix("READY ") {
                    if let Ok(port) = p.trim().parse() {
                        let _ = tx.send(port);
                    }
                }
            }
        });
        let watchdog = watchdog(child.id(), script.to_owned(), TEST_LIMIT);
        let mut server = Server {
            child: Some(child),
            port: 0,
            stderr: err_text,
            watchdog: Some(watchdog),
        };
        match rx.recv_timeout(READY_TIMEOUT) {
            Ok(port) => server.port = port,
            Err(_) => panic!(
                "{script} printed no READY line within {READY_TIMEOUT:?}; stderr:\n{}",
                server.stderr()
            ),
        }
        server
    }

    /// The FastMCP server with `args`, or `None` (skip) without the SDK.
    pub fn fastmcp(args: &[&str]) -> Option<Server> {
        python_sdk_available().then(|| Server::start("tests/servers/fastmcp_http_server.py", args))
    }

    /// The hostile server with `args`.
    pub fn hostile(args: &[&str]) -> Server {
        Server::start("scripts/hostile_http_server.py", args)
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// What the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().clone()
    }

    /// Every request the hostile server recorded.
    pub fn received(&self) -> Vec<Value> {
        let body = ureq::get(format!("http://127.0.0.1:{}/_received", self.port))
            .call()
            .expect("GET /_received")
            .into_body()
            .read_to_string()
            .expect("body");
        serde_json::from_str(&body).expect("JSON")
    }

    /// The recorded POSTs whose JSON-RPC method is `method`.
    pub fn posts_of(&self, method: &str) -> Vec<Value> {
        self.received()
            .into_iter()
            .filter(|r| r["verb"] == "POST" && r["body"]["method"] == method)
            .collect()
    }

    /// Kills the server now.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        self.watchdog.take();
    }
}

/// Options with test-sized timeouts.
pub fn test_options() -> ClientOptions {
    ClientOptions::default()
        .start_timeout(Duration::from_secs(20))
        .call_timeout(Duration::from_secs(20))
}

/// Options wired to fresh notification and log channels.
pub fn wired_options() -> (
    ClientOptions,
    Receiver<McpNotification>,
    Receiver<McpLogLine>,
) {
    let (ntx, nrx) = crossbeam_channel::unbounded();
    let (ltx, lrx) = crossbeam_channel::unbounded();
    (test_options().notifications(ntx).logs(ltx), nrx, lrx)
}

/// Receives from `rx` until `pred` matches, for at most `limit`; panics
/// with what was seen otherwise.
pub fn wait_for<T: std::fmt::Debug>(
    rx: &Receiver<T>,
    limit: Duration,
    what: &str,
    mut pred: impl FnMut(&T) -> bool,
) -> T {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        match rx.recv_deadline(deadline) {
            Ok(v) if pred(&v) => return v,
            Ok(v) => seen.push(v),
            Err(_) => panic!("no {what} within {limit:?}; saw {seen:#?}"),
        }
    }
}

/// Waits for a log line whose text contains `needle`.
pub fn wait_log(rx: &Receiver<McpLogLine>, needle: &str) -> McpLogLine {
    wait_for(rx, Duration::from_secs(20), needle, |l| {
        l.text.contains(needle)
    })
}
