//! skald-mcp's side of the performance comparison (issue 10).
//!
//! ```text
//! cargo run --release --example bench_client -- --server benches/echo-server/target/release/echo-server
//! ```
//!
//! Runs every scenario against the echo server in `benches/echo-server`, once
//! through this library and once as a *raw floor*: the same request bytes
//! written to the same server over a pipe (or a keep-alive TCP socket for
//! HTTP) by a few lines of std code, with no client library, no JSON parsing
//! and no threads. Each figure is printed with its ratio to the floor.
//!
//! Options: `--quick` (fewer iterations), `--only a,b` (scenario keys:
//! cold, seq, tput, fanout, start50, rss100, kill, http, era), `--sizes 128,64k,1m`
//! (payloads of the sequential scenario), `--floor-variants` (the floor
//! also with a `poll` before each read, with a reader thread handing each
//! reply over, and with `poll` plus encoding the request from and parsing
//! the reply into a `serde_json::Value`: what those steps cost here),
//! `--in-flight 8,64` (restrict the throughput scenario), `--window-ms N`
//! (how long each throughput figure is measured) and `--no-floor` (leave
//! the floor out of every scenario but `era`: only the client is measured); `--start50-floor VARIANT`
//! (`plain`, `thread`, `handoff`, `probe`, `owned`, `helper`,
//! `helper-thread`) measures only the 50-starts floor, as it is, with a
//! thread created per start, with that thread and two hand-offs between it
//! and the starter, with that thread and the stdio era probe, with the whole start
//! on a thread one caller creates per server, or with the children started
//! from a helper process (`spawn_helper`), and exits
//! (`benches/start50_variants.sh` runs them). Besides the table it prints
//! machine-readable lines `@<client> <key> <value>` that `benches/compare.sh`
//! collects. `BENCH_CPU=1` also prints, for `start50`, the client's CPU
//! time in the window by thread kind, and for `http`, the calling thread's
//! CPU time per call (under `taskset -c 0` the least noisy figure of what
//! a call costs this client).
//!
//! The `era` scenario (not in the default set) compares the two protocol
//! eras of this client against the echo server in `--dual-era` mode:
//! sequential 128 B `tools/call` p50 over stdio and HTTP, legacy (the
//! `initialize` handshake, no `_meta`) beside modern (2026-07-28: every
//! request carries the `_meta` version, capabilities and identity; over HTTP
//! also the standard headers), interleaved in rounds so that drift of the
//! machine hits both alike.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use skald_mcp::{ClientOptions, McpHttpServer, McpServer, McpServerClient, McpServerConfig};

#[path = "bench_client/spawn_helper.rs"]
mod spawn_helper;

const SIZES: [(usize, &str); 3] = [(128, "128"), (64 * 1024, "64k"), (1024 * 1024, "1m")];
const IN_FLIGHT: [usize; 3] = [1, 8, 64];

struct Args {
    server: String,
    quick: bool,
    only: Option<Vec<String>>,
    /// `--sizes 128,64k`: restrict the sequential scenario (for profiling).
    sizes: Option<Vec<String>>,
    /// `--floor-variants`: also the floor with a `poll` before each read,
    /// with a reader thread, and with `poll` plus the JSON work (lines
    /// `@floor_poll`, `@floor_thread`, `@floor_json`).
    floor_variants: bool,
    /// `--in-flight 8`: restrict the throughput scenario (for profiling and
    /// A/B runs).
    in_flight: Option<Vec<usize>>,
    /// `--window-ms N`: how long each throughput figure is measured.
    window: Option<Duration>,
    /// `--no-floor`: leave the raw floor out of every scenario but `era`.
    no_floor: bool,
    /// `--start50-floor VARIANT`: only the 50-starts floor in that variant
    /// (`spawn_helper`), printed as `@floor_<variant> start50_ms`.
    start50_floor: Option<String>,
}

/// `--era modern`: every scenario in the 2026-07-28 era (the echo server in
/// `--dual-era` mode, the floor writing this client's modern bytes); lines
/// are printed as `@ours-modern` and `@floor-modern`.
static MODERN: AtomicBool = AtomicBool::new(false);

fn modern() -> bool {
    MODERN.load(Ordering::Relaxed)
}

/// The name a line is printed under: `who`, or `who-modern`.
fn who(base: &str) -> String {
    if modern() {
        format!("{base}-modern")
    } else {
        base.to_owned()
    }
}

/// The echo server's arguments for this run's era.
fn era_args() -> &'static [&'static str] {
    if modern() {
        &["--dual-era"]
    } else {
        &[]
    }
}

/// The client options for this run's era.
fn era_options() -> ClientOptions {
    let mut o = ClientOptions::default();
    // `BENCH_SPIN_US`: the callers' spin (`caller_spin`), e.g. 0 to count
    // the work of a call without its polling.
    if let Ok(us) = std::env::var("BENCH_SPIN_US") {
        o.caller_spin = Duration::from_micros(us.parse().expect("microseconds"));
    }
    if modern() {
        o.era(skald_mcp::EraPreference::Modern)
    } else {
        o
    }
}

impl Args {
    fn wants(&self, key: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|k| k == key))
    }
    fn iters(&self, size: usize) -> usize {
        let n = match size {
            s if s <= 1024 => 5000,
            s if s <= 64 * 1024 => 1000,
            _ => 200,
        };
        if self.quick {
            n / 5
        } else {
            n
        }
    }
    fn tput_window(&self) -> Duration {
        if let Some(w) = self.window {
            w
        } else if self.quick {
            Duration::from_millis(400)
        } else {
            Duration::from_millis(1500)
        }
    }
}

fn parse_args() -> Args {
    let mut a = Args {
        server: String::new(),
        quick: false,
        only: None,
        sizes: None,
        floor_variants: false,
        in_flight: None,
        window: None,
        no_floor: false,
        start50_floor: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--server" => a.server = it.next().expect("--server PATH"),
            "--quick" => a.quick = true,
            "--floor-variants" => a.floor_variants = true,
            "--only" => {
                a.only = Some(
                    it.next()
                        .expect("--only KEYS")
                        .split(',')
                        .map(str::to_owned)
                        .collect(),
                )
            }
            "--sizes" => {
                a.sizes = Some(
                    it.next()
                        .expect("--sizes TAGS")
                        .split(',')
                        .map(str::to_owned)
                        .collect(),
                )
            }
            "--in-flight" => {
                a.in_flight = Some(
                    it.next()
                        .expect("--in-flight K,K")
                        .split(',')
                        .map(|k| k.parse().expect("--in-flight takes numbers"))
                        .collect(),
                )
            }
            "--window-ms" => {
                let ms = it.next().expect("--window-ms N");
                a.window = Some(Duration::from_millis(
                    ms.parse().expect("--window-ms takes a number"),
                ))
            }
            "--no-floor" => a.no_floor = true,
            "--start50-floor" => {
                a.start50_floor = Some(it.next().expect("--start50-floor VARIANT"))
            }
            "--era" => match it.next().as_deref() {
                Some("modern") => MODERN.store(true, Ordering::Relaxed),
                Some("legacy") => {}
                other => panic!("--era modern|legacy, not {other:?}"),
            },
            "--child-list10k" => a.only = Some(vec!["child-list10k".into()]),
            "--child-rss100" => {
                // Internal: measured in a fresh process so earlier scenarios'
                // peaks do not count.
                a.only = Some(vec!["child-rss100".into()]);
            }
            other => panic!("unknown argument {other:?}"),
        }
    }
    if a.server.is_empty() {
        a.server = std::env::var("ECHO_SERVER")
            .unwrap_or_else(|_| "benches/echo-server/target/release/echo-server".into());
    }
    a
}

