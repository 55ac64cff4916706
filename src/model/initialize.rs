//! The `initialize` result (legacy era).

use serde::Deserialize;
use serde_json::Value;

use super::lenient::lenient;
use super::Implementation;

/// An `InitializeResult` as sent; the handshake checks the members it needs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeResult {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) protocol_version: Option<String>,
    /// Kept as sent: it must be an object (or absent), which the handshake
    /// checks so that it can name what it got.
    #[serde(default)]
    pub(crate) capabilities: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) server_info: Option<Implementation>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) instructions: Option<String>,
}
