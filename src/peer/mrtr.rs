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

/// One input request answered: its key, its kind, the handler's result.
type Answered = (String, InputKind, std::result::Result<Value, (i64, String)>);

impl Peer {
    /// The params of the next round of `method`: the original `params`
    /// (without an earlier round's answers) plus the answers to the input
    /// requests of `result`, and its `requestState` when it has one.
    pub(super) fn next_round(
        &self,
        method: &str,
        params: Option<&Value>,
        result: &Value,
    ) -> Result<Value> {
        let responses = self.input_responses(method, result)?;
        let mut p = match params {
            Some(Value::Object(m)) => m.clone(),
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

    /// Runs the handler of every input request of `result`: all kinds are
    /// checked first (a kind without a handler fails the call at once,
    /// before anyone is asked anything), then the handlers run in parallel,
    /// each on a thread of its own and within its own deadline, as they do
    /// for a legacy server's requests.
    fn input_responses(&self, method: &str, result: &Value) -> Result<Map<String, Value>> {
        match result.get("inputRequests").and_then(Value::as_object) {
            Some(requests) => self.answer_input_requests(method, requests),
            None => Ok(Map::new()),
        }
    }

    /// Answers `requests` (input requests by key, as an `InputRequiredResult`
    /// or an `input_required` task of the tasks extension lists them).
    pub(crate) fn answer_input_requests(
        &self,
        method: &str,
        requests: &Map<String, Value>,
    ) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        let mut jobs = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            let kind = request.get("method").and_then(Value::as_str).unwrap_or("");
            match InputKind::of(kind).filter(|k| self.handles(*k)) {
                Some(k) => jobs.push((key, k, request.get("params").unwrap_or(&Value::Null))),
                // No handler: the capability was never declared, so the
                // server should not have asked; fail the call, never hang.
                None => {
                    return Err(McpError::InputRequired {
                        server: self.name.clone(),
                        method: method.to_owned(),
                        requests: vec![kind.to_owned()],
                    })
                }
            }
        }
        if jobs.iter().any(|(_, k, _)| *k == InputKind::Elicitation) {
            self.lifecycle(format!("{method}: the server asks for input (elicitation)"));
        }
        let answers: Vec<Answered> = if jobs.len() == 1 {
            let (key, k, params) = jobs[0];
            vec![(key.clone(), k, self.answer_input(k, params))]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = jobs
                    .iter()
                    .map(|(key, k, params)| {
                        let (key, k, params) = ((*key).clone(), *k, *params);
                        let spawned = crate::threads::spawn_scoped(
                            scope,
                            format!("mcp-{}-input", self.name),
                            crate::limits::DEFAULT_THREAD_STACK,
                            move || self.answer_input(k, params),
                        );
                        (key, k, spawned)
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|(key, k, h)| {
                        let answer = match h {
                            Ok(h) => h.join().unwrap_or_else(|_| {
                                Err((
                                    crate::jsonrpc::codes::INTERNAL_ERROR,
                                    "the handler panicked".into(),
                                ))
                            }),
                            Err(e) => Err((
                                crate::jsonrpc::codes::INTERNAL_ERROR,
                                format!("cannot start a thread: {e}"),
                            )),
                        };
                        (key, k, answer)
                    })
                    .collect()
            })
        };
        for (key, k, answer) in answers {
            match answer {
                Ok(v) => {
                    out.insert(key, v);
                }
                Err((_, message)) => {
                    return Err(McpError::InvalidInput {
                        server: self.name.clone(),
                        message: format!(
                            "{method}: no answer to the server's {}: {message}",
                            k.method()
                        ),
                    })
                }
            }
        }
        Ok(out)
    }
}