// ---- reporting ----------------------------------------------------------------

struct Row {
    key: String,
    label: String,
    ours: f64,
    floor: Option<f64>,
    unit: &'static str,
    /// true when smaller is better (latency), false for throughput.
    lower_better: bool,
}

#[derive(Default)]
struct Table(Vec<Row>);

impl Table {
    fn add(
        &mut self,
        key: &str,
        label: &str,
        ours: f64,
        floor: Option<f64>,
        unit: &'static str,
        lower_better: bool,
    ) {
        println!("@{} {key} {ours:.3}", who("ours"));
        if let Some(f) = floor {
            println!("@{} {key} {f:.3}", who("floor"));
        }
        self.0.push(Row {
            key: key.into(),
            label: label.into(),
            ours,
            floor,
            unit,
            lower_better,
        });
    }

    fn print(&self) {
        println!();
        println!(
            "{:<44} {:>12} {:>12} {:>8}  unit",
            "scenario", "skald-mcp", "raw floor", "÷ floor"
        );
        println!("{}", "-".repeat(86));
        for r in &self.0 {
            let (floor, ratio) = match r.floor {
                Some(f) if f > 0.0 => {
                    let ratio = if r.lower_better {
                        r.ours / f
                    } else {
                        f / r.ours
                    };
                    (format!("{f:.1}"), format!("{ratio:.2}×"))
                }
                _ => ("—".into(), "—".into()),
            };
            println!(
                "{:<44} {:>12.1} {:>12} {:>8}  {}   [{}]",
                r.label, r.ours, floor, ratio, r.unit, r.key
            );
        }
        println!("(÷ floor: time ÷ floor time, or floor rate ÷ our rate; 1.00× = no overhead)");
    }
}

fn pct(sorted: &[Duration], p: usize) -> f64 {
    let i = (sorted.len() * p / 100).min(sorted.len() - 1);
    sorted[i].as_secs_f64() * 1e6
}

fn micros(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    (pct(&v, 50), pct(&v, 99))
}

fn proc_status(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// This process's `skald-mcp-fds` thread, while it runs: the one-off
/// thread the first stdio start begins to grow the file table, not a
/// per-server thread.
fn fd_threads() -> u64 {
    threads_by_kind()
        .get("skald-mcp-fds")
        .map_or(0, |&(_, n, _)| u64::from(n))
}

// ---- the raw floor ------------------------------------------------------------

/// A pipe's lines read straight into one buffer, as skald-mcp reads them
/// (`src/stdio/linebuf.rs`): no byte is copied after the kernel's copy, and
/// a read asks for all the room the buffer has. The floor must not pay a
/// copy that the client does not (through a `BufReader` and `read_until`
/// it paid one per byte and a `read` per 64 KiB: 1 MiB replies then read
/// as a floor that the client nearly met).
struct RawLines {
    src: ChildStdout,
    buf: Vec<u8>,
    /// The last line returned, without its newline.
    line: std::ops::Range<usize>,
    /// The first byte not returned yet.
    start: usize,
    /// `buf[start..searched]` has no newline.
    searched: usize,
}

impl RawLines {
    fn new(src: ChildStdout) -> RawLines {
        RawLines {
            src,
            buf: Vec::with_capacity(64 * 1024),
            line: 0..0,
            start: 0,
            searched: 0,
        }
    }

    /// Whether bytes are read that no line returned yet.
    fn buffered(&self) -> bool {
        self.start < self.buf.len()
    }

    fn fd(&self) -> libc::c_int {
        use std::os::fd::AsRawFd;
        self.src.as_raw_fd()
    }

    /// The last line returned.
    fn line(&self) -> &[u8] {
        &self.buf[self.line.clone()]
    }

    /// Reads until a line is complete: `Ok(false)` at end of file; on a
    /// non-blocking pipe `Err(WouldBlock)` keeps the partial line.
    fn next(&mut self) -> std::io::Result<bool> {
        loop {
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[self.searched..]) {
                let end = self.searched + pos;
                self.line = self.start..end;
                self.start = end + 1;
                self.searched = self.start;
                return Ok(true);
            }
            self.searched = self.buf.len();
            if self.start == self.buf.len() {
                self.buf.clear();
                (self.start, self.searched) = (0, 0);
            } else if self.buf.capacity() - self.buf.len() < 16 * 1024 {
                let live = self.start..self.buf.len();
                self.buf.copy_within(live.clone(), 0);
                self.buf.truncate(live.len());
                self.searched -= self.start;
                self.start = 0;
                if self.buf.capacity() - self.buf.len() < 16 * 1024 {
                    self.buf.reserve(self.buf.capacity());
                }
            }
            let room = self.buf.capacity() - self.buf.len();
            // SAFETY: `read` writes at most `room` bytes into the vector's
            // spare capacity; the length then covers what it wrote.
            let n = unsafe {
                let end = self.buf.as_mut_ptr().add(self.buf.len());
                libc::read(self.fd(), end.cast(), room)
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Ok(false);
            }
            // SAFETY: the kernel wrote `n` bytes after the old length.
            unsafe { self.buf.set_len(self.buf.len() + n as usize) };
        }
    }
}

/// The floor's `initialize` request.
const HANDSHAKE_INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}"#,
    "\n"
);

/// The stdio era probe skald-mcp sends first when the era is not known.
const HANDSHAKE_PROBE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"floor","version":"0"}}}}"#,
    "\n"
);

/// The floor's `notifications/initialized` and `tools/list`, written together.
const HANDSHAKE_LIST: &str = concat!(
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#,
    "\n"
);

/// The echo server driven over its pipes by hand.
struct RawPipe {
    child: Child,
    stdin: ChildStdin,
    stdout: RawLines,
    next_id: u64,
}

impl RawPipe {
    fn spawn(server: &str) -> RawPipe {
        RawPipe::spawn_with(server, era_args())
    }

