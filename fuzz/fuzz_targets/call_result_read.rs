//! A `tools/call` result read from bytes the way `call_tool` reads it
//! (the reader's compact form for a single text block, extracted without
//! restoring it) gives exactly what `extract_call_result` gives on the
//! same result read by `serde_json`: the fast path loses and adds nothing,
//! whatever the server sends beside or instead of its content.
//!
//! One exception: `serde_json` with its `raw_value` feature (which the
//! crate enables) reads an object whose first member is named
//! `$serde_json::private::RawValue`, with a string value, as the JSON text
//! in that string, so the reference makes `8` of
//! `{"$serde_json::private::RawValue":"8"}`. The reader reads what was
//! sent, an object (test `jsonrpc::tests::a_raw_value_look_alike_is_an_object`);
//! such inputs are not compared.
#![no_main]
use libfuzzer_sys::fuzz_target;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use skald_mcp::{extract_call_result, jsonrpc};

/// serde_json's name for a raw value in a map (`serde_json::raw::TOKEN`).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Whether a map in the JSON read has a member named [`RAW_VALUE_TOKEN`]
/// (after unescaping, as serde_json compares it).
struct NamesToken;

impl<'de> DeserializeSeed<'de> for NamesToken {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NamesToken {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(f) = seq.next_element_seed(NamesToken)? {
            found |= f;
        }
        Ok(found)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            found |= k == RAW_VALUE_TOKEN;
            found |= map.next_value_seed(NamesToken)?;
        }
        Ok(found)
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let mut d = serde_json::Deserializer::from_slice(data);
    if NamesToken.deserialize(&mut d).unwrap_or(true) {
        return;
    }
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
