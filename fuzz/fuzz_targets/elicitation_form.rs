//! `ElicitationForm::parse` on arbitrary JSON: never panics; building the
//! answer for a parsed form from arbitrary content never panics either.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::{ElicitationForm, ElicitationResponse};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let (schema, content) = match &v {
        serde_json::Value::Array(a) if a.len() == 2 => (&a[0], Some(&a[1])),
        _ => (&v, None),
    };
    if let Ok(form) = ElicitationForm::parse(schema) {
        let _ = form.fields().len();
        if let Some(serde_json::Value::Object(m)) = content {
            let _ = ElicitationResponse::Accept(m.clone()).to_result(&form);
        }
        let _ = ElicitationResponse::Decline.to_result(&form);
    }
});
