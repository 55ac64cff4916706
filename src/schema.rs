//! A small JSON Schema validator for tool `outputSchema`s.
//!
//! It covers the keywords tool schemas use in practice — `type` (including
//! `integer` and type arrays), `properties`, `required`,
//! `additionalProperties`, `items`, `prefixItems`, `enum`, `const`,
//! numeric and length bounds, `allOf` / `anyOf` / `oneOf` / `not`, and local
//! `$ref`s (`#/$defs/…`, `#/definitions/…`). Unknown keywords are ignored,
//! as JSON Schema requires, so a schema using more than this is checked
//! less strictly, never rejected wrongly.

use std::cell::Cell;

use serde_json::Value;

use crate::limits::{SCHEMA_MIN_STEPS, SCHEMA_STEPS_PER_NODE};

/// How deep `$ref`s and nested schemas may go before validation gives up
/// (a cyclic `$ref` must not recurse forever).
const MAX_DEPTH: usize = 64;

/// Validates `value` against `schema`. Returns the first violation, with the
/// JSON Pointer of the offending value.
///
/// The work is bounded: a schema whose `$ref`s branch exponentially (e.g.
/// `{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}`) fails with "too complex" after
/// [`SCHEMA_MIN_STEPS`] plus [`SCHEMA_STEPS_PER_NODE`] per node of `value`
/// subschema checks, instead of spinning the calling thread for ever.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    let budget =
        SCHEMA_MIN_STEPS.saturating_add(SCHEMA_STEPS_PER_NODE.saturating_mul(count_nodes(value)));
    let steps = Budget {
        left: Cell::new(budget),
        exhausted: Cell::new(false),
        too_deep: Cell::new(false),
    };
    let verdict = check(&steps, schema, schema, value, "", 0);
    // Whatever `not` or `anyOf` made of a refusal to go on, the check is void.
    if steps.exhausted.get() {
        return Err("(root): schema too complex to validate (branching $refs?)".into());
    }
    if steps.too_deep.get() {
        return Err("(root): schema nested too deeply (cyclic $ref?)".into());
    }
    verdict
}

/// Subschema checks left before validation gives up.
struct Budget {
    left: Cell<usize>,
    exhausted: Cell<bool>,
    too_deep: Cell<bool>,
}

/// How many JSON values `v` is made of (iteratively: no recursion limit).
fn count_nodes(v: &Value) -> usize {
    let mut n = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 1;
        match v {
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    n
}

fn type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => {
            v.as_i64().is_some()
                || v.as_u64().is_some()
                || v.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

fn resolve<'a>(root: &'a Value, r: &str) -> Option<&'a Value> {
    let pointer = r.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

fn at(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn check(
    steps: &Budget,
    root: &Value,
    schema: &Value,
    v: &Value,
    path: &str,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        steps.too_deep.set(true);
        return Err(format!("{path}: schema nested too deeply (cyclic $ref?)"));
    }
    match steps.left.get().checked_sub(1) {
        Some(left) => steps.left.set(left),
        None => {
            steps.exhausted.set(true);
            return Err(format!(
                "{}: schema too complex to validate (branching $refs?)",
                show(path)
            ));
        }
    }
    let s = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{}: no value is allowed here", show(path))),
        Value::Object(o) => o,
        _ => return Ok(()),
    };
    let here = show(path);
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let target = resolve(root, r).ok_or_else(|| format!("{here}: unresolvable $ref {r}"))?;
        check(steps, root, target, v, path, depth + 1)?;
    }
    match s.get("type") {
        Some(Value::String(t)) if !type_matches(t, v) => {
            return Err(format!("{here}: expected {t}, got {}", kind(v)));
        }
        Some(Value::Array(ts))
            if !ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_matches(t, v)) =>
        {
            return Err(format!(
                "{here}: expected one of {}, got {}",
                Value::Array(ts.clone()),
                kind(v)
            ));
        }
        _ => {}
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            return Err(format!(
                "{here}: {v} is not one of {}",
                Value::Array(e.clone())
            ));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("{here}: expected {c}, got {v}"));
        }
    }
    if let Some(n) = v.as_f64() {
        let f = |k: &str| s.get(k).and_then(Value::as_f64);
        if f("minimum").is_some_and(|m| n < m) || f("exclusiveMinimum").is_some_and(|m| n <= m) {
            return Err(format!("{here}: {v} is below the minimum"));
        }
        if f("maximum").is_some_and(|m| n > m) || f("exclusiveMaximum").is_some_and(|m| n >= m) {
            return Err(format!("{here}: {v} is above the maximum"));
        }
    }
    if let Some(st) = v.as_str() {
        let len = st.chars().count() as u64;
        let u = |k: &str| s.get(k).and_then(Value::as_u64);
        if u("minLength").is_some_and(|m| len < m) || u("maxLength").is_some_and(|m| len > m) {
            return Err(format!("{here}: string length {len} is out of bounds"));
        }
    }
    if let Some(arr) = v.as_array() {
        let u = |k: &str| s.get(k).and_then(Value::as_u64);
        let n = arr.len() as u64;
        if u("minItems").is_some_and(|m| n < m) || u("maxItems").is_some_and(|m| n > m) {
            return Err(format!("{here}: {n} items is out of bounds"));
        }
        let prefix = s
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(0, |p| p.len());
        if let Some(p) = s.get("prefixItems").and_then(Value::as_array) {
            for (i, (item, sch)) in arr.iter().zip(p).enumerate() {
                check(steps, root, sch, item, &at(path, &i.to_string()), depth + 1)?;
            }
        }
        if let Some(items) = s.get("items") {
            for (i, item) in arr.iter().enumerate().skip(prefix) {
                check(
                    steps,
                    root,
                    items,
                    item,
                    &at(path, &i.to_string()),
                    depth + 1,
                )?;
            }
        }
    }
    if let Some(obj) = v.as_object() {
        if let Some(req) = s.get("required").and_then(Value::as_array) {
            for k in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(k) {
                    return Err(format!("{here}: missing required property '{k}'"));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            for (k, sch) in props {
                if let Some(pv) = obj.get(k) {
                    check(steps, root, sch, pv, &at(path, k), depth + 1)?;
                }
            }
        }
        if let Some(extra) = s.get("additionalProperties") {
            for (k, pv) in obj {
                if props.is_some_and(|p| p.contains_key(k)) {
                    continue;
                }
                check(steps, root, extra, pv, &at(path, k), depth + 1).map_err(|e| {
                    if extra == &Value::Bool(false) {
                        format!("{here}: unexpected property '{k}'")
                    } else {
                        e
                    }
                })?;
            }
        }
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for sch in all {
            check(steps, root, sch, v, path, depth + 1)?;
        }
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        if !any
            .iter()
            .any(|sch| check(steps, root, sch, v, path, depth + 1).is_ok())
        {
            return Err(format!("{here}: matches none of anyOf"));
        }
    }
    if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
        let n = one
            .iter()
            .filter(|sch| check(steps, root, sch, v, path, depth + 1).is_ok())
            .count();
        if n != 1 {
            return Err(format!("{here}: matches {n} of oneOf, not exactly one"));
        }
    }
    if let Some(not) = s.get("not") {
        if check(steps, root, not, v, path, depth + 1).is_ok() {
            return Err(format!("{here}: matches a schema under 'not'"));
        }
    }
    Ok(())
}

