//! Resources, resource templates, prompts and completion against a server
//! built on the official Python SDK.

mod common;

use common::*;
use skald_mcp::{
    CompletionRef, EraPreference, McpServer, McpServerClient, McpServerConfig, PromptContent,
    ResourceContents, Role, Root, SamplingRequest, SamplingResponse,
};

/// The SDK resources server.
fn config() -> McpServerConfig {
    McpServerConfig::stdio(
        "res",
        "python3",
        [repo_path("tests/servers/fastmcp_resources_server.py")],
    )
}

fn server() -> McpServer {
    let cfg = config();
    McpServer::connect(&cfg, test_options()).expect("server starts")
}

#[test]
fn resources_and_templates() {
    if !python_sdk_available() {
        return;
    }
    let s = server();
    assert!(s.server_capabilities().unwrap().has("resources"));
    let mut uris: Vec<String> = s
        .list_resources()
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    uris.sort();
    assert_eq!(uris, ["memo://blob", "memo://readme"]);
    let t = s.list_resource_templates().unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].uri_template, "greeting://{name}");

    let c = s.read_resource("memo://readme").unwrap();
    assert!(
        matches!(&c[0], ResourceContents::Text { text, .. } if text == "hello resources"),
        "{c:?}"
    );
    let c = s.read_resource("memo://blob").unwrap();
    assert!(
        matches!(&c[0], ResourceContents::Blob { data, .. } if *data == (0u8..8).collect::<Vec<_>>()),
        "{c:?}"
    );
    let c = s.read_resource("greeting://world").unwrap();
    assert_eq!(c[0].bytes(), b"hello world");
    assert!(matches!(
        s.read_resource("memo://missing"),
        Err(skald_mcp::McpError::Rpc { .. })
    ));
}

#[test]
fn prompts_and_completion() {
    if !python_sdk_available() {
        return;
    }
    let s = server();
    let p = s.list_prompts().unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].name, "review");
    let code = p[0].arguments.iter().find(|a| a.name == "code").unwrap();
    assert!(code.required);
    let r = s
        .get_prompt("review", &[("code", "fn x() {}"), ("style", "verbose")])
        .unwrap();
    assert_eq!(r.messages.len(), 1);
    assert_eq!(r.messages[0].role, Role::User);
    assert_eq!(
        r.messages[0].content,
        PromptContent::Text("Review (verbose): fn x() {}".into())
    );

    let c = s
        .complete(&CompletionRef::Prompt("review".into()), "style", "t", &[])
        .unwrap();
    assert_eq!(c.values, ["terse"]);
    let c = s
        .complete(
            &CompletionRef::ResourceTemplate("greeting://{name}".into()),
            "name",
            "a",
            &[],
        )
        .unwrap();
    assert_eq!(c.values, ["ada", "alan"]);
}

#[test]
fn sampling_and_roots_through_the_sdk() {
    if !python_sdk_available() {
        return;
    }
    let cfg = config();
    let opts = test_options()
        .sampling_handler(|req: &SamplingRequest| {
            assert_eq!(req.system_prompt.as_deref(), Some("be brief"));
            assert_eq!(req.max_tokens, 50);
            let PromptContent::Text(q) = &req.messages[0].content[0] else {
                return Err("expected text".into());
            };
            Ok(SamplingResponse::text("test-model", format!("echo {q}")))
        })
        .roots_provider(vec![
            Root::new("file:///work/a", "a"),
            Root::new("file:///work/b", "b"),
        ]);
    // The SDK server's tools ask with server-to-client requests (its
    // `ctx.session`), which only the legacy era has: the client is pinned.
    let s = McpServer::connect(&cfg, opts.era(EraPreference::Legacy)).unwrap();
    assert_eq!(
        text(
            s.call_tool("ask_llm", serde_json::json!({"question": "2+2?"}))
                .unwrap()
        ),
        "test-model: echo 2+2?"
    );
    assert_eq!(
        text(
            s.call_tool("list_client_roots", serde_json::json!({}))
                .unwrap()
        ),
        "file:///work/a,file:///work/b"
    );
    s.notify_roots_changed().unwrap();

    // A handler that refuses: the server sees a JSON-RPC error, the tool fails.
    let opts = test_options()
        .era(EraPreference::Legacy)
        .sampling_handler(|_: &SamplingRequest| Err("user rejected sampling request".into()));
    let s = McpServer::connect(&cfg, opts).unwrap();
    let r = s.call_tool("ask_llm", serde_json::json!({"question": "x"}));
    assert!(r.is_err() || text(r.unwrap()).contains("rejected"));

    // Without handlers the capabilities are not advertised and the requests fail.
    let s = McpServer::connect(&cfg, test_options()).unwrap();
    assert!(s
        .call_tool("list_client_roots", serde_json::json!({}))
        .is_err());
}

#[test]
fn list_changed_from_the_sdk_refreshes_the_cache() {
    if !python_sdk_available() {
        return;
    }
    for pref in [EraPreference::Auto, EraPreference::Legacy] {
        list_changed_in(pref);
    }
}

/// Legacy: the server's notification on the session; modern: on the
/// `subscriptions/listen` stream the client opened itself.
fn list_changed_in(pref: EraPreference) {
    let cfg = config();
    let s = McpServer::connect(&cfg, test_options().era(pref)).expect("server starts");
    let before = s.list_tools().unwrap().len();
    assert_eq!(
        text(
            s.call_tool("add_dynamic_tool", serde_json::json!({}))
                .unwrap()
        ),
        "added"
    );
    assert!(
        eventually(std::time::Duration::from_secs(10), || s
            .cached_tools()
            .is_some_and(|t| t.iter().any(|t| t.name == "dynamic"))),
        "the refresh did not pick up the SDK's new tool"
    );
    assert_eq!(s.cached_tools().unwrap().len(), before + 1);
    assert_eq!(
        text(s.call_tool("dynamic", serde_json::json!({})).unwrap()),
        "dynamic"
    );
}

/// A resource subscription in the modern era: `resources/subscribe` becomes
/// the filter of the `subscriptions/listen` stream, acknowledged before the
/// call returns; the update arrives tagged with the subscription id.
#[test]
fn resource_subscription_over_subscriptions_listen() {
    if !python_sdk_available() {
        return;
    }
    let cfg = config();
    let (ntx, nrx) = crossbeam_channel::unbounded();
    let s = McpServer::connect(&cfg, test_options().notifications(ntx)).expect("server starts");
    assert_eq!(s.initialize().unwrap().era, skald_mcp::Era::Modern);
    s.subscribe_resource("memo://readme").unwrap();
    assert_eq!(
        text(
            s.call_tool(
                "touch_resource",
                serde_json::json!({"uri": "memo://readme"})
            )
            .unwrap()
        ),
        "touched"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let n = nrx
            .recv_deadline(deadline)
            .expect("resources/updated arrives");
        if n.method == "notifications/resources/updated" {
            assert_eq!(n.params["uri"], "memo://readme");
            assert!(n.params["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number());
            break;
        }
    }
    // Unsubscribing reopens the stream without the URI.
    s.unsubscribe_resource("memo://readme").unwrap();
    s.close().unwrap();
}
