//! One test convention (docs/architecture.md, "Unit tests sit beside…"),
//! kept by reading the tree as text: unit tests in `x/tests.rs` beside
//! `x.rs` (or inline), never in a `*_tests.rs` file nor included with a path
//! attribute; the integration tests and benchmarks build the registry's
//! parts (the queue, the handler, a repository's facts) with the kit's
//! constructors, so a change to one of them is made once, in the kit.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn files_under(folders: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for folder in folders {
        rust_files(&root().join(folder), &mut files);
    }
    assert!(!files.is_empty(), "no Rust files under {folders:?}");
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn no_file_should_be_included_by_a_path_attribute() {
    // Spelled in two parts, so this file does not match itself.
    let attribute = ["#[", "path"].concat();
    let offenders: Vec<String> = files_under(&["src", "tests", "benches"])
        .iter()
        .filter(|path| {
            fs::read_to_string(path)
                .unwrap_or_default()
                .contains(&attribute)
        })
        .map(|path| relative(path))
        .collect();
    assert!(offenders.is_empty(), "{attribute}] in {offenders:?}");
}

#[test]
fn unit_tests_should_sit_beside_what_they_test() {
    let mut offenders = Vec::new();
    for path in files_under(&["src"]) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with("_tests.rs") || name.starts_with("tests_") {
            offenders.push(format!("{}: not x/tests.rs", relative(&path)));
        }
        if name != "tests.rs" {
            continue;
        }
        // `x/tests.rs` belongs to `x.rs` or to `x/mod.rs`.
        let Some(folder) = path.parent() else {
            continue;
        };
        let beside = folder.with_extension("rs");
        if !beside.is_file() && !folder.join("mod.rs").is_file() {
            offenders.push(format!("{}: no module it tests", relative(&path)));
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

#[test]
fn tests_and_benchmarks_should_build_registry_parts_with_the_kit() {
    // Spelled in parts, so this file does not match itself.
    let constructors = [
        ["PgQueue", "::new("].concat(),
        ["RegistryHandler", "::new("].concat(),
    ];
    let literal = ["RepoInfo", " {"].concat();
    let kit = root().join("tests").join("support");
    let mut offenders = Vec::new();
    for path in files_under(&["tests", "benches", "src"]) {
        if path.starts_with(&kit) {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_default();
        // In `src`, only the unit tests: a test module's file, or the
        // inline test module at the end of a file.
        let tests_from = if path.starts_with(root().join("src")) {
            let test_file =
                path.ends_with("tests.rs") || path.components().any(|c| c.as_os_str() == "tests");
            match (test_file, text.find("#[cfg(test)]\nmod tests {")) {
                (true, _) => 0,
                (false, Some(at)) => text[..at].lines().count(),
                (false, None) => continue,
            }
        } else {
            0
        };
        for (number, line) in text.lines().enumerate().skip(tests_from) {
            let built = constructors.iter().any(|c| line.contains(c.as_str()));
            let written = line.contains(&literal)
                && !line.contains(&format!("-> {literal}"))
                && !line.contains(&format!("struct {literal}"));
            if built || written {
                offenders.push(format!(
                    "{}:{}: {}",
                    relative(&path),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "use the kit, src/testing.rs (queue, queue_with, handler, repo_info, installed_repo, github_repo, on_branch): {offenders:#?}"
    );
}
