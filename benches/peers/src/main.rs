//! The same scenarios as skald-mcp's `examples/bench_client.rs`, driven by
//! rmcp (the official Rust SDK, tokio), in two flavours:
//!
//! * `native`  — everything runs as tokio tasks on a multi-thread runtime
//!   (the default worker count: one per core);
//! * `blockon` — the way a synchronous program would use it: plain OS
//!   threads calling `Runtime::block_on` on a shared multi-thread runtime
//!   for each operation.
//!
//! ```text
//! rmcp-bench --server PATH [--mode native|blockon] [--quick] [--only cold,seq,...]
//!            [--era legacy|modern]
//! ```
//!
//! Prints `@rmcp <key> <value>` (native) or `@rmcp-blockon <key> <value>`
//! lines, the keys being those of bench_client.
//!
//! Scenarios: cold, seq, tput, start50, rss100, kill, http, http_tput
//! (Streamable HTTP, 1/8/64 calls in flight on one client), list10k
//! (`tools/list` of 10 000 tools over stdio, and the peak RSS of a fresh
//! process that lists them once).
//!
//! `--era modern`: rmcp's 2026-07-28 lifecycle (`server/discover`, no
//! `initialize`, per-request `_meta`) against `echo-server --dual-era`, in
//! every scenario, printed as `@rmcp-modern` / `@rmcp-blockon-modern`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{json, Map, Value};
use tokio::runtime::Runtime;

type Client = RunningService<RoleClient, ClientConfig>;

/// The client's handler: rmcp's default one, except that `initialize` asks
/// for 2025-11-25, the newest version with a handshake. rmcp's default asks
/// for its `LATEST` (2026-07-28); the echo server echoes the version it is
/// asked for, and rmcp, seeing a version without handshake answered, then
/// puts the 2026-07-28 `_meta` on every request: neither era, and not what
/// it does against a real 2025-11-25 server (which answers 2025-11-25).
/// `server/discover` (`--era modern`) takes its version from the lifecycle.
fn handler() -> ClientConfig {
    ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// Set once from `--era modern`, before anything connects: every
/// connection then runs in the 2026-07-28 era against `--dual-era`.
static MODERN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn modern() -> bool {
    MODERN.load(std::sync::atomic::Ordering::Relaxed)
}

/// The echo server's arguments for this run's era, then `extra`.
fn era_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = if modern() { vec!["--dual-era"] } else { vec![] };
    v.extend_from_slice(extra);
    v
}

const SIZES: [(usize, &str); 3] = [(128, "128"), (64 * 1024, "64k"), (1024 * 1024, "1m")];
const IN_FLIGHT: [usize; 3] = [1, 8, 64];

#[derive(Clone)]
struct Args {
    server: String,
    native: bool,
    quick: bool,
    only: Option<Vec<String>>,
    child_rss100: bool,
    child_list10k: bool,
    /// The 2026-07-28 era (`--era modern`) against `--dual-era`.
    modern: bool,
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
        Duration::from_millis(if self.quick { 400 } else { 1500 })
    }
    fn tag(&self) -> &'static str {
        match (self.native, self.modern) {
            (true, false) => "rmcp",
            (false, false) => "rmcp-blockon",
            (true, true) => "rmcp-modern",
            (false, true) => "rmcp-blockon-modern",
        }
    }
}

fn parse_args() -> Args {
    let mut a = Args {
        server: String::new(),
        native: true,
        quick: false,
        only: None,
        child_rss100: false,
        child_list10k: false,
        modern: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--server" => a.server = it.next().expect("--server PATH"),
            "--mode" => {
                a.native = match it.next().as_deref() {
                    Some("native") => true,
                    Some("blockon") => false,
                    other => panic!("--mode native|blockon, not {other:?}"),
                }
            }
            "--quick" => a.quick = true,
            "--only" => a.only = Some(it.next().unwrap().split(',').map(str::to_owned).collect()),
            "--child-rss100" => a.child_rss100 = true,
            "--child-list10k" => a.child_list10k = true,
            "--era" => {
                a.modern = match it.next().as_deref() {
                    Some("legacy") => false,
                    Some("modern") => true,
                    other => panic!("--era legacy|modern, not {other:?}"),
                }
            }
            other => panic!("unknown argument {other:?}"),
        }
    }
    MODERN.store(a.modern, std::sync::atomic::Ordering::Relaxed);
    assert!(!a.server.is_empty(), "--server PATH");
    a
}

