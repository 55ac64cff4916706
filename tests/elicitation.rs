//! Elicitation over stdio: accept, decline, the deadline, a panicking
//! handler, the timeout re-arm, and secrets kept out of every log line.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Map, Value};
use skald_mcp::{
    CallOptions, ClientOptions, ElicitationForm, ElicitationRequest, ElicitationResponse,
    McpServer, McpServerClient,
};

const SECRET: &str = "hunter2-SECRET-do-not-log";

fn server(opts: ClientOptions) -> McpServer {
    McpServer::connect(
        &script_config("elicit", "elicitation_demo_mcp.py", &[]),
        opts,
    )
    .unwrap()
}

fn accept_password(req: &ElicitationRequest) -> ElicitationResponse {
    let field = &req.form.fields()[0];
    assert!(field.secret, "password fields are masked");
    let mut m = Map::new();
    m.insert(field.name.clone(), json!(SECRET));
    ElicitationResponse::Accept(m)
}

#[test]
fn accept_reaches_the_server_and_the_secret_is_never_logged() {
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let s = server(
        test_options()
            .logs(ltx)
            .elicitation_handler(accept_password),
    );
    let r = text(s.call_tool("sudo", json!({})).unwrap());
    assert_eq!(r, format!("accepted: {} chars", SECRET.len()));
    let reply: Value = serde_json::from_str(&text(
        s.call_tool("last_elicitation_reply", json!({})).unwrap(),
    ))
    .unwrap();
    assert_eq!(
        reply,
        json!({"action": "accept", "content": {"password": SECRET}})
    );
    // The capability was advertised because a handler is installed.
    let msgs = received(&s);
    let init = msgs.iter().find(|m| m["method"] == "initialize").unwrap();
    assert_eq!(init["params"]["capabilities"]["elicitation"], json!({}));
    s.close().unwrap();
    let lines: Vec<_> = lrx.try_iter().collect();
    assert!(!lines.is_empty());
    for l in lines {
        assert!(!l.text.contains(SECRET), "secret in a log line: {l:?}");
    }
}

#[test]
fn confirm_and_decline() {
    let s = server(
        test_options().elicitation_handler(|req: &ElicitationRequest| {
            if req.form == ElicitationForm::Confirm {
                assert_eq!(req.message, "Proceed?");
                ElicitationResponse::Accept(Map::new())
            } else {
                ElicitationResponse::Decline
            }
        }),
    );
    assert_eq!(
        text(s.call_tool("confirm", json!({})).unwrap()),
        "confirmed"
    );
    assert_eq!(text(s.call_tool("sudo", json!({})).unwrap()), "declined");
}

#[test]
fn deadline_answers_cancel() {
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(1);
    let opts = test_options()
        .elicitation_deadline(Duration::from_millis(300))
        .elicitation_handler(move |_: &ElicitationRequest| {
            // A user who never answers (bounded, so the thread ends).
            let _ = release_rx.recv_timeout(Duration::from_secs(30));
            ElicitationResponse::Accept(Map::new())
        });
    let s = server(opts);
    assert_eq!(text(s.call_tool("sudo", json!({})).unwrap()), "cancelled");
    drop(release_tx);
}

#[test]
fn a_panicking_handler_answers_cancel() {
    let s = server(test_options().elicitation_handler(
        |_: &ElicitationRequest| -> ElicitationResponse { panic!("handler bug") },
    ));
    assert_eq!(text(s.call_tool("sudo", json!({})).unwrap()), "cancelled");
    assert!(s.is_connected());
}

#[test]
fn a_pending_elicitation_suspends_the_call_timeout() {
    // The user takes longer than the call timeout; the call must not time out.
    let opts = test_options().elicitation_handler(|req: &ElicitationRequest| {
        std::thread::sleep(Duration::from_millis(900)); // a slow human
        accept_password(req)
    });
    let s = server(opts);
    let call = CallOptions::new().timeout(Duration::from_millis(300));
    let r = text(s.call_tool_with("sudo", json!({}), &call).unwrap());
    assert!(r.starts_with("accepted"), "{r}");
}

struct UrlCapable;
impl skald_mcp::ElicitationHandler for UrlCapable {
    fn elicit(&self, req: &ElicitationRequest) -> ElicitationResponse {
        match &req.mode {
            skald_mcp::ElicitationMode::Url {
                url,
                elicitation_id,
            } => {
                assert_eq!(url, "https://auth.example.test/authorize?x=1");
                assert!(elicitation_id.as_deref().unwrap().starts_with("url-"));
                ElicitationResponse::Accept(Map::new())
            }
            skald_mcp::ElicitationMode::Form => ElicitationResponse::Decline,
        }
    }
    fn supports_url(&self) -> bool {
        true
    }
}

#[test]
fn url_mode_reaches_a_handler_that_supports_it() {
    let s = server(test_options().elicitation_handler(UrlCapable));
    assert_eq!(
        text(s.call_tool("open_url", json!({})).unwrap()),
        "url accept"
    );
    let reply: Value = serde_json::from_str(&text(
        s.call_tool("last_elicitation_reply", json!({})).unwrap(),
    ))
    .unwrap();
    // Out-of-band answers carry no content.
    assert_eq!(reply, json!({"action": "accept"}));
    let msgs = received(&s);
    let init = msgs.iter().find(|m| m["method"] == "initialize").unwrap();
    assert_eq!(
        init["params"]["capabilities"]["elicitation"],
        json!({"form": {}, "url": {}})
    );
}
