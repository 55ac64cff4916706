//! Field readers that never fail a whole message over one sloppy member.
//!
//! Servers send `"size": "3"`, `"annotations": "x"` or `"title": null`. The
//! spec gives such members no meaning, so the client reads them as absent
//! instead of refusing the tool, resource or prompt that carries them. Used
//! as `#[serde(default, deserialize_with = "lenient")]` on `Option` fields
//! and `deserialize_with = "lenient_list"` on `Vec` fields.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The member as `T`, or `None` when it has another shape.
pub(crate) fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// The elements of an array member that fit `T` (others skipped); empty
/// when the member is not an array.
pub(crate) fn lenient_list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|x| serde_json::from_value(x).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// The member's JSON text if it is an object (a schema), else `None`: kept
/// as text, a schema costs its bytes, not a tree of maps.
pub(crate) fn object_raw<'de: 'a, 'a, D>(
    d: D,
) -> Result<Option<&'a serde_json::value::RawValue>, D::Error>
where
    D: Deserializer<'de>,
{
    let raw = <&serde_json::value::RawValue>::deserialize(d)?;
    Ok(Some(raw).filter(|r| r.get().trim_start().starts_with('{')))
}

/// The member if it is a JSON object (a schema), else `None`.
pub(crate) fn object<'de, D>(d: D) -> Result<Option<Value>, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(Some(Value::deserialize(d)?).filter(Value::is_object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize, Debug, PartialEq)]
    struct T {
        #[serde(default, deserialize_with = "lenient")]
        n: Option<u64>,
        #[serde(default, deserialize_with = "lenient_list")]
        l: Vec<String>,
        #[serde(default, deserialize_with = "object")]
        o: Option<Value>,
    }

    #[test]
    fn sloppy_members_are_absent() {
        let t: T = serde_json::from_value(json!({"n": "3", "l": ["a", 2, "b"], "o": 5})).unwrap();
        assert_eq!(
            t,
            T {
                n: None,
                l: vec!["a".into(), "b".into()],
                o: None
            }
        );
        let t: T = serde_json::from_value(json!({"n": 3, "l": "x", "o": {}})).unwrap();
        assert_eq!(
            t,
            T {
                n: Some(3),
                l: vec![],
                o: Some(json!({}))
            }
        );
        let t: T = serde_json::from_value(json!({"n": null})).unwrap();
        assert_eq!(t.n, None);
    }
}