    fn spawn_with(server: &str, args: &[&str]) -> RawPipe {
        let mut child = Command::new(server)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the echo server");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        {
            // The pipe capacity skald-mcp asks for its servers' stdout, so
            // that the floor is the limit of the same pipe.
            use std::os::fd::AsRawFd;
            let size = skald_mcp::limits::STDIO_PIPE_CAPACITY as libc::c_int;
            // SAFETY: F_SETPIPE_SZ on the pipe this struct owns.
            unsafe { libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, size) };
        }
        RawPipe {
            child,
            stdin,
            stdout: RawLines::new(stdout),
            next_id: 1,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
    }

    fn recv(&mut self) {
        let got = self.stdout.next().unwrap();
        assert!(got, "the echo server closed its stdout");
    }

    /// [`recv`](Self::recv) spinning on a non-blocking pipe (yielding the
    /// CPU between reads), as this client's caller does while a call is
    /// alone: no wake-up of a sleeping thread in the measurement.
    fn recv_spin(&mut self) {
        loop {
            match self.stdout.next() {
                Ok(false) => panic!("the echo server closed its stdout"),
                Ok(true) => return,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => thread::yield_now(),
                Err(e) => panic!("reading the echo server: {e}"),
            }
        }
    }

    fn set_nonblocking(&self) {
        use std::os::fd::AsRawFd;
        let fd = self.stdout.src.as_raw_fd();
        // SAFETY: fcntl on a descriptor this struct owns, with flags read
        // from it first; no memory is passed.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }

    fn handshake(&mut self) {
        self.send(HANDSHAKE_INITIALIZE.as_bytes());
        self.recv();
        self.send(HANDSHAKE_LIST.as_bytes());
        self.recv();
    }

    /// The bytes skald-mcp writes for `call_tool("echo", {"size": size})`
    /// as the next request, in the 2026-07-28 era with `modern`.
    fn call_bytes(&mut self, size: usize, modern: bool) -> Vec<u8> {
        self.next_id += 1;
        call_line(self.next_id, size, modern)
    }

    fn call(&mut self, size: usize) {
        let b = self.era_call_bytes(size);
        self.send(&b);
        self.recv();
    }

    /// The bytes of a call in this run's era.
    fn era_call_bytes(&mut self, size: usize) -> Vec<u8> {
        self.call_bytes(size, modern())
    }
}

/// The line skald-mcp writes for `call_tool("echo", {"size": size})` as
/// request `id`; with `modern`, the `_meta` it sends in the 2026-07-28 era,
/// byte for byte (check with a server that logs its input when the
/// client's capabilities change: until stop 45 the floor sent an empty
/// `extensions` where the client declares the tasks extension).
fn call_line(id: u64, size: usize, modern: bool) -> Vec<u8> {
    let meta = if modern {
        format!(
            ",\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{\"extensions\":{{\"io.modelcontextprotocol/tasks\":{{}}}}}},\"io.modelcontextprotocol/clientInfo\":{{\"name\":\"skald-mcp\",\"version\":\"{}\"}},\"io.modelcontextprotocol/logLevel\":\"debug\"}}",
            env!("CARGO_PKG_VERSION")
        )
    } else {
        String::new()
    };
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"size\":{size}}}{meta}}}}}\n"
    )
    .into_bytes()
}

/// The raw floor of the era comparison: the reply awaited by spinning (as
/// this client's lone caller does), the request in the legacy shape or, with
/// `modern`, with this client's `_meta` (the server parses the larger
/// `_meta` too: that part of the cost is the protocol's, not the client's).
fn floor_seq_spin(server: &str, size: usize, n: usize, modern: bool) -> Vec<Duration> {
    let mut p = RawPipe::spawn_with(server, &["--dual-era"]);
    p.handshake();
    p.set_nonblocking();
    timed(n, || {
        let b = p.call_bytes(size, modern);
        p.send(&b);
        p.recv_spin();
    })
}

impl Drop for RawPipe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The raw floor awaiting each reply by busy-polling a non-blocking pipe
/// (one core's worth of spin, yielding between reads), as this client's
/// lone caller does: no wake-up of a sleeping thread. With [`floor_seq`]
/// (blocking reads) it makes the floor: the faster of the two is the limit.
fn floor_seq_busy(server: &str, size: usize, n: usize) -> Vec<Duration> {
    let mut p = RawPipe::spawn(server);
    p.handshake();
    p.set_nonblocking();
    timed(n, || {
        let b = p.era_call_bytes(size);
        p.send(&b);
        p.recv_spin();
    })
}

fn floor_cold(server: &str) -> Duration {
    let t = Instant::now();
    let mut p = RawPipe::spawn(server);
    p.handshake();
    t.elapsed()
}

/// Warms `call` up (a tenth of `n`, and five), then times `n` calls.
fn timed(n: usize, mut call: impl FnMut()) -> Vec<Duration> {
    for _ in 0..n / 10 + 5 {
        call();
    }
    (0..n)
        .map(|_| {
            let t = Instant::now();
            call();
            t.elapsed()
        })
        .collect()
}

/// Waits with `poll` until the pipe has a reply (unless one is buffered).
fn wait_readable(p: &RawPipe) {
    if !p.stdout.buffered() {
        let mut pfd = libc::pollfd {
            fd: p.stdout.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the open pipe.
        unsafe { libc::poll(&mut pfd, 1, 10_000) };
    }
}

fn floor_seq(server: &str, size: usize, n: usize) -> Vec<Duration> {
    let mut p = RawPipe::spawn(server);
    p.handshake();
    timed(n, || p.call(size))
}

/// [`floor_seq`], waiting for each reply with `poll` (as a client that must
/// honour a timeout does) before the `read`.
fn floor_seq_poll(server: &str, size: usize, n: usize) -> Vec<Duration> {
    let mut p = RawPipe::spawn(server);
    p.handshake();
    timed(n, || {
        let b = p.era_call_bytes(size);
        p.send(&b);
        wait_readable(&p);
        p.recv();
    })
}

/// [`floor_seq_poll`] plus the JSON work no MCP client can skip: the
/// request serialised from a `serde_json::Value`, the reply parsed into one.
fn floor_seq_json(server: &str, size: usize, n: usize) -> Vec<Duration> {
    let mut p = RawPipe::spawn(server);
    p.handshake();
    timed(n, || {
        p.next_id += 1;
        let req = json!({"jsonrpc": "2.0", "id": p.next_id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"size": size}}});
        let mut b = serde_json::to_vec(&req).unwrap();
        b.push(b'\n');
        p.send(&b);
        wait_readable(&p);
        p.recv();
        let v: serde_json::Value = serde_json::from_slice(p.stdout.line()).unwrap();
        std::hint::black_box(v);
    })
}

/// [`floor_seq`] with the reply read by a thread of its own and handed to
/// the caller over a channel: the cost of one thread hand-off per call.
fn floor_seq_thread(server: &str, size: usize, n: usize) -> Vec<Duration> {
    let mut p = RawPipe::spawn(server);
    p.handshake();
    let mut stdout = std::mem::replace(&mut p.stdout, RawLines::new(empty_stdout()));
    let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(1);
    let reader = thread::spawn(move || loop {
        match stdout.next() {
            Ok(false) | Err(_) => return,
            Ok(true) => {
                if tx.send(stdout.line().to_vec()).is_err() {
                    return;
                }
            }
        }
    });
    let out = timed(n, || {
        let b = p.era_call_bytes(size);
        p.send(&b);
        rx.recv().expect("a reply");
    });
    drop(p);
    let _ = reader.join();
    out
}

/// A `ChildStdout` to leave behind in a [`RawPipe`] whose real one moved to
/// a thread: the read end of a pipe from `true`, which closes at once.
fn empty_stdout() -> ChildStdout {
    Command::new("true")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn true")
        .stdout
        .take()
        .expect("piped")
}

