//! One change of the log as a row of a page: what, when, why, and which
//! fields moved, as text a person reads. Shared by an entry's history and
//! the Changes page's stream.

use chrono::Utc;
use serde_json::Value;

use crate::registry::budget::ITEMS_BUDGET;
use crate::registry::changes;
use crate::web::html_budget::{escaped_len, keep_rows};
use crate::web::json::ChangeJson;
use crate::web::privacy::Privacy;
use crate::web::view::{commit_link, repo_href, short_sha, TimeView};

/// Bytes of rows each of the two lists of `/changes` may take.
pub(super) const HALF_PAGE: usize = ITEMS_BUDGET / 2;

/// Fields of an entry a diff leaves out: they move with every change, or
/// are internal ids (the owner's team id) that mean nothing to a reader;
/// the owner's name and status say the same in words.
const BOOKKEEPING: [&str; 5] = [
    "created_at",
    "updated_at",
    "source_sha",
    "repo_id",
    "owner_team_id",
];

/// The fields that say which entry a created or removed one is, beside its
/// name: who owns it and which file it comes from.
const IDENTIFYING: [&str; 2] = ["owner", "path"];

/// One change as a row: what, when, why, and which fields moved.
pub struct ChangeRow {
    pub(super) seq: i64,
    pub(super) kind: &'static str,
    pub(super) at: TimeView,
    pub(super) cause: String,
    pub(super) name: String,
    pub(super) repo: String,
    pub(super) repo_href: String,
    pub(super) sha: String,
    pub(super) sha_href: Option<String>,
    pub(super) diff: Vec<FieldDiff>,
    /// What changed, as one line: for a created or removed entry the
    /// fields that identify it, otherwise each moved field's old and new
    /// values.
    pub(super) summary: String,
}

/// One field that differs: its old and new values as short text.
pub struct FieldDiff {
    pub(super) field: String,
    pub(super) before: String,
    pub(super) after: String,
}

impl ChangeRow {
    /// Bytes of the row's values once escaped.
    pub(super) fn html_len(&self) -> usize {
        let text = [
            &self.cause,
            &self.name,
            &self.repo,
            &self.repo_href,
            &self.sha,
        ];
        text.iter().map(|t| escaped_len(t)).sum::<usize>()
            + self.sha_href.as_deref().map_or(0, escaped_len)
            + self
                .diff
                .iter()
                .map(|d| {
                    96 + escaped_len(&d.field) + escaped_len(&d.before) + escaped_len(&d.after)
                })
                .sum::<usize>()
    }

    pub(super) fn new(change: ChangeJson, web: Option<&str>, now: chrono::DateTime<Utc>) -> Self {
        let sha = change.sha.clone().unwrap_or_default();
        let diff = field_diff(
            shown(&change.before).as_ref(),
            shown(&change.after).as_ref(),
        );
        Self {
            seq: change.seq,
            kind: change.kind,
            at: TimeView::new(change.at, now),
            sha_href: commit_link(web, &change.repo, &sha),
            sha: short_sha(Some(&sha)),
            repo_href: repo_href(&change.repo),
            summary: summary(change.kind, &diff),
            diff,
            cause: change.cause,
            name: change.name,
            repo: change.repo,
        }
    }
}

