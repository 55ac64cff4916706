//! Sampling: a server asking the client's model for a completion
//! (`sampling/createMessage`). The client hands it to a [`SamplingHandler`]
//! on a thread of its own, with a deadline, as for elicitation.

use std::time::Instant;

use serde::Deserialize as _;
use serde_json::{json, Value};

use crate::model::wire;
use crate::prompts::{PromptContent, Role};
use crate::result::{classify_content, McpMedia};

/// One message of the conversation to complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingMessage {
    /// Who speaks it.
    pub role: Role,
    /// Its content blocks.
    pub content: Vec<PromptContent>,
}

/// A `sampling/createMessage` request.
#[derive(Debug, Clone)]
pub struct SamplingRequest {
    /// The server asking.
    pub server: String,
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// The system prompt the server suggests.
    pub system_prompt: Option<String>,
    /// The most tokens to generate.
    pub max_tokens: u64,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Stop sequences.
    pub stop_sequences: Vec<String>,
    /// `modelPreferences` as sent (hints and priorities).
    pub model_preferences: Option<Value>,
    /// The params as sent.
    pub raw: Value,
    /// When the client answers with an error on the handler's behalf.
    pub deadline: Instant,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingResponse {
    /// Usually [`Role::Assistant`].
    pub role: Role,
    /// The generated content (text, or an image/audio block).
    pub content: PromptContent,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped (`endTurn`, `stopSequence`, `maxTokens`, …).
    pub stop_reason: Option<String>,
}

impl SamplingResponse {
    /// A text answer from `model`, stopped at the end of its turn.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> SamplingResponse {
        SamplingResponse {
            role: Role::Assistant,
            content: PromptContent::Text(text.into()),
            model: model.into(),
            stop_reason: Some("endTurn".into()),
        }
    }

    pub(crate) fn to_result(&self) -> Value {
        let role = match self.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let content = match &self.content {
            PromptContent::Text(t) => json!({"type": "text", "text": t}),
            PromptContent::Media(m) => media_json(m),
        };
        let mut v = json!({"role": role, "content": content, "model": self.model});
        if let Some(r) = &self.stop_reason {
            v["stopReason"] = json!(r);
        }
        v
    }
}

fn media_json(m: &McpMedia) -> Value {
    use base64::Engine as _;
    let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
    match m {
        McpMedia::Image { mime_type, data } => {
            json!({"type": "image", "mimeType": mime_type, "data": b64(data)})
        }
        McpMedia::Audio { mime_type, data } => {
            json!({"type": "audio", "mimeType": mime_type, "data": b64(data)})
        }
        other => {
            json!({"type": "text", "text": format!("[{} not representable in sampling]", other.kind())})
        }
    }
}

/// Answers sampling requests, typically by calling an LLM (after asking the
/// user for approval, as the spec recommends).
pub trait SamplingHandler: Send + Sync {
    /// Produces the completion, or an error message (sent to the server as
    /// a JSON-RPC error; use it when the user rejects the request).
    fn create_message(&self, request: &SamplingRequest) -> Result<SamplingResponse, String>;
}

impl<F> SamplingHandler for F
where
    F: Fn(&SamplingRequest) -> Result<SamplingResponse, String> + Send + Sync,
{
    fn create_message(&self, request: &SamplingRequest) -> Result<SamplingResponse, String> {
        self(request)
    }
}

/// Parses the params of `sampling/createMessage`.
pub(crate) fn parse_request(
    server: &str,
    params: &Value,
    deadline: Instant,
) -> Result<SamplingRequest, String> {
    let w = wire::CreateMessageParams::deserialize(params).unwrap_or_default();
    let msgs = w.messages.ok_or("sampling/createMessage has no messages")?;
    let mut messages = Vec::with_capacity(msgs.len());
    for (i, m) in msgs.into_iter().enumerate() {
        let role = Role::of_message(&m, i)?;
        let blocks = match m.content {
            Some(Value::Array(a)) => a,
            Some(one) => vec![one],
            None => return Err(format!("message {i} has no content")),
        };
        let mut content = Vec::new();
        for b in blocks {
            let is_text = b.get("type").and_then(Value::as_str) == Some("text");
            let c = classify_content(&Value::Array(vec![b]))
                .map_err(|e| format!("message {i}: {e}"))?;
            match c.media.into_iter().next() {
                Some(media) => content.push(PromptContent::Media(media)),
                None if is_text => content.push(PromptContent::Text(c.text)),
                None => {} // tool_use / tool_result blocks are passed in `raw`
            }
        }
        messages.push(SamplingMessage { role, content });
    }
    Ok(SamplingRequest {
        server: server.to_owned(),
        messages,
        system_prompt: w.system_prompt,
        max_tokens: w
            .max_tokens
            .ok_or("sampling/createMessage has no maxTokens")?,
        temperature: w.temperature,
        stop_sequences: w.stop_sequences,
        model_preferences: w.model_preferences,
        raw: params.clone(),
        deadline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_answer() {
        let p = json!({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10,"systemPrompt":"be brief"});
        let r = parse_request("s", &p, Instant::now()).unwrap();
        assert_eq!(
            r.messages[0].content,
            vec![PromptContent::Text("hi".into())]
        );
        assert_eq!(
            (r.max_tokens, r.system_prompt.as_deref()),
            (10, Some("be brief"))
        );
        assert!(parse_request("s", &json!({"messages":[]}), Instant::now()).is_err());
        let a = SamplingResponse::text("m1", "hello").to_result();
        assert_eq!(
            a,
            json!({"role":"assistant","content":{"type":"text","text":"hello"},"model":"m1","stopReason":"endTurn"})
        );
    }
}
