//! `Tool` as `tools/list` sends it (both eras).

use serde::Deserialize;
use serde_json::Value;

use super::lenient::{lenient, object, object_raw};

/// One element of `tools/list`'s `tools`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Tool<'a> {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) title: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) description: Option<String>,
    /// Borrowed from the definition's text: its place there is kept.
    #[serde(default, borrow, deserialize_with = "object_raw")]
    pub(crate) input_schema: Option<&'a serde_json::value::RawValue>,
    #[serde(default, deserialize_with = "object")]
    pub(crate) output_schema: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) annotations: Option<ToolAnnotations>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) execution: Option<Execution>,
}

/// `Tool.annotations`: hints, each read on its own.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolAnnotations {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) title: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) read_only_hint: Option<bool>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) destructive_hint: Option<bool>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) idempotent_hint: Option<bool>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) open_world_hint: Option<bool>,
}

/// `Tool.execution` (2025-11-25): whether the tool runs as a task.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Execution {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) task_support: Option<String>,
}
