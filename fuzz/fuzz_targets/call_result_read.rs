//! A `tools/call` result read from bytes the way `call_tool` reads it
//! (the reader's compact form for a single text block, extracted without
//! restoring it) gives exactly what `extract_call_result` gives on the
//! same result read by `serde_json`: the fast path loses and adds nothing,
//! whatever the server sends beside or instead of its content.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::{extract_call_result, jsonrpc};

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let mut frame = br#"{"jsonrpc":"2.0","id":1,"result":"#.to_vec();
    frame.extend_from_slice(data);
    frame.push(b'}');
    // `None` only for what the envelope refuses (a result that is not a
    // single JSON value serde_json also reads, e.g. past the nesting limit).
    let Some(read) = jsonrpc::call_result_as_read(&frame) else {
        return;
    };
    let expected = extract_call_result("fuzz", "tool", &value);
    assert_eq!(
        format!("{read:?}"),
        format!("{expected:?}"),
        "for {}",
        String::from_utf8_lossy(data)
    );
});
