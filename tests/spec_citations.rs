//! The repository speaks of itself: outside `migrations/` (whose files
//! are never edited once released), no file cites the product contract by
//! section number. Docs and comments point at `docs/contract.md` and
//! `docs/operations.md`, which readers of the repository have.

use std::fs;
use std::path::{Path, PathBuf};

/// Folders not searched: build output, git's own, released migrations.
const SKIPPED: &[&str] = &["target", ".git", "migrations", "node_modules"];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if !SKIPPED.iter().any(|s| name == *s) {
                files(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

#[test]
fn no_file_cites_the_contract_by_section_number() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Built from parts so this file does not match itself.
    let citation = format!("SPEC {}", '\u{a7}');
    let mut all = Vec::new();
    files(root, &mut all);
    assert!(all.len() > 100, "the walk found the repository's files");
    let citing: Vec<String> = all
        .iter()
        .filter(|path| fs::read_to_string(path).is_ok_and(|text| text.contains(&citation)))
        .map(|path| {
            path.strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect();
    assert!(citing.is_empty(), "{citation} cited in: {citing:?}");
}
