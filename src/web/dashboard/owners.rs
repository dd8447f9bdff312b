//! `GET /owners`: who owns what, per organisation. Every owner that names
//! nobody current (unknown, a renamed team's old slug, a deleted team)
//! comes first, with what to do about it; then each team with its
//! projects. Owners are resolved here, against the directory as it is now.
//!
//! Teams and members are the organisation's private data: without a
//! signed-in session the page shows visible teams only (slug, name and
//! projects), never a member or a secret team.

use std::collections::BTreeMap;

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

use super::chrome::Chrome;
use super::error_page::PageError;
use crate::directory::resolve::Resolver;
use crate::directory::{Directory, DirectoryDb, Resolution, Unchecked};
use crate::registry::read_models::owner_counts::{owner_projects, OwnerProjects};
use crate::web::error::ApiError;
use crate::web::privacy::Privacy;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::{href_with, thousands};

/// Projects named per owner; the rest are counted and linked.
const SHOWN: i32 = 12;

#[derive(Template, WebTemplate)]
#[template(path = "owners.html")]
pub struct OwnersTemplate {
    chrome: Chrome,
    accounts: Vec<AccountView>,
    /// Whether members and secret teams are shown.
    privileged: bool,
}

/// One organisation (or personal account, or the local folder).
struct AccountView {
    login: String,
    /// Why its owners are not checked, when they are not.
    unchecked: Option<String>,
    /// The last read of its directory that failed.
    read_error: Option<String>,
    dangling: Vec<DanglingRow>,
    dangling_count: String,
    teams: Vec<OwnerRow>,
    /// Teams (shown ones) that own no project.
    idle_teams: Option<String>,
    members: Vec<OwnerRow>,
    idle_members: Option<String>,
}

/// An owner text that names nobody current.
struct DanglingRow {
    owner: String,
    /// `unknown`, `renamed` or `deleted`.
    status: &'static str,
    message: String,
    projects: ProjectList,
}

/// A team or member with the projects it owns.
struct OwnerRow {
    name: String,
    title: String,
    deleted: bool,
    secret: bool,
    /// Old slugs files still use for it.
    renamed_from: Vec<String>,
    projects: ProjectList,
}

#[derive(Default)]
struct ProjectList {
    count: i64,
    /// (name, link to its entry).
    shown: Vec<(String, String)>,
    /// How many are not shown, and the list of all of them.
    more: Option<(String, String)>,
}

impl ProjectList {
    fn add(&mut self, projects: &OwnerProjects) {
        self.count += projects.entries;
        for name in &projects.names {
            if self.shown.len() < SHOWN as usize {
                let href = format!("/projects/{name}");
                self.shown.push((name.clone(), href));
            }
        }
        let hidden = self.count - self.shown.len() as i64;
        self.more = (hidden > 0).then(|| {
            let href = href_with("/projects", &[("owner", Some(&projects.owner))]);
            (thousands(hidden), href)
        });
    }
}

