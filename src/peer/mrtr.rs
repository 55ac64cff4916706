//! Multi round-trip requests (MCP 2026-07-28): a server that needs input
//! answers with an `InputRequiredResult`; the client runs the same
//! handlers a legacy server reaches with `elicitation/create`,
//! `sampling/createMessage` and `roots/list` requests, and sends the
//! original request again, with a new id, the answers in `inputResponses`
//! and the server's `requestState` echoed byte for byte.
//!
//! The values a user enters are never logged: only that an input round ran.

use serde_json::{Map, Value};

use super::handlers::InputKind;
use super::Peer;
use crate::error::{McpError, Result};

impl Peer {
    /// The params of the next round of `method`: the original `params`
    /// (without an earlier round's answers) plus the answers to the input
    /// requests of `result`, and its `requestState` when it has one.
    pub(super) fn next_round(
        &self,
        method: &str,
        params: Option<Value>,
        result: &Value,
    ) -> Result<Value> {
        let responses = self.input_responses(method, result)?;
        let mut p = match params {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        p.remove("inputResponses");
        p.remove("requestState");
        if !responses.is_empty() {
            p.insert("inputResponses".into(), Value::Object(responses));
        }
        if let Some(state) = result.get("requestState") {
            p.insert("requestState".into(), state.clone());
        }
        Ok(Value::Object(p))
    }

    /// Runs the handler of every input request of `result`.
    fn input_responses(&self, method: &str, result: &Value) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        let Some(requests) = result.get("inputRequests").and_then(Value::as_object) else {
            return Ok(out);
        };
        for (key, request) in requests {
            let kind = request.get("method").and_then(Value::as_str).unwrap_or("");
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            let missing = || McpError::InputRequired {
                server: self.name.clone(),
                method: method.to_owned(),
                requests: vec![kind.to_owned()],
            };
            let answer = match InputKind::of(kind).filter(|k| self.handles(*k)) {
                Some(k) => {
                    if k == InputKind::Elicitation {
                        self.lifecycle(format!(
                            "{method}: the server asks for input (elicitation)"
                        ));
                    }
                    self.answer_input(k, &params)
                }
                // No handler: the capability was never declared, so the
                // server should not have asked; fail the call, never hang.
                None => return Err(missing()),
            };
            match answer {
                Ok(v) => {
                    out.insert(key.clone(), v);
                }
                Err((_, message)) => {
                    return Err(McpError::InvalidInput {
                        server: self.name.clone(),
                        message: format!("{method}: no answer to the server's {kind}: {message}"),
                    })
                }
            }
        }
        Ok(out)
    }
}
