//! Resources, resource templates, prompts and completion against a server
//! built on the official Python SDK.

mod common;

use common::*;
use skald_mcp::{
    CompletionRef, McpServer, McpServerClient, McpServerConfig, PromptContent, ResourceContents,
    Role,
};

fn server() -> McpServer {
    let cfg = McpServerConfig::stdio(
        "res",
        "python3",
        [repo_path("tests/servers/fastmcp_resources_server.py")],
    );
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
