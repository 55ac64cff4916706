//! Prompts as `prompts/list` and `prompts/get` send them, and the
//! conversation of a sampling request (both eras).

use serde::Deserialize;
use serde_json::Value;

use super::lenient::{lenient, lenient_list};

/// One element of `prompts/list`'s `prompts`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Prompt {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) title: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) description: Option<String>,
    /// Arguments without a string `name` are skipped.
    #[serde(default, deserialize_with = "lenient_list")]
    pub(crate) arguments: Vec<PromptArgument>,
}

/// One of a prompt's `arguments`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptArgument {
    pub(crate) name: String,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) title: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) description: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) required: Option<bool>,
}

/// A `prompts/get` result.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetPromptResult {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) description: Option<String>,
    /// `None` when absent or not an array (the result is then refused).
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) messages: Option<Vec<Message>>,
}

/// One message of a prompt or of a sampling conversation. The content is
/// kept as sent: it is a content block (or, in sampling, a list of them)
/// read by the one content classifier the results use.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Message {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) role: Option<String>,
    #[serde(default)]
    pub(crate) content: Option<Value>,
}
