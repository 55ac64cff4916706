//! No orphans: closing or dropping a client kills the server's whole process
//! group and reaps the child, including servers that ignore SIGTERM and ones
//! that spawned grandchildren.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use skald_mcp::{McpServer, McpServerClient};

fn pids(s: &McpServer) -> (u32, u32) {
    let t = text(s.call_tool("pids", json!({})).unwrap());
    let v: Value = serde_json::from_str(&t).unwrap();
    (
        v["self"].as_u64().unwrap() as u32,
        v["grandchild"].as_u64().unwrap() as u32,
    )
}

#[test]
fn close_reaps_a_cooperative_server() {
    let s = demo(test_options());
    let pid = s.pid();
    assert!(alive(pid));
    s.close().unwrap();
    // Reaped synchronously: not even a zombie is left.
    assert_eq!(proc_state(pid), None, "child not reaped");
    s.close().unwrap(); // idempotent
    assert!(!s.is_connected());
}

#[test]
fn drop_reaps_a_cooperative_server() {
    let s = demo(test_options());
    let pid = s.pid();
    drop(s);
    assert_eq!(proc_state(pid), None);
}

#[test]
fn close_kills_a_server_that_ignores_sigterm() {
    let s = hostile("ignore_sigterm", test_options()).unwrap();
    let pid = s.pid();
    s.close().unwrap();
    assert_eq!(proc_state(pid), None);
    assert!(group_members(pid).is_empty());
}

#[test]
fn drop_kills_grandchildren_too() {
    let s = hostile("grandchild", test_options()).unwrap();
    let (me, grandchild) = pids(&s);
    assert_eq!(me, s.pid());
    assert!(alive(grandchild));
    drop(s);
    assert_eq!(proc_state(me), None);
    // The grandchild was SIGKILLed with the group; init reaps it.
    assert!(
        eventually(Duration::from_secs(5), || !alive(grandchild)),
        "grandchild survived"
    );
    assert!(group_members(me).is_empty());
}

#[test]
fn close_kills_grandchildren_too() {
    let s = hostile("grandchild", test_options()).unwrap();
    let (me, grandchild) = pids(&s);
    s.close().unwrap();
    assert_eq!(proc_state(me), None);
    assert!(
        eventually(Duration::from_secs(5), || !alive(grandchild)),
        "grandchild survived"
    );
}

#[test]
fn threads_are_joined() {
    // Only this test's servers are named "joined": other tests in this
    // binary start and stop servers in parallel, so a total count races.
    fn joined_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
            .filter(|n| n.starts_with("mcp-joined-"))
            .count()
    }
    let cfg = script_config("joined", "demo_mcp_server.py", &[]);
    let servers: Vec<_> = (0..4)
        .map(|_| McpServer::connect(&cfg, test_options()).unwrap())
        .collect();
    assert_eq!(joined_threads(), 12, "three threads per server");
    drop(servers);
    // Joined by the time drop returns.
    assert_eq!(joined_threads(), 0);
}

/// A second `close()` waits for the one in progress: when it returns, the
/// child is reaped, whoever started closing (the CLI's signal thread and
/// its main thread both close on Ctrl-C).
#[test]
fn a_second_close_waits_for_the_first() {
    // Ignores SIGTERM and stdin EOF: the first close takes its grace
    // periods, then SIGKILL.
    let s = std::sync::Arc::new(hostile("ignore_sigterm", test_options()).unwrap());
    let pid = s.pid();
    let first = {
        let s = std::sync::Arc::clone(&s);
        std::thread::spawn(move || s.close().unwrap())
    };
    // The first close is under way once the connection is marked dead.
    assert!(
        eventually(Duration::from_secs(10), || !s.is_connected()),
        "the first close did not start"
    );
    s.close().unwrap();
    assert_eq!(
        proc_state(pid),
        None,
        "close returned before the child was reaped"
    );
    first.join().unwrap();
}
