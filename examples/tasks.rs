//! Task-mode tool calls: the server defers the work and the client polls
//! `tasks/get` until it ends, reporting each poll.
//!
//! ```sh
//! cargo run --example tasks
//! ```

use serde_json::json;
use skald_mcp::{
    CallOptions, ClientOptions, McpError, McpServer, McpServerClient, McpServerConfig,
};

fn main() -> Result<(), McpError> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/task_demo_mcp.py");
    let server = McpServer::connect(
        &McpServerConfig::stdio("tasks", "python3", [script]),
        ClientOptions::default(),
    )?;
    // Listing tells the client which tools want to run as tasks.
    for t in server.list_tools()? {
        println!("  {:<12} taskSupport={}", t.name, t.task_support.as_str());
    }
    let opts = CallOptions::new().on_progress(|p| {
        println!(
            "  poll {}: {}",
            p.progress,
            p.message.as_deref().unwrap_or("")
        );
    });
    println!(
        "long_job → {}",
        server
            .call_tool_with("long_job", json!({"polls": 3}), &opts)?
            .to_text()
    );
    match server.call_tool("failing_job", json!({})) {
        Err(e @ McpError::Task { .. }) => println!("failing_job → {e}"),
        other => println!("failing_job → unexpected {other:?}"),
    }
    server.close()
}
