//! Shared helpers for the integration tests: paths of the bundled servers,
//! connection shortcuts, process checks through `/proc`, and bounded waits.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use skald_mcp::{ClientOptions, McpCallResult, McpServer, McpServerClient, McpServerConfig};

/// An absolute path to a file of the repository.
pub fn repo_path(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// A config running `python3 scripts/<script> [args]`.
pub fn script_config(name: &str, script: &str, args: &[&str]) -> McpServerConfig {
    let mut all = vec![repo_path(&format!("scripts/{script}"))];
    all.extend(args.iter().map(|s| s.to_string()));
    McpServerConfig::stdio(name, "python3", all)
}

/// Options with test-sized timeouts.
pub fn test_options() -> ClientOptions {
    ClientOptions::default()
        .start_timeout(Duration::from_secs(20))
        .call_timeout(Duration::from_secs(20))
}

/// Connects to the demo server.
pub fn demo(opts: ClientOptions) -> McpServer {
    McpServer::connect(&script_config("demo", "demo_mcp_server.py", &[]), opts)
        .expect("demo server starts")
}

/// Connects to the hostile server in `mode`.
pub fn hostile(mode: &str, opts: ClientOptions) -> skald_mcp::Result<McpServer> {
    McpServer::connect(
        &script_config("hostile", "hostile_mcp_server.py", &[mode]),
        opts,
    )
}

/// A valid 1x1 red PNG (69 bytes).
#[allow(dead_code)]
pub const PNG_1X1_RED: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0xc9, 0xfe, 0x92, 0xef, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The text of a `Text` result, or a panic naming what came instead.
pub fn text(r: McpCallResult) -> String {
    match r {
        McpCallResult::Text(t) => t,
        other => panic!("expected text, got {other:?}"),
    }
}

/// The `structuredContent` of a `Json` result, or a panic naming what came
/// instead.
pub fn structured(r: McpCallResult) -> Value {
    match r {
        McpCallResult::Json { value, .. } => value,
        other => panic!("expected structured content, got {other:?}"),
    }
}

/// Every message the server recorded (the `received` tool of the scripts).
pub fn received(server: &dyn McpServerClient) -> Vec<Value> {
    match server
        .call_tool("received", Value::Null)
        .expect("received tool")
    {
        McpCallResult::Json { value: v, .. } => {
            v["messages"].as_array().cloned().unwrap_or_default()
        }
        other => panic!("received returned {other:?}"),
    }
}

/// Process state letter from /proc (R, S, Z, …), or None when it is gone.
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the parenthesised command name.
    let after = stat.rsplit_once(')')?.1;
    after.trim_start().chars().next()
}

/// Whether `pid` is a live (non-zombie) process.
pub fn alive(pid: u32) -> bool {
    matches!(proc_state(pid), Some(s) if s != 'Z' && s != 'X')
}

/// Waits until `cond` holds, checking every few milliseconds, for at most
/// `limit`. Returns whether it held. For conditions the test cannot be told
/// about through a channel (a process dying, reaped by init).
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Every process whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, after)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        // fields[0] = state, [1] = ppid, [2] = pgrp
        if fields.len() > 2 && fields[2].parse::<u32>().ok() == Some(pgid) && fields[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

/// Whether the official Python SDK is importable; in CI its absence fails.
pub fn python_sdk_available() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .map(|o| o.status.success())
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
