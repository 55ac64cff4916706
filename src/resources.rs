//! Resources (`resources/*`): data a server exposes by URI.

use base64::Engine as _;
use serde::Deserialize as _;
use serde_json::Value;

use crate::model::wire;

/// A resource a server lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// MIME type.
    pub mime_type: Option<String>,
    /// Size in bytes, if the server knows it.
    pub size: Option<u64>,
    /// The definition as sent.
    pub raw: Value,
}

/// A parameterised resource (`uriTemplate`, RFC 6570).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// MIME type of what it yields.
    pub mime_type: Option<String>,
    /// The definition as sent.
    pub raw: Value,
}

/// One item of a `resources/read` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text contents.
    Text {
        /// The URI of this item.
        uri: String,
        /// MIME type.
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary contents, decoded from base64.
    Blob {
        /// The URI of this item.
        uri: String,
        /// MIME type.
        mime_type: Option<String>,
        /// The bytes.
        data: Vec<u8>,
    },
}

impl Resource {
    /// Maps one element of `resources/list`.
    pub fn from_json(v: &Value) -> Result<Resource, String> {
        let w = wire::Resource::deserialize(v).unwrap_or_default();
        Ok(Resource {
            uri: w.uri.ok_or("resource has no uri")?,
            name: w.name.unwrap_or_default(),
            title: w.title,
            description: w.description,
            mime_type: w.mime_type,
            size: w.size,
            raw: v.clone(),
        })
    }
}

impl ResourceTemplate {
    /// Maps one element of `resources/templates/list`.
    pub fn from_json(v: &Value) -> Result<ResourceTemplate, String> {
        let w = wire::ResourceTemplate::deserialize(v).unwrap_or_default();
        Ok(ResourceTemplate {
            uri_template: w
                .uri_template
                .ok_or("resource template has no uriTemplate")?,
            name: w.name.unwrap_or_default(),
            title: w.title,
            description: w.description,
            mime_type: w.mime_type,
            raw: v.clone(),
        })
    }
}

impl ResourceContents {
    /// Maps one element of `resources/read`'s `contents`.
    pub fn from_json(v: &Value) -> Result<ResourceContents, String> {
        let w = wire::ResourceContents::deserialize(v).unwrap_or_default();
        let uri = w.uri.ok_or("resource contents have no uri")?;
        let mime_type = w.mime_type;
        if let Some(text) = w.text {
            return Ok(ResourceContents::Text {
                uri,
                mime_type,
                text,
            });
        }
        let blob = w
            .blob
            .ok_or_else(|| format!("contents of {uri} have neither text nor blob"))?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(blob.trim())
            .map_err(|e| format!("contents of {uri} have invalid base64: {e}"))?;
        Ok(ResourceContents::Blob {
            uri,
            mime_type,
            data,
        })
    }

    /// The URI of this item.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text { uri, .. } | ResourceContents::Blob { uri, .. } => uri,
        }
    }

    /// The contents as bytes (text as UTF-8).
    pub fn bytes(&self) -> &[u8] {
        match self {
            ResourceContents::Text { text, .. } => text.as_bytes(),
            ResourceContents::Blob { data, .. } => data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mapping() {
        let r = Resource::from_json(
            &json!({"uri":"file:///a","name":"a","mimeType":"text/plain","size":3}),
        )
        .unwrap();
        assert_eq!((r.uri.as_str(), r.size), ("file:///a", Some(3)));
        assert!(Resource::from_json(&json!({"name":"x"})).is_err());
        let t = ResourceTemplate::from_json(&json!({"uriTemplate":"x://{id}","name":"t"})).unwrap();
        assert_eq!(t.uri_template, "x://{id}");
        let c = ResourceContents::from_json(&json!({"uri":"x://1","blob":"AAE="})).unwrap();
        assert_eq!(c.bytes(), &[0, 1]);
        let c = ResourceContents::from_json(&json!({"uri":"x://2","text":"hi"})).unwrap();
        assert_eq!(c.bytes(), b"hi");
        assert!(ResourceContents::from_json(&json!({"uri":"x://3"})).is_err());
        assert!(ResourceContents::from_json(&json!({"uri":"x://3","blob":"@@"})).is_err());
    }

    #[test]
    fn sloppy_members_are_absent_not_fatal() {
        let r = Resource::from_json(
            &json!({"uri":"file:///a","name":7,"mimeType":null,"size":"3","extra":{"x":1}}),
        )
        .unwrap();
        assert_eq!((r.name.as_str(), r.mime_type, r.size), ("", None, None));
        assert_eq!(r.raw["extra"]["x"], 1, "unknown members are kept in raw");
        assert!(Resource::from_json(&json!({"uri": 5})).is_err());
        assert!(Resource::from_json(&json!("file:///a")).is_err());
    }
}
