//! The params of the requests a server makes of the client: elicitation
//! and sampling (legacy era: server-to-client requests; modern era: the
//! `inputRequests` of an `input_required` result).

use serde::Deserialize;
use serde_json::Value;

use super::lenient::{lenient, lenient_list};
use super::prompt::Message;

/// `elicitation/create` params.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ElicitParams {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) message: Option<String>,
    /// `form` when absent; any other string is refused.
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) mode: Option<String>,
    /// A JSON Schema, read field by field by the form parser.
    #[serde(default)]
    pub(crate) requested_schema: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) url: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) elicitation_id: Option<String>,
}

/// `sampling/createMessage` params.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateMessageParams {
    /// `None` when absent or not an array (the request is then refused).
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) messages: Option<Vec<Message>>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) system_prompt: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) max_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) temperature: Option<f64>,
    #[serde(default, deserialize_with = "lenient_list")]
    pub(crate) stop_sequences: Vec<String>,
    #[serde(default)]
    pub(crate) model_preferences: Option<Value>,
}
