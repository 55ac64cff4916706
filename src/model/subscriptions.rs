//! `subscriptions/listen`: the notification filter and its acknowledgment.

use serde_json::Value;

/// Which notifications a `subscriptions/listen` stream asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListenFilter {
    /// `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_subscriptions: Vec<String>,
}

impl ListenFilter {
    /// Whether the filter asks for nothing (no stream is needed).
    pub fn is_empty(&self) -> bool {
        *self == ListenFilter::default()
    }
}

/// A `notifications/subscriptions/acknowledged`: which subscription, and
/// what the server agreed to send on it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Acknowledged {
    /// The id of the `subscriptions/listen` request.
    pub(crate) subscription: Option<i64>,
    /// The part of the filter the server honours.
    pub(crate) filter: ListenFilter,
}

impl Acknowledged {
    pub(crate) fn parse(params: &Value) -> Acknowledged {
        let subscription = params
            .pointer("/_meta")
            .and_then(|m| m.get(super::keys::SUBSCRIPTION_ID))
            .and_then(|v| match v {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            });
        let filter = params
            .get("notifications")
            .cloned()
            .and_then(|f| serde_json::from_value(f).ok())
            .unwrap_or_default();
        Acknowledged {
            subscription,
            filter,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filter_wire_shape() {
        let f = ListenFilter {
            tools_list_changed: true,
            resource_subscriptions: vec!["file:///a".into()],
            ..ListenFilter::default()
        };
        assert_eq!(
            serde_json::to_value(&f).unwrap(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]})
        );
        assert!(ListenFilter::default().is_empty());
        let a = Acknowledged::parse(&json!({
            "_meta": {"io.modelcontextprotocol/subscriptionId": 7},
            "notifications": {"toolsListChanged": true}
        }));
        assert_eq!(a.subscription, Some(7));
        assert!(a.filter.tools_list_changed);
    }
}
