//! Elicitation: a server asking the user for input in the middle of a call
//! (`elicitation/create`, MCP 2025-06-18+).
//!
//! The client hands each request to an [`ElicitationHandler`] on a thread of
//! its own (a user may take minutes) and answers the server when the handler
//! returns, or with `cancel` when the deadline passes, the handler panics or
//! the connection's handler capacity is exhausted.
//!
//! Elicited values are secrets more often than not (the seed's first use is a
//! sudo password): they are never logged, never sent to the log channel and
//! never persisted; [`ElicitationResponse`]'s `Debug` output redacts them.

use std::fmt;
use std::time::Instant;

use serde::Deserialize as _;
use serde_json::{json, Map, Value};

use crate::model::wire;

/// What kind of input an elicitation asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElicitationMode {
    /// An in-band form described by a restricted JSON Schema.
    Form,
    /// An out-of-band URL the user should open (MCP 2025-11-25).
    Url {
        /// The URL to open.
        url: String,
        /// The server's id for this elicitation.
        elicitation_id: Option<String>,
    },
}

/// The type of one form field.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Free text; `format` is e.g. `email`, `uri`, `date`, `password`.
    String {
        /// The declared format, if any.
        format: Option<String>,
        /// Minimum length.
        min_length: Option<u64>,
        /// Maximum length.
        max_length: Option<u64>,
    },
    /// A number (`integer` when only whole numbers are allowed).
    Number {
        /// Whole numbers only.
        integer: bool,
        /// Minimum value.
        minimum: Option<f64>,
        /// Maximum value.
        maximum: Option<f64>,
    },
    /// A yes/no value.
    Boolean,
    /// One (or, when `multiple`, several) of fixed options.
    Enum {
        /// `(value, display title)` pairs.
        options: Vec<(String, String)>,
        /// Several may be chosen (an array of strings is returned).
        multiple: bool,
    },
}

/// One field of an elicitation form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The property name; the key in the accepted content.
    pub name: String,
    /// A display title.
    pub title: Option<String>,
    /// A description for the user.
    pub description: Option<String>,
    /// The type of value.
    pub kind: FieldKind,
    /// Whether a value is required.
    pub required: bool,
    /// The schema's `default`, applied when the user leaves the field out.
    pub default: Option<Value>,
    /// Whether input should be masked: `format: password`, `writeOnly: true`,
    /// or a name containing password, passphrase, secret or token.
    pub secret: bool,
}

/// The parsed `requestedSchema`.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationForm {
    /// No properties: a yes/no confirmation (accept with empty content).
    Confirm,
    /// One or more fields, in the schema's order.
    Fields(Vec<FormField>),
}

impl ElicitationForm {
    /// Parses a restricted JSON Schema (`type: object` with flat primitive
    /// properties). Returns a message on a schema it cannot present.
    pub fn parse(schema: &Value) -> Result<ElicitationForm, String> {
        let props = match schema.get("properties") {
            None | Some(Value::Null) => return Ok(ElicitationForm::Confirm),
            Some(Value::Object(p)) => p,
            Some(_) => return Err("requestedSchema.properties is not an object".into()),
        };
        if props.is_empty() {
            return Ok(ElicitationForm::Confirm);
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::with_capacity(props.len());
        for (name, p) in props {
            fields.push(parse_field(name, p, required.contains(&name.as_str()))?);
        }
        Ok(ElicitationForm::Fields(fields))
    }

    /// The fields (empty for a confirmation).
    pub fn fields(&self) -> &[FormField] {
        match self {
            ElicitationForm::Confirm => &[],
            ElicitationForm::Fields(f) => f,
        }
    }
}

fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["password", "passphrase", "secret", "token"]
        .iter()
        .any(|w| n.contains(w))
}

