//! The 2026-07-28 era's ways of asking the client for input and of
//! deferring work, against the bundled demo server in its modern mode:
//! multi round-trip requests (several rounds, several kinds at once, the
//! `requestState` echoed exactly or not at all, a server that never stops
//! asking, parallel calls that never see each other's state, handlers that
//! cannot answer) and the tasks extension (`io.modelcontextprotocol/tasks`:
//! polling to the inline result, input through `tasks/update`, failure,
//! cancellation and the deadline, each abandoned task cancelled).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use skald_mcp::{
    CallOptions, CancelToken, ClientOptions, ElicitationRequest, ElicitationResponse, McpError,
    McpServer, McpServerClient, McpServerConfig, PromptContent, Root, SamplingRequest,
    SamplingResponse,
};

fn modern_demo() -> McpServerConfig {
    script_config("demo-modern", "demo_mcp_server.py", &["--era", "modern"])
}

/// An elicitation handler that answers `{"v": <the question>}`.
fn echoing_options() -> ClientOptions {
    test_options().elicitation_handler(|req: &ElicitationRequest| {
        let mut m = serde_json::Map::new();
        m.insert("v".into(), json!(req.message));
        ElicitationResponse::Accept(m)
    })
}

fn calls_of(s: &dyn McpServerClient, tool: &str) -> Vec<Value> {
    received(s)
        .into_iter()
        .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == tool)
        .collect()
}

