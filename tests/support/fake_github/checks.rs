//! The checks API as GitHub answers it: `POST /repos/{o}/{r}/check-runs`
//! creates a run, `PATCH …/check-runs/{id}` updates it (annotations are
//! added to the ones it has), `GET …/commits/{ref}/check-runs` lists a
//! commit's runs (`check_name=` filters). Like GitHub, a request with more
//! than 50 annotations or a summary or text over 65,535 bytes is refused
//! with 422, a commit the repository does not have too, and an installation
//! without `checks: write` gets 403.

use serde_json::{json, Value};

use super::rest::{visible_by_name, Answer};
use super::world::World;

/// GitHub's limits on one request's output.
pub const MAX_ANNOTATIONS: usize = 50;
/// GitHub counts the summary's and the text's length in bytes.
pub const MAX_SUMMARY_BYTES: usize = 65_535;

/// A check run as the fake keeps it.
#[derive(Debug, Clone)]
pub struct CheckRun {
    pub id: i64,
    pub repo: i64,
    pub head_sha: String,
    pub name: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub annotations: Vec<Value>,
    /// Requests that wrote it (create and updates).
    pub writes: u32,
    /// When it was created (after the fake's added latency).
    pub created_at: std::time::Instant,
}

pub fn is_route(route: &str) -> bool {
    route == super::routes::CHECK_RUN_CREATE
        || route == super::routes::CHECK_RUN_UPDATE
        || route == super::routes::CHECK_RUNS_FOR_REF
}

pub fn answer(
    world: &mut World,
    installation: i64,
    route: &str,
    segments: &[String],
    query: &str,
    body: &[u8],
) -> Answer {
    let (owner, name) = (
        segments.get(1).map(String::as_str).unwrap_or(""),
        segments.get(2).map(String::as_str).unwrap_or(""),
    );
    let Some(repo) = visible_by_name(world, installation, owner, name) else {
        return Answer::not_found();
    };
    let repo_id = repo.id;
    if world.checks_forbidden.contains(&installation) {
        return Answer::message(403, "Resource not accessible by integration");
    }
    if route == super::routes::CHECK_RUNS_FOR_REF {
        let reference = segments.get(4).cloned().unwrap_or_default();
        let wanted = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "check_name")
            .map(|(_, v)| v.into_owned());
        let runs: Vec<Value> = world
            .check_runs
            .values()
            .filter(|r| r.repo == repo_id && r.head_sha == reference)
            .filter(|r| wanted.as_deref().is_none_or(|n| n == r.name))
            .map(run_json)
            .collect();
        return Answer::json(200, json!({"total_count": runs.len(), "check_runs": runs}));
    }
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Answer::message(400, "Problems parsing JSON");
    };
    if let Some(refused) = invalid_output(&request) {
        return refused;
    }
    if route == super::routes::CHECK_RUN_CREATE {
        let (Some(name), Some(sha)) = (
            request.get("name").and_then(Value::as_str),
            request.get("head_sha").and_then(Value::as_str),
        ) else {
            return Answer::message(
                422,
                "Invalid request. \"name\" and \"head_sha\" wasn't supplied.",
            );
        };
        let known = world
            .repos
            .get(&repo_id)
            .is_some_and(|r| r.commits.contains_key(sha));
        if !known {
            return Answer::message(422, &format!("No commit found for SHA: {sha}"));
        }
        world.next_check_run += 1;
        let mut run = CheckRun {
            id: world.next_check_run,
            repo: repo_id,
            head_sha: sha.to_owned(),
            name: name.to_owned(),
            status: "queued".into(),
            conclusion: None,
            title: None,
            summary: None,
            annotations: Vec::new(),
            writes: 0,
            created_at: std::time::Instant::now(),
        };
        apply(&mut run, &request);
        let answer = run_json(&run);
        world.check_runs.insert(run.id, run);
        return Answer::json(201, answer);
    }
    let id = segments.get(4).and_then(|s| s.parse::<i64>().ok());
    match id.and_then(|id| world.check_runs.get_mut(&id)) {
        Some(run) if run.repo == repo_id => {
            apply(run, &request);
            Answer::json(200, run_json(run))
        }
        _ => Answer::not_found(),
    }
}

fn invalid_output(request: &Value) -> Option<Answer> {
    let output = request.get("output")?;
    let annotations = output
        .get("annotations")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if annotations > MAX_ANNOTATIONS {
        return Some(Answer::message(
            422,
            "Only 50 annotations are allowed per request. Use the update check run endpoint to add more.",
        ));
    }
    for field in ["summary", "text"] {
        let value = output.get(field).and_then(Value::as_str).unwrap_or("");
        if value.len() > MAX_SUMMARY_BYTES {
            return Some(Answer::message(
                422,
                &format!(
                    "Invalid request.\n\nFor 'properties/{field}', {} exceeds a maximum bytesize of {MAX_SUMMARY_BYTES}.",
                    value.len()
                ),
            ));
        }
    }
    if output.get("title").and_then(Value::as_str).is_none() {
        return Some(Answer::message(
            422,
            "Invalid request. \"title\" wasn't supplied.",
        ));
    }
    None
}

fn apply(run: &mut CheckRun, request: &Value) {
    run.writes += 1;
    if let Some(status) = request.get("status").and_then(Value::as_str) {
        run.status = status.to_owned();
    }
    if let Some(conclusion) = request.get("conclusion").and_then(Value::as_str) {
        run.conclusion = Some(conclusion.to_owned());
        run.status = "completed".into();
    }
    if let Some(output) = request.get("output") {
        if let Some(title) = output.get("title").and_then(Value::as_str) {
            run.title = Some(title.to_owned());
        }
        if let Some(summary) = output.get("summary").and_then(Value::as_str) {
            run.summary = Some(summary.to_owned());
        }
        if let Some(annotations) = output.get("annotations").and_then(Value::as_array) {
            run.annotations.extend(annotations.iter().cloned());
        }
    }
}

fn run_json(run: &CheckRun) -> Value {
    json!({
        "id": run.id,
        "head_sha": run.head_sha,
        "name": run.name,
        "status": run.status,
        "conclusion": run.conclusion,
        "output": {
            "title": run.title,
            "summary": run.summary,
            "annotations_count": run.annotations.len(),
        },
        "app": {"id": super::APP_ID, "slug": "roster"},
    })
}
