//! Roots: the directories or URIs a client tells servers they may work in
//! (`roots/list`, `notifications/roots/list_changed`).

use serde_json::{json, Value};

/// One root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// A `file://` URI (per spec, currently the only kind).
    pub uri: String,
    /// A display name.
    pub name: Option<String>,
}

impl Root {
    /// A root with a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Root {
        Root {
            uri: uri.into(),
            name: Some(name.into()),
        }
    }

    fn to_json(&self) -> Value {
        match &self.name {
            Some(n) => json!({"uri": self.uri, "name": n}),
            None => json!({"uri": self.uri}),
        }
    }
}

/// Answers `roots/list`. Called on a handler thread; should be quick.
pub trait RootsProvider: Send + Sync {
    /// The current roots.
    fn roots(&self) -> Vec<Root>;
}

impl RootsProvider for Vec<Root> {
    fn roots(&self) -> Vec<Root> {
        self.clone()
    }
}

impl<F> RootsProvider for F
where
    F: Fn() -> Vec<Root> + Send + Sync,
{
    fn roots(&self) -> Vec<Root> {
        self()
    }
}

/// The `roots/list` result for `roots`.
pub(crate) fn list_result(roots: &[Root]) -> Value {
    json!({"roots": roots.iter().map(Root::to_json).collect::<Vec<_>>()})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_shape() {
        let r = list_result(&[
            Root::new("file:///a", "A"),
            Root {
                uri: "file:///b".into(),
                name: None,
            },
        ]);
        assert_eq!(
            r,
            json!({"roots":[{"uri":"file:///a","name":"A"},{"uri":"file:///b"}]})
        );
        let f = || vec![Root::new("file:///x", "x")];
        assert_eq!(f.roots().len(), 1);
    }
}