#[test]
fn several_rounds_echo_the_state_exactly_and_only_when_sent() {
    let s = McpServer::connect(&modern_demo(), echoing_options()).unwrap();
    let r = text(
        s.call_tool("mrtr", json!({"rounds": 4, "tag": "a"}))
            .unwrap(),
    );
    assert_eq!(
        r,
        r#"mrtr a: rounds=4 q1=accept:{"v": "Round 1 (a)?"} q2=accept:{"v": "Round 2 (a)?"} q3=accept:{"v": "Round 3 (a)?"} q4=accept:{"v": "Round 4 (a)?"}"#
    );
    let calls = calls_of(&s, "mrtr");
    assert_eq!(calls.len(), 5, "one request and four retries");
    let mut ids: Vec<_> = calls.iter().map(|c| c["id"].to_string()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 5, "every retry has a new id: {ids:?}");
    // Rounds 1 and 3 sent a requestState (echoed byte for byte, with its
    // escapes); rounds 2 and 4 sent none, and the retry carries none.
    assert!(calls[0]["params"].get("requestState").is_none());
    assert_eq!(calls[1]["params"]["requestState"], "s1:a \u{e9}\\\"");
    assert!(calls[2]["params"].get("requestState").is_none());
    assert_eq!(calls[3]["params"]["requestState"], "s3:a \u{e9}\\\"");
    assert!(calls[4]["params"].get("requestState").is_none());
    // Each retry carries the answers of its round only.
    let keys = |c: &Value| -> Vec<String> {
        c["params"]["inputResponses"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(keys(&calls[4]), ["q4"]);
}

#[test]
fn elicitation_sampling_and_roots_in_one_round() {
    let opts = echoing_options()
        .sampling_handler(|req: &SamplingRequest| {
            let PromptContent::Text(q) = &req.messages[0].content[0] else {
                return Err("expected text".into());
            };
            Ok(SamplingResponse::text("m", format!("sampled<{q}>")))
        })
        .roots_provider(vec![Root::new("file:///w", "w")]);
    let s = McpServer::connect(&modern_demo(), opts).unwrap();
    let r = text(
        s.call_tool("mrtr", json!({"rounds": 1, "tag": "z", "all": true}))
            .unwrap(),
    );
    assert_eq!(
        r,
        r#"mrtr z: rounds=1 q1=accept:{"v": "Round 1 (z)?"} sampled=sampled<Say hi to z> roots=file:///w"#
    );
}

#[test]
fn a_server_that_never_stops_asking_is_bounded() {
    let s = McpServer::connect(&modern_demo(), echoing_options()).unwrap();
    let e = s.call_tool("mrtr", json!({"forever": true})).unwrap_err();
    assert!(
        matches!(&e, McpError::InputRequired { requests, .. } if requests == &["elicitation/create"]),
        "{e:?}"
    );
    assert_eq!(
        calls_of(&s, "mrtr").len(),
        skald_mcp::limits::MAX_INPUT_ROUNDS + 1
    );
}

#[test]
fn parallel_calls_never_see_each_other_state() {
    const N: usize = 4;
    // Every first-round handler waits (bounded) until all calls have asked,
    // so the rounds of the calls really interleave on the one connection.
    let gate = Arc::new((parking_lot::Mutex::new(0usize), parking_lot::Condvar::new()));
    let g = Arc::clone(&gate);
    let opts = test_options().elicitation_handler(move |req: &ElicitationRequest| {
        if req.message.starts_with("Round 1 ") {
            let (count, cv) = &*g;
            let mut n = count.lock();
            *n += 1;
            cv.notify_all();
            let deadline = Instant::now() + Duration::from_secs(10);
            while *n < N && !cv.wait_until(&mut n, deadline).timed_out() {}
        }
        let mut m = serde_json::Map::new();
        m.insert("v".into(), json!(req.message));
        ElicitationResponse::Accept(m)
    });
    let s = Arc::new(McpServer::connect(&modern_demo(), opts).unwrap());
    let handles: Vec<_> = (0..N)
        .map(|i| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                let tag = format!("t{i}");
                let r = text(
                    s.call_tool("mrtr", json!({"rounds": 3, "tag": tag}))
                        .unwrap(),
                );
                (tag, r)
            })
        })
        .collect();
    for h in handles {
        let (tag, r) = h.join().unwrap();
        assert_eq!(*gate.0.lock(), N, "the calls did not overlap");
        assert!(r.starts_with(&format!("mrtr {tag}: rounds=3 ")), "{r}");
        for k in 1..=3 {
            assert!(
                r.contains(&format!(r#"q{k}=accept:{{"v": "Round {k} ({tag})?"}}"#)),
                "{tag} got another call's answers: {r}"
            );
        }
    }
}

#[test]
fn handlers_that_cannot_answer_decline_or_fail_never_hang() {
    // An elicitation handler that does not answer in time: the client
    // answers `cancel` for it, and the server sees that.
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
    let opts = test_options()
        .elicitation_deadline(Duration::from_millis(300))
        .elicitation_handler(move |_: &ElicitationRequest| {
            let _ = release_rx.recv_timeout(Duration::from_secs(10));
            ElicitationResponse::Decline
        });
    let s = McpServer::connect(&modern_demo(), opts).unwrap();
    assert_eq!(
        text(s.call_tool("mrtr", json!({"tag": "slow"})).unwrap()),
        "mrtr slow: rounds=1 q1=cancel:null"
    );
    drop(release_tx);

    // A sampling handler that refuses: there is no refusal in an
    // InputResponse, so the call fails with a typed error naming it.
    let opts = echoing_options()
        .sampling_handler(|_: &SamplingRequest| Err("user rejected sampling".into()))
        .roots_provider(vec![Root::new("file:///w", "w")]);
    let s = McpServer::connect(&modern_demo(), opts).unwrap();
    let e = s.call_tool("mrtr", json!({"all": true})).unwrap_err();
    assert!(
        matches!(&e, McpError::InvalidInput { message, .. }
            if message.contains("sampling/createMessage") && message.contains("user rejected")),
        "{e:?}"
    );

    // No handler at all: the capability is not declared, and a server that
    // asks anyway fails the call at once.
    let s = McpServer::connect(&modern_demo(), test_options()).unwrap();
    let e = s.call_tool("mrtr", json!({})).unwrap_err();
    assert!(matches!(e, McpError::InputRequired { .. }), "{e:?}");
    let caps =
        &calls_of(&s, "mrtr")[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert!(caps.get("elicitation").is_none(), "{caps}");
}

// ---- the tasks extension ------------------------------------------------------

fn task_requests(s: &dyn McpServerClient) -> Vec<(String, Value)> {
    received(s)
        .into_iter()
        .filter(|m| {
            m["method"]
                .as_str()
                .is_some_and(|x| x.starts_with("tasks/"))
        })
        .map(|m| {
            (
                m["method"].as_str().unwrap().to_owned(),
                m["params"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_task_is_polled_to_its_inline_result() {
    let s = McpServer::connect(&modern_demo(), test_options()).unwrap();
    let r = s.call_tool("task_job", json!({"steps": 2})).unwrap();
    assert_eq!(text(r), "job done after 2 polls and 0 updates");
    let call = &calls_of(&s, "task_job")[0];
    assert!(
        call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
            ["io.modelcontextprotocol/tasks"]
            .is_object(),
        "the extension is declared per request: {call}"
    );
    let tasks = task_requests(&s);
    let methods: Vec<_> = tasks.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        ["tasks/get", "tasks/get"],
        "no tasks/result, no cancel"
    );
    assert!(
        tasks[0].1["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string(),
        "task requests are modern requests too"
    );
}

#[test]
fn a_task_that_needs_input_gets_it_through_tasks_update() {
    let asked = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let a = Arc::clone(&asked);
    let opts = test_options().elicitation_handler(move |req: &ElicitationRequest| {
        a.lock().push(req.message.clone());
        let mut m = serde_json::Map::new();
        m.insert("name".into(), json!("Luca"));
        ElicitationResponse::Accept(m)
    });
    let s = McpServer::connect(&modern_demo(), opts).unwrap();
    let r = s
        .call_tool("task_job", json!({"steps": 1, "ask": true}))
        .unwrap();
    assert_eq!(text(r), "job done, Luca after 2 polls and 1 updates");
    assert_eq!(*asked.lock(), ["Who is asking?"]);
    let updates: Vec<_> = task_requests(&s)
        .into_iter()
        .filter(|(m, _)| m == "tasks/update")
        .collect();
    assert_eq!(updates.len(), 1);
    assert_eq!(
        updates[0].1["inputResponses"]["name"],
        json!({"action": "accept", "content": {"name": "Luca"}})
    );

    // Without a handler the task cannot get its input: it is cancelled and
    // the call fails at once, naming what was asked.
    let s = McpServer::connect(&modern_demo(), test_options()).unwrap();
    let e = s
        .call_tool("task_job", json!({"steps": 1, "ask": true}))
        .unwrap_err();
    assert!(matches!(e, McpError::InputRequired { .. }), "{e:?}");
    assert_eq!(
        task_requests(&s).last().map(|(m, _)| m.as_str()),
        Some("tasks/cancel")
    );
}

#[test]
fn a_failed_task_carries_its_error() {
    let s = McpServer::connect(&modern_demo(), test_options()).unwrap();
    let e = s.call_tool("task_job", json!({"fail": true})).unwrap_err();
    assert!(
        matches!(&e, McpError::Task { status, message: Some(m), .. }
            if status == "failed" && m.contains("API rate limit exceeded")),
        "{e:?}"
    );
    assert!(task_requests(&s).iter().all(|(m, _)| m != "tasks/cancel"));
}

#[test]
fn an_abandoned_task_is_cancelled() {
    // The caller cancels while the task runs.
    let s = McpServer::connect(&modern_demo(), test_options()).unwrap();
    let token = CancelToken::new();
    let opts = CallOptions::new()
        .cancel_token(token.clone())
        .on_progress(move |_| token.cancel_with("enough"));
    let e = s
        .call_tool_with("task_job", json!({"forever": true}), &opts)
        .unwrap_err();
    assert!(
        matches!(&e, McpError::Cancelled { reason, .. } if reason == "enough"),
        "{e:?}"
    );
    let tasks = task_requests(&s);
    assert_eq!(tasks.last().map(|(m, _)| m.as_str()), Some("tasks/cancel"));
    assert!(tasks.last().unwrap().1["taskId"].is_string());

    // The task outlives its ttl: the client gives up and cancels it.
    let s = McpServer::connect(&modern_demo(), test_options()).unwrap();
    let e = s
        .call_tool("task_job", json!({"forever": true, "ttl_ms": 1200}))
        .unwrap_err();
    assert!(
        matches!(&e, McpError::Task { status, .. } if status == "deadline"),
        "{e:?}"
    );
    assert_eq!(
        task_requests(&s).last().map(|(m, _)| m.as_str()),
        Some("tasks/cancel")
    );
}

// ---- the elicitation inbox ------------------------------------------------------

/// The host's user answers on another thread (a web page, a chat): every
/// server's question reaches the manager's inbox, legacy and modern alike,
/// the password field is marked for masking, and the calls go on once the
/// answers are in.
#[test]
fn the_inbox_collects_questions_of_both_eras_and_any_thread_answers() {
    use skald_mcp::manager::{ManagerConfig, McpManager};
    let dir = std::env::temp_dir().join(format!("skald-inbox-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut mc = ManagerConfig::in_dir(&dir).with_elicitation_inbox();
    mc.client = test_options();
    let m = Arc::new(McpManager::open(mc).unwrap());
    m.register(script_config("legacy", "elicitation_demo_mcp.py", &[]))
        .unwrap();
    m.register(script_config(
        "modern",
        "demo_mcp_server.py",
        &["--era", "modern"],
    ))
    .unwrap();

    let calls: Vec<_> = [
        ("mcp__legacy__sudo", json!({})),
        ("mcp__modern__mrtr", json!({"tag": "inbox", "quiet": true})),
        ("mcp__modern__task_job", json!({"ask": true})),
    ]
    .into_iter()
    .map(|(tool, args)| {
        let m = Arc::clone(&m);
        std::thread::spawn(move || m.call(tool, args).map(|r| r.to_wire()))
    })
    .collect();

    let inbox = m.elicitation_inbox().unwrap();
    let mut answered = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while answered.len() < 3 && Instant::now() < deadline {
        for q in inbox.wait_pending(Duration::from_secs(1)) {
            let field = q.form.fields()[0].clone();
            if q.message == "Enter sudo password" {
                assert!(field.secret, "the password field is marked for masking");
            }
            let mut values = serde_json::Map::new();
            values.insert(field.name.clone(), json!("s3cret"));
            inbox.accept(q.id, values).unwrap();
            answered.push((q.server.clone(), q.message.clone()));
        }
    }
    answered.sort();
    assert_eq!(
        answered,
        [
            ("legacy".to_string(), "Enter sudo password".to_string()),
            ("modern".to_string(), "Round 1 (inbox)?".to_string()),
            ("modern".to_string(), "Who is asking?".to_string()),
        ]
    );
    let results: Vec<String> = calls
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    assert_eq!(
        results,
        [
            "accepted: 6 chars",
            r#"mrtr inbox: rounds=1 q1=accept:{"v": 6}"#,
            "job done, s3cret after 2 polls and 1 updates",
        ]
    );
    assert!(inbox.pending().is_empty());
    m.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
