//! A soak run: N stdio servers × T caller threads, a fixed number of calls
//! with random faults (servers SIGKILLed mid-run, slow calls, cancellations,
//! timeouts), every server notification persisted by the store. At the end
//! it prints what was injected and survived, and what leaked: threads
//! (`/proc/self/task` before and after), child processes (a walk of
//! `/proc`), resident memory, and acknowledged events missing from the
//! store (0 expected).
//!
//! ```sh
//! cargo run --example soak -- --servers 50 --threads 8 --calls 20000
//! tests/soak.sh                      # the same, bounded in time
//! ```
//!
//! Exits non-zero when anything leaked, an event was lost, or a fault was
//! not survived.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};
use skald_mcp::{
    CallOptions, CancelToken, ClientOptions, McpError, McpServer, McpServerClient, McpServerConfig,
    Store, StoreConfig,
};

struct Args {
    servers: usize,
    threads: usize,
    calls: usize,
    seed: u64,
    max_secs: u64,
}

fn args() -> Args {
    let mut a = Args {
        servers: 50,
        threads: 8,
        calls: 20_000,
        seed: 0x5eed,
        max_secs: 600,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(k) = it.next() {
        let mut v = || -> u64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{k} needs a number"))
        };
        match k.as_str() {
            "--servers" => a.servers = v() as usize,
            "--threads" => a.threads = v() as usize,
            "--calls" => a.calls = v() as usize,
            "--seed" => a.seed = v(),
            "--max-secs" => a.max_secs = v(),
            other => panic!(
                "unknown argument {other}; use --servers --threads --calls --seed --max-secs"
            ),
        }
    }
    a
}

/// xorshift64*: deterministic per thread, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Threads of this process, not counting the library's one-off
/// `skald-mcp-fds` (started with the first server; it grows the file table
/// and ends, possibly after the soak's first count).
fn task_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .map_or(true, |n| n.trim() != "skald-mcp-fds")
                })
                .count()
        })
        .unwrap_or(0)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Every process whose parent is this one (zombies included: an unreaped
/// child is a leak too).
fn child_processes() -> Vec<u32> {
    let me = std::process::id();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(me) {
            out.push(pid);
        }
    }
    out
}

#[derive(Default)]
struct Counters {
    calls: AtomicUsize,
    ok: AtomicUsize,
    kills: AtomicUsize,
    kills_survived: AtomicUsize,
    slow: AtomicUsize,
    slow_survived: AtomicUsize,
    cancels: AtomicUsize,
    cancels_survived: AtomicUsize,
    timeouts: AtomicUsize,
    timeouts_survived: AtomicUsize,
    reconnects: AtomicUsize,
    /// Calls that failed only because their server was killed under them.
    collateral: AtomicUsize,
    unexpected: AtomicUsize,
}

struct Slot {
    server: Mutex<Arc<McpServer>>,
}

struct World {
    slots: Vec<Slot>,
    options: ClientOptions,
    script: String,
    counters: Counters,
    /// Markers of `notify` calls that returned Ok: their events must be in
    /// the store.
    acked_events: Mutex<Vec<u64>>,
    next_marker: AtomicU64,
    unexpected_samples: Mutex<Vec<String>>,
}

impl World {
    fn config(&self, i: usize) -> McpServerConfig {
        McpServerConfig::stdio(format!("soak{i}"), "python3", [self.script.as_str()])
    }

    /// The server of slot `i`, reconnected first when it died.
    fn server(&self, i: usize) -> Option<Arc<McpServer>> {
        let mut g = self.slots[i].server.lock();
        if !g.is_connected() {
            match McpServer::connect(&self.config(i), self.options.clone()) {
                Ok(s) => {
                    let old = std::mem::replace(&mut *g, Arc::new(s));
                    let _ = old.close();
                    self.counters.reconnects.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    self.unexpected(format!("reconnecting soak{i}: {e}"));
                    return None;
                }
            }
        }
        Some(Arc::clone(&g))
    }

    fn unexpected(&self, what: String) {
        self.counters.unexpected.fetch_add(1, Ordering::Relaxed);
        let mut s = self.unexpected_samples.lock();
        if s.len() < 10 {
            s.push(what);
        }
    }

    /// A call failed: fine if its server was killed meanwhile.
    fn failed(&self, s: &McpServer, what: &str, e: &McpError) {
        if !s.is_connected() && matches!(e, McpError::Disconnected { .. }) {
            self.counters.collateral.fetch_add(1, Ordering::Relaxed);
        } else {
            self.unexpected(format!("{what} on {}: {e}", s.name()));
        }
    }
}

