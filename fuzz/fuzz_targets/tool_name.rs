//! `parse_mcp_tool_name` on arbitrary strings: never panics; what it accepts
//! round-trips through `mcp_tool_name`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::manager::{mcp_tool_name, parse_mcp_tool_name};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Some((server, tool)) = parse_mcp_tool_name(s) {
        assert!(!server.is_empty() && !tool.is_empty());
        assert!(skald_mcp::validate_server_name(server).is_ok());
        assert_eq!(mcp_tool_name(server, tool), s);
        assert_eq!(
            parse_mcp_tool_name(&mcp_tool_name(server, tool)),
            Some((server, tool))
        );
    }
});
