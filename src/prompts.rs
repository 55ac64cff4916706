//! Prompts (`prompts/*`): message templates a server offers.

use serde::Deserialize as _;
use serde_json::Value;

use crate::model::wire;

use crate::result::{classify_content, McpMedia};

/// An argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArgument {
    /// The argument name.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Whether it must be given.
    pub required: bool,
}

/// A prompt a server lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The prompt name.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Its arguments.
    pub arguments: Vec<PromptArgument>,
    /// The definition as sent.
    pub raw: Value,
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

impl Role {
    /// The `role` of message `i` of a prompt or sampling conversation.
    pub(crate) fn of_message(m: &wire::Message, i: usize) -> Result<Role, String> {
        match m.role.as_deref() {
            Some("user") => Ok(Role::User),
            Some("assistant") => Ok(Role::Assistant),
            other => Err(format!("message {i} has role {other:?}")),
        }
    }
}

/// The content of one prompt message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptContent {
    /// Text.
    Text(String),
    /// An image, audio, embedded resource or resource link.
    Media(McpMedia),
}

/// One message of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: Role,
    /// What it says.
    pub content: PromptContent,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetPromptResult {
    /// The prompt's description, if given.
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

impl Prompt {
    /// Maps one element of `prompts/list`.
    pub fn from_json(v: &Value) -> Result<Prompt, String> {
        let w = wire::Prompt::deserialize(v).unwrap_or_default();
        Ok(Prompt {
            name: w.name.ok_or("prompt has no name")?,
            title: w.title,
            description: w.description,
            arguments: w
                .arguments
                .into_iter()
                .map(|a| PromptArgument {
                    name: a.name,
                    title: a.title,
                    description: a.description,
                    required: a.required.unwrap_or(false),
                })
                .collect(),
            raw: v.clone(),
        })
    }
}

impl GetPromptResult {
    /// Maps a `prompts/get` result.
    pub fn from_json(v: &Value) -> Result<GetPromptResult, String> {
        let w = wire::GetPromptResult::deserialize(v).unwrap_or_default();
        let msgs = w.messages.ok_or("prompts/get result has no messages")?;
        let mut messages = Vec::with_capacity(msgs.len());
        for (i, m) in msgs.into_iter().enumerate() {
            let role = Role::of_message(&m, i)?;
            let content = m
                .content
                .ok_or_else(|| format!("message {i} has no content"))?;
            let c = classify_content(&Value::Array(vec![content]))
                .map_err(|e| format!("message {i}: {e}"))?;
            let content = match c.media.into_iter().next() {
                Some(media) => PromptContent::Media(media),
                None => PromptContent::Text(c.text),
            };
            messages.push(PromptMessage { role, content });
        }
        Ok(GetPromptResult {
            description: w.description,
            messages,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sloppy_arguments_are_skipped() {
        let p = Prompt::from_json(&json!({"name":"p","arguments":[{"name":"a","required":"yes"},"b",{"title":"no name"}]})).unwrap();
        assert_eq!(p.arguments.len(), 1);
        assert!(!p.arguments[0].required);
        assert!(Prompt::from_json(&json!({"name":"p","arguments":"x"}))
            .unwrap()
            .arguments
            .is_empty());
        assert!(GetPromptResult::from_json(&json!({"messages":"x"})).is_err());
    }

    #[test]
    fn mapping() {
        let p = Prompt::from_json(&json!({"name":"review","arguments":[{"name":"code","required":true},{"name":"style"}]})).unwrap();
        assert_eq!(p.arguments.len(), 2);
        assert!(p.arguments[0].required && !p.arguments[1].required);
        let r = GetPromptResult::from_json(&json!({"description":"d","messages":[
            {"role":"user","content":{"type":"text","text":"hi"}},
            {"role":"assistant","content":{"type":"image","mimeType":"image/png","data":"AAE="}},
            {"role":"user","content":{"type":"resource","resource":{"uri":"x://a","text":"t"}}}
        ]}))
        .unwrap();
        assert_eq!(
            r.messages[0],
            PromptMessage {
                role: Role::User,
                content: PromptContent::Text("hi".into())
            }
        );
        assert!(
            matches!(&r.messages[1].content, PromptContent::Media(McpMedia::Image { data, .. }) if data == &[0, 1])
        );
        assert!(matches!(
            &r.messages[2].content,
            PromptContent::Media(McpMedia::Resource { .. })
        ));
        assert!(GetPromptResult::from_json(
            &json!({"messages":[{"role":"system","content":{"type":"text","text":""}}]})
        )
        .is_err());
    }
}
