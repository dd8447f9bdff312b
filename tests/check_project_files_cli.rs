//! `roster check --project-files PATTERNS`: in a repository's folder (a
//! monorepo's, say), every file the patterns match is checked as the
//! server would read that repository; nothing matching is a clear error.

use std::path::Path;
use std::process::Command;

const ROSTER: &str = env!("CARGO_BIN_EXE_roster");
const MONOREPO: &str = "project.yaml,services/*/project.yaml";

fn check_in(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(ROSTER)
        .current_dir(dir)
        .arg("check")
        .args(args)
        .output()
        .expect("run roster check");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_example_monorepo_should_be_checked_by_its_patterns() {
    let platform = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/org/platform");
    let (code, out, err) = check_in(&platform, &["--project-files", MONOREPO]);
    assert_eq!(code, Some(0), "{out}{err}");
    for service in ["gateway", "identity", "rate-limiter"] {
        assert!(
            out.contains(&format!("ok: services/{service}/project.yaml: ")),
            "{service} in {out}"
        );
    }
}

#[test]
fn a_bad_file_among_the_matches_should_fail_the_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    let services = dir.path().join("services");
    for (name, text) in [("a", "name: a\nowner: x\n"), ("b", "name: B!\nowner: x\n")] {
        std::fs::create_dir_all(services.join(name)).expect("mkdir");
        std::fs::write(services.join(name).join("project.yaml"), text).expect("write");
    }
    // A file no pattern names is not read.
    std::fs::write(dir.path().join("other.yaml"), "not: [a project").expect("write");
    let (code, out, _) = check_in(dir.path(), &["--project-files", MONOREPO]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("ok: services/a/project.yaml: 1 project (a)"),
        "{out}"
    );
    assert!(out.contains("services/b/project.yaml:1:7: name:"), "{out}");
    assert!(!out.contains("other.yaml"), "{out}");
}

#[test]
fn nothing_matching_or_bad_patterns_should_be_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (code, out, err) = check_in(dir.path(), &["--project-files", MONOREPO]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains(
            "no file under . matches --project-files project.yaml,services/*/project.yaml"
        ),
        "{err}"
    );
    let (code, _, err) = check_in(dir.path(), &["--project-files", "/abs/project.yaml"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--project-files: "), "{err}");
    // Files and patterns together: one or the other.
    let (code, _, err) = check_in(dir.path(), &["x.yaml", "--project-files", MONOREPO]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}
