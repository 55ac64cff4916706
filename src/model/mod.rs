//! Wire types: serde-derived shapes of what MCP puts on the wire, shared by
//! both protocol eras.
//!
//! They are lenient the way servers are sloppy: optional members default,
//! unknown members are ignored (or kept, where a caller may want them), so a
//! server that adds a field never breaks the client. What the crate hands a
//! user is built from these, not parsed again by hand.

mod cache;
mod discover;
mod implementation;
mod initialize;
mod lenient;
mod meta;
mod prompt;
mod requests;
mod resource;
mod result_type;
mod subscriptions;
mod task;
mod tool;
mod tool_headers;

pub use cache::{CacheHints, CacheScope};
pub(crate) use discover::server_info;
pub use discover::DiscoverResult;
pub use implementation::Implementation;
pub(crate) use meta::keys;
pub use result_type::ResultType;
pub(crate) use subscriptions::Acknowledged;
pub use subscriptions::ListenFilter;
pub(crate) use task::DetailedTask;
pub use task::{CreateTaskResult, TaskStatus};
pub(crate) use tool_headers::{annotations, declares_headers, validate_tool};

/// The wire shapes the public types of the crate's other modules
/// ([`McpTool`](crate::McpTool), [`Resource`](crate::Resource),
/// [`Prompt`](crate::Prompt), the elicitation and sampling requests) are
/// built from.
pub(crate) mod wire {
    pub(crate) use super::initialize::InitializeResult;
    pub(crate) use super::prompt::{GetPromptResult, Message, Prompt};
    pub(crate) use super::requests::{CreateMessageParams, ElicitParams};
    pub(crate) use super::resource::{Resource, ResourceContents, ResourceTemplate};
    pub(crate) use super::tool::{Tool, ToolAnnotations};
}

use serde_json::Value;

/// `data` of an `UnsupportedProtocolVersionError` (-32022).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(default)]
pub(crate) struct UnsupportedVersionData {
    /// The versions the server supports.
    pub(crate) supported: Vec<String>,
    /// The version the client asked for, as the server read it.
    pub(crate) requested: Option<String>,
}

impl UnsupportedVersionData {
    /// Reads the error's `data`; a missing or malformed one is empty.
    pub(crate) fn from_data(data: Option<&Value>) -> UnsupportedVersionData {
        data.cloned()
            .and_then(|d| serde_json::from_value(d).ok())
            .unwrap_or_default()
    }
}