/// Calls per second with `k` requests kept in flight by one thread; with
/// `spin`, the replies are awaited by busy-polling a non-blocking pipe.
fn floor_tput(server: &str, k: usize, window: Duration, spin: bool) -> f64 {
    let mut p = RawPipe::spawn(server);
    p.handshake();
    if spin {
        p.set_nonblocking();
    }
    for _ in 0..k {
        let b = p.era_call_bytes(128);
        p.send(&b);
    }
    let mut done = 0u64;
    let start = Instant::now();
    let end = start + window;
    while Instant::now() < end {
        if spin {
            p.recv_spin();
        } else {
            p.recv();
        }
        done += 1;
        let b = p.era_call_bytes(128);
        p.send(&b);
    }
    let rate = done as f64 / start.elapsed().as_secs_f64();
    for _ in 0..k {
        if spin {
            p.recv_spin();
        } else {
            p.recv();
        }
    }
    rate
}

/// 50 starts at once, each on a thread of its own released by one
/// barrier: the window runs from the earliest start to the latest finish,
/// as each thread saw them. (Timing from the main thread's own release
/// was wrong: when the scheduler ran it after the starters, most of the
/// work fell before its clock started and a run read 1.7 ms.)
fn parallel_starts<C: Send + 'static>(
    server: &str,
    start: impl Fn(&str, usize) -> C + Send + Sync + 'static,
) -> Duration {
    let barrier = Arc::new(Barrier::new(51));
    let start = Arc::new(start);
    let hs: Vec<_> = (0..50)
        .map(|i| {
            let (b, s, start) = (Arc::clone(&barrier), server.to_owned(), Arc::clone(&start));
            // Named, so that `BENCH_CPU` and `perf --comm` tell the
            // starters from the main thread.
            let starter = thread::Builder::new().name(format!("starter{i}"));
            starter
                .spawn(move || {
                    b.wait();
                    let t0 = Instant::now();
                    let c = start(&s, i);
                    let t1 = Instant::now();
                    b.wait();
                    // Held until the main thread has read the CPU times.
                    b.wait();
                    drop(c);
                    (t0, t1)
                })
                .expect("a starter thread")
        })
        .collect();
    // `BENCH_CPU=1`: where the client's CPU time in the window went.
    let diag = std::env::var_os("BENCH_CPU").is_some();
    let before = if diag {
        threads_by_kind()
    } else {
        Default::default()
    };
    let faults0 = rusage().ru_minflt;
    let cpu0 = process_cpu();
    barrier.wait();
    let w0 = monotonic_s();
    barrier.wait();
    // Read first: the scans of /proc below are not the client's work.
    let cpu = process_cpu() - cpu0;
    let faults = rusage().ru_minflt - faults0;
    if diag {
        eprintln!("# start50: the client's minor page faults in the window {faults}");
        // For `perf record --clockid=CLOCK_MONOTONIC` and `perf report
        // --time`: the window's bounds on that clock.
        eprintln!("# start50: window {w0:.6},{:.6}", monotonic_s());
        let (n, us) = children_cpu_us();
        eprintln!(
            "# start50: the {n} children's CPU {:.2} ms",
            us as f64 / 1e3
        );
        // Per kind of thread: CPU time, and how many times its threads
        // were put on a CPU (each a wake-up or a preemption).
        let by: Vec<String> = threads_by_kind()
            .into_iter()
            .map(|(kind, (us, n, runs))| {
                let (was, ran) = before.get(&kind).map_or((0, 0), |b| (b.0, b.2));
                format!(
                    "{kind} x{n}: {:.2} ms, {} runs",
                    (us - was.min(us)) as f64 / 1e3,
                    runs - ran.min(runs)
                )
            })
            .collect();
        eprintln!(
            "# start50: the client's CPU in the window {:.2} ms ({})",
            cpu.as_secs_f64() * 1e3,
            by.join(", ")
        );
    }
    barrier.wait();
    let times: Vec<(Instant, Instant)> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    let first = times.iter().map(|t| t.0).min().expect("50 starts");
    let last = times.iter().map(|t| t.1).max().expect("50 starts");
    last - first
}

/// CPU time (µs) and number of this process's threads, by thread name
/// with its digits left out (`mcp-p7-io` counts as `mcp-p-io`), from
/// `/proc/self/task/*/schedstat`.
fn threads_by_kind() -> std::collections::BTreeMap<String, (u64, u32, u64)> {
    let mut by = std::collections::BTreeMap::<String, (u64, u32, u64)>::new();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let kind: String = comm
            .trim()
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect();
        let (ns, slices) = schedstat(&task.path());
        let e = by.entry(kind).or_default();
        e.0 += ns / 1000;
        e.1 += 1;
        e.2 += slices;
    }
    by
}

/// A task's CPU time so far (ns) and how many times it was put on a CPU,
/// from `<dir>/schedstat` (0 for what cannot be read).
fn schedstat(dir: &std::path::Path) -> (u64, u64) {
    let stat = std::fs::read_to_string(dir.join("schedstat")).unwrap_or_default();
    let mut fields = stat
        .split_whitespace()
        .map(|x| x.parse::<u64>().unwrap_or(0));
    let ns = fields.next().unwrap_or(0);
    let runs = fields.nth(1).unwrap_or(0);
    (ns, runs)
}

/// How many live children this process has and their CPU time so far
/// (µs, from `/proc/<pid>/schedstat`).
fn children_cpu_us() -> (usize, u64) {
    let me = std::process::id().to_string();
    let mut n = 0;
    let mut us = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let p = e.path();
        let Ok(stat) = std::fs::read_to_string(p.join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        if rest.split_whitespace().nth(1) != Some(me.as_str()) {
            continue;
        }
        let (ns, _) = schedstat(&p);
        n += 1;
        us += ns / 1000;
    }
    (n, us)
}

