//! Cancellation (`notifications/cancelled`) and task-mode calls (`tasks/*`)
//! over stdio, checked by what the servers recorded receiving.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use skald_mcp::{CallOptions, CancelToken, McpError, McpServer, McpServerClient};

fn call_id(msgs: &[Value], tool: &str) -> Value {
    msgs.iter()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == tool)
        .unwrap_or_else(|| panic!("no tools/call {tool} in {msgs:?}"))["id"]
        .clone()
}

fn cancels(msgs: &[Value]) -> Vec<&Value> {
    msgs.iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect()
}

#[test]
fn cancel_from_another_thread_reaches_the_server() {
    let s = Arc::new(demo(test_options()));
    let token = CancelToken::new();
    let canceller = {
        let (s, token) = (Arc::clone(&s), token.clone());
        std::thread::spawn(move || {
            assert!(
                eventually(Duration::from_secs(10), || s.pending_requests() == 1),
                "call never started"
            );
            token.cancel_with("user pressed stop");
        })
    };
    let t = Instant::now();
    let opts = CallOptions::new().cancel_token(token);
    match s.call_tool_with("slow", json!({"seconds": 30}), &opts) {
        Err(McpError::Cancelled { reason, method, .. }) => {
            assert_eq!(
                (reason.as_str(), method.as_str()),
                ("user pressed stop", "tools/call")
            );
        }
        other => panic!("expected Cancelled, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(10));
    canceller.join().unwrap();
    assert_eq!(
        s.pending_requests(),
        0,
        "the orphaned pending entry was not removed"
    );
    let msgs = received(&*s);
    let c = cancels(&msgs);
    assert_eq!(c.len(), 1, "{msgs:?}");
    assert_eq!(c[0]["params"]["requestId"], call_id(&msgs, "slow"));
    assert_eq!(c[0]["params"]["reason"], "user pressed stop");
    // The connection is still usable.
    assert_eq!(
        text(s.call_tool("echo", json!({"text": "after"})).unwrap()),
        "after"
    );
}

#[test]
fn timeout_sends_cancelled_with_reason_timeout() {
    let s = demo(test_options());
    let opts = CallOptions::new().timeout(Duration::from_millis(300));
    match s.call_tool_with("slow", json!({"seconds": 30}), &opts) {
        Err(McpError::CallTimeout {
            timeout, method, ..
        }) => {
            assert_eq!(
                (timeout, method.as_str()),
                (Duration::from_millis(300), "tools/call")
            );
        }
        other => panic!("expected CallTimeout, got {other:?}"),
    }
    assert_eq!(s.pending_requests(), 0);
    let msgs = received(&s);
    let c = cancels(&msgs);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["params"]["reason"], "timeout");
    assert_eq!(c[0]["params"]["requestId"], call_id(&msgs, "slow"));
}

#[test]
fn no_cancel_after_a_reply_and_none_for_other_requests() {
    let s = demo(test_options());
    let token = CancelToken::new();
    let opts = CallOptions::new().cancel_token(token.clone());
    assert_eq!(
        text(
            s.call_tool_with("echo", json!({"text": "a"}), &opts)
                .unwrap()
        ),
        "a"
    );
    token.cancel();
    s.list_tools().unwrap();
    s.ping().unwrap();
    assert!(cancels(&received(&s)).is_empty());
}

#[test]
fn a_precancelled_token_still_cleans_up() {
    let s = demo(test_options());
    let token = CancelToken::new();
    token.cancel();
    let opts = CallOptions::new().cancel_token(token);
    assert!(matches!(
        s.call_tool_with("slow", json!({"seconds": 30}), &opts),
        Err(McpError::Cancelled { .. })
    ));
    assert_eq!(s.pending_requests(), 0);
    assert_eq!(cancels(&received(&s)).len(), 1);
}

fn tasks() -> McpServer {
    let s = McpServer::connect(
        &script_config("tasks", "task_demo_mcp.py", &[]),
        test_options(),
    )
    .unwrap();
    s.list_tools().unwrap(); // learn each tool's taskSupport
    s
}

#[test]
fn a_task_completes_through_get_and_result() {
    let s = tasks();
    assert!(s.server_capabilities().unwrap().tasks_for_tool_calls());
    let (tx, rx) = crossbeam_channel::unbounded();
    let opts = CallOptions::new().progress_channel(tx);
    let r = s
        .call_tool_with("long_job", json!({"polls": 2}), &opts)
        .unwrap();
    assert_eq!(text(r), "job done");
    let msgs = received(&s);
    let call = msgs
        .iter()
        .find(|m| m["params"]["name"] == "long_job")
        .unwrap();
    assert!(
        call["params"]["task"].is_object(),
        "the task field was not added: {call}"
    );
    assert_eq!(
        msgs.iter().filter(|m| m["method"] == "tasks/get").count(),
        2
    );
    assert_eq!(
        msgs.iter()
            .filter(|m| m["method"] == "tasks/result")
            .count(),
        1
    );
    assert!(!msgs.iter().any(|m| m["method"] == "tasks/cancel"));
    // Each poll reported its status message.
    assert_eq!(rx.try_iter().count(), 2);
    // A tool without taskSupport gets no task field.
    assert_eq!(text(s.call_tool("plain", json!({})).unwrap()), "plain");
    let msgs = received(&s);
    let plain = msgs
        .iter()
        .find(|m| m["params"]["name"] == "plain")
        .unwrap();
    assert!(plain["params"].get("task").is_none());
}

#[test]
fn failed_tasks_are_typed_errors_and_input_required_waits_on_tasks_result() {
    let s = tasks();
    match s.call_tool("failing_job", json!({})) {
        Err(McpError::Task {
            status, message, ..
        }) => {
            assert_eq!(status, "failed");
            assert_eq!(message.as_deref(), Some("disk on fire"));
        }
        other => panic!("expected a failed task, got {other:?}"),
    }
    // Without a handler that could supply the input, input_required is a
    // typed error at once and the task is cancelled.
    let t = std::time::Instant::now();
    match s.call_tool("input_job", json!({})) {
        Err(McpError::Task { status, .. }) => assert_eq!(status, "input_required"),
        other => panic!("expected input_required, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(10));
    let msgs = received(&s);
    assert!(!msgs.iter().any(|m| m["method"] == "tasks/result"));
    // The failed task is not cancelled; the abandoned input_required one is.
    assert_eq!(
        msgs.iter()
            .filter(|m| m["method"] == "tasks/cancel")
            .count(),
        1
    );
}

#[test]
fn cancelling_a_task_wait_sends_tasks_cancel() {
    let s = Arc::new(tasks());
    let token = CancelToken::new();
    let (polled_tx, polled_rx) = crossbeam_channel::bounded(8);
    let opts = CallOptions::new()
        .cancel_token(token.clone())
        .on_progress(move |_| {
            let _ = polled_tx.try_send(());
        });
    let caller = {
        let s = Arc::clone(&s);
        std::thread::spawn(move || s.call_tool_with("forever_job", json!({}), &opts))
    };
    // Wait for the first poll, then cancel between polls.
    polled_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the task was polled");
    token.cancel();
    assert!(matches!(
        caller.join().unwrap(),
        Err(McpError::Cancelled { .. })
    ));
    let msgs = received(&*s);
    let cancel = msgs
        .iter()
        .find(|m| m["method"] == "tasks/cancel")
        .expect("tasks/cancel sent");
    let get = msgs.iter().find(|m| m["method"] == "tasks/get").unwrap();
    assert_eq!(cancel["params"]["taskId"], get["params"]["taskId"]);
}

#[test]
fn a_task_tool_called_before_listing_runs_without_a_task() {
    let s = McpServer::connect(
        &script_config("tasks", "task_demo_mcp.py", &[]),
        test_options(),
    )
    .unwrap();
    assert_eq!(
        text(s.call_tool("long_job", json!({})).unwrap()),
        "ran without task"
    );
}

#[test]
fn with_a_handler_input_required_waits_on_tasks_result() {
    // With an elicitation handler the client waits on tasks/result, where
    // the server would send its requests; this server never asks, so the
    // wait times out and the task is cancelled.
    let opts = test_options().elicitation_handler(|_: &skald_mcp::ElicitationRequest| {
        skald_mcp::ElicitationResponse::Cancel
    });
    let s = McpServer::connect(&script_config("tasks", "task_demo_mcp.py", &[]), opts).unwrap();
    s.list_tools().unwrap();
    let call = CallOptions::new().timeout(Duration::from_millis(500));
    match s.call_tool_with("input_job", json!({}), &call) {
        Err(McpError::CallTimeout { method, .. }) => assert_eq!(method, "tasks/result"),
        other => panic!("expected a tasks/result timeout, got {other:?}"),
    }
    let msgs = received(&s);
    assert!(msgs.iter().any(|m| m["method"] == "tasks/result"));
    assert_eq!(
        msgs.iter()
            .filter(|m| m["method"] == "tasks/cancel")
            .count(),
        1
    );
}
