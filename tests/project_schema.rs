//! The project file's JSON Schema kept in step with `roster check`: every
//! project file in the repository (the examples, the fuzz corpus, and the
//! cases below) is judged by both, and a file the schema rejects is always
//! one `roster check` rejects. The other way round they agree too, except
//! where a rule cannot be said in a JSON Schema (listed in
//! [`BEYOND_A_SCHEMA`]).
//!
//! The validator is a small one for the part of draft 2020-12 the schema
//! uses; a keyword it does not know fails the test, so the schema cannot
//! drift into keywords nobody checks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use roster::project::PROJECT_SCHEMA;
use serde_json::Value;

/// Rules `roster check` applies that a JSON Schema cannot say, recognised
/// by their messages: a file whose only problems are these may pass the
/// schema.
const BEYOND_A_SCHEMA: [&str; 6] = [
    "duplicate name",
    "cannot depend on itself",
    "duplicate key",
    "is not valid UTF-8",
    "more than the limit of",
    "must not be empty",
];

struct Validator {
    root: Value,
}

impl Validator {
    fn new() -> Self {
        Self {
            root: serde_json::from_str(PROJECT_SCHEMA).expect("the schema is JSON"),
        }
    }

    /// Every violation of `schema` by `value`, as `path: what`.
    fn errors(&self, schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
        let Some(keywords) = schema.as_object() else {
            panic!("a schema must be an object at {path}");
        };
        for (keyword, arg) in keywords {
            match keyword.as_str() {
                "$schema" | "title" | "description" | "$defs" => {}
                "$ref" => {
                    let pointer = arg.as_str().and_then(|r| r.strip_prefix('#')).unwrap_or("");
                    let target = self.root.pointer(pointer).expect("a known $ref").clone();
                    self.errors(&target, value, path, out);
                }
                "anyOf" => {
                    let branches = arg.as_array().expect("anyOf takes a list");
                    let any = branches.iter().any(|b| {
                        let mut inner = Vec::new();
                        self.errors(b, value, path, &mut inner);
                        inner.is_empty()
                    });
                    if !any {
                        out.push(format!("{path}: matches none of anyOf"));
                    }
                }
                "type" => {
                    let types: Vec<&str> = match arg {
                        Value::String(t) => vec![t.as_str()],
                        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                        _ => panic!("type takes a name or a list"),
                    };
                    if !types.contains(&type_of(value)) {
                        out.push(format!("{path}: is {}, not {types:?}", type_of(value)));
                    }
                }
                "enum" => {
                    if !arg.as_array().expect("enum list").contains(value) {
                        out.push(format!("{path}: not one of {arg}"));
                    }
                }
                "pattern" => {
                    if let Some(text) = value.as_str() {
                        let re = Regex::new(arg.as_str().expect("pattern text")).expect("regex");
                        if !re.is_match(text) {
                            out.push(format!("{path}: does not match {arg}"));
                        }
                    }
                }
                "minLength" | "maxLength" => {
                    if let Some(text) = value.as_str() {
                        let n = text.chars().count() as u64;
                        let bound = arg.as_u64().expect("a length");
                        if (keyword == "minLength" && n < bound)
                            || (keyword == "maxLength" && n > bound)
                        {
                            out.push(format!("{path}: {keyword} {bound}, found {n}"));
                        }
                    }
                }
                "minItems" | "maxItems" => {
                    if let Some(items) = value.as_array() {
                        let n = items.len() as u64;
                        let bound = arg.as_u64().expect("a count");
                        if (keyword == "minItems" && n < bound)
                            || (keyword == "maxItems" && n > bound)
                        {
                            out.push(format!("{path}: {keyword} {bound}, found {n}"));
                        }
                    }
                }
                "uniqueItems" => {
                    let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
                    for (k, item) in items.iter().enumerate() {
                        if arg.as_bool() == Some(true) && items[..k].contains(item) {
                            out.push(format!("{path}[{k}]: uniqueItems, found it twice"));
                        }
                    }
                }
                "items" => {
                    for (k, item) in value.as_array().into_iter().flatten().enumerate() {
                        self.errors(arg, item, &format!("{path}[{k}]"), out);
                    }
                }
                "required" => {
                    if let Some(map) = value.as_object() {
                        for key in arg.as_array().expect("required list") {
                            let key = key.as_str().expect("a key");
                            if !map.contains_key(key) {
                                out.push(format!("{path}.{key}: missing"));
                            }
                        }
                    }
                }
                "properties" => {
                    if let Some(map) = value.as_object() {
                        for (key, sub) in arg.as_object().expect("properties map") {
                            if let Some(v) = map.get(key) {
                                self.errors(sub, v, &format!("{path}.{key}"), out);
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    let known = keywords.get("properties").and_then(Value::as_object);
                    for (key, v) in value.as_object().into_iter().flatten() {
                        if known.is_some_and(|k| k.contains_key(key)) {
                            continue;
                        }
                        match arg {
                            Value::Bool(false) => out.push(format!("{path}.{key}: not allowed")),
                            Value::Bool(true) => {}
                            sub => self.errors(sub, v, &format!("{path}.{key}"), out),
                        }
                    }
                }
                "maxProperties" => {
                    if let Some(map) = value.as_object() {
                        if map.len() as u64 > arg.as_u64().expect("a count") {
                            out.push(format!("{path}: more than {arg} properties"));
                        }
                    }
                }
                "propertyNames" => {
                    for key in value.as_object().into_iter().flatten().map(|(k, _)| k) {
                        self.errors(
                            arg,
                            &Value::String(key.clone()),
                            &format!("{path}.{key}"),
                            out,
                        );
                    }
                }
                other => panic!("the schema uses {other}, which this validator does not know"),
            }
        }
    }

    /// `None` when valid, else the violations. A text that is not YAML an
    /// editor can read (or not UTF-8) counts as rejected.
    fn judge(&self, bytes: &[u8]) -> Option<Vec<String>> {
        let value: Value = match std::str::from_utf8(bytes)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_yaml_ng::from_str::<Value>(t).map_err(|e| e.to_string()))
        {
            Ok(value) => value,
            Err(e) => return Some(vec![format!("not YAML: {e}")]),
        };
        let mut out = Vec::new();
        self.errors(&self.root, &value, "", &mut out);
        (!out.is_empty()).then_some(out)
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every project file kept in the repository.
fn repository_files() -> BTreeMap<String, Vec<u8>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = BTreeMap::new();
    let mut add_dir = |dir: &Path, only: Option<&str>| {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("entry").path();
            let path = match only {
                Some(name) => path.join(name),
                None => path,
            };
            if path.is_file() {
                let bytes = std::fs::read(&path).expect("read");
                files.insert(path.display().to_string(), bytes);
            }
        }
    };
    add_dir(&root.join("examples/org"), Some("project.yaml"));
    add_dir(&root.join("fuzz/corpus/project_parse"), None);
    files
}

/// Cases at the edges of each rule.
const CASES: &[&str] = &[
    "name: a\nowner: t\n",
    "name: checkout-api\nowner: team\ntier: 1\n",
    "name: 123\nowner: 456\n",
    "name: a\nowner: t\nlabels:\n  tier: 1\n  on: true\n",
    "name: a\nowner: t\ndescription:\nlifecycle:\ntags:\nlinks:\nlabels:\n",
    "name: a\nowner: t\nlifecycle: beta\n",
    "name: -a\nowner: t\n",
    "name: a\n",
    "owner: t\n",
    "name: a\nowner:\n",
    "name: a\nowner: t\ntags: [Ok]\n",
    "name: a\nowner: t\nlinks: [{title: R, url: 'ftp://x'}]\n",
    "name: a\nowner: t\nlinks: [{title: R, url: 'HTTPS://x.example'}]\n",
    "name: a\nowner: t\nlinks: [{url: 'https://x.example'}]\n",
    "projects: []\n",
    "projects:\n  - name: a\n    owner: t\n  - name: a\n    owner: u\n",
    "projects:\n  - name: a\n    owner: t\nname: b\n",
    "- name: a\n",
    "",
    "name: [a\n",
    "name: a\nowner: t\ndepends_on: [b, c]\nsystem: shop\n",
    "name: a\nowner: t\ndepends_on:\nsystem:\n",
    "name: a\nowner: t\ndepends_on: [b, b]\n",
    "name: a\nowner: t\ndepends_on: [a]\n",
    "name: a\nowner: t\ndepends_on: [B]\n",
    "name: a\nowner: t\ndepends_on: b\n",
    "name: a\nowner: t\nsystem: Shop\n",
    "name: a\nowner: t\nsystem: [shop]\n",
];

/// Cases at the edges of the length rules of labels and links.
fn length_cases() -> Vec<String> {
    let label = |key: usize, value: usize| {
        format!(
            "name: a\nowner: t\nlabels:\n  {}: {}\n",
            "k".repeat(key),
            "v".repeat(value)
        )
    };
    let link = |title: usize, url: usize| {
        format!(
            "name: a\nowner: t\nlinks:\n  - title: {}\n    url: https://x.example/{}\n",
            "t".repeat(title),
            "p".repeat(url - 18)
        )
    };
    vec![
        label(63, 256),
        label(64, 1),
        label(1, 257),
        link(200, 2000),
        link(201, 100),
        link(10, 2001),
    ]
}

#[test]
fn a_file_the_schema_rejects_should_be_one_roster_check_rejects_and_back() {
    let validator = Validator::new();
    let mut files = repository_files();
    for (k, case) in CASES.iter().enumerate() {
        files.insert(format!("case {k}: {case:?}"), case.as_bytes().to_vec());
    }
    for (k, case) in length_cases().iter().enumerate() {
        files.insert(format!("length case {k}"), case.as_bytes().to_vec());
    }
    let mut disagreements = Vec::new();
    for (name, bytes) in &files {
        let schema = validator.judge(bytes);
        let check = roster::project::parse("project.yaml", bytes);
        match (&schema, &check) {
            (None, Ok(_)) | (Some(_), Err(_)) => {}
            (Some(why), Ok(_)) => disagreements.push(format!(
                "{name}: the schema rejects what roster check accepts: {why:?}"
            )),
            (None, Err(problems)) => {
                let beyond = problems
                    .0
                    .iter()
                    .all(|p| BEYOND_A_SCHEMA.iter().any(|b| p.message.contains(b)));
                if !beyond {
                    disagreements.push(format!(
                        "{name}: the schema accepts what roster check rejects: {problems}"
                    ));
                }
            }
        }
    }
    assert!(files.len() > 30, "too few files: {}", files.len());
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

#[test]
fn the_validator_should_catch_what_the_schema_forbids() {
    let validator = Validator::new();
    assert!(validator.judge(b"name: a\nowner: t\n").is_none());
    let why = validator
        .judge(b"name: a\nowner: t\ncolour: red\n")
        .expect("rejected");
    assert!(
        why.iter().any(|w| w.contains("matches none of anyOf")),
        "{why:?}"
    );
}
