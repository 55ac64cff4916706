//! The names of the requests this client sends, kept as constants where
//! each request would otherwise copy its method's name: the pending-request
//! table (for the errors that may fail the call), an HTTP job and its
//! `Mcp-Method` header.

use std::borrow::Cow;

/// The methods whose names are borrowed, not copied (`tools/call` first:
/// they are compared in order).
pub(crate) const KNOWN_METHODS: &[&str] = &[
    "tools/call",
    "tools/list",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "prompts/get",
    "prompts/list",
    "completion/complete",
    "ping",
    "initialize",
    "server/discover",
    "subscriptions/listen",
    "tasks/get",
    "tasks/result",
    "tasks/update",
    "tasks/cancel",
    "tasks/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "logging/setLevel",
];

/// `s` as the constant of `known` equal to it, else copied.
pub(crate) fn constant_or_owned(s: &str, known: &[&'static str]) -> Cow<'static, str> {
    match known.iter().find(|k| **k == s) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(s.to_owned()),
    }
}

/// `method` as one of [`KNOWN_METHODS`], else copied.
pub(crate) fn name(method: &str) -> Cow<'static, str> {
    constant_or_owned(method, KNOWN_METHODS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_methods_are_borrowed_others_copied() {
        for m in KNOWN_METHODS {
            assert!(matches!(name(m), Cow::Borrowed(b) if b == *m));
        }
        assert!(matches!(name("x/custom"), Cow::Owned(o) if o == "x/custom"));
        let mut sorted = KNOWN_METHODS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), KNOWN_METHODS.len(), "each once");
    }
}
