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
    assert_eq!(joined_threads(), 4, "one thread per server");
    drop(servers);
    // Joined by the time drop returns. The kernel drops a joined thread
    // from /proc/self/task a moment after its joiner is woken, hence the
    // short bound (a thread left running would stay for good).
    let mut left = joined_threads();
    eventually(Duration::from_millis(500), || {
        left = joined_threads();
        left == 0
    });
    assert_eq!(left, 0);
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

/// The `mcp-<name>-*` threads of this process.
fn threads_named(name: &str) -> Vec<String> {
    let prefix = format!("mcp-{name}-");
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|n| n.trim_end().to_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// The process group of `pid`, from /proc.
fn pgrp(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// The pipes (`pipe:[inode]`) among the open descriptors of `pid`.
fn pipes_of(pid: &str) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .map(|l| l.to_string_lossy().into_owned())
                .filter(|l| l.starts_with("pipe:"))
                .collect()
        })
        .unwrap_or_default()
}

/// Kills a process that is not the client's (a test's own clean-up).
fn kill(pid: u32) {
    // SAFETY: a plain kill(2) of a process this test started through the
    // server and checked is still alive.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
}

/// A server whose grandchild left the process group (`setsid`, as a
/// daemon does) and keeps the server's stdin, stdout and stderr open:
/// close() still returns at once with the I/O thread joined (it does not
/// wait for an end of file that process may never give). The process
/// itself is not the client's to kill: it is left running, with our ends
/// of its pipes closed (checked through /proc: no descriptor of ours
/// refers to the pipes it holds).
fn outside_the_group(name: &str, end: impl FnOnce(McpServer)) {
    let cfg = script_config(name, "hostile_mcp_server.py", &["setsid_grandchild"])
        .with_env("HOSTILE_LIFETIME_SECS", "120");
    let s = McpServer::connect(&cfg, test_options()).unwrap();
    let (me, outsider) = pids(&s);
    assert_eq!(me, s.pid());
    assert_ne!(pgrp(outsider), Some(me), "the grandchild left the group");
    assert_eq!(threads_named(name).len(), 1, "one I/O thread");
    let held = pipes_of(&outsider.to_string());
    assert_eq!(
        held.len(),
        3,
        "the outsider holds the three pipes: {held:?}"
    );
    assert!(pipes_of("self").intersection(&held).count() == 3);
    let started = std::time::Instant::now();
    end(s);
    let took = started.elapsed();
    // Joined threads have ended; the kernel drops a thread from
    // /proc/self/task a moment after its joiner is woken, hence the short
    // bound (a thread blocked on the pipe would stay for good).
    let mut left = Vec::new();
    eventually(Duration::from_millis(500), || {
        left = threads_named(name);
        left.is_empty()
    });
    let ours_left: Vec<String> = pipes_of("self").intersection(&held).cloned().collect();
    let outsider_alive = alive(outsider);
    kill(outsider);
    assert!(ours_left.is_empty(), "our ends still open: {ours_left:?}");
    assert!(left.is_empty(), "threads left running: {left:?}");
    assert!(
        took < Duration::from_secs(1),
        "closing took {took:?} (the I/O threads waited for the pipes)"
    );
    assert_eq!(proc_state(me), None, "the child was reaped");
    assert!(group_members(me).is_empty(), "the group is dead");
    assert!(
        outsider_alive,
        "the process outside the group is not the client's to kill"
    );
}

#[test]
fn close_joins_its_threads_while_a_process_outside_the_group_holds_the_pipes() {
    outside_the_group("setsid", |s| {
        s.close().unwrap();
        // Not dropped: close() itself must have closed our pipe ends (the
        // leak is this test's only).
        std::mem::forget(s);
    });
}

#[test]
fn drop_joins_its_threads_while_a_process_outside_the_group_holds_the_pipes() {
    outside_the_group("setdrop", drop);
}

/// Two threads close a server behind a wrapper shell that does not `exec`
/// (the real server is a grandchild, as under `npx`) at the same moment:
/// neither returns before the whole group is dead, whichever of them does
/// the work (the CLI's signal thread and its main thread, on Ctrl-C).
#[test]
fn concurrent_closes_both_return_after_the_group_is_dead() {
    let server = repo_path("scripts/hostile_mcp_server.py");
    // `; exit $?` keeps sh from exec'ing python: sh stays the direct child.
    let script = format!("python3 '{server}' ignore_sigterm; exit $?");
    let cfg = skald_mcp::McpServerConfig::stdio("wrapped", "sh", ["-c".to_owned(), script]);
    let s = std::sync::Arc::new(McpServer::connect(&cfg, test_options()).unwrap());
    let pid = s.pid();
    assert_eq!(
        text(s.call_tool("echo", json!({"text": "up"})).unwrap()),
        "up"
    );
    assert!(group_members(pid).len() >= 2, "sh and python in the group");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let closers: Vec<_> = (0..2)
        .map(|_| {
            let (s, b) = (std::sync::Arc::clone(&s), std::sync::Arc::clone(&barrier));
            std::thread::spawn(move || {
                b.wait();
                s.close().unwrap();
                // Checked by each closer the moment its close returns.
                (proc_state(pid), group_members(pid))
            })
        })
        .collect();
    for c in closers {
        let (state, members) = c.join().unwrap();
        assert_eq!(state, None, "close returned before the child was reaped");
        assert!(
            members.is_empty(),
            "close returned with the group alive: {members:?}"
        );
    }
}

/// A start whose `exec` fails (the program does not exist) is a typed
/// error naming the command, and leaves neither a thread (the I/O thread
/// that tried the start is joined) nor a process behind.
#[test]
fn a_failed_start_leaves_no_thread_behind() {
    let cfg = skald_mcp::McpServerConfig::stdio("failing", "/nonexistent/skald-mcp-x", ["a"]);
    for _ in 0..3 {
        match McpServer::spawn(&cfg, test_options()) {
            Err(skald_mcp::McpError::Spawn {
                server,
                command,
                source,
            }) => {
                assert_eq!(server, "failing");
                assert_eq!(command, "/nonexistent/skald-mcp-x");
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound, "{source}");
            }
            other => panic!("expected a spawn error, got {other:?}"),
        }
    }
    // Joined before spawn returned; the kernel drops a joined thread from
    // /proc/self/task a moment later.
    let mut left = threads_named("failing");
    eventually(Duration::from_millis(500), || {
        left = threads_named("failing");
        left.is_empty()
    });
    assert!(left.is_empty(), "threads left: {left:?}");
}