fn show(path: &str) -> &str {
    if path.is_empty() {
        "(root)"
    } else {
        path
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects() {
        let s = json!({"type":"object","properties":{"sum":{"type":"number"},"tags":{"type":"array","items":{"type":"string"}}},"required":["sum"],"additionalProperties":false});
        validate(&s, &json!({"sum": 5})).unwrap();
        validate(&s, &json!({"sum": 5.5, "tags": ["a"]})).unwrap();
        assert!(validate(&s, &json!({}))
            .unwrap_err()
            .contains("missing required property 'sum'"));
        assert!(validate(&s, &json!({"sum": "5"}))
            .unwrap_err()
            .contains("/sum"));
        assert!(validate(&s, &json!({"sum": 1, "tags": [1]}))
            .unwrap_err()
            .contains("/tags/0"));
        assert!(validate(&s, &json!({"sum": 1, "x": 1}))
            .unwrap_err()
            .contains("unexpected property 'x'"));
        assert!(validate(&s, &json!([1])).is_err());
    }

    #[test]
    fn scalars_and_combinators() {
        validate(&json!({"type":"integer"}), &json!(3)).unwrap();
        validate(&json!({"type":"integer"}), &json!(3.0)).unwrap();
        assert!(validate(&json!({"type":"integer"}), &json!(3.5)).is_err());
        validate(&json!({"type":["string","null"]}), &json!(null)).unwrap();
        assert!(validate(&json!({"enum":["a","b"]}), &json!("c")).is_err());
        assert!(validate(&json!({"minimum":1}), &json!(0)).is_err());
        assert!(validate(&json!({"maxLength":2}), &json!("abc")).is_err());
        validate(
            &json!({"anyOf":[{"type":"string"},{"type":"number"}]}),
            &json!(1),
        )
        .unwrap();
        assert!(validate(
            &json!({"oneOf":[{"type":"number"},{"minimum":0}]}),
            &json!(1)
        )
        .is_err());
        assert!(validate(&json!({"not":{"type":"null"}}), &json!(null)).is_err());
        assert!(validate(&json!(false), &json!(1)).is_err());
        validate(&json!({"x-unknown": 1}), &json!({"anything": true})).unwrap();
    }

    #[test]
    fn refs_and_cycles() {
        let s = json!({"$defs":{"pos":{"type":"number","minimum":0}},"type":"object","properties":{"n":{"$ref":"#/$defs/pos"}}});
        validate(&s, &json!({"n": 1})).unwrap();
        assert!(validate(&s, &json!({"n": -1})).is_err());
        let cyclic = json!({"$ref":"#"});
        // Branching refs used to take 2^64 steps (spotted writing the fuzz target).
        let started = std::time::Instant::now();
        let branching = json!({"anyOf":[{"$ref":"#"},{"$ref":"#"}]});
        assert!(validate(&branching, &json!(1))
            .unwrap_err()
            .contains("too complex"));
        let negated = json!({"not":{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}});
        assert!(validate(&negated, &json!(1)).is_err());
        // A refusal to go deeper is not a failed match that `not` inverts.
        let not_cyclic = json!({"not":{"$ref":"#"}});
        assert!(validate(&not_cyclic, &json!(1))
            .unwrap_err()
            .contains("deeply"));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // A large value against a legitimate schema stays within the budget.
        let big = Value::Array((0..20_000).map(|i| json!({"n": i})).collect());
        let items = json!({"type":"array","items":{"$ref":"#/$defs/n"},"$defs":{"n":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}});
        validate(&items, &big).unwrap();
        assert!(validate(&cyclic, &json!(1)).unwrap_err().contains("deeply"));
        assert!(validate(&json!({"$ref":"#/nope"}), &json!(1)).is_err());
    }
}
