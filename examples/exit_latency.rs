//! How long a call in flight takes to fail with `Disconnected` after the
//! server's process exits while a process it started keeps the pipes open
//! (the shape of `npx`/`uvx`/shell wrappers whose real server outlives
//! them), and how long `close()` takes afterwards.
//!
//! ```text
//! cargo run --release --example exit_latency [runs]
//! ```
//!
//! The hostile server (`scripts/hostile_mcp_server.py`, modes
//! `wrapper_exit`: the grandchild stays in the process group, and
//! `setsid_exit`: it calls `setsid` first) writes its `CLOCK_MONOTONIC`
//! time to stderr just before `_exit`; the client reads the same clock when
//! the call returns. So each figure is an upper bound: it includes the
//! kernel's teardown of the exiting process. Linux only.

use std::time::{Duration, Instant};

use serde_json::json;
use skald_mcp::{ClientOptions, McpError, McpServer, McpServerClient, McpServerConfig};

/// `CLOCK_MONOTONIC` in seconds: the clock Python's `time.monotonic()`
/// reads on Linux.
fn monotonic() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into valid memory.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// The number after `key` in `line`, if any.
fn after<T: std::str::FromStr>(line: &str, key: &str) -> Option<T> {
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

struct Run {
    /// Exit → `Disconnected`, in milliseconds.
    to_disconnected: f64,
    /// How long `close()` took afterwards, in milliseconds.
    close: f64,
}

fn one(mode: &str) -> Run {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/hostile_mcp_server.py");
    let cfg = McpServerConfig::stdio("exit", "python3", [script, mode])
        .with_env("HOSTILE_LIFETIME_SECS", "60");
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let opts = ClientOptions::default()
        .call_timeout(Duration::from_secs(30))
        .logs(ltx);
    let s = McpServer::connect(&cfg, opts).expect("the hostile server starts");
    let r = s.call_tool("echo", json!({"text": "x"}));
    let failed_at = monotonic();
    match r {
        Err(McpError::Disconnected { .. }) => {}
        other => panic!("expected Disconnected, got {other:?}"),
    }
    let mut exited_at = None;
    let mut outsider: Option<i32> = None;
    let deadline = Instant::now() + Duration::from_secs(10);
    while exited_at.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = lrx.recv_timeout(left) else {
            panic!("the server's exit time never came on stderr");
        };
        outsider = outsider.or_else(|| after(&line.text, "setsid grandchild "));
        exited_at = after::<f64>(&line.text, "at monotonic ");
    }
    let started = Instant::now();
    s.close().expect("close");
    let close = started.elapsed().as_secs_f64() * 1e3;
    if let Some(pid) = outsider {
        // Outside the group: not the client's to kill, but this
        // measurement's to clean up.
        // SAFETY: kill(2) of the sleep this run's server started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    Run {
        to_disconnected: (failed_at - exited_at.unwrap_or(failed_at)) * 1e3,
        close,
    }
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20)
        .max(1);
    println!("runs per mode: {runs}");
    for (mode, what) in [
        ("wrapper_exit", "grandchild in the group"),
        ("setsid_exit", "grandchild outside the group (setsid)"),
    ] {
        let all: Vec<Run> = (0..runs).map(|_| one(mode)).collect();
        let mut d: Vec<f64> = all.iter().map(|r| r.to_disconnected).collect();
        let mut c: Vec<f64> = all.iter().map(|r| r.close).collect();
        d.sort_by(f64::total_cmp);
        c.sort_by(f64::total_cmp);
        println!(
            "{mode:<13} ({what}): exit → Disconnected p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms; close() afterwards p50 {:.1} ms, max {:.1} ms",
            pct(&d, 0.5),
            pct(&d, 0.95),
            d[d.len() - 1],
            pct(&c, 0.5),
            c[c.len() - 1],
        );
    }
}