fn parse_field(name: &str, p: &Value, required: bool) -> Result<FormField, String> {
    let s = |k: &str| crate::json::opt_str(p, k);
    let ty = p.get("type").and_then(Value::as_str);
    let enum_options = |vals: &[Value], titles: Option<&Vec<Value>>| -> Vec<(String, String)> {
        vals.iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let v = v.as_str()?.to_owned();
                let t = titles
                    .and_then(|t| t.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.clone());
                Some((v, t))
            })
            .collect()
    };
    let one_of = |key: &str, from: &Value| -> Option<Vec<(String, String)>> {
        let arr = from.get(key)?.as_array()?;
        Some(
            arr.iter()
                .filter_map(|o| {
                    let c = o.get("const")?.as_str()?.to_owned();
                    let t = o
                        .get("title")
                        .and_then(Value::as_str)
                        .unwrap_or(&c)
                        .to_owned();
                    Some((c, t))
                })
                .collect(),
        )
    };
    let kind = match ty {
        Some("string") => {
            if let Some(vals) = p.get("enum").and_then(Value::as_array) {
                FieldKind::Enum {
                    options: enum_options(vals, p.get("enumNames").and_then(Value::as_array)),
                    multiple: false,
                }
            } else if let Some(options) = one_of("oneOf", p).or_else(|| one_of("anyOf", p)) {
                FieldKind::Enum {
                    options,
                    multiple: false,
                }
            } else {
                FieldKind::String {
                    format: s("format"),
                    min_length: p.get("minLength").and_then(Value::as_u64),
                    max_length: p.get("maxLength").and_then(Value::as_u64),
                }
            }
        }
        Some("number") | Some("integer") => FieldKind::Number {
            integer: ty == Some("integer"),
            minimum: p.get("minimum").and_then(Value::as_f64),
            maximum: p.get("maximum").and_then(Value::as_f64),
        },
        Some("boolean") => FieldKind::Boolean,
        Some("array") => {
            let items = p.get("items").unwrap_or(&Value::Null);
            let options = if let Some(vals) = items.get("enum").and_then(Value::as_array) {
                enum_options(vals, None)
            } else {
                one_of("anyOf", items)
                    .or_else(|| one_of("oneOf", items))
                    .ok_or_else(|| format!("field '{name}': array without enum items"))?
            };
            FieldKind::Enum {
                options,
                multiple: true,
            }
        }
        other => return Err(format!("field '{name}': unsupported type {other:?}")),
    };
    let secret = s("format").as_deref() == Some("password")
        || p.get("writeOnly").and_then(Value::as_bool) == Some(true)
        || is_secret_name(name);
    Ok(FormField {
        name: name.to_owned(),
        title: s("title"),
        description: s("description"),
        kind,
        required,
        default: p.get("default").cloned(),
        secret,
    })
}

/// One elicitation, as handed to the handler.
#[derive(Debug, Clone)]
pub struct ElicitationRequest {
    /// The server asking.
    pub server: String,
    /// The message to show the user.
    pub message: String,
    /// Form or URL mode.
    pub mode: ElicitationMode,
    /// The parsed form (a confirmation in URL mode).
    pub form: ElicitationForm,
    /// The `requestedSchema` as sent.
    pub schema: Value,
    /// When the client will answer `cancel` on the handler's behalf.
    pub deadline: Instant,
}

/// The user's answer.
#[derive(Clone, PartialEq)]
pub enum ElicitationResponse {
    /// The user submitted the form; the values by field name.
    Accept(Map<String, Value>),
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
}

impl fmt::Debug for ElicitationResponse {
    // Never print the values: they are often secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElicitationResponse::Accept(m) => {
                let keys: Vec<&String> = m.keys().collect();
                write!(f, "Accept(<{} redacted field(s): {keys:?}>)", m.len())
            }
            ElicitationResponse::Decline => f.write_str("Decline"),
            ElicitationResponse::Cancel => f.write_str("Cancel"),
        }
    }
}

impl ElicitationResponse {
    /// The `ElicitResult` sent to the server. For `Accept`, fields the user
    /// left out are filled from the schema's `default`s (SEP-1034).
    pub fn to_result(&self, form: &ElicitationForm) -> Value {
        match self {
            ElicitationResponse::Accept(content) => {
                let mut content = content.clone();
                for f in form.fields() {
                    if let Some(d) = &f.default {
                        content.entry(f.name.clone()).or_insert_with(|| d.clone());
                    }
                }
                json!({"action": "accept", "content": content})
            }
            ElicitationResponse::Decline => json!({"action": "decline"}),
            ElicitationResponse::Cancel => json!({"action": "cancel"}),
        }
    }
}

/// Answers elicitation requests, typically by asking a person.
///
/// Called on a dedicated thread, so it may block for as long as the user
/// takes; after [`ElicitationRequest::deadline`] the client has already
/// answered `cancel` and the handler's answer is discarded.
pub trait ElicitationHandler: Send + Sync {
    /// Asks the user and returns their answer.
    fn elicit(&self, request: &ElicitationRequest) -> ElicitationResponse;

    /// Whether URL-mode requests may be sent to this handler (advertised as
    /// `elicitation.url`). Form mode is always supported.
    fn supports_url(&self) -> bool {
        false
    }
}

impl<F> ElicitationHandler for F
where
    F: Fn(&ElicitationRequest) -> ElicitationResponse + Send + Sync,
{
    fn elicit(&self, request: &ElicitationRequest) -> ElicitationResponse {
        self(request)
    }
}

