//! `push`: only a push to the default branch can change the project file.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::payload::{ignored, Installation, Repository};
use super::{ParsedDelivery, PushChange, WebhookEvent};
use crate::intake::envelope::Text;

/// GitHub lists at most 2,048 commits of a push: one that lists that many
/// may have more, whose paths it does not show.
pub const MAX_PUSH_COMMITS: usize = 2_048;

/// GitHub lists at most 3,000 paths per kind (added, modified, removed) of a
/// commit: a list that long may be cut.
pub const MAX_PUSH_PATHS: usize = 3_000;

/// The most distinct paths a [`PushChange`] keeps: a push that touches more
/// is read, so that a delivery's memory stays small whatever it lists.
const MAX_KEPT_PATHS: usize = 1_000;

/// Reads a push, and in the same pass what the delivery log keeps of it
/// (pushes are most of the deliveries: a second pass for the log cost about
/// a tenth of the intake's throughput). The error is serde's alone: the
/// delivery's refusal comes from [`super::parse`], which reads such a push
/// as any event.
pub fn parse_push(body: &[u8]) -> Result<ParsedDelivery, serde_json::Error> {
    #[derive(Deserialize)]
    struct Push<'a> {
        #[serde(rename = "ref")]
        git_ref: String,
        #[serde(default)]
        deleted: bool,
        repository: Repository,
        installation: Option<Installation>,
        #[serde(default)]
        action: Text,
        // What a push moved, kept raw: a field of an unexpected shape only
        // makes the push one that is read, never a refused delivery.
        #[serde(borrow, default)]
        before: Option<&'a RawValue>,
        #[serde(borrow, default)]
        after: Option<&'a RawValue>,
        #[serde(borrow, default)]
        forced: Option<&'a RawValue>,
        #[serde(borrow, default)]
        created: Option<&'a RawValue>,
        #[serde(borrow, default)]
        commits: Option<&'a RawValue>,
    }
    let mut push: Push<'_> = serde_json::from_slice(body)?;
    let (action, repo) = (push.action.0, push.repository.full_name.0.take());
    let default_ref = format!("refs/heads/{}", push.repository.default_branch);
    let event = if push.deleted {
        ignored(format!("{} was deleted", push.git_ref))
    } else if push.git_ref != default_ref {
        ignored(format!(
            "push to {}, not the default branch {}",
            push.git_ref, push.repository.default_branch
        ))
    } else {
        let change = change(Moved {
            before: push.before,
            after: push.after,
            forced: push.forced,
            created: push.created,
            commits: push.commits,
        });
        WebhookEvent::DefaultBranchPush {
            repo: push.repository.into_payload_repo(push.installation),
            change,
        }
    };
    Ok(ParsedDelivery {
        action,
        repo,
        event,
    })
}

/// The raw fields of a push that say what it moved.
struct Moved<'a> {
    before: Option<&'a RawValue>,
    after: Option<&'a RawValue>,
    forced: Option<&'a RawValue>,
    created: Option<&'a RawValue>,
    commits: Option<&'a RawValue>,
}

/// One commit of a push: its id and the paths it touched.
#[derive(Deserialize)]
struct Commit {
    id: String,
    added: Option<Vec<String>>,
    modified: Option<Vec<String>>,
    removed: Option<Vec<String>>,
}

/// A field as `T`; `None` when it is missing or of another shape.
fn field<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    serde_json::from_str(raw?.get()).ok()
}

