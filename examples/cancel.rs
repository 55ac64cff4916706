//! Cancelling a call from another thread: the server is told with
//! `notifications/cancelled`, and the caller gets `McpError::Cancelled` at once.
//!
//! ```sh
//! cargo run --example cancel
//! ```

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use skald_mcp::{
    CallOptions, CancelToken, ClientOptions, McpError, McpServer, McpServerClient, McpServerConfig,
};

fn main() -> Result<(), McpError> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo_mcp_server.py");
    let server = Arc::new(McpServer::connect(
        &McpServerConfig::stdio("demo", "python3", [script]),
        ClientOptions::default(),
    )?);
    let token = CancelToken::new();
    let caller = {
        let (server, token) = (Arc::clone(&server), token.clone());
        std::thread::spawn(move || {
            let opts = CallOptions::new().cancel_token(token);
            server.call_tool_with("slow", json!({"seconds": 60}), &opts)
        })
    };
    // A user presses "stop" half a second later.
    std::thread::sleep(Duration::from_millis(500));
    token.cancel_with("user pressed stop");
    match caller.join().expect("caller thread") {
        Err(e @ McpError::Cancelled { .. }) => println!("{e}"),
        other => println!("unexpected: {other:?}"),
    }
    // The connection is still good.
    println!(
        "echo → {}",
        server
            .call_tool("echo", json!({"text": "still here"}))?
            .to_text()
    );
    server.close()
}
