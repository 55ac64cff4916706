//! `extract_call_result` and `classify_content` on arbitrary JSON: never
//! panic; classification succeeds whenever extraction produced media.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::{classify_content, extract_call_result, McpCallResult};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = classify_content(&v);
    if let Some(c) = v.get("content") {
        let _ = classify_content(c);
    }
    if let Ok(r) = extract_call_result("fuzz", "tool", &v) {
        let _ = r.to_text();
        if let McpCallResult::Media { items, .. } = &r {
            for m in items {
                let _ = (m.kind(), m.mime_type(), m.bytes());
            }
        }
    }
});
