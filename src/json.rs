//! Small readers for optional members of JSON objects, shared by the
//! modules that map wire shapes to typed values.

use serde_json::Value;

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