fn pct(sorted: &[Duration], p: usize) -> f64 {
    let i = (sorted.len() * p / 100).min(sorted.len() - 1);
    sorted[i].as_secs_f64() * 1e6
}

fn micros(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    (pct(&v, 50), pct(&v, 99))
}

fn median_ms(v: Vec<Duration>) -> f64 {
    micros(v).0 / 1e3
}

fn proc_status(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn args_obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

/// Legacy: `initialize`; modern: `server/discover` at 2026-07-28 only (no
/// fallback: a server that does not speak it is an error).
fn lifecycle(modern: bool) -> ClientLifecycleMode {
    if modern {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        }
    } else {
        ClientLifecycleMode::Initialize
    }
}

/// Fails unless the connection runs in the era asked for.
fn check_era(c: &Client, modern: bool) {
    let v = c
        .peer()
        .peer_info()
        .expect("peer info")
        .protocol_version
        .clone();
    assert_eq!(
        v == ProtocolVersion::V_2026_07_28,
        modern,
        "negotiated protocol version {v:?}"
    );
}

async fn spawn(server: &str) -> (Client, u32) {
    spawn_with(server, &[]).await
}

/// Starts `server` with this run's era arguments and `extra`, in this
/// run's era.
async fn spawn_with(server: &str, extra: &[&str]) -> (Client, u32) {
    let modern = modern();
    let mut cmd = tokio::process::Command::new(server);
    cmd.args(era_args(extra));
    let t = TokioChildProcess::new(cmd).expect("spawn");
    let pid = t.id().expect("pid");
    let c = handler()
        .serve_with_lifecycle(t, lifecycle(modern))
        .await
        .expect("initialize");
    check_era(&c, modern);
    (c, pid)
}

async fn connect(server: &str) -> Client {
    let (c, _) = spawn(server).await;
    c.list_tools(Default::default()).await.expect("tools/list");
    c
}

async fn connect_http(url: String) -> Client {
    let modern = modern();
    let c: Client = handler()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(url),
            lifecycle(modern),
        )
        .await
        .expect("HTTP initialize");
    check_era(&c, modern);
    c.list_tools(Default::default()).await.expect("tools/list");
    c
}