/// Every path the push touched, when its payload tells them all
/// ([`PushChange`]); `None` when it may not.
fn change(moved: Moved<'_>) -> Option<PushChange> {
    let forced: bool = field(moved.forced)?;
    let created: bool = field(moved.created)?;
    if forced || created {
        return None;
    }
    let before: String = field(moved.before)?;
    let after: String = field(moved.after)?;
    let commits: Vec<Commit> = field(moved.commits)?;
    if commits.is_empty() || commits.len() >= MAX_PUSH_COMMITS {
        return None;
    }
    if commits.last()?.id != after {
        return None;
    }
    let mut paths = BTreeSet::new();
    for commit in &commits {
        let lists = [&commit.added, &commit.modified, &commit.removed];
        let mut listed = 0;
        for list in lists {
            let list = list.as_ref()?;
            if list.len() >= MAX_PUSH_PATHS {
                return None;
            }
            listed += list.len();
            paths.extend(list.iter().map(String::as_str));
        }
        // A merge commit may list nothing: what it brought in is unknown.
        if listed == 0 || paths.len() > MAX_KEPT_PATHS {
            return None;
        }
    }
    Some(PushChange {
        before,
        after,
        paths: paths.into_iter().map(str::to_owned).collect(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    /// A push of `commits` from `a…` to the last commit's id.
    fn body(commits: Value) -> Value {
        let after = commits
            .as_array()
            .and_then(|c| c.last())
            .and_then(|c| c.get("id"))
            .cloned()
            .unwrap_or(Value::Null);
        json!({
            "ref": "refs/heads/main", "before": "a1", "after": after,
            "forced": false, "created": false, "deleted": false,
            "repository": {"id": 1, "name": "r", "owner": {"login": "o"},
                           "default_branch": "main"},
            "commits": commits,
        })
    }

    fn commit(id: &str, added: &[&str], modified: &[&str], removed: &[&str]) -> Value {
        json!({"id": id, "distinct": true, "added": added, "modified": modified, "removed": removed})
    }

    fn change_of(body: &Value) -> Option<PushChange> {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        match parse_push(&bytes).map(|parsed| parsed.event) {
            Ok(WebhookEvent::DefaultBranchPush { change, .. }) => change,
            other => panic!("not a default-branch push: {other:?}"),
        }
    }

    #[test]
    fn a_push_listing_its_paths_should_tell_them_each_once() {
        let body = body(json!([
            commit("b2", &["README.md"], &["src/a.rs"], &[]),
            commit("c3", &[], &["README.md"], &["old.txt"]),
        ]));
        assert_eq!(
            change_of(&body),
            Some(PushChange {
                before: "a1".into(),
                after: "c3".into(),
                paths: vec!["README.md".into(), "old.txt".into(), "src/a.rs".into()],
            })
        );
    }

    #[test]
    fn a_push_whose_payload_may_not_tell_every_path_should_have_no_change() {
        let one = || json!([commit("b2", &["README.md"], &[], &[])]);
        let mut forced = body(one());
        forced["forced"] = json!(true);
        let mut created = body(one());
        created["created"] = json!(true);
        let mut wrong_after = body(one());
        wrong_after["after"] = json!("zz");
        let mut no_flags = body(one());
        no_flags.as_object_mut().map(|o| o.remove("forced"));
        let empty = body(json!([]));
        let merge = body(json!([commit("b2", &[], &[], &[])]));
        let mut without_lists = body(one());
        without_lists["commits"][0]
            .as_object_mut()
            .map(|c| c.remove("removed"));
        let many_commits: Vec<Value> = (0..MAX_PUSH_COMMITS)
            .map(|n| commit(&format!("c{n}"), &["README.md"], &[], &[]))
            .collect();
        let long_list: Vec<String> = (0..MAX_PUSH_PATHS).map(|n| format!("f{n}")).collect();
        let long_list: Vec<&str> = long_list.iter().map(String::as_str).collect();
        let mut odd_shape = body(one());
        odd_shape["commits"] = json!("all of them");
        for (why, body) in [
            ("forced", forced),
            ("created", created),
            ("last commit is not after", wrong_after),
            ("no forced flag", no_flags),
            ("no commits", empty),
            ("a merge listing nothing", merge),
            ("a commit without its removed list", without_lists),
            ("2,048 commits", body(Value::Array(many_commits))),
            (
                "3,000 paths",
                body(json!([commit("b2", &long_list, &[], &[])])),
            ),
            ("commits of another shape", odd_shape),
        ] {
            assert_eq!(change_of(&body), None, "{why}");
        }
        // Just under the bounds, the change is told.
        let under: Vec<Value> = (0..MAX_PUSH_COMMITS - 1)
            .map(|n| commit(&format!("c{n}"), &["README.md"], &[], &[]))
            .collect();
        assert!(change_of(&body(Value::Array(under))).is_some());
    }
}
