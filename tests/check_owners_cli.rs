//! `roster check --teams teams.yaml`: owners resolved against a teams file
//! offline, a warning under `warn` (exit 0) and a problem under `require`
//! (exit 1); a teams file that cannot be read is a clear error (exit 2),
//! and without `--teams` owners are not checked.

use std::process::Command;

const ROSTER: &str = env!("CARGO_BIN_EXE_roster");

fn check(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let output = Command::new(ROSTER)
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
fn roster_check_should_resolve_owners_against_a_teams_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let teams = dir.path().join("teams.yaml");
    std::fs::write(
        &teams,
        "teams:\n  - slug: payments\n    name: Payments\n    members: [alice]\n",
    )
    .expect("write");
    let file = dir.path().join("project.yaml");
    std::fs::write(&file, "name: shop\nowner: paymnts\n").expect("write");
    let (f, t) = (file.as_os_str(), teams.as_os_str());
    let message = format!(
        "{}:2:8: owner: no team or member \"paymnts\" in {} (did you mean payments?)",
        file.display(),
        teams.display()
    );

    let (code, out, _) = check(&[f, "--teams".as_ref(), t]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        out,
        format!(
            "warning: {message}\nok: {}: 1 project (shop)\n",
            file.display()
        )
    );

    let (code, out, _) = check(&[
        f,
        "--teams".as_ref(),
        t,
        "--owners".as_ref(),
        "require".as_ref(),
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(out, format!("{message}\n"));

    // Without a teams file nothing is known about owners: nothing is said.
    let (code, out, _) = check(&[f]);
    assert_eq!(code, Some(0));
    assert_eq!(out, format!("ok: {}: 1 project (shop)\n", file.display()));

    std::fs::write(&teams, "teams: [").expect("write");
    let (code, out, err) = check(&[f, "--teams".as_ref(), t]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        err.starts_with(&format!("error: {}: teams.yaml:", teams.display())),
        "{err}"
    );
    assert!(out.is_empty());
}
