//! Caching hints (`ttlMs`, `cacheScope`) of cacheable results.

use std::time::Duration;

use serde_json::Value;

/// Who may reuse a cached result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Holds no user-specific data.
    Public,
    /// Only for the same authorization context.
    Private,
}

/// The caching hints of one result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheHints {
    /// How long the result stays fresh (`ttlMs`; absent or negative: zero).
    pub ttl: Duration,
    /// `cacheScope`, when given.
    pub scope: Option<CacheScope>,
}

impl CacheHints {
    /// Reads the hints of `result`.
    pub fn of(result: &Value) -> CacheHints {
        let ttl = match result.get("ttlMs") {
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f > 0.0).map(|f| f as u64))
                .unwrap_or(0),
            _ => 0,
        };
        let scope = match result.get("cacheScope").and_then(Value::as_str) {
            Some("public") => Some(CacheScope::Public),
            Some("private") => Some(CacheScope::Private),
            _ => None,
        };
        CacheHints {
            ttl: Duration::from_millis(ttl),
            scope,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hints() {
        let h = CacheHints::of(&json!({"ttlMs": 1500, "cacheScope": "private"}));
        assert_eq!(h.ttl, Duration::from_millis(1500));
        assert_eq!(h.scope, Some(CacheScope::Private));
        assert_eq!(CacheHints::of(&json!({"ttlMs": -5})).ttl, Duration::ZERO);
        assert_eq!(CacheHints::of(&json!({"ttlMs": "9"})).ttl, Duration::ZERO);
        assert_eq!(CacheHints::of(&json!({})), CacheHints::default());
    }
}
