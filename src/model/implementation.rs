//! `serverInfo` / `clientInfo`.

/// `serverInfo` / `clientInfo`: who is on the other end.
///
/// Read leniently: a member of the wrong type is empty, so a sloppy
/// `serverInfo` never fails a handshake.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(default)]
pub struct Implementation {
    /// Programmatic name.
    #[serde(deserialize_with = "lenient_string")]
    pub name: String,
    /// Version string.
    #[serde(deserialize_with = "lenient_string")]
    pub version: String,
    /// Display title, if given.
    #[serde(deserialize_with = "super::lenient::lenient")]
    pub title: Option<String>,
}

fn lenient_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(super::lenient::lenient(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sloppy_server_info() {
        let i: Implementation =
            serde_json::from_value(json!({"name": "s", "version": 2, "title": false})).unwrap();
        assert_eq!(
            (i.name.as_str(), i.version.as_str(), i.title),
            ("s", "", None)
        );
    }
}
