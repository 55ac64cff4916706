//! Small readers for optional members of JSON objects, shared by the
//! modules that map wire shapes to typed values.

use serde_json::{Map, Value};

/// The members an object may have for [`member`] to compare names one by
/// one rather than hash the name looked up.
const SCAN_MEMBERS: usize = 8;

/// Member `k` of `v`, if `v` is an object that has it. The objects of the
/// per-call path (params, results) have a handful of members: comparing
/// names is several times cheaper than hashing one (`serde_json`'s maps
/// hash with SipHash).
pub(crate) fn member<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    map_member(v.as_object()?, k)
}

/// [`member`] of a map.
pub(crate) fn map_member<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a Value> {
    if m.len() <= SCAN_MEMBERS {
        m.iter()
            .find(|(name, _)| name.as_str() == k)
            .map(|(_, v)| v)
    } else {
        m.get(k)
    }
}

/// The string member `k`, owned, if present and a string.
pub(crate) fn opt_str(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// The string elements of the array member `k` (non-strings skipped;
/// empty when absent).
pub(crate) fn strings(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// At most 200 characters of a JSON value, for error messages.
pub(crate) fn excerpt(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 200 {
        s
    } else {
        let mut end = 200;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn member_finds_in_small_and_large_objects() {
        use serde_json::json;
        let small = json!({"a": 1, "b": 2});
        assert_eq!(super::member(&small, "b"), Some(&json!(2)));
        assert_eq!(super::member(&small, "c"), None);
        assert_eq!(super::member(&json!([1]), "a"), None);
        let large: serde_json::Map<String, serde_json::Value> =
            (0..20).map(|i| (format!("k{i}"), json!(i))).collect();
        let large = serde_json::Value::Object(large);
        assert_eq!(super::member(&large, "k17"), Some(&json!(17)));
        assert_eq!(super::member(&large, "k20"), None);
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn readers() {
        let v = json!({"a": "x", "n": 1, "l": ["p", 2, "q"]});
        assert_eq!(opt_str(&v, "a").as_deref(), Some("x"));
        assert_eq!(opt_str(&v, "n"), None);
        assert_eq!(strings(&v, "l"), ["p", "q"]);
        assert!(strings(&v, "missing").is_empty());
    }
}
