//! Tells the `roster` binary which commit it is built from, for
//! `roster --version` and the `roster_build_info` metric
//! (docs/operations.md#metrics): `ROSTER_REVISION` when set (the image's
//! build has no `.git`, so the Dockerfile passes it in), else the commit
//! `.git`'s `HEAD` names, read as plain files (no git, no crate), else
//! `unknown`. Only the binary runs this, so a commit rebuilds `main.rs`,
//! never the library.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=ROSTER_REVISION");
    let revision = std::env::var("ROSTER_REVISION")
        .ok()
        .map(|r| r.trim().to_owned())
        .filter(|r| {
            !r.is_empty()
                && r.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        })
        .or_else(|| git_revision(Path::new(".git")))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=ROSTER_REVISION={revision}");
}

/// The commit `HEAD` names in the repository at `dot_git` (a folder, or
/// a worktree's file naming its folder), if it can be read.
fn git_revision(dot_git: &Path) -> Option<String> {
    let git_dir = if dot_git.is_file() {
        let text = fs::read_to_string(dot_git).ok()?;
        PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim())
    } else {
        dot_git.to_path_buf()
    };
    // A worktree keeps its HEAD in its folder and the refs in the common one.
    let common = fs::read_to_string(git_dir.join("commondir"))
        .map(|c| git_dir.join(c.trim()))
        .unwrap_or_else(|_| git_dir.clone());
    let head_path = git_dir.join("HEAD");
    println!("cargo:rerun-if-changed={}", head_path.display());
    let head = fs::read_to_string(&head_path).ok()?;
    let Some(reference) = head.trim().strip_prefix("ref:") else {
        return commit(head.trim());
    };
    let reference = reference.trim();
    for dir in [&git_dir, &common] {
        let path = dir.join(reference);
        if path.is_file() {
            println!("cargo:rerun-if-changed={}", path.display());
            return commit(fs::read_to_string(path).ok()?.trim());
        }
    }
    let packed = common.join("packed-refs");
    println!("cargo:rerun-if-changed={}", packed.display());
    fs::read_to_string(packed).ok()?.lines().find_map(|line| {
        let (hash, name) = line.split_once(' ')?;
        if name == reference {
            commit(hash)
        } else {
            None
        }
    })
}

/// `text` when it is a full commit hash.
fn commit(text: &str) -> Option<String> {
    (text.len() == 40 && text.chars().all(|c| c.is_ascii_hexdigit())).then(|| text.to_owned())
}
