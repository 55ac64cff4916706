//! `serverInfo` / `clientInfo`.

/// `serverInfo` / `clientInfo`: who is on the other end.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(default)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display title, if given.
    pub title: Option<String>,
}
