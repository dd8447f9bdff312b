//! Signed `pull_request`, `check_run` and `installation` deliveries built
//! from GitHub's own example payloads (`tests/fixtures/github/webhooks`),
//! with the fake GitHub's ids, names and commits.
//!
//! Use it as `support::pull_requests`.

use serde_json::{json, Value};

const OPENED: &str = include_str!("../fixtures/github/webhooks/pull_request.opened.json");
const RUN_RERUN: &str = include_str!("../fixtures/github/webhooks/check_run.rerequested.json");
const PERMISSIONS: &str =
    include_str!("../fixtures/github/webhooks/installation.new_permissions_accepted.json");

/// A pull request of `owner/name` (id `repo`, default branch `main`,
/// installation `installation`) whose head is `sha`, into `base`.
#[derive(Debug, Clone, Copy)]
pub struct Pr<'a> {
    pub repo: i64,
    pub installation: i64,
    pub owner: &'a str,
    pub name: &'a str,
    pub number: i64,
    pub sha: &'a str,
    pub base: &'a str,
}

/// A pull request event (`action`: opened, synchronize, …) of `pr`.
pub fn pull_request(action: &str, pr: &Pr<'_>) -> Vec<u8> {
    let Pr {
        repo,
        installation,
        owner,
        name,
        number,
        sha,
        base,
    } = *pr;
    let mut body: Value = serde_json::from_str(OPENED).expect("fixture");
    body["action"] = json!(action);
    body["number"] = json!(number);
    set_repository(&mut body["repository"], repo, owner, name);
    body["installation"]["id"] = json!(installation);
    let pr = &mut body["pull_request"];
    pr["number"] = json!(number);
    pr["head"]["sha"] = json!(sha);
    pr["base"]["ref"] = json!(base);
    set_repository(&mut pr["base"]["repo"], repo, owner, name);
    body.to_string().into_bytes()
}

/// `check_run` `rerequested` of Roster's run on `sha` of pull request `number`.
pub fn run_rerequested(
    repo: i64,
    installation: i64,
    owner: &str,
    name: &str,
    number: i64,
    sha: &str,
) -> Vec<u8> {
    let mut body: Value = serde_json::from_str(RUN_RERUN).expect("fixture");
    set_repository(&mut body["repository"], repo, owner, name);
    body["installation"]["id"] = json!(installation);
    let run = &mut body["check_run"];
    run["name"] = json!("Roster");
    run["head_sha"] = json!(sha);
    run["pull_requests"] = json!([{
        "number": number,
        "head": {"ref": "change", "sha": sha, "repo": {"id": repo, "name": name}},
        "base": {"ref": "main", "sha": sha, "repo": {"id": repo, "name": name}},
    }]);
    body.to_string().into_bytes()
}

/// `installation` `new_permissions_accepted` for `installation`.
pub fn permissions_accepted(installation: i64) -> Vec<u8> {
    let mut body: Value = serde_json::from_str(PERMISSIONS).expect("fixture");
    body["installation"]["id"] = json!(installation);
    body.to_string().into_bytes()
}

fn set_repository(repo: &mut Value, id: i64, owner: &str, name: &str) {
    repo["id"] = json!(id);
    repo["node_id"] = json!(format!("R_{id}"));
    repo["name"] = json!(name);
    repo["full_name"] = json!(format!("{owner}/{name}"));
    repo["owner"]["login"] = json!(owner);
    repo["default_branch"] = json!("main");
    // An organisation's repository; `make_public` turns a payload public.
    repo["private"] = json!(true);
    repo["visibility"] = json!("private");
}

/// `body` (a payload of this module) with its repository public.
pub fn make_public(body: &[u8]) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(body).unwrap_or_default();
    for pointer in ["/repository", "/pull_request/base/repo"] {
        if let Some(repo) = value.pointer_mut(pointer).filter(|r| r.is_object()) {
            repo["private"] = json!(false);
            repo["visibility"] = json!("public");
        }
    }
    value.to_string().into_bytes()
}