/// Starts `echo-server --http 127.0.0.1:0 [extra]`; returns it and its URL.
fn start_http_server(server: &str, extra: &[&str]) -> (std::process::Child, String) {
    let mut child = std::process::Command::new(server)
        .args(["--http", "127.0.0.1:0"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("HTTP echo server");
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let url = first.trim().strip_prefix("listening ").unwrap().to_owned();
    (child, url)
}

async fn call(
    c: &rmcp::Peer<RoleClient>,
    args: Value,
) -> Result<rmcp::model::CallToolResult, rmcp::ServiceError> {
    c.call_tool(CallToolRequestParams::new("echo").with_arguments(args_obj(args)))
        .await
}

async fn call_size(c: &rmcp::Peer<RoleClient>, size: usize) {
    call(c, json!({ "size": size })).await.expect("call");
}

/// One `tools/list` of the 10 000-tool server, timed.
async fn timed_list(p: &rmcp::Peer<RoleClient>) -> Duration {
    let t = Instant::now();
    let r = p.list_tools(Default::default()).await.expect("tools/list");
    let d = t.elapsed();
    assert_eq!(r.tools.len(), 10_000);
    d
}

fn report(tag: &str, key: &str, v: f64) {
    println!("@{tag} {key} {v:.3}");
}

struct Bench {
    a: Args,
    rt: Arc<Runtime>,
}

impl Bench {
    /// Runs `f` as a task on the runtime (native) — the caller only waits.
    fn task<F, T>(&self, f: F) -> T
    where
        F: std::future::Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.rt.block_on(self.rt.spawn(f)).expect("task")
    }

    fn cold(&self) -> f64 {
        let n = if self.a.quick { 10 } else { 30 };
        let server = self.a.server.clone();
        let v: Vec<Duration> = if self.a.native {
            self.task(async move {
                let mut v = Vec::new();
                for _ in 0..n {
                    let t = Instant::now();
                    let c = connect(&server).await;
                    v.push(t.elapsed());
                    let _ = c.cancel().await;
                }
                v
            })
        } else {
            (0..n)
                .map(|_| {
                    let t = Instant::now();
                    let c = self.rt.block_on(connect(&server));
                    let d = t.elapsed();
                    let _ = self.rt.block_on(c.cancel());
                    d
                })
                .collect()
        };
        median_ms(v)
    }

    fn seq(&self, size: usize, n: usize) -> Vec<Duration> {
        let server = self.a.server.clone();
        if self.a.native {
            self.task(async move {
                let c = connect(&server).await;
                let r = call(c.peer(), json!({ "size": size })).await.unwrap();
                let text = serde_json::to_value(&r).unwrap()["content"][0]["text"]
                    .as_str()
                    .map(str::len);
                assert_eq!(text, Some(size));
                for _ in 0..n / 10 + 5 {
                    call_size(c.peer(), size).await;
                }
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    let t = Instant::now();
                    call_size(c.peer(), size).await;
                    v.push(t.elapsed());
                }
                let _ = c.cancel().await;
                v
            })
        } else {
            let c = self.rt.block_on(connect(&server));
            for _ in 0..n / 10 + 5 {
                self.rt.block_on(call_size(c.peer(), size));
            }
            let v = (0..n)
                .map(|_| {
                    let t = Instant::now();
                    self.rt.block_on(call_size(c.peer(), size));
                    t.elapsed()
                })
                .collect();
            let _ = self.rt.block_on(c.cancel());
            v
        }
    }

    fn tput(&self, k: usize) -> f64 {
        let server = self.a.server.clone();
        let c = self.rt.block_on(connect(&server));
        let rate = self.window(&c, k);
        let _ = self.rt.block_on(c.cancel());
        rate
    }

    /// Streamable HTTP throughput: `k` in flight on one client, as `tput`.
    fn http_tput(&self, url: &str, k: usize) -> f64 {
        let c = self.rt.block_on(connect_http(url.to_owned()));
        let rate = self.window(&c, k);
        let _ = self.rt.block_on(c.cancel());
        rate
    }

    /// Calls/s of 128 B calls with `k` in flight on `c` over the window
    /// (native: `k` tasks; block_on: `k` threads).
    fn window(&self, c: &Client, k: usize) -> f64 {
        let window = self.a.tput_window();
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let start;
        if self.a.native {
            let barrier = Arc::new(tokio::sync::Barrier::new(k + 1));
            let hs: Vec<_> = (0..k)
                .map(|_| {
                    let (p, stop, count, b) = (
                        c.peer().clone(),
                        Arc::clone(&stop),
                        Arc::clone(&count),
                        Arc::clone(&barrier),
                    );
                    self.rt.spawn(async move {
                        b.wait().await;
                        let mut n = 0;
                        while !stop.load(Ordering::Relaxed) {
                            call_size(&p, 128).await;
                            n += 1;
                        }
                        count.fetch_add(n, Ordering::Relaxed);
                    })
                })
                .collect();
            self.rt.block_on(barrier.wait());
            start = Instant::now();
            std::thread::sleep(window);
            stop.store(true, Ordering::Relaxed);
            for h in hs {
                self.rt.block_on(h).unwrap();
            }
        } else {
            let barrier = Arc::new(Barrier::new(k + 1));
            let hs: Vec<_> = (0..k)
                .map(|_| {
                    let (p, stop, count, b, rt) = (
                        c.peer().clone(),
                        Arc::clone(&stop),
                        Arc::clone(&count),
                        Arc::clone(&barrier),
                        Arc::clone(&self.rt),
                    );
                    std::thread::spawn(move || {
                        b.wait();
                        let mut n = 0;
                        while !stop.load(Ordering::Relaxed) {
                            rt.block_on(call_size(&p, 128));
                            n += 1;
                        }
                        count.fetch_add(n, Ordering::Relaxed);
                    })
                })
                .collect();
            barrier.wait();
            start = Instant::now();
            std::thread::sleep(window);
            stop.store(true, Ordering::Relaxed);
            for h in hs {
                h.join().unwrap();
            }
        }
        count.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
    }

    fn start50(&self) -> f64 {
        let server = self.a.server.clone();
        let d = if self.a.native {
            self.task(async move {
                let cpu0 = process_cpu();
                let t = Instant::now();
                let mut set = tokio::task::JoinSet::new();
                for _ in 0..50 {
                    let s = server.clone();
                    set.spawn(async move { connect(&s).await });
                }
                let clients = set.join_all().await;
                let d = t.elapsed();
                if std::env::var_os("BENCH_CPU").is_some() {
                    eprintln!(
                        "# start50: the client's CPU in the window {:.2} ms",
                        (process_cpu() - cpu0).as_secs_f64() * 1e3
                    );
                }
                for c in clients {
                    let _ = c.cancel().await;
                }
                d
            })
        } else {
            let barrier = Arc::new(Barrier::new(51));
            let hs: Vec<_> = (0..50)
                .map(|_| {
                    let (b, s, rt) = (Arc::clone(&barrier), server.clone(), Arc::clone(&self.rt));
                    std::thread::spawn(move || {
                        b.wait();
                        let t0 = Instant::now();
                        let c = rt.block_on(connect(&s));
                        let t1 = Instant::now();
                        b.wait();
                        let _ = rt.block_on(c.cancel());
                        (t0, t1)
                    })
                })
                .collect();
            // The window runs from the earliest start to the latest finish
            // as the threads saw them (as skald-mcp's bench_client does):
            // a clock started by this thread after the barrier missed the
            // work of starters the scheduler ran first.
            barrier.wait();
            barrier.wait();
            let times: Vec<(Instant, Instant)> =
                hs.into_iter().map(|h| h.join().unwrap()).collect();
            let first = times.iter().map(|t| t.0).min().expect("50 starts");
            let last = times.iter().map(|t| t.1).max().expect("50 starts");
            last - first
        };
        d.as_secs_f64() * 1e3
    }

    fn child_rss100(&self) {
        let server = self.a.server.clone();
        let threads_before = proc_status("Threads:");
        let clients = self.rt.block_on(async move {
            let mut v = Vec::new();
            for _ in 0..100 {
                let c = connect(&server).await;
                call_size(c.peer(), 128).await;
                v.push(c);
            }
            v
        });
        let hwm = proc_status("VmHWM:");
        let threads = proc_status("Threads:");
        println!(
            "rss100 {} {} {}",
            hwm as f64 / 1024.0,
            threads,
            (threads as f64 - threads_before as f64) / 100.0
        );
        self.rt.block_on(async move {
            for c in clients {
                let _ = c.cancel().await;
            }
        });
    }

    /// `tools/list` of 10 000 tools over stdio: p50 of 5 after one warm-up.
    fn list10k(&self) -> f64 {
        let server = self.a.server.clone();
        let (c, _) = self.rt.block_on(spawn_with(&server, &["--tools", "10000"]));
        let p = c.peer().clone();
        let v: Vec<Duration> = if self.a.native {
            self.task(async move {
                let mut v = Vec::new();
                for _ in 0..6 {
                    v.push(timed_list(&p).await);
                }
                v
            })
        } else {
            (0..6).map(|_| self.rt.block_on(timed_list(&p))).collect()
        };
        let _ = self.rt.block_on(c.cancel());
        median_ms(v[1..].to_vec())
    }

    /// In a fresh process: connect to `--tools 10000`, list once, VmHWM.
    fn child_list10k(&self) {
        let server = self.a.server.clone();
        let c = self.rt.block_on(async move {
            let (c, _) = spawn_with(&server, &["--tools", "10000"]).await;
            let r = c.list_tools(Default::default()).await.expect("tools/list");
            assert_eq!(r.tools.len(), 10_000);
            c
        });
        println!("list10k {}", proc_status("VmHWM:") as f64 / 1024.0);
        let _ = self.rt.block_on(c.cancel());
    }

    fn kill_once(&self) -> Duration {
        let server = self.a.server.clone();
        let (c, pid) = self.rt.block_on(spawn(&server));
        self.rt.block_on(c.list_tools(Default::default())).unwrap();
        let p = c.peer().clone();
        let measure = move |r: Result<rmcp::model::CallToolResult, rmcp::ServiceError>| {
            let at = Instant::now();
            assert!(r.is_err(), "the call must fail");
            at
        };
        let at = if self.a.native {
            let h = self
                .rt
                .spawn(async move { measure(call(&p, json!({"delay_ms": 10_000})).await) });
            std::thread::sleep(Duration::from_millis(20));
            let t = Instant::now();
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            let at = self.rt.block_on(h).unwrap();
            at.duration_since(t)
        } else {
            let rt = Arc::clone(&self.rt);
            let h = std::thread::spawn(move || {
                measure(rt.block_on(call(&p, json!({"delay_ms": 10_000}))))
            });
            std::thread::sleep(Duration::from_millis(20));
            let t = Instant::now();
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            let at = h.join().unwrap();
            at.duration_since(t)
        };
        let _ = self.rt.block_on(c.cancel());
        at
    }

    fn http(&self, url: String, n: usize) -> Vec<Duration> {
        if self.a.native {
            self.task(async move {
                let c = connect_http(url).await;
                for _ in 0..n / 10 + 5 {
                    call_size(c.peer(), 128).await;
                }
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    let t = Instant::now();
                    call_size(c.peer(), 128).await;
                    v.push(t.elapsed());
                }
                let _ = c.cancel().await;
                v
            })
        } else {
            let c = self.rt.block_on(connect_http(url));
            for _ in 0..n / 10 + 5 {
                self.rt.block_on(call_size(c.peer(), 128));
            }
            let v = (0..n)
                .map(|_| {
                    let t = Instant::now();
                    self.rt.block_on(call_size(c.peer(), 128));
                    t.elapsed()
                })
                .collect();
            let _ = self.rt.block_on(c.cancel());
            v
        }
    }
}

