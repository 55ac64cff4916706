//! The client under test for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, run by `tests/conformance.sh`).
//!
//! The suite starts a test server per scenario and runs this program with
//! the server's URL as the last argument and the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO` (extra data, for some scenarios, as JSON in
//! `MCP_CONFORMANCE_CONTEXT`). The program does what the scenario expects,
//! through the library's public API only, and exits non-zero on any error.
//!
//! ```sh
//! cargo build --example conformance_client
//! MCP_CONFORMANCE_SCENARIO=initialize target/debug/examples/conformance_client http://localhost:3000/mcp
//! ```
//! Lifecycle and log lines go to stderr (the suite saves it as `stderr.txt`).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use skald_mcp::{
    ClientOptions, ElicitationRequest, ElicitationResponse, McpError, McpLogLine, McpServerClient,
    McpServerConfig, McpTool,
};

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client <server-url> (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    eprintln!("scenario {scenario:?} against {url}");

    // Lifecycle and log lines, printed as they come; what is left is
    // drained below, once the connection is closed.
    let (logs_tx, logs_rx) = crossbeam_channel::unbounded::<McpLogLine>();
    let printer = logs_rx.clone();
    std::thread::Builder::new()
        .name("conformance-logs".into())
        .spawn(move || {
            for line in printer {
                eprintln!("{}", log_text(&line));
            }
        })
        .expect("log thread");
    // Timeouts well inside the suite's 30 s per scenario.
    let mut options = ClientOptions::default()
        .start_timeout(Duration::from_secs(10))
        .call_timeout(Duration::from_secs(20))
        .logs(logs_tx);
    // The suite names the wire it runs a scenario at; the SDKs' clients
    // take it as their protocol version (2025-11-25: the initialize
    // handshake; 2026-07-28: stateless). CONFORMANCE_ERA=auto leaves the
    // choice to the client's own era detection instead.
    match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        Ok(v) if !v.is_empty() && std::env::var("CONFORMANCE_ERA").as_deref() != Ok("auto") => {
            eprintln!("protocol version {v} (from MCP_CONFORMANCE_PROTOCOL_VERSION)");
            options = options.protocol_version(v);
        }
        _ => eprintln!("protocol version: automatic"),
    }

    let outcome = run(&scenario, &url, &context, options);
    // Holding the lock keeps the printer thread from starting a line that
    // exiting would cut off.
    let mut err = std::io::stderr().lock();
    for line in logs_rx.try_iter() {
        let _ = writeln!(err, "{}", log_text(&line));
    }
    let code = match outcome {
        Ok(()) => {
            let _ = writeln!(err, "scenario {scenario:?} done");
            0
        }
        Err(e) => {
            let _ = writeln!(err, "scenario {scenario:?} failed: {e}");
            1
        }
    };
    let _ = err.flush();
    std::process::exit(code)
}

fn log_text(line: &McpLogLine) -> String {
    format!("[{}] {}", line.tag.as_str(), line.text)
}

/// The tool the scenario's server is known to offer, checked against the
/// listing (a missing one is called anyway, so the server records the call).
fn tool<'a>(tools: &[McpTool], name: &'a str) -> &'a str {
    if !tools.iter().any(|t| t.name == name) {
        eprintln!("the server did not list {name:?}; calling it anyway");
    }
    name
}

fn connect(url: &str, options: ClientOptions) -> Result<Arc<dyn McpServerClient>, McpError> {
    let cfg = McpServerConfig::http("conformance", url);
    skald_mcp::connect(&cfg, options)
}

/// The client id metadata document URL the suite's CIMD scenario expects
/// (a real client hosts its own document and names its URL here).
const CONFORMANCE_CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// OAuth as the suite's authorization servers expect it: the headless
/// authorizer follows their auto-approving authorization endpoint; the
/// context carries pre-registered credentials where a scenario has them.
fn oauth_options(scenario: &str, context: &Value) -> skald_mcp::auth::OAuthOptions {
    let s = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    skald_mcp::auth::OAuthOptions {
        client_id: s("client_id"),
        client_secret: s("client_secret"),
        client_assertion_key: s("private_key_pem"),
        client_metadata_url: Some(CONFORMANCE_CLIENT_METADATA_URL.to_owned()),
        grant: if scenario.contains("client-credentials") {
            skald_mcp::auth::Grant::ClientCredentials
        } else if scenario.contains("cross-app-access")
            || scenario.contains("enterprise-managed-authorization")
        {
            skald_mcp::auth::Grant::CrossAppAccess
        } else if scenario.contains("wif-") {
            skald_mcp::auth::Grant::WorkloadIdentity
        } else {
            skald_mcp::auth::Grant::AuthorizationCode
        },
        identity: s("idp_id_token")
            .zip(s("idp_token_endpoint"))
            .map(|(id_token, endpoint)| skald_mcp::auth::IdentityAssertion {
                idp_token_endpoint: endpoint,
                id_token,
                idp_client_id: s("idp_client_id"),
                idp_client_secret: s("idp_client_secret"),
            }),
        // The workload's platform-issued JWT (SEP-1933).
        workload_assertion: s("valid_jwt"),
        // Sender-constrained tokens (RFC 9449) where the scenario tests them.
        dpop: scenario.starts_with("auth/dpop"),
        ..skald_mcp::auth::OAuthOptions::default()
    }
}

