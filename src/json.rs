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

/// The `visit_*` methods of a `serde` visitor for the scalars of JSON
/// (booleans, numbers, null), each handing `$wrap(value)`: for the
/// visitors that read results (`jsonrpc_cap`, `text_content`), whose leaves
/// are plain values while their arrays and objects are read their own way.
macro_rules! visit_scalars {
    ($wrap:expr) => {
        fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
            Ok($wrap(::serde_json::Value::Bool(v)))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            Ok($wrap(::serde_json::Value::from(v)))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok($wrap(::serde_json::Value::from(v)))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            Ok($wrap(::serde_json::Value::from(v)))
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($wrap(::serde_json::Value::Null))
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok($wrap(::serde_json::Value::Null))
        }
        fn visit_some<D: ::serde::de::Deserializer<'de>>(
            self,
            d: D,
        ) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    };
}
pub(crate) use visit_scalars;

/// [`visit_scalars`]'s companion for strings, copied into owned values.
macro_rules! visit_strings {
    ($wrap:expr) => {
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok($wrap(::serde_json::Value::String(v.to_owned())))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok($wrap(::serde_json::Value::String(v)))
        }
    };
}
pub(crate) use visit_strings;

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