/// Parses the params of `elicitation/create`.
pub(crate) fn parse_request(
    server: &str,
    params: &Value,
    deadline: Instant,
) -> Result<ElicitationRequest, String> {
    let w = wire::ElicitParams::deserialize(params).unwrap_or_default();
    let message = w.message.ok_or("elicitation/create has no message")?;
    let schema = w.requested_schema.unwrap_or(Value::Null);
    let mode = match w.mode.as_deref() {
        None | Some("form") => ElicitationMode::Form,
        Some("url") => ElicitationMode::Url {
            url: w.url.ok_or("url-mode elicitation has no url")?,
            elicitation_id: w.elicitation_id,
        },
        Some(other) => return Err(format!("unknown elicitation mode {other:?}")),
    };
    let form = match mode {
        ElicitationMode::Form => ElicitationForm::parse(&schema)?,
        ElicitationMode::Url { .. } => ElicitationForm::Confirm,
    };
    Ok(ElicitationRequest {
        server: server.to_owned(),
        message,
        mode,
        form,
        schema,
        deadline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_field() {
        let f = ElicitationForm::parse(&json!({"type":"object","properties":{"password":{"type":"string","format":"password"}},"required":["password"]})).unwrap();
        let fields = f.fields();
        assert_eq!(fields.len(), 1);
        assert!(fields[0].secret && fields[0].required);
    }

    #[test]
    fn secret_detection() {
        for (name, extra, secret) in [
            ("api_token", json!({}), true),
            ("SSH_Passphrase", json!({}), true),
            ("value", json!({"writeOnly": true}), true),
            ("name", json!({}), false),
        ] {
            let mut p = json!({"type":"string"});
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let f = ElicitationForm::parse(&json!({"properties":{name: p}})).unwrap();
            assert_eq!(f.fields()[0].secret, secret, "{name}");
        }
    }

    #[test]
    fn confirm_and_kinds() {
        assert_eq!(
            ElicitationForm::parse(&json!({"type":"object","properties":{}})).unwrap(),
            ElicitationForm::Confirm
        );
        assert_eq!(
            ElicitationForm::parse(&json!({})).unwrap(),
            ElicitationForm::Confirm
        );
        let f = ElicitationForm::parse(&json!({"properties":{
            "n":{"type":"integer","minimum":1},
            "b":{"type":"boolean","default":true},
            "e":{"type":"string","enum":["a","b"],"enumNames":["A","B"]},
            "o":{"type":"string","oneOf":[{"const":"x","title":"X"}]},
            "m":{"type":"array","items":{"anyOf":[{"const":"p","title":"P"}]}}
        }}))
        .unwrap();
        let kinds: Vec<_> = f.fields().iter().map(|f| f.kind.clone()).collect();
        assert!(
            matches!(kinds[0], FieldKind::Number { integer: true, minimum: Some(m), .. } if m == 1.0)
        );
        assert_eq!(kinds[1], FieldKind::Boolean);
        assert_eq!(
            kinds[2],
            FieldKind::Enum {
                options: vec![("a".into(), "A".into()), ("b".into(), "B".into())],
                multiple: false
            }
        );
        assert_eq!(
            kinds[3],
            FieldKind::Enum {
                options: vec![("x".into(), "X".into())],
                multiple: false
            }
        );
        assert!(matches!(&kinds[4], FieldKind::Enum { multiple: true, .. }));
        assert!(ElicitationForm::parse(&json!({"properties":{"x":{"type":"object"}}})).is_err());
        assert!(ElicitationForm::parse(&json!({"properties":5})).is_err());
    }

    #[test]
    fn defaults_applied_and_debug_redacted() {
        let form = ElicitationForm::parse(
            &json!({"properties":{"a":{"type":"string","default":"x"},"p":{"type":"string"}}}),
        )
        .unwrap();
        let mut m = Map::new();
        m.insert("p".into(), json!("hunter2"));
        let r = ElicitationResponse::Accept(m);
        assert_eq!(
            r.to_result(&form),
            json!({"action":"accept","content":{"a":"x","p":"hunter2"}})
        );
        assert!(!format!("{r:?}").contains("hunter2"));
        assert_eq!(
            ElicitationResponse::Decline.to_result(&form),
            json!({"action":"decline"})
        );
    }

    #[test]
    fn url_mode() {
        let r = parse_request(
            "s",
            &json!({"mode":"url","message":"m","url":"https://x","elicitationId":"e"}),
            Instant::now(),
        )
        .unwrap();
        assert!(matches!(r.mode, ElicitationMode::Url { ref url, .. } if url == "https://x"));
        assert!(parse_request("s", &json!({"mode":"url","message":"m"}), Instant::now()).is_err());
        assert!(parse_request("s", &json!({}), Instant::now()).is_err());
    }
}