/// Does what `scenario` expects of a client. `context` is the suite's
/// `MCP_CONFORMANCE_CONTEXT` (the OAuth scenarios' credentials).
fn run(scenario: &str, url: &str, context: &Value, options: ClientOptions) -> Result<(), McpError> {
    match scenario {
        // Every auth scenario: connect through OAuth, list the tools and call
        // the first one (a step-up scenario asks for more scope there).
        s if s.starts_with("auth/") => {
            let mut options = options;
            options.oauth = Some(oauth_options(s, context));
            let server = connect(url, options)?;
            let tools = server.list_tools()?;
            if let Some(t) = tools.first() {
                match server.call_tool(&t.name, json!({})) {
                    Ok(r) => println!("{}", r.to_text()),
                    Err(e @ (McpError::Auth { .. } | McpError::AuthRefused { .. })) => {
                        return Err(e)
                    }
                    Err(e) => eprintln!("{} answered: {e}", t.name),
                }
            }
            server.close()
        }
        // Handshake, then one request in the session.
        "initialize" => {
            let server = connect(url, options)?;
            let tools = server.list_tools()?;
            eprintln!("{} tool(s)", tools.len());
            server.close()
        }
        // `add_numbers` with two numbers.
        "tools_call" => {
            let server = connect(url, options)?;
            let tools = server.list_tools()?;
            let name = tool(&tools, "add_numbers");
            let result = server.call_tool(name, json!({"a": 5, "b": 3}))?;
            println!("{}", result.to_text());
            server.close()
        }
        // The tool elicits a form whose fields all have defaults; the "user"
        // accepts without filling anything in, so the library must send the
        // schema's defaults (SEP-1034).
        "elicitation-sep1034-client-defaults" => {
            let handler = |req: &ElicitationRequest| {
                eprintln!(
                    "elicitation: {:?} ({} field(s)); accepting with no input",
                    req.message,
                    req.form.fields().len()
                );
                ElicitationResponse::Accept(Map::new())
            };
            let server = connect(url, options.elicitation_handler(handler))?;
            let tools = server.list_tools()?;
            let name = tool(&tools, "test_client_elicitation_defaults");
            let result = server.call_tool(name, json!({}))?;
            println!("{}", result.to_text());
            server.close()
        }
        // The tool's SSE stream closes after a priming event with `retry`;
        // the client resumes with GET + Last-Event-ID after that delay and
        // gets the result there (SEP-1699).
        "sse-retry" => {
            let server = connect(url, options)?;
            let tools = server.list_tools()?;
            let name = tool(&tools, "test_reconnection");
            let result = server.call_tool(name, json!({}))?;
            println!("{}", result.to_text());
            server.close()
        }
        // Every request must carry the version header and `_meta`; the
        // first is refused with -32022 and must be retried.
        "request-metadata" | "json-schema-ref-no-deref" => {
            let server = connect(url, options)?;
            let tools = server.list_tools()?;
            eprintln!("{} tool(s)", tools.len());
            server.close()
        }
        // One request of every kind that has standard headers.
        "http-standard-headers" => {
            let server = connect(url, options)?;
            for t in server.list_tools()? {
                let r = server.call_tool(&t.name, json!({}))?;
                println!("{}: {}", t.name, r.to_text());
            }
            for r in server.list_resources()? {
                let c = server.read_resource(&r.uri)?;
                eprintln!("{}: {} content(s)", r.uri, c.len());
            }
            for p in server.list_prompts()? {
                let g = server.get_prompt(&p.name, &[])?;
                eprintln!("{}: {} message(s)", p.name, g.messages.len());
            }
            server.close()
        }
        // The calls the context names, with their exact arguments.
        "http-custom-headers" => {
            let server = connect(url, options)?;
            let tools = server.list_tools()?;
            let calls = context
                .get("toolCalls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for c in calls {
                let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = c.get("arguments").cloned().unwrap_or_else(|| json!({}));
                let r = server.call_tool(tool(&tools, name), args)?;
                println!("{name}: {}", r.to_text());
            }
            server.close()
        }
        // Tools with invalid header declarations are left out of the list;
        // every tool that is listed is called.
        "http-invalid-tool-headers" => {
            let server = connect(url, options)?;
            for t in server.list_tools()? {
                match server.call_tool(&t.name, json!({"region": "us-west1"})) {
                    Ok(r) => println!("{}: {}", t.name, r.to_text()),
                    Err(e) => eprintln!("{} answered: {e}", t.name),
                }
            }
            server.close()
        }
        // The schema is echoed back as the server sent it: kept byte for
        // byte, no keyword rewritten.
        "json-schema-2020-12-preservation" => {
            let server = connect(url, options)?;
            let tools = server.list_tools()?;
            let schema = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .map(|t| t.input_schema_value())
                .unwrap_or_else(|| json!({}));
            let r =
                server.call_tool(tool(&tools, "json_schema_echo"), json!({"schema": schema}))?;
            println!("{}", r.to_text());
            server.close()
        }
        // Multi round-trip requests: the elicitation is answered by the
        // handler, the request sent again with the server's state.
        "sep-2322-client-request-state" => {
            let handler = |req: &ElicitationRequest| {
                eprintln!("elicitation: {:?}; confirming", req.message);
                let mut m = Map::new();
                m.insert("confirmed".into(), json!(true));
                ElicitationResponse::Accept(m)
            };
            let server = connect(url, options.elicitation_handler(handler))?;
            let tools = server.list_tools()?;
            for name in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                match server.call_tool(tool(&tools, name), json!({})) {
                    Ok(r) => println!("{name}: {}", r.to_text()),
                    Err(e) => eprintln!("{name} answered: {e}"),
                }
            }
            server.close()
        }
        // Unknown (e.g. a scenario newer than this program): do the generic
        // thing, list the tools and call none.
        other => {
            eprintln!("unknown scenario {other:?}: initialize and list tools only");
            let server = connect(url, options)?;
            let tools = server.list_tools()?;
            eprintln!("{} tool(s)", tools.len());
            server.close()
        }
    }
}
