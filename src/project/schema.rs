//! The project file's JSON Schema (draft 2020-12), for editors: served at
//! `GET /schema/project.json` and printed by `roster schema`. It says the
//! rules a schema can say; a file it rejects is one `roster check` rejects
//! too (a test keeps the two in step, see `tests/project_schema.rs`).

/// The schema's text.
pub const PROJECT_SCHEMA: &str = include_str!("schema.json");
