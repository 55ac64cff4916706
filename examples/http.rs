//! Streamable HTTP: connect to a server by URL, list and call its tools.
//!
//! ```sh
//! cargo run --example http -- http://127.0.0.1:8000/mcp [TOOL [JSON]]
//! ```
//! With a bearer token: `MCP_TOKEN=... cargo run --example http -- URL`
//! (read through `${MCP_TOKEN}` interpolation, so it never sits in the config).

use skald_mcp::{ClientOptions, McpError, McpHttpServer, McpServerClient, McpServerConfig};

fn main() -> Result<(), McpError> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: http URL [TOOL [JSON]]");
        std::process::exit(2);
    };
    let mut cfg = McpServerConfig::http("remote", url);
    if std::env::var_os("MCP_TOKEN").is_some() {
        cfg = cfg.with_api_key("${MCP_TOKEN}");
    }
    let server = McpHttpServer::connect(&cfg, ClientOptions::default())?;
    let info = server.initialize()?;
    println!(
        "{} {} (protocol {}, session {:?})",
        info.server_info.name,
        info.server_info.version,
        info.protocol_version,
        server.session_id()
    );
    for t in server.list_tools()? {
        println!("  {:<24} {}", t.name, t.description.unwrap_or_default());
    }
    if let Some(tool) = args.next() {
        let arguments = match args.next() {
            Some(j) => serde_json::from_str(&j).map_err(|e| McpError::InvalidInput {
                server: "remote".into(),
                message: format!("bad JSON: {e}"),
            })?,
            None => serde_json::json!({}),
        };
        println!("{tool} → {}", server.call_tool(&tool, arguments)?.to_text());
    }
    server.close()
}
