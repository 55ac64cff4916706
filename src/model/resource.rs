//! Resources as `resources/list`, `resources/templates/list` and
//! `resources/read` send them (both eras).

use serde::Deserialize;

use super::lenient::lenient;

/// One element of `resources/list`'s `resources`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resource {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) uri: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) title: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) description: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) mime_type: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) size: Option<u64>,
}

/// One element of `resources/templates/list`'s `resourceTemplates`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceTemplate {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) uri_template: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) title: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) description: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) mime_type: Option<String>,
}

/// One element of `resources/read`'s `contents`: text or a base64 blob.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceContents {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) uri: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) mime_type: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) text: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) blob: Option<String>,
}