pub async fn owners(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<OwnersTemplate, PageError> {
    let privacy = Privacy::for_viewer(&viewer, &state.pool).await?;
    let privileged = privacy.privileged();
    let unavailable = |e: sqlx::Error| ApiError::unavailable("owners: directory query failed", &e);
    let db = DirectoryDb::new(state.pool.clone());
    let statuses = db.accounts().await.map_err(unavailable)?;
    let projects = owner_projects(&state.pool, SHOWN).await?;
    let mut accounts = Vec::new();
    for status in statuses {
        let Some(directory) = db.load(status.org_id).await.map_err(unavailable)? else {
            continue;
        };
        let mine: Vec<&OwnerProjects> = projects
            .iter()
            .filter(|p| names_account(&directory, &p.account))
            .collect();
        let mut view = account_view(&directory, &mine, &privacy);
        view.read_error = status.read_error;
        accounts.push(view);
    }
    Ok(OwnersTemplate {
        chrome: Chrome::for_viewer(viewer),
        accounts,
        privileged,
    })
}

/// Whether repositories of `login` belong to the account of `directory`.
fn names_account(directory: &Directory, login: &str) -> bool {
    login.eq_ignore_ascii_case(&directory.login)
        || directory.former_logins.contains(&login.to_lowercase())
}

fn account_view(
    directory: &Directory,
    projects: &[&OwnerProjects],
    privacy: &Privacy,
) -> AccountView {
    let privileged = privacy.privileged();
    let resolver = Resolver::new(directory);
    let mut dangling = Vec::new();
    let mut by_team: BTreeMap<i64, (ProjectList, Vec<String>)> = BTreeMap::new();
    let mut by_member: BTreeMap<String, ProjectList> = BTreeMap::new();
    for owned in projects {
        let resolution = resolver.resolve(&owned.owner);
        let problem = resolution.problem(owned.owner.trim(), &directory.login);
        if let Some(message) = problem.filter(|_| !privacy.hides_resolution(&resolution)) {
            let mut list = ProjectList::default();
            list.add(owned);
            dangling.push(DanglingRow {
                owner: owned.owner.clone(),
                status: resolution.status(),
                message,
                projects: list,
            });
        }
        match &resolution {
            Resolution::Member { login } => by_member
                .entry(login.to_lowercase())
                .or_default()
                .add(owned),
            other => {
                if let Some(id) = other.team_id() {
                    let (list, old) = by_team.entry(id).or_default();
                    list.add(owned);
                    if let Resolution::Renamed { from, .. } = other {
                        old.push(from.clone());
                    }
                }
            }
        }
    }
    let shown_teams = directory
        .teams
        .iter()
        .filter(|t| privileged || !t.team.secret);
    let mut idle_teams = 0;
    let mut teams = Vec::new();
    for known in shown_teams {
        let Some((list, renamed_from)) = by_team.remove(&known.team.id) else {
            idle_teams += i64::from(!known.deleted);
            continue;
        };
        teams.push(OwnerRow {
            name: known.team.slug.clone(),
            title: known.team.name.clone(),
            deleted: known.deleted,
            secret: known.team.secret,
            renamed_from,
            projects: list,
        });
    }
    teams.sort_by_key(|t| t.name.to_lowercase());
    let mut members = Vec::new();
    let mut idle_members = 0;
    if privileged {
        for member in &directory.members {
            match by_member.remove(&member.login.to_lowercase()) {
                Some(list) => members.push(OwnerRow {
                    name: format!("@{}", member.login),
                    title: String::new(),
                    deleted: false,
                    secret: false,
                    renamed_from: Vec::new(),
                    projects: list,
                }),
                None => idle_members += 1,
            }
        }
        members.sort_by_key(|m| m.name.to_lowercase());
    }
    // Unknown owners first, then renamed and deleted teams.
    let rank = |status: &str| {
        ["unknown", "renamed", "deleted"]
            .iter()
            .position(|s| *s == status)
    };
    dangling.sort_by_key(|d| (rank(d.status), d.owner.to_lowercase()));
    AccountView {
        login: directory.login.clone(),
        unchecked: directory.unchecked.as_ref().map(|why| match why {
            Unchecked::Personal => {
                "a personal account has no teams: only its own login is an owner".to_owned()
            }
            Unchecked::Off(reason) => format!(
                "GitHub refused to show its teams ({reason}): the App lacks the members: read \
                 permission (docs/github-app.md)"
            ),
        }),
        read_error: None,
        dangling_count: thousands(dangling.len() as i64),
        dangling,
        teams,
        idle_teams: idle_sentence(idle_teams, "team", "teams", "no project"),
        members,
        idle_members: idle_sentence(idle_members, "member", "members", "no project by name"),
    }
}

/// "3 other teams own no project.", "1 other team owns no project.", and
/// nothing when none: a count of zero is not news.
fn idle_sentence(count: i64, one: &str, many: &str, owned: &str) -> Option<String> {
    match count {
        0 => None,
        1 => Some(format!("1 other {one} owns {owned}.")),
        n => Some(format!("{} other {many} own {owned}.", thousands(n))),
    }
}
