//! `schema::validate` on an arbitrary schema and value (a JSON array
//! `[schema, value]`, or one document used as both): never panics, never
//! overflows the stack, and finishes in bounded time (cyclic and
//! exponentially branching `$ref`s included).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let (schema, value) = match &v {
        serde_json::Value::Array(a) if a.len() == 2 => (&a[0], &a[1]),
        _ => (&v, &v),
    };
    let _ = skald_mcp::schema::validate(schema, value);
});
