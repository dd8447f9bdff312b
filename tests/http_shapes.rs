//! What an HTTP answer looks like is declared in `src/web/` and nowhere
//! else: the registry's reads return plain rows, which `web` turns into
//! its `*Json` shapes. Checked from the source:
//!
//! - no type named `…Json` is defined outside `src/web/`;
//! - `src/registry/` does not name `axum`;
//! - a type of `src/registry/` that derives `Serialize` is a stored form
//!   (its JSON is written to the database), one of [`STORED_FORMS`];
//! - the delivery log's owner (`src/intake/deliveries.rs`) does not
//!   import the registry.

use std::fs;
use std::path::{Path, PathBuf};

/// The registry's types whose serialized form is stored, and where.
const STORED_FORMS: &[(&str, &str)] = &[
    ("Entry", "the change log's `before` and `after`"),
    ("Status", "`repositories.status`, by its name"),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, with its text less comment lines.
fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = fs::read_to_string(&path).unwrap_or_default();
            let code: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            let relative = path.strip_prefix(src()).unwrap_or(&path).to_path_buf();
            out.push((relative, code.join("\n")));
        }
    }
}

fn all_sources() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    sources(&src(), &mut out);
    assert!(out.len() > 100, "src/ read: {} files", out.len());
    out
}

/// The names of the types `code` defines (`struct X`, `enum X`, `type X`).
fn defined_types(code: &str) -> Vec<String> {
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter(|w| matches!(w[0], "struct" | "enum" | "type"))
        .map(|w| w[1].to_owned())
        .collect()
}

/// The types of `code` under a `#[derive(…)]` naming `Serialize`.
fn serialized_types(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[derive(") {
        rest = &rest[at..];
        let end = rest.find(")]").unwrap_or(rest.len());
        let derives = &rest[..end];
        rest = &rest[end..];
        if !derives.contains("Serialize") {
            continue;
        }
        // The item the attribute is on: the next type defined.
        if let Some(name) = defined_types(rest).into_iter().next() {
            found.push(name);
        }
    }
    found
}

#[test]
fn json_shapes_should_be_defined_only_in_web() {
    let outside: Vec<String> = all_sources()
        .iter()
        .filter(|(path, _)| !path.starts_with("web"))
        .flat_map(|(path, code)| {
            defined_types(code)
                .into_iter()
                .filter(|name| name.ends_with("Json"))
                .map(move |name| format!("{}: {name}", path.display()))
        })
        .collect();
    assert!(
        outside.is_empty(),
        "JSON shapes outside src/web: {outside:#?}"
    );
}

#[test]
fn the_registry_should_not_speak_http() {
    let sources = all_sources();
    let registry: Vec<&(PathBuf, String)> = sources
        .iter()
        .filter(|(path, _)| path.starts_with("registry"))
        .collect();
    let axum: Vec<String> = registry
        .iter()
        .filter(|(_, code)| code.contains("axum"))
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(axum.is_empty(), "the registry names axum in {axum:?}");
    let all: Vec<(String, String)> = registry
        .iter()
        .flat_map(|(path, code)| {
            serialized_types(code)
                .into_iter()
                .map(move |name| (path.display().to_string(), name))
        })
        .collect();
    for (stored, _) in STORED_FORMS {
        assert!(
            all.iter().any(|(_, name)| name == stored),
            "{stored} is listed as a stored form but no longer serialized: take it off"
        );
    }
    let serialized: Vec<String> = all
        .iter()
        .filter(|(_, name)| !STORED_FORMS.iter().any(|(stored, _)| stored == name))
        .map(|(path, name)| format!("{path}: {name}"))
        .collect();
    assert!(
        serialized.is_empty(),
        "registry types serialized but not stored (an answer's shape belongs in src/web/json): \
         {serialized:#?}"
    );
    let deliveries = sources
        .iter()
        .find(|(path, _)| path.ends_with("intake/deliveries.rs"))
        .map(|(_, code)| code.as_str())
        .unwrap_or_default();
    assert!(!deliveries.is_empty());
    assert!(!deliveries.contains("crate::registry"));
}

#[test]
fn the_scan_should_find_types_and_their_derives() {
    let code = "#[derive(Debug, Serialize)]\npub struct AJson {\n    b: u8,\n}\n\
                #[derive(Debug)]\nenum Quiet { X }\npub type Alias = u8;";
    assert_eq!(defined_types(code), ["AJson", "Quiet", "Alias"]);
    assert_eq!(serialized_types(code), ["AJson"]);
}
