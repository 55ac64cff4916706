//! `McpTool::from_json` on arbitrary JSON: never panics; a parsed tool has a
//! non-empty name and an object input schema.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::McpTool;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(t) = McpTool::from_json(&v) {
        assert!(!t.name.is_empty());
        assert!(t.input_schema_value().is_object());
        let _ = t.display_name();
        let _ = skald_mcp::manager::openai_tool_definition("fuzz", &t);
    }
});
