//! The result cache: results of the cacheable requests, kept for as long
//! as the server's `ttlMs` says they stay fresh (MCP 2026-07-28 caching).
//!
//! A result is keyed by its method and the parameters that shape it
//! (`_meta` left out), and is dropped at once when a notification says the
//! data changed (`list_changed`, `resources/updated`). The cache belongs to
//! one connection, which has one authorization context, so `private`
//! results are as reusable as `public` ones here.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::Value;

use crate::limits::{RESULT_CACHE_MAX_BYTES, RESULT_CACHE_MAX_ENTRIES};
use crate::model::CacheHints;

/// The requests whose results may carry caching hints.
const CACHEABLE: &[&str] = &[
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Requests that change nothing on the server: they may be sent again
/// (with a new id) when their response stream breaks.
pub(crate) fn is_repeatable(method: &str) -> bool {
    CACHEABLE.contains(&method)
        || matches!(
            method,
            "server/discover" | "prompts/get" | "completion/complete" | "tasks/get" | "tasks/list"
        )
}

/// What a cached result is found and dropped by: its method and the
/// parameters that shape it, and the URI of a `resources/read` (for
/// `notifications/resources/updated`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    text: String,
    method: &'static str,
    uri: Option<String>,
}

/// The cache key of a request, when its method is cacheable and it is no
/// multi round-trip retry (those depend on inputs outside the key).
pub(crate) fn key(method: &str, params: Option<&Value>) -> Option<Key> {
    let method = CACHEABLE.iter().copied().find(|m| *m == method)?;
    let mut shaping = serde_json::Map::new();
    if let Some(Value::Object(p)) = params {
        for (k, v) in p {
            match k.as_str() {
                "_meta" => {}
                "inputResponses" | "requestState" => return None,
                _ => {
                    shaping.insert(k.clone(), v.clone());
                }
            }
        }
    }
    let uri = (method == "resources/read")
        .then(|| {
            shaping
                .get("uri")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .flatten();
    Some(Key {
        text: format!("{method} {}", Value::Object(shaping)),
        method,
        uri,
    })
}

struct Entry {
    value: Value,
    fresh_until: Instant,
    method: &'static str,
    uri: Option<String>,
}

/// Fresh results by key (bounded by [`RESULT_CACHE_MAX_ENTRIES`]).
#[derive(Default)]
pub(crate) struct ResultCache {
    entries: HashMap<String, Entry>,
}

impl ResultCache {
    /// The cached result for `key`, if still fresh.
    pub(crate) fn get(&mut self, key: &Key) -> Option<Value> {
        let now = Instant::now();
        match self.entries.get(&key.text) {
            Some(e) if now < e.fresh_until => Some(e.value.clone()),
            Some(_) => {
                self.entries.remove(&key.text);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` when its hints say it stays fresh for a while.
    pub(crate) fn put(&mut self, key: Key, value: &Value) {
        let hints = CacheHints::of(value);
        if hints.ttl.is_zero() {
            return;
        }
        // Measured once, only for results that are to be kept.
        if serde_json::to_vec(value).map_or(true, |b| b.len() > RESULT_CACHE_MAX_BYTES) {
            return;
        }
        let now = Instant::now();
        let Some(fresh_until) = now.checked_add(hints.ttl) else {
            return;
        };
        if self.entries.len() >= RESULT_CACHE_MAX_ENTRIES && !self.entries.contains_key(&key.text) {
            self.entries.retain(|_, e| now < e.fresh_until);
            if self.entries.len() >= RESULT_CACHE_MAX_ENTRIES {
                if let Some(k) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, e)| e.fresh_until)
                    .map(|(k, _)| k.clone())
                {
                    self.entries.remove(&k);
                }
            }
        }
        self.entries.insert(
            key.text,
            Entry {
                value: value.clone(),
                fresh_until,
                method: key.method,
                uri: key.uri,
            },
        );
    }

    /// Drops every result of `method` (a `list_changed` notification).
    pub(crate) fn invalidate(&mut self, method: &str) {
        self.entries.retain(|_, e| e.method != method);
    }

    /// Drops the cached reads of `uri` (`notifications/resources/updated`).
    pub(crate) fn invalidate_uri(&mut self, uri: &str) {
        self.entries.retain(|_, e| e.uri.as_deref() != Some(uri));
    }

    /// What a notification invalidates.
    pub(crate) fn on_notification(&mut self, method: &str, params: &Value) {
        match method {
            "notifications/tools/list_changed" => self.invalidate("tools/list"),
            "notifications/prompts/list_changed" => self.invalidate("prompts/list"),
            "notifications/resources/list_changed" => {
                self.invalidate("resources/list");
                self.invalidate("resources/templates/list");
            }
            "notifications/resources/updated" => {
                if let Some(uri) = params.get("uri").and_then(Value::as_str) {
                    self.invalidate_uri(uri);
                }
            }
            _ => {}
        }
    }

    /// How many results are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_leave_meta_out_and_refuse_mrtr() {
        let a = key(
            "tools/list",
            Some(&json!({"cursor": "c", "_meta": {"x": 1}})),
        );
        let b = key("tools/list", Some(&json!({"cursor": "c"})));
        assert_eq!(a, b);
        assert_ne!(a, key("tools/list", None));
        assert_eq!(key("tools/call", None), None);
        assert_eq!(
            key(
                "resources/read",
                Some(&json!({"uri": "u", "requestState": "s"}))
            ),
            None
        );
    }

    #[test]
    fn fresh_results_are_served_and_invalidated() {
        let mut c = ResultCache::default();
        let k = key("tools/list", None).unwrap();
        c.put(k.clone(), &json!({"tools": [], "ttlMs": 0}));
        assert!(c.get(&k).is_none(), "ttlMs 0 is stale at once");
        c.put(k.clone(), &json!({"tools": [], "ttlMs": 60000}));
        assert!(c.get(&k).is_some());
        c.on_notification("notifications/tools/list_changed", &json!({}));
        assert!(c.get(&k).is_none());

        let r = key("resources/read", Some(&json!({"uri": "file:///a"}))).unwrap();
        c.put(r.clone(), &json!({"contents": [], "ttlMs": 60000}));
        c.on_notification(
            "notifications/resources/updated",
            &json!({"uri": "file:///b"}),
        );
        assert!(c.get(&r).is_some());
        c.on_notification(
            "notifications/resources/updated",
            &json!({"uri": "file:///a"}),
        );
        assert!(c.get(&r).is_none());
    }

    #[test]
    fn bounded() {
        let mut c = ResultCache::default();
        for i in 0..RESULT_CACHE_MAX_ENTRIES + 10 {
            let k = key("resources/read", Some(&json!({"uri": format!("u{i}")}))).unwrap();
            c.put(k, &json!({"contents": [], "ttlMs": 60000}));
        }
        assert_eq!(c.len(), RESULT_CACHE_MAX_ENTRIES);
    }
}