/// One line saying what a change did: `owner: payments · path: project.yaml`
/// for an entry created or removed, `owner: a → b; tags: — → x` for one
/// changed.
pub fn summary(kind: &str, diff: &[FieldDiff]) -> String {
    match kind {
        "created" | "removed" => diff
            .iter()
            .filter(|d| IDENTIFYING.contains(&d.field.as_str()))
            .map(|d| {
                let value = if kind == "created" {
                    &d.after
                } else {
                    &d.before
                };
                format!("{}: {value}", d.field)
            })
            .collect::<Vec<_>>()
            .join(" · "),
        _ => diff
            .iter()
            .map(|d| format!("{}: {} → {}", d.field, d.before, d.after))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// A version of an entry as its JSON shows it (`None`: it did not exist).
fn shown<T: serde::Serialize>(version: &Option<T>) -> Option<Value> {
    version.as_ref().and_then(|v| serde_json::to_value(v).ok())
}

/// The fields whose values differ between two versions of an entry, in
/// name order; a missing version counts as every field empty.
pub fn field_diff(before: Option<&Value>, after: Option<&Value>) -> Vec<FieldDiff> {
    let fields = |v: Option<&Value>| {
        v.and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let mut names: Vec<String> = fields(before);
    names.extend(fields(after));
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| !BOOKKEEPING.contains(&name.as_str()))
        .filter_map(|name| {
            let old = before.and_then(|v| v.get(&name)).unwrap_or(&Value::Null);
            let new = after.and_then(|v| v.get(&name)).unwrap_or(&Value::Null);
            (old != new).then(|| FieldDiff {
                before: show(old),
                after: show(new),
                field: name,
            })
        })
        .collect()
}

/// A value as one line of text a person reads: strings bare, tags as
/// `a, b`, links as `title (url)`, labels as `key=value`, nothing as "—";
/// never JSON.
fn show(value: &Value) -> String {
    match value {
        Value::Null => "—".to_owned(),
        Value::String(s) => s.clone(),
        Value::Array(a) if a.is_empty() => "—".to_owned(),
        Value::Object(o) if o.is_empty() => "—".to_owned(),
        Value::Array(items) => items.iter().map(show_item).collect::<Vec<_>>().join(", "),
        Value::Object(pairs) => pairs
            .iter()
            .map(|(key, value)| format!("{key}={}", show(value)))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// One item of a list: a link (`{title, url}`) as `title (url)`.
fn show_item(item: &Value) -> String {
    match (item.get("title"), item.get("url")) {
        (Some(Value::String(title)), Some(Value::String(url))) => format!("{title} ({url})"),
        _ => show(item),
    }
}

/// Rows of a page of changes as the reader may see them, cut to the
/// page's byte bound, and the `seq` the next (older) page starts before,
/// when there is one: past the last change read, shown or not, unless the
/// bound cut the shown ones.
pub(super) fn page_rows(
    page: changes::Listed,
    privacy: &Privacy,
    web: Option<&str>,
    budget: usize,
) -> (Vec<ChangeRow>, Option<i64>) {
    let now = Utc::now();
    let more = page.more;
    let read_to = page.items.last().map(|c| c.seq);
    let mut rows: Vec<ChangeRow> = privacy
        .changes(page.items)
        .into_iter()
        .map(|c| ChangeRow::new(ChangeJson::from(c), web, now))
        .collect();
    let cut = keep_rows(&mut rows, budget, ChangeRow::html_len);
    let next = match rows.last() {
        Some(last) if cut => Some(last.seq),
        _ => read_to.filter(|_| more),
    };
    (rows, next)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_created_entry_should_read_as_one_line_of_what_identifies_it_without_ids() {
        let after = json!({
            "name": "api", "owner": "payments", "path": "project.yaml",
            "description": "The API", "tags": ["x"], "lifecycle": "production",
            "owner_team_id": 5693395625095893_i64, "owner_status": "team",
            "repo_id": 7, "created_at": "1", "updated_at": "1", "source_sha": "abc",
        });
        let diff = field_diff(None, Some(&after));
        assert!(
            diff.iter().all(|d| d.field != "owner_team_id"),
            "no internal id"
        );
        assert_eq!(
            summary("created", &diff),
            "owner: payments · path: project.yaml"
        );
        assert_eq!(
            summary("removed", &field_diff(Some(&after), None)),
            "owner: payments · path: project.yaml"
        );
        let changed = json!({"name": "api", "owner": "platform", "path": "project.yaml",
            "owner_team_id": 17, "tags": ["x"]});
        let before = json!({"name": "api", "owner": "payments", "path": "project.yaml",
            "owner_team_id": 5693395625095893_i64, "tags": ["x"]});
        assert_eq!(
            summary("changed", &field_diff(Some(&before), Some(&changed))),
            "owner: payments → platform"
        );
    }

    #[test]
    fn field_diff_should_list_only_the_fields_that_moved() {
        let before = json!({"name": "api", "owner": "a", "tags": [], "updated_at": "1"});
        let after = json!({"name": "api", "owner": "b", "tags": ["x"], "updated_at": "2"});
        let diff = field_diff(Some(&before), Some(&after));
        let shown: Vec<(&str, &str, &str)> = diff
            .iter()
            .map(|d| (d.field.as_str(), d.before.as_str(), d.after.as_str()))
            .collect();
        assert_eq!(shown, vec![("owner", "a", "b"), ("tags", "—", "x")]);
    }

    #[test]
    fn field_diff_should_show_tags_links_and_labels_as_text_not_json() {
        let before = json!({
            "tags": ["payments", "pci"],
            "links": [{"title": "Runbook", "url": "https://wiki/run"}],
            "labels": {"tier": "1", "team": "pay"},
        });
        let after = json!({
            "tags": ["payments"],
            "links": [
                {"title": "Runbook", "url": "https://wiki/run"},
                {"title": "Docs", "url": "https://docs/pay"}
            ],
            "labels": {},
        });
        let diff = field_diff(Some(&before), Some(&after));
        let shown: Vec<(&str, &str, &str)> = diff
            .iter()
            .map(|d| (d.field.as_str(), d.before.as_str(), d.after.as_str()))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("labels", "team=pay, tier=1", "—"),
                (
                    "links",
                    "Runbook (https://wiki/run)",
                    "Runbook (https://wiki/run), Docs (https://docs/pay)"
                ),
                ("tags", "payments, pci", "payments"),
            ]
        );
        for d in &diff {
            for text in [&d.before, &d.after] {
                assert!(!text.contains(['{', '[', '"']), "{text}");
            }
        }
    }

    #[test]
    fn field_diff_of_a_creation_should_show_every_field_set() {
        let after = json!({"name": "api", "owner": "b", "description": null});
        let diff = field_diff(None, Some(&after));
        let fields: Vec<&str> = diff.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, vec!["name", "owner"]);
    }
}