fn main() {
    let a = parse_args();
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime"),
    );
    let _guard = rt.enter();
    let b = Bench { a: a.clone(), rt };
    let tag = a.tag();
    if a.child_rss100 {
        b.child_rss100();
        return;
    }
    if a.child_list10k {
        b.child_list10k();
        return;
    }
    let wants = |k: &str| a.wants(k);
    if wants("cold") {
        report(tag, "cold_ms", b.cold());
    }
    if wants("seq") {
        for (size, name) in SIZES {
            let (p50, p99) = micros(b.seq(size, a.iters(size)));
            report(tag, &format!("seq_{name}_p50_us"), p50);
            report(tag, &format!("seq_{name}_p99_us"), p99);
        }
    }
    if wants("tput") {
        for k in IN_FLIGHT {
            report(tag, &format!("tput_{k}"), b.tput(k));
        }
    }
    if wants("start50") {
        report(tag, "start50_ms", b.start50());
    }
    if wants("rss100") && a.native {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--server", &a.server, "--child-rss100"])
            .args(if a.modern {
                &["--era", "modern"][..]
            } else {
                &[]
            })
            .output()
            .expect("rss100 child");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("rss100 "))
            .unwrap_or_else(|| {
                panic!(
                    "rss100 output: {text} {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        report(tag, "rss100_mib", v[0]);
        report(tag, "threads100", v[1]);
        report(tag, "threads_per_server", v[2]);
    }
    if wants("kill") {
        let n = if a.quick { 5 } else { 20 };
        let v: Vec<Duration> = (0..n).map(|_| b.kill_once()).collect();
        let max = v.iter().max().unwrap().as_secs_f64() * 1e3;
        report(tag, "kill_ms", median_ms(v));
        report(tag, "kill_max_ms", max);
    }
    if wants("http") {
        let n = if a.quick { 500 } else { 3000 };
        let (mut child, url) = start_http_server(&a.server, &era_args(&[]));
        let (p50, p99) = micros(b.http(url, n));
        report(tag, "http_p50_us", p50);
        report(tag, "http_p99_us", p99);
        let _ = child.kill();
        let _ = child.wait();
    }
    if wants("http_tput") {
        // One server for the three figures, a new client connection for each.
        let (mut child, url) = start_http_server(&a.server, &era_args(&[]));
        for k in IN_FLIGHT {
            report(tag, &format!("http_tput_{k}"), b.http_tput(&url, k));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    if wants("list10k") {
        report(tag, "list10k_ms", b.list10k());
        if a.native {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--server", &a.server, "--child-list10k"])
                .args(if a.modern {
                    &["--era", "modern"][..]
                } else {
                    &[]
                })
                .output()
                .expect("list10k child");
            let text = String::from_utf8_lossy(&out.stdout);
            let v: f64 = text
                .lines()
                .find_map(|l| l.strip_prefix("list10k "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| {
                    panic!(
                        "list10k output: {text} {}",
                        String::from_utf8_lossy(&out.stderr)
                    )
                });
            report(tag, "list10k_rss_mib", v);
        }
    }
}

/// User + system CPU time of this process so far (all its threads).
fn process_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value of that C struct.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we pass.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(r.ru_utime) + tv(r.ru_stime)
}