fn caller(
    world: &World,
    cancels: &crossbeam_channel::Sender<(Instant, CancelToken)>,
    seed: u64,
    calls: usize,
    deadline: Instant,
) {
    let c = &world.counters;
    let mut rng = Rng(seed | 1);
    for _ in 0..calls {
        if Instant::now() > deadline {
            return;
        }
        let i = rng.below(world.slots.len() as u64) as usize;
        let Some(s) = world.server(i) else { continue };
        c.calls.fetch_add(1, Ordering::Relaxed);
        let roll = rng.below(1000);
        if roll < 10 {
            // Kill: SIGKILL the server; the next call on the slot must find
            // it disconnected, reconnect, and work. Under the slot's lock,
            // so no other caller can replace (close, reap) it meanwhile and
            // the pid cannot have been reused.
            {
                let g = world.slots[i].server.lock();
                if !(Arc::ptr_eq(&g, &s) && s.is_connected()) {
                    continue;
                }
                c.kills.fetch_add(1, Ordering::Relaxed);
                // SAFETY: the server is connected and only replaced (then
                // reaped) under this lock: its pid is still our child's.
                unsafe { libc::kill(s.pid() as libc::pid_t, libc::SIGKILL) };
            }
            let gone = Instant::now() + Duration::from_secs(10);
            while s.is_connected() && Instant::now() < gone {
                // Nothing signals this thread; the reader thread notices the
                // EOF within milliseconds.
                std::thread::sleep(Duration::from_millis(2));
            }
            let Some(n) = world.server(i) else { continue };
            match n.call_tool("echo", json!({"text": "after kill"})) {
                Ok(r) if r.to_text() == "after kill" => {
                    c.kills_survived.fetch_add(1, Ordering::Relaxed);
                }
                Ok(r) => world.unexpected(format!("echo after kill gave {r:?}")),
                // Another caller may have killed the new server already.
                Err(e) => world.failed(&n, "echo after kill", &e),
            }
        } else if roll < 60 {
            c.slow.fetch_add(1, Ordering::Relaxed);
            let secs = 0.05 + rng.below(200) as f64 / 1000.0;
            match s.call_tool("slow", json!({"seconds": secs})) {
                Ok(_) => {
                    c.slow_survived.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => world.failed(&s, "slow", &e),
            }
        } else if roll < 110 {
            c.cancels.fetch_add(1, Ordering::Relaxed);
            let token = CancelToken::new();
            let at = Instant::now() + Duration::from_millis(20 + rng.below(80));
            let _ = cancels.send((at, token.clone()));
            let started = Instant::now();
            match s.call_tool_with(
                "slow",
                json!({"seconds": 30}),
                &CallOptions::new().cancel_token(token),
            ) {
                Err(McpError::Cancelled { .. }) if started.elapsed() < Duration::from_secs(5) => {
                    c.cancels_survived.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => world.failed(&s, "cancelled call", &e),
                Ok(r) => world.unexpected(format!("cancelled call returned {r:?}")),
            }
        } else if roll < 160 {
            c.timeouts.fetch_add(1, Ordering::Relaxed);
            let started = Instant::now();
            match s.call_tool_with(
                "slow",
                json!({"seconds": 30}),
                &CallOptions::new().timeout(Duration::from_millis(30 + rng.below(70))),
            ) {
                Err(McpError::CallTimeout { .. }) if started.elapsed() < Duration::from_secs(5) => {
                    c.timeouts_survived.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => world.failed(&s, "timed-out call", &e),
                Ok(r) => world.unexpected(format!("timed-out call returned {r:?}")),
            }
        } else if roll < 260 {
            let marker = world.next_marker.fetch_add(1, Ordering::Relaxed);
            match s.call_tool(
                "notify",
                json!({"method": "event/soak", "params": {"marker": marker}}),
            ) {
                Ok(_) => {
                    world.acked_events.lock().push(marker);
                    c.ok.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => world.failed(&s, "notify", &e),
            }
        } else {
            let text = format!("hello {}", rng.next());
            match s.call_tool("echo", json!({ "text": text })) {
                Ok(r) if r.to_text() == text => {
                    c.ok.fetch_add(1, Ordering::Relaxed);
                }
                Ok(r) => world.unexpected(format!("echo returned {r:?}")),
                Err(e) => world.failed(&s, "echo", &e),
            }
        }
    }
}

fn main() {
    let a = args();
    let tasks_before = task_count();
    let children_before = child_processes().len();
    let rss_before = rss_kib();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(a.max_secs);

    let dir = std::env::temp_dir().join(format!("skald-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(StoreConfig::new(dir.join("soak.db"), &dir)).expect("store opens");
    let options = ClientOptions::default()
        .start_timeout(Duration::from_secs(60))
        .call_timeout(Duration::from_secs(30))
        .notifications(store.events_sender())
        .logs(store.log_sender());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo_mcp_server.py").to_owned();

    // Start the servers in parallel (a python3 start is mostly CPU).
    let mut slots: Vec<Option<McpServer>> = (0..a.servers).map(|_| None).collect();
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..a.servers)
            .map(|i| {
                let cfg = McpServerConfig::stdio(format!("soak{i}"), "python3", [script.as_str()]);
                let o = options.clone();
                sc.spawn(move || McpServer::connect(&cfg, o).expect("server starts"))
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            slots[i] = Some(h.join().expect("start thread"));
        }
    });
    let world = World {
        slots: slots
            .into_iter()
            .map(|s| Slot {
                server: Mutex::new(Arc::new(s.expect("started"))),
            })
            .collect(),
        options,
        script,
        counters: Counters::default(),
        acked_events: Mutex::new(Vec::new()),
        next_marker: AtomicU64::new(0),
        unexpected_samples: Mutex::new(Vec::new()),
    };
    let rss_started = rss_kib();
    println!(
        "soak: {} servers started in {:.1} s; {} callers × {} calls",
        a.servers,
        started.elapsed().as_secs_f64(),
        a.threads,
        a.calls / a.threads.max(1)
    );

    // One thread trips the cancel tokens at their time.
    let (ctx, crx) = crossbeam_channel::unbounded::<(Instant, CancelToken)>();
    let canceller = std::thread::spawn(move || {
        let mut due: Vec<(Instant, CancelToken)> = Vec::new();
        loop {
            let next = due.iter().map(|d| d.0).min();
            let got = match next {
                Some(t) => crx.recv_deadline(t),
                None => crx
                    .recv()
                    .map_err(|_| crossbeam_channel::RecvTimeoutError::Disconnected),
            };
            match got {
                Ok(d) => due.push(d),
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) if due.is_empty() => return,
                Err(_) => {}
            }
            let now = Instant::now();
            due.retain(|(t, tok)| {
                if *t <= now {
                    tok.cancel();
                    false
                } else {
                    true
                }
            });
        }
    });

    let run_started = Instant::now();
    std::thread::scope(|sc| {
        for t in 0..a.threads {
            let (w, c) = (&world, ctx.clone());
            let per = a.calls / a.threads.max(1);
            let seed = a.seed.wrapping_mul(t as u64 + 1).wrapping_add(0x9e37_79b9);
            sc.spawn(move || caller(w, &c, seed, per, deadline));
        }
    });
    drop(ctx);
    canceller.join().expect("canceller");
    let run_secs = run_started.elapsed().as_secs_f64();

    // Close everything, then count what is left.
    for s in &world.slots {
        let _ = s.server.lock().close();
    }
    let World {
        slots,
        counters: c,
        acked_events,
        unexpected_samples,
        options,
        ..
    } = world;
    drop(slots);
    drop(options);
    store.flush().expect("store flush");
    let stored: HashSet<u64> = store
        .pending_events(usize::MAX)
        .expect("events")
        .iter()
        .filter(|e| e.method == "event/soak")
        .filter_map(|e| e.params.get("marker").and_then(Value::as_u64))
        .collect();
    let acked = acked_events.into_inner();
    let lost = acked.iter().filter(|m| !stored.contains(m)).count();
    store.close().expect("store close");
    let _ = std::fs::remove_dir_all(&dir);

    // Threads the library detached finish on their own within a bound.
    let settle = Instant::now() + Duration::from_secs(5);
    while task_count() > tasks_before && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(20));
    }
    let leaked_threads = task_count() as i64 - tasks_before as i64;
    let leaked_procs = child_processes().len() as i64 - children_before as i64;
    let rss_end = rss_kib();

    let l = |a: &AtomicUsize| a.load(Ordering::Relaxed);
    let injected = l(&c.kills) + l(&c.slow) + l(&c.cancels) + l(&c.timeouts);
    let survived = l(&c.kills_survived)
        + l(&c.slow_survived)
        + l(&c.cancels_survived)
        + l(&c.timeouts_survived);
    println!(
        "calls:            {} in {run_secs:.1} s ({} plain calls ok)",
        l(&c.calls),
        l(&c.ok)
    );
    println!(
        "faults injected:  {injected} (kills {}, slow {}, cancels {}, timeouts {})",
        l(&c.kills),
        l(&c.slow),
        l(&c.cancels),
        l(&c.timeouts)
    );
    println!(
        "faults survived:  {survived} (kills {}, slow {}, cancels {}, timeouts {}); reconnects {}; calls failed by a kill under them {}",
        l(&c.kills_survived),
        l(&c.slow_survived),
        l(&c.cancels_survived),
        l(&c.timeouts_survived),
        l(&c.reconnects),
        l(&c.collateral)
    );
    println!("unexpected:       {}", l(&c.unexpected));
    for s in unexpected_samples.into_inner() {
        println!("  {s}");
    }
    println!(
        "leaked threads:   {leaked_threads} ({tasks_before} before, {} after)",
        task_count()
    );
    println!("leaked processes: {leaked_procs}");
    println!(
        "RSS:              {} KiB at start, {rss_started} KiB with servers up, {rss_end} KiB at the end",
        rss_before
    );
    println!("events lost:      {lost} of {} acknowledged", acked.len());
    let ok = leaked_threads <= 0
        && leaked_procs <= 0
        && lost == 0
        && l(&c.unexpected) == 0
        && survived + (injected - survived).min(l(&c.collateral)) >= injected;
    if !ok {
        println!("SOAK FAILED");
        std::process::exit(1);
    }
    println!("soak ok");
}
