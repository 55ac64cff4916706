//! `server/discover`'s result.

use serde_json::{Map, Value};

use super::{keys, Implementation};

/// What a modern server says about itself in answer to `server/discover`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The protocol versions the server supports (required: a result
    /// without them is not a `DiscoverResult`).
    pub supported_versions: Vec<String>,
    /// The server's capabilities.
    #[serde(default)]
    pub capabilities: Map<String, Value>,
    /// Natural-language guidance for using the server.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The result's `_meta` (where `serverInfo` lives).
    #[serde(default, rename = "_meta")]
    pub meta: Map<String, Value>,
}

impl DiscoverResult {
    /// Parses `result`; `None` when it is not a `DiscoverResult` (no
    /// `supportedVersions` array of strings): a legacy server that answered
    /// the probe with something else.
    pub fn parse(result: &Value) -> Option<DiscoverResult> {
        serde_json::from_value(result.clone()).ok()
    }

    /// `_meta["io.modelcontextprotocol/serverInfo"]`, when given.
    pub fn server_info(&self) -> Option<Implementation> {
        server_info(&self.meta)
    }
}

/// The `serverInfo` of a result's `_meta`, when present and well formed.
pub(crate) fn server_info(meta: &Map<String, Value>) -> Option<Implementation> {
    meta.get(keys::SERVER_INFO)
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_rejects() {
        let r = DiscoverResult::parse(&json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
            "ttlMs": 5,
            "extra": true
        }))
        .unwrap();
        assert_eq!(r.supported_versions, ["2026-07-28"]);
        assert!(r.capabilities.contains_key("tools"));
        assert_eq!(r.server_info().unwrap().name, "s");
        assert!(DiscoverResult::parse(&json!({})).is_none());
        assert!(DiscoverResult::parse(&json!({"supportedVersions": "x"})).is_none());
        assert!(DiscoverResult::parse(&json!("garbage")).is_none());
    }
}
