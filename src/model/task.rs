//! Task handles (`CreateTaskResult`, the shape `tasks/get` answers too) and
//! task states: wire types, apart from the polling that drives them
//! ([`crate::task`]).

use std::time::Duration;

use serde_json::Value;

/// The state of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskStatus {
    /// Still running.
    Working,
    /// Waiting for input from the requestor.
    InputRequired,
    /// Finished; the result can be fetched.
    Completed,
    /// Finished with a failure.
    Failed,
    /// Cancelled.
    Cancelled,
    /// A status this client does not know, kept verbatim.
    Other(String),
}

impl TaskStatus {
    /// Parses the wire value.
    pub fn parse(s: &str) -> TaskStatus {
        match s {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            other => TaskStatus::Other(other.to_owned()),
        }
    }

    /// The wire value.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Other(s) => s,
        }
    }

    /// Whether the task can no longer change.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task handle, as returned by a task-augmented request or `tasks/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTaskResult {
    /// The durable task id.
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// The server's human-readable status message.
    pub status_message: Option<String>,
    /// The polling interval the server suggests.
    pub poll_interval: Option<Duration>,
    /// How long the server keeps the task; `None` for unlimited or unknown.
    pub ttl: Option<Duration>,
}

impl CreateTaskResult {
    /// Recognises a task handle nested under `task` (the 2025-11-25 shape) or
    /// at the top level (the `tasks/get` shape). A normal `CallToolResult`
    /// (which has `content`) is never mistaken for one.
    pub fn parse(v: &Value) -> Option<CreateTaskResult> {
        if let Some(t) = v.get("task").filter(|t| t.is_object()) {
            return Self::parse_task(t);
        }
        if v.get("content").is_none() {
            return Self::parse_task(v);
        }
        None
    }

    fn parse_task(t: &Value) -> Option<CreateTaskResult> {
        let task_id = t.get("taskId")?.as_str()?.to_owned();
        let status = TaskStatus::parse(t.get("status")?.as_str()?);
        let ms = |k: &str| t.get(k).and_then(Value::as_u64).map(Duration::from_millis);
        Some(CreateTaskResult {
            task_id,
            status,
            status_message: crate::json::opt_str(t, "statusMessage"),
            poll_interval: ms("pollInterval"),
            ttl: ms("ttl"),
        })
    }
}
