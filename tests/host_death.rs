//! No orphans when the host thread panics: a thread that holds an
//! `McpServer` or an `McpManager` and panics unwinds through their `Drop`,
//! which kills the server's whole process group (grandchildren included)
//! and reaps the child.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use skald_mcp::manager::{ManagerConfig, McpManager, ToolResult};
use skald_mcp::{McpCallResult, McpServerClient};

/// The pids the hostile `grandchild` server reports: itself and its child.
fn parse_pids(t: &str) -> (u32, u32) {
    let v: Value = serde_json::from_str(t).unwrap();
    (
        v["self"].as_u64().unwrap() as u32,
        v["grandchild"].as_u64().unwrap() as u32,
    )
}

fn assert_gone(me: u32, grandchild: u32) {
    // The child is reaped by the unwinding Drop, synchronously.
    assert_eq!(proc_state(me), None, "server {me} not reaped");
    // The grandchild was SIGKILLed with the group; init reaps it.
    assert!(
        eventually(Duration::from_secs(5), || !alive(grandchild)),
        "grandchild {grandchild} survived the panic"
    );
    assert!(group_members(me).is_empty(), "group {me} not empty");
}

#[test]
fn a_panicking_thread_holding_a_server_leaves_no_process() {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let t = std::thread::spawn(move || {
        let s = hostile("grandchild", test_options()).unwrap();
        let McpCallResult::Text(t) = s.call_tool("pids", json!({})).unwrap() else {
            panic!("pids returned no text");
        };
        tx.send(parse_pids(&t)).unwrap();
        panic!("the host thread panics while it holds the server");
    });
    let (me, grandchild) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server started");
    assert!(t.join().is_err(), "the thread panicked");
    assert_gone(me, grandchild);
}

#[test]
fn a_panicking_thread_holding_a_manager_leaves_no_process() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("skald-host-panic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (tx, rx) = crossbeam_channel::bounded(1);
    let d = dir.clone();
    let t = std::thread::spawn(move || {
        let mut cfg = ManagerConfig::in_dir(&d);
        cfg.client = test_options();
        let m = McpManager::open(cfg).unwrap();
        m.register(script_config("g", "hostile_mcp_server.py", &["grandchild"]))
            .unwrap();
        let ToolResult::Text(t) = m.call("mcp__g__pids", json!({})).unwrap() else {
            panic!("pids returned no text");
        };
        tx.send(parse_pids(&t)).unwrap();
        panic!("the host thread panics while it holds the manager");
    });
    let (me, grandchild) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server started");
    assert!(t.join().is_err(), "the thread panicked");
    assert_gone(me, grandchild);
    let _ = std::fs::remove_dir_all(&dir);
}
