//! Elicitation: a server asks for a password in the middle of a call.
//!
//! ```sh
//! cargo run --example elicitation
//! ```
//! The handler here answers from code; the `skald-mcp` binary's handler
//! prompts on the terminal instead, with masked input for secret fields.

use std::time::Duration;

use serde_json::{json, Map};
use skald_mcp::{
    ClientOptions, ElicitationForm, ElicitationRequest, ElicitationResponse, McpError, McpServer,
    McpServerClient, McpServerConfig,
};

fn main() -> Result<(), McpError> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/elicitation_demo_mcp.py"
    );
    let cfg = McpServerConfig::stdio("elicit", "python3", [script]);
    let options = ClientOptions::default()
        .elicitation_deadline(Duration::from_secs(60))
        .elicitation_handler(|req: &ElicitationRequest| {
            println!("server {} asks: {}", req.server, req.message);
            match &req.form {
                ElicitationForm::Confirm => ElicitationResponse::Accept(Map::new()),
                ElicitationForm::Fields(fields) => {
                    let mut values = Map::new();
                    for f in fields {
                        // A real host would ask the user, masking f.secret fields.
                        println!("  field {} (secret: {})", f.name, f.secret);
                        values.insert(f.name.clone(), json!("correct horse battery staple"));
                    }
                    ElicitationResponse::Accept(values)
                }
            }
        });
    let server = McpServer::connect(&cfg, options)?;
    println!("sudo → {}", server.call_tool("sudo", json!({}))?.to_text());
    println!(
        "confirm → {}",
        server.call_tool("confirm", json!({}))?.to_text()
    );
    server.close()
}
