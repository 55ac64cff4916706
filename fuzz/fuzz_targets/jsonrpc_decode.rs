//! `jsonrpc::decode` on arbitrary bytes: never panics; an error carries an
//! id only when the input was a JSON object or batch; a decoded message
//! re-encodes to JSON that decodes to the same message; and an object
//! decodes the same through the envelope read from the bytes as through
//! `decode_object` on its map (but for duplicate members, which only the
//! envelope refuses).
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::jsonrpc::{self, Incoming};

fuzz_target!(|data: &[u8]| {
    let decoded = jsonrpc::decode(data);
    if let Ok(serde_json::Value::Object(obj)) = serde_json::from_slice(data) {
        match (&decoded, jsonrpc::decode_object(obj)) {
            (Ok(a), Ok(b)) => assert_eq!(a, &vec![b]),
            (Err(e), Ok(_)) if e.message.contains("duplicate field") => {}
            (Err(a), Err(b)) if a.message.contains("duplicate field") => drop(b),
            (Err(a), Err(b)) => assert_eq!(a, &b),
            (a, b) => panic!("the two paths disagree: {a:?} / {b:?}"),
        }
    }
    let Ok(msgs) = decoded else {
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
