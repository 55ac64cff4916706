//! `resultType`: what kind of result a modern server answered with.

use serde_json::Value;

/// The `resultType` of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultType {
    /// The request is done; the result is final (also what a missing
    /// `resultType` means, as from every legacy server).
    Complete,
    /// The server needs input from the client (elicitation, sampling, roots)
    /// before it can answer: an `InputRequiredResult` (MRTR).
    InputRequired,
    /// A task handle (`CreateTaskResult`, the tasks extension
    /// `io.modelcontextprotocol/tasks`): the server runs the request on and
    /// the client polls `tasks/get` for its end.
    Task,
    /// A kind this client does not know.
    Other(String),
}

impl ResultType {
    /// The `resultType` of `result` (`Complete` when absent or not a string).
    pub fn of(result: &Value) -> ResultType {
        match crate::json::member(result, "resultType").and_then(Value::as_str) {
            None | Some("complete") => ResultType::Complete,
            Some("input_required") => ResultType::InputRequired,
            Some("task") => ResultType::Task,
            Some(other) => ResultType::Other(other.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_is_complete() {
        assert_eq!(ResultType::of(&json!({})), ResultType::Complete);
        assert_eq!(
            ResultType::of(&json!({"resultType": 3})),
            ResultType::Complete
        );
        assert_eq!(
            ResultType::of(&json!({"resultType": "input_required"})),
            ResultType::InputRequired
        );
        assert_eq!(
            ResultType::of(&json!({"resultType": "task"})),
            ResultType::Task
        );
        assert_eq!(
            ResultType::of(&json!({"resultType": "later"})),
            ResultType::Other("later".into())
        );
    }
}
