//! `roster check`'s exit codes, as every doc states them and as the binary
//! returns them: a repository's CI tells a broken file from a broken job by
//! them, so the docs and the code must not drift apart.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROSTER: &str = env!("CARGO_BIN_EXE_roster");
/// The one wording of the exit codes, in README.md and docs/.
const STATED: &str =
    "exit 0 when every file is valid, 1 when one is not, 2 when one cannot be read";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn docs() -> Vec<(PathBuf, String)> {
    let mut paths = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).expect("docs") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            paths.push(path);
        }
    }
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read");
            // Line breaks in prose are spaces.
            (p, text.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect()
}

fn code(dir: &Path, files: &[&str]) -> Option<i32> {
    Command::new(ROSTER)
        .current_dir(dir)
        .arg("check")
        .args(files)
        .output()
        .expect("run roster check")
        .status
        .code()
}

#[test]
fn every_doc_that_states_the_exit_codes_should_state_the_same_ones() {
    let mut stated = 0;
    for (path, text) in docs() {
        for (at, _) in text.match_indices("xit 0 when") {
            let from = at.saturating_sub(1);
            let said: String = text[from..].chars().take(STATED.len()).collect();
            assert_eq!(
                said.to_lowercase(),
                STATED,
                "{} states other exit codes",
                path.display()
            );
            stated += 1;
        }
    }
    assert!(
        stated >= 4,
        "README, operations, contract and checks state them"
    );
}

#[test]
fn the_binary_should_return_the_stated_exit_codes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    std::fs::write(d.join("good.yaml"), "name: good\nowner: x\n").expect("write");
    std::fs::write(d.join("bad.yaml"), "name: Bad!\nowner: x\n").expect("write");
    std::fs::create_dir(d.join("folder.yaml")).expect("mkdir");
    assert_eq!(code(d, &["good.yaml"]), Some(0), "every file is valid");
    assert_eq!(code(d, &["good.yaml", "bad.yaml"]), Some(1), "one is not");
    assert_eq!(
        code(d, &["good.yaml", "missing.yaml"]),
        Some(2),
        "one cannot be read"
    );
    assert_eq!(
        code(d, &["bad.yaml", "folder.yaml"]),
        Some(2),
        "unreadable wins"
    );
}