/// `CLOCK_MONOTONIC` in seconds (the clock `perf --clockid` can use).
fn monotonic_s() -> f64 {
    // SAFETY: an all-zero timespec is a valid value of that C struct.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime fills the struct we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// This process's resource usage so far (all its threads).
fn rusage() -> libc::rusage {
    // SAFETY: an all-zero rusage is a valid value of that C struct.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we pass.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    r
}

/// User + system CPU time of this process so far (all its threads).
fn process_cpu() -> Duration {
    let r = rusage();
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(r.ru_utime) + tv(r.ru_stime)
}

/// [`floor_start50`] (`plain`), [`floor_start50_owned`] (`owned`), the
/// floor with a thread per start (`thread`), with hand-offs (`handoff`) or
/// the era probe (`probe`), or
/// one of the variants of [`spawn_helper`]: `helper` or `helper-thread`.
fn floor_start50_variant(server: &str, variant: &str) -> Duration {
    let thread = match variant {
        "plain" => return floor_start50(server),
        "owned" => return floor_start50_owned(server),
        "handoff" => {
            // The floor with a thread per start that the starter hands a
            // value to and back, as skald-mcp's start does with its I/O
            // thread (the started child's pipes out, the connection in).
            return parallel_starts(server, |s, _| {
                let (mut p, parked) = spawn_helper::handed_thread(|| RawPipe::spawn(s));
                p.handshake();
                (p, parked)
            });
        }
        "probe" => {
            // The floor with a thread per start and the stdio era probe
            // (`server/discover`, answered by a legacy server with an
            // error) before `initialize`: the least a dual-era client with
            // an I/O thread per server does for a start.
            return parallel_starts(server, |s, _| {
                let mut p = RawPipe::spawn(s);
                let parked = spawn_helper::parked_thread();
                p.send(HANDSHAKE_PROBE.as_bytes());
                p.recv();
                p.handshake();
                (p, parked)
            });
        }
        "thread" | "helper-thread" => true,
        "helper" => false,
        other => {
            panic!("--start50-floor plain|thread|handoff|owned|probe|helper|helper-thread, not {other:?}")
        }
    };
    if variant.starts_with("helper") {
        let helper = Arc::new(spawn_helper::start(server, era_args()));
        parallel_starts(server, move |_, _| {
            let mut p = helper.spawn();
            let parked = thread.then(spawn_helper::parked_thread);
            p.handshake();
            (p, parked)
        })
    } else {
        parallel_starts(server, |s, _| {
            let mut p = RawPipe::spawn(s);
            let parked = spawn_helper::parked_thread();
            p.handshake();
            (p, parked)
        })
    }
}

/// The floor's work on a thread created per start by one caller, which
/// hands the started server back and stays parked (as an I/O thread that
/// did the handshake itself would): the window runs from the first
/// creation to the fiftieth hand-back.
fn floor_start50_owned(server: &str) -> Duration {
    let (tx, rx) = crossbeam_channel::unbounded();
    let t = Instant::now();
    let parked: Vec<spawn_helper::Parked> = (0..50)
        .map(|_| {
            let (tx, s) = (tx.clone(), server.to_owned());
            spawn_helper::parked_after(move || {
                let mut p = RawPipe::spawn(&s);
                p.handshake();
                let _ = tx.send(());
                p
            })
        })
        .collect();
    for _ in 0..50 {
        rx.recv().expect("a start");
    }
    let d = t.elapsed();
    // Each guard stops its thread (which drops its server) and joins it.
    drop(parked);
    d
}

fn floor_start50(server: &str) -> Duration {
    parallel_starts(server, |s, _| {
        let mut p = RawPipe::spawn(s);
        p.handshake();
        p
    })
}

/// SIGKILL of the server to EOF on its stdout.
fn floor_kill(server: &str) -> Duration {
    let mut p = RawPipe::spawn(server);
    p.handshake();
    p.send(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"delay_ms\":10000}}}\n");
    thread::sleep(Duration::from_millis(20));
    let t = Instant::now();
    unsafe { libc::kill(p.child.id() as i32, libc::SIGKILL) };
    assert!(!p.stdout.next().unwrap_or(false), "end of file");
    t.elapsed()
}

// ---- HTTP ----------------------------------------------------------------------

struct HttpEcho {
    child: Child,
    url: String,
    addr: String,
}

impl HttpEcho {
    fn start(server: &str) -> HttpEcho {
        HttpEcho::start_with(server, era_args())
    }

    fn start_with(server: &str, extra: &[&str]) -> HttpEcho {
        let mut child = Command::new(server)
            .args(["--http", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the HTTP echo server");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let url = first
            .trim()
            .strip_prefix("listening ")
            .expect("listening line")
            .to_owned();
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        HttpEcho { child, url, addr }
    }
}

impl Drop for HttpEcho {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request on a kept-alive socket, read to the end of its body; with
/// `spin` the socket is non-blocking and the answer is busy-polled.
fn http_post(s: &mut BufReader<TcpStream>, addr: &str, session: &str, body: &str, spin: bool) {
    let headers = if modern() {
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
            .to_owned()
    } else {
        format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n")
    };
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.get_mut().write_all(req.as_bytes()).unwrap();
    let mut len = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        spin_on(spin, || s.read_line(&mut line));
        if !line.ends_with('\n') {
            continue;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l
            .to_ascii_lowercase()
            .strip_prefix("content-length:")
            .map(|v| v.trim().to_owned())
        {
            len = v.parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    let mut got = 0;
    while got < len {
        got += spin_on(spin, || s.read(&mut body[got..]));
    }
}

/// Runs `read` until it does not answer `WouldBlock` (yielding between
/// tries); a blocking socket answers at the first.
fn spin_on(spin: bool, mut read: impl FnMut() -> std::io::Result<usize>) -> usize {
    loop {
        match read() {
            Ok(n) => return n,
            Err(e) if spin && e.kind() == std::io::ErrorKind::WouldBlock => thread::yield_now(),
            Err(e) => panic!("reading the HTTP echo server: {e}"),
        }
    }
}

/// A kept-alive socket to the HTTP echo server, the session initialized
/// (legacy era) or nothing to initialize (modern).
fn http_socket(addr: &str, spin: bool) -> BufReader<TcpStream> {
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_nodelay(true).unwrap();
    let mut s = BufReader::new(tcp);
    if !modern() {
        http_post(
            &mut s,
            addr,
            "none",
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}"#,
            false,
        );
    }
    s.get_ref().set_nonblocking(spin).unwrap();
    s
}

/// Runs `f` as in the modern era (`true`) or the legacy one, then puts
/// the run's era back (the `era` scenario measures both in one run).
fn in_era<T>(modern: bool, f: impl FnOnce() -> T) -> T {
    let was = MODERN.swap(modern, Ordering::Relaxed);
    let out = f();
    MODERN.store(was, Ordering::Relaxed);
    out
}

/// The body of one 128 B echo call in this run's era.
fn http_call_body(id: u64) -> String {
    let mut p = String::from_utf8(call_line(id, 128, modern())).unwrap();
    p.pop(); // the newline of the stdio framing
    p
}

fn floor_http(addr: &str, n: usize, spin: bool) -> Vec<Duration> {
    let mut s = http_socket(addr, spin);
    let body = http_call_body(1);
    timed(n, || http_post(&mut s, addr, "echo-1", &body, spin))
}

/// HTTP calls per second with `k` in flight: `k` threads, each with a
/// kept-alive socket of its own (HTTP/1.1 has one request in flight per
/// connection), calling one request at a time.
fn floor_http_tput(addr: &str, k: usize, window: Duration) -> f64 {
    let body = http_call_body(1);
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(k + 1));
    let hs: Vec<_> = (0..k)
        .map(|_| {
            let (stop, count, b) = (Arc::clone(&stop), Arc::clone(&count), Arc::clone(&barrier));
            let (addr, body) = (addr.to_owned(), body.clone());
            thread::spawn(move || {
                let mut s = http_socket(&addr, false);
                b.wait();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    http_post(&mut s, &addr, "echo-1", &body, false);
                    n += 1;
                }
                count.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    thread::sleep(window);
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    count.load(Ordering::Relaxed) as f64 / t.elapsed().as_secs_f64()
}

/// [`floor_http`] through a bare `ureq::Agent` on the caller's thread (no
/// MCP client around it): what the HTTP library alone costs per request.
fn floor_http_ureq(url: &str, n: usize) -> Vec<Duration> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let post = |body: &str| {
        let r = agent
            .post(url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("Mcp-Session-Id", "echo-1")
            .header("MCP-Protocol-Version", "2025-11-25")
            .send(body)
            .unwrap();
        std::hint::black_box(r.into_body().read_to_vec().unwrap());
    };
    post(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}"#,
    );
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"size":128}}}"#;
    timed(n, || post(body))
}

// ---- skald-mcp -------------------------------------------------------------------

fn cfg(server: &str, name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, server, era_args().iter().copied())
}

fn connect(server: &str, name: &str) -> McpServer {
    let mut opts = era_options();
    // For experiments: the caller's read window (its spin: `era_options`).
    if let Ok(us) = std::env::var("BENCH_READ_WINDOW_US") {
        opts.caller_read_window = Duration::from_micros(us.parse().expect("microseconds"));
    }
    if let Ok(n) = std::env::var("BENCH_WRITE_QUEUE") {
        opts.write_queue_capacity = n.parse().expect("a capacity");
    }
    if let Ok(us) = std::env::var("BENCH_IO_SPIN_US") {
        opts.io_spin = Duration::from_micros(us.parse().expect("microseconds"));
    }
    // The era a stored server's row hands back to the manager: no
    // `server/discover` probe before `initialize`.
    if std::env::var("BENCH_ERA_HINT").as_deref() == Ok("legacy") {
        opts.era_hint = Some(skald_mcp::Era::Legacy);
    }
    let s = McpServer::connect(&cfg(server, name), opts).expect("connect");
    s.list_tools().expect("tools/list");
    s
}

fn call(s: &impl McpServerClient, size: usize) {
    let r = s.call_tool("echo", json!({ "size": size })).expect("call");
    debug_assert_eq!(r.to_text().len(), size);
}

fn ours_seq(server: &str, size: usize, n: usize) -> Vec<Duration> {
    let s = connect(server, "seq");
    assert_eq!(
        s.call_tool("echo", json!({ "size": size }))
            .unwrap()
            .to_text()
            .len(),
        size
    );
    timed(n, || call(&s, size))
}

fn ours_tput(server: &str, k: usize, window: Duration) -> f64 {
    let s = Arc::new(connect(server, "tput"));
    calls_per_second(vec![s; k], window)
}

/// Calls per second with `k` threads, each calling a server of its own one
/// call at a time (many lightly used connections, as a manager has).
fn ours_fanout(server: &str, k: usize, window: Duration) -> f64 {
    let servers = (0..k)
        .map(|i| Arc::new(connect(server, &format!("f{i}"))))
        .collect();
    calls_per_second(servers, window)
}

/// 128 B calls per second over `window`, one thread per entry of
/// `targets` calling that server one call at a time.
fn calls_per_second<S: McpServerClient + 'static>(targets: Vec<Arc<S>>, window: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(targets.len() + 1));
    let hs: Vec<_> = targets
        .into_iter()
        .map(|s| {
            let (stop, count, b) = (Arc::clone(&stop), Arc::clone(&count), Arc::clone(&barrier));
            thread::spawn(move || {
                b.wait();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    call(&*s, 128);
                    n += 1;
                }
                count.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    thread::sleep(window);
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    count.load(Ordering::Relaxed) as f64 / t.elapsed().as_secs_f64()
}

fn ours_start50(server: &str) -> Duration {
    parallel_starts(server, |s, i| connect(s, &format!("p{i}")))
}

/// Runs in a fresh process: 100 connected servers, one call each.
fn child_rss100(server: &str) {
    // One server first, closed at once: it starts the one-off thread that
    // grows the file table (`skald-mcp-fds`), which is not a per-server
    // thread and is not counted while it runs.
    drop(connect(server, "warm"));
    let threads_before = proc_status("Threads:") - fd_threads();
    let servers: Vec<McpServer> = (0..100)
        .map(|i| connect(server, &format!("s{i}")))
        .collect();
    for s in &servers {
        call(s, 128);
    }
    let hwm = proc_status("VmHWM:");
    let threads = proc_status("Threads:");
    let per_server = threads - fd_threads();
    println!(
        "rss100 {} {} {}",
        hwm as f64 / 1024.0,
        threads,
        (per_server - threads_before) as f64 / 100.0
    );
    drop(servers);
}

fn ours_kill(server: &str) -> Duration {
    let s = Arc::new(connect(server, "kill"));
    let pid = s.pid();
    let s2 = Arc::clone(&s);
    let h = thread::spawn(move || {
        let r = s2.call_tool("echo", json!({"delay_ms": 10_000}));
        let at = Instant::now();
        assert!(r.is_err(), "the call must fail");
        at
    });
    thread::sleep(Duration::from_millis(20));
    let t = Instant::now();
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let at = h.join().unwrap();
    at.duration_since(t)
}

/// Sequential 128 B calls over stdio in `era`, against a dual-era server.
fn era_stdio(server: &str, era: skald_mcp::EraPreference, n: usize) -> Vec<Duration> {
    let cfg = McpServerConfig::stdio("era", server, ["--dual-era"]);
    let s = McpServer::connect(&cfg, ClientOptions::default().era(era)).expect("connect");
    s.list_tools().expect("tools/list");
    let v = timed(n, || call(&s, 128));
    let _ = s.close();
    v
}

/// Sequential 128 B calls over HTTP in `era`.
fn era_http(url: &str, era: skald_mcp::EraPreference, n: usize) -> Vec<Duration> {
    let s = McpHttpServer::connect(
        &McpServerConfig::http("era-http", url),
        ClientOptions::default().era(era),
    )
    .expect("connect over HTTP");
    s.list_tools().unwrap();
    let v = timed(n, || call(&s, 128));
    let _ = s.close();
    v
}

fn http_client(url: &str) -> McpHttpServer {
    let s = McpHttpServer::connect(&McpServerConfig::http("http", url), era_options())
        .expect("connect over HTTP");
    s.list_tools().unwrap();
    s
}

fn ours_http(url: &str, n: usize) -> Vec<Duration> {
    let s = http_client(url);
    let cpu0 = thread_cpu();
    let v = timed(n, || call(&s, 128));
    if std::env::var_os("BENCH_CPU").is_some() {
        // `timed` makes n + n / 10 + 5 calls.
        let calls = (n + n / 10 + 5) as f64;
        let per = (thread_cpu() - cpu0).as_secs_f64() * 1e6 / calls;
        println!("@{} http_thread_cpu_us {per:.3}", who("ours"));
    }
    let _ = s.close();
    v
}

/// HTTP calls per second with `k` caller threads on one connection.
fn ours_http_tput(url: &str, k: usize, window: Duration) -> f64 {
    let s = Arc::new(http_client(url));
    let r = calls_per_second(vec![Arc::clone(&s); k], window);
    let _ = s.close();
    r
}

/// `tools/list` of 10 000 tools (the echo server's `--tools`): p50 of 5
/// after one, in ms.
fn ours_list10k(server: &str) -> f64 {
    let mut args: Vec<&str> = era_args().to_vec();
    args.extend(["--tools", "10000"]);
    let s = McpServer::connect(&McpServerConfig::stdio("l10k", server, args), era_options())
        .expect("connect");
    assert_eq!(s.list_tools().unwrap().len(), 10_000);
    let v: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(s.list_tools_shared().unwrap());
            t.elapsed()
        })
        .collect();
    median(v) / 1e3
}

/// The raw floor of [`ours_list10k`]: the request written, the reply's
/// line read (no parsing).
fn floor_list10k(server: &str) -> f64 {
    let mut args: Vec<&str> = era_args().to_vec();
    args.extend(["--tools", "10000"]);
    let mut p = RawPipe::spawn_with(server, &args);
    p.handshake();
    let v: Vec<Duration> = (0..6)
        .map(|_| {
            let t = Instant::now();
            p.send(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\"}\n");
            p.recv();
            t.elapsed()
        })
        .skip(1)
        .collect();
    median(v) / 1e3
}

/// Runs in a fresh process: one connection, one `tools/list` of 10 000.
fn child_list10k(server: &str) {
    let mut args: Vec<&str> = era_args().to_vec();
    args.extend(["--tools", "10000"]);
    let s = McpServer::connect(&McpServerConfig::stdio("l10k", server, args), era_options())
        .expect("connect");
    let tools = s.list_tools_shared().unwrap();
    assert_eq!(tools.len(), 10_000);
    println!("list10k {}", proc_status("VmHWM:") as f64 / 1024.0);
}

/// The CPU time the calling thread has used.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    pct(&v, 50)
}

fn main() {
    let args = parse_args();
    let server = args.server.clone();
    if args.only.as_deref() == Some(&["child-rss100".to_string()][..]) {
        child_rss100(&server);
        return;
    }
    if args.only.as_deref() == Some(&["child-list10k".to_string()][..]) {
        child_list10k(&server);
        return;
    }
    assert!(
        std::path::Path::new(&server).exists(),
        "no echo server at {server}: build benches/echo-server first"
    );
    if let Some(variant) = &args.start50_floor {
        let d = floor_start50_variant(&server, variant);
        println!("@floor_{variant} start50_ms {:.3}", d.as_secs_f64() * 1e3);
        return;
    }
    let mut t = Table::default();

    if args.wants("cold") {
        let n = if args.quick { 10 } else { 30 };
        // Interleaved, so that both see the same machine load.
        let (mut floor, mut ours) = (Vec::new(), Vec::new());
        // `BENCH_CPU=1`: the client's own CPU per start (all its threads),
        // which the 50-way scenario's noise hides.
        let (mut floor_cpu, mut ours_cpu) = (Duration::ZERO, Duration::ZERO);
        for i in 0..n {
            let c0 = process_cpu();
            if !args.no_floor {
                floor.push(floor_cold(&server));
            }
            let c1 = process_cpu();
            let t = Instant::now();
            let s = connect(&server, &format!("cold{i}"));
            ours.push(t.elapsed());
            ours_cpu += process_cpu() - c1;
            floor_cpu += c1 - c0;
            drop(s);
        }
        if std::env::var_os("BENCH_CPU").is_some() {
            eprintln!(
                "# cold: the client's CPU per start {:.1} µs (floor {:.1} µs)",
                ours_cpu.as_secs_f64() * 1e6 / n as f64,
                floor_cpu.as_secs_f64() * 1e6 / n as f64
            );
        }
        t.add(
            "cold_ms",
            "cold start: spawn→initialize→tools/list (p50)",
            median(ours) / 1e3,
            (!floor.is_empty()).then(|| median(floor) / 1e3),
            "ms",
            true,
        );
    }

    if args.wants("seq") {
        for (size, tag) in SIZES {
            if args
                .sizes
                .as_ref()
                .is_some_and(|s| !s.iter().any(|t| t == tag))
            {
                continue;
            }
            let n = args.iters(size);
            if args.floor_variants {
                // What the floor costs with a timed wait, and with a reader
                // thread handing each reply over (not clients: the physics).
                let (pp50, pp99) = micros(floor_seq_poll(&server, size, n));
                let (tp50, tp99) = micros(floor_seq_thread(&server, size, n));
                let (jp50, jp99) = micros(floor_seq_json(&server, size, n));
                println!("@floor_json seq_{tag}_p50_us {jp50:.3}");
                println!("@floor_json seq_{tag}_p99_us {jp99:.3}");
                println!("@floor_poll seq_{tag}_p50_us {pp50:.3}");
                println!("@floor_poll seq_{tag}_p99_us {pp99:.3}");
                println!("@floor_thread seq_{tag}_p50_us {tp50:.3}");
                println!("@floor_thread seq_{tag}_p99_us {tp99:.3}");
            }
            // The floor is the faster of a blocking and a busy-polling
            // reader: a client that spins beats a floor that sleeps.
            let floor = (!args.no_floor).then(|| {
                let (bp50, bp99) = micros(floor_seq(&server, size, n));
                let (sp50, sp99) = micros(floor_seq_busy(&server, size, n));
                println!("@{} seq_{tag}_p50_us {bp50:.3}", who("floor_block"));
                println!("@{} seq_{tag}_p99_us {bp99:.3}", who("floor_block"));
                println!("@{} seq_{tag}_p50_us {sp50:.3}", who("floor_spin"));
                println!("@{} seq_{tag}_p99_us {sp99:.3}", who("floor_spin"));
                (bp50.min(sp50), bp99.min(sp99))
            });
            let (p50, p99) = micros(ours_seq(&server, size, n));
            t.add(
                &format!("seq_{tag}_p50_us"),
                &format!("sequential tools/call {tag} B, p50"),
                p50,
                floor.map(|f| f.0),
                "µs",
                true,
            );
            t.add(
                &format!("seq_{tag}_p99_us"),
                &format!("sequential tools/call {tag} B, p99"),
                p99,
                floor.map(|f| f.1),
                "µs",
                true,
            );
        }
    }

    if args.wants("tput") {
        let ks = args.in_flight.clone().unwrap_or(IN_FLIGHT.to_vec());
        for k in ks {
            let f = (!args.no_floor).then(|| {
                let block = floor_tput(&server, k, args.tput_window(), false);
                let spin = floor_tput(&server, k, args.tput_window(), true);
                println!("@{} tput_{k} {block:.3}", who("floor_block"));
                println!("@{} tput_{k} {spin:.3}", who("floor_spin"));
                block.max(spin)
            });
            let o = ours_tput(&server, k, args.tput_window());
            t.add(
                &format!("tput_{k}"),
                &format!("throughput, {k} in flight (128 B)"),
                o,
                f,
                "calls/s",
                false,
            );
        }
    }

    if args.wants("fanout") {
        for k in [8, 32] {
            let o = ours_fanout(&server, k, args.tput_window());
            t.add(
                &format!("fanout_{k}"),
                &format!("{k} servers, one caller each (128 B)"),
                o,
                None,
                "calls/s",
                false,
            );
        }
    }

    if args.wants("start50") {
        let f = (!args.no_floor).then(|| floor_start50(&server));
        let o = ours_start50(&server);
        t.add(
            "start50_ms",
            "50 servers started in parallel (to tools/list)",
            o.as_secs_f64() * 1e3,
            f.map(|f| f.as_secs_f64() * 1e3),
            "ms",
            true,
        );
    }

    if args.wants("rss100") {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe);
        child.args(["--server", &server, "--child-rss100"]);
        if modern() {
            child.args(["--era", "modern"]);
        }
        let out = child.output().expect("run the rss100 child");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("rss100 "))
            .expect("rss100 output");
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        t.add(
            "rss100_mib",
            "100 connected servers: client peak RSS",
            v[0],
            None,
            "MiB",
            true,
        );
        t.add(
            "threads100",
            "100 connected servers: client threads",
            v[1],
            None,
            "threads",
            true,
        );
        t.add(
            "threads_per_server",
            "  threads per server",
            v[2],
            None,
            "threads",
            true,
        );
    }

    if args.wants("kill") {
        let n = if args.quick { 5 } else { 20 };
        let f: Vec<_> = if args.no_floor {
            Vec::new()
        } else {
            (0..n).map(|_| floor_kill(&server)).collect()
        };
        let o: Vec<_> = (0..n).map(|_| ours_kill(&server)).collect();
        let o50 = median(o.clone());
        let f50 = (!f.is_empty()).then(|| median(f.clone()));
        let omax = o.iter().max().unwrap().as_secs_f64() * 1e3;
        let fmax = f.iter().max().map(|m| m.as_secs_f64() * 1e3);
        t.add(
            "kill_ms",
            "SIGKILL of the server → caller's error (p50)",
            o50 / 1e3,
            f50.map(|f| f / 1e3),
            "ms",
            true,
        );
        t.add(
            "kill_max_ms",
            "SIGKILL of the server → caller's error (max)",
            omax,
            fmax,
            "ms",
            true,
        );
    }

    if args.wants("http") {
        let n = if args.quick { 500 } else { 3000 };
        let echo = HttpEcho::start(&server);
        let floor = (!args.no_floor).then(|| {
            let (bp50, bp99) = micros(floor_http(&echo.addr, n, false));
            let (sp50, sp99) = micros(floor_http(&echo.addr, n, true));
            println!("@{} http_p50_us {bp50:.3}", who("floor_block"));
            println!("@{} http_p50_us {sp50:.3}", who("floor_spin"));
            (bp50.min(sp50), bp99.min(sp99))
        });
        if args.floor_variants {
            let (up50, up99) = micros(floor_http_ureq(&echo.url, n));
            println!("@{} http_p50_us {up50:.3}", who("floor_ureq"));
            println!("@{} http_p99_us {up99:.3}", who("floor_ureq"));
        }
        let (p50, p99) = micros(ours_http(&echo.url, n));
        t.add(
            "http_p50_us",
            "HTTP tools/call 128 B, p50",
            p50,
            floor.map(|f| f.0),
            "µs",
            true,
        );
        t.add(
            "http_p99_us",
            "HTTP tools/call 128 B, p99",
            p99,
            floor.map(|f| f.1),
            "µs",
            true,
        );
    }

    if args.wants("http_tput") {
        let echo = HttpEcho::start(&server);
        let ks = args.in_flight.clone().unwrap_or(IN_FLIGHT.to_vec());
        for k in ks {
            let f = (!args.no_floor).then(|| floor_http_tput(&echo.addr, k, args.tput_window()));
            let o = ours_http_tput(&echo.url, k, args.tput_window());
            t.add(
                &format!("http_tput_{k}"),
                &format!("HTTP throughput, {k} in flight (128 B)"),
                o,
                f,
                "calls/s",
                false,
            );
        }
    }

    if args.wants("list10k") {
        let o = ours_list10k(&server);
        let f = (!args.no_floor).then(|| floor_list10k(&server));
        t.add(
            "list10k_ms",
            "tools/list of 10 000 tools (p50)",
            o,
            f,
            "ms",
            true,
        );
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe);
        child.args(["--server", &server, "--child-list10k"]);
        if modern() {
            child.args(["--era", "modern"]);
        }
        let out = child.output().expect("run the list10k child");
        let text = String::from_utf8_lossy(&out.stdout);
        let rss: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("list10k "))
            .expect("list10k output")
            .trim()
            .parse()
            .unwrap();
        t.add(
            "list10k_rss_mib",
            "tools/list of 10 000 tools: client peak RSS",
            rss,
            None,
            "MiB",
            true,
        );
    }

    if args
        .only
        .as_ref()
        .is_some_and(|o| o.iter().any(|k| k == "era"))
    {
        use skald_mcp::EraPreference::{Legacy, Modern};
        // Many short rounds, interleaved: which core the server lands on
        // (and so whether a reply is seen while spinning) changes from one
        // connection to the next on a small machine, and must hit every
        // configuration alike.
        let rounds = if args.quick { 6 } else { 24 };
        let n = 2000;
        let echo = HttpEcho::start_with(&server, &["--dual-era"]);
        let (mut sl, mut sm, mut hl, mut hm) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut fl, mut fm, mut hfl, mut hfm) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            // The eras in both orders, every other round: the second
            // starts while the first's server is still being torn down (its
            // process exits, its memory is freed), which must not fall on
            // one era only.
            let order = if round % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for modern in order {
                let era = if modern { Modern } else { Legacy };
                let (f, s) = if modern {
                    (&mut fm, &mut sm)
                } else {
                    (&mut fl, &mut sl)
                };
                f.extend(floor_seq_spin(&server, 128, n, modern));
                s.extend(era_stdio(&server, era, n));
            }
            // The HTTP floor spins as the client's lone caller does, with
            // each era's body and headers.
            for modern in order {
                let era = if modern { Modern } else { Legacy };
                let (f, s) = if modern {
                    (&mut hfm, &mut hm)
                } else {
                    (&mut hfl, &mut hl)
                };
                f.extend(in_era(modern, || floor_http(&echo.addr, n / 4, true)));
                s.extend(era_http(&echo.url, era, n / 4));
            }
        }
        let (sl, sm, hl, hm) = (median(sl), median(sm), median(hl), median(hm));
        let (fl, fm, hfl, hfm) = (median(fl), median(fm), median(hfl), median(hfm));
        t.add(
            "era_stdio_legacy_p50_us",
            "stdio tools/call 128 B, legacy, p50",
            sl,
            Some(fl),
            "µs",
            true,
        );
        t.add(
            "era_stdio_modern_p50_us",
            "stdio tools/call 128 B, modern, p50",
            sm,
            Some(fm),
            "µs",
            true,
        );
        t.add(
            "era_http_legacy_p50_us",
            "HTTP tools/call 128 B, legacy, p50",
            hl,
            Some(hfl),
            "µs",
            true,
        );
        t.add(
            "era_http_modern_p50_us",
            "HTTP tools/call 128 B, modern, p50",
            hm,
            Some(hfm),
            "µs",
            true,
        );
        println!(
            "modern ÷ legacy: stdio {:.3}, HTTP {:.3}; raw floor modern ÷ legacy: stdio {:.3}, \
             HTTP {:.3}; the client's own cost above the floor, modern − legacy: stdio {:.2} µs, \
             HTTP {:.2} µs",
            sm / sl,
            hm / hl,
            fm / fl,
            hfm / hfl,
            (sm - fm) - (sl - fl),
            (hm - hfm) - (hl - hfl)
        );
    }

    t.print();
}
