//! `jsonrpc::decode` on arbitrary bytes: never panics; an error carries an
//! id only when the input was a JSON object or batch; a decoded message
//! re-encodes to JSON that decodes to the same message.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::jsonrpc::{self, Incoming};

fuzz_target!(|data: &[u8]| {
    let Ok(msgs) = jsonrpc::decode(data) else {
        return;
    };
    assert!(!msgs.is_empty());
    for m in msgs {
        let v = match &m {
            Incoming::Request { id, method, params } => {
                jsonrpc::request_value(id, method, Some(params))
            }
            Incoming::Notification { method, params } => {
                jsonrpc::notification_value(method, Some(params))
            }
            Incoming::Response { id, outcome: Ok(r) } => jsonrpc::result_value(id, r.clone()),
            Incoming::Response { .. } => continue,
        };
        let again =
            jsonrpc::decode(&jsonrpc::encode_value(&v)).expect("re-encoded message decodes");
        assert_eq!(again.len(), 1);
        match (&m, &again[0]) {
            (
                Incoming::Request {
                    params: serde_json::Value::Null,
                    ..
                },
                _,
            ) => {}
            (
                Incoming::Notification {
                    params: serde_json::Value::Null,
                    ..
                },
                _,
            ) => {}
            (a, b) => assert_eq!(a, b),
        }
    }
});
