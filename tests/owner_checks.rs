//! The owner lines of the `Roster` check run, end to end in process: the
//! organisation's directory in PostgreSQL, pull requests and default-branch
//! commits whose owners name nobody, a renamed team or a deleted one, and
//! the annotation on the owner's line (`warning` under `warn`, `failure`
//! under `require`, nothing under `off`).

use crate::checks::{env as checks_env, Env, ACME, FILE};
use crate::support::registry::handler;

use roster::directory::db::Account;
use roster::directory::{DirectoryDb, Member, OwnersMode, Part, Rows, Team};
use roster::source::InstallationId;

const ORG: i64 = 9_001;

fn team(id: i64, slug: &str) -> Team {
    Team {
        id,
        slug: slug.to_owned(),
        name: slug.to_owned(),
        parent_id: None,
        secret: false,
    }
}

/// Writes `teams` and `members` as acme's whole directory, as a finished
/// read does (a team left out is deleted).
async fn directory(env: &Env, teams: &[Team], members: &[Member]) {
    let db = DirectoryDb::new(env.pool.clone());
    let account = Account {
        org_id: ORG,
        login: "acme".to_owned(),
        installation_id: Some(InstallationId(ACME)),
        personal: false,
    };
    db.ensure_account(&account).await.expect("account");
    let started = db.read_started().await.expect("start");
    for (rows, part) in [
        (Rows::Teams(teams), Part::Teams),
        (Rows::Members(members), Part::Members),
    ] {
        db.put(ORG, rows, started).await.expect("a page");
        db.finish(ORG, part, started).await.expect("the read's end");
    }
}

/// The checks of `env` under `mode`, the default branch's included.
fn owners(env: &mut Env, mode: OwnersMode) {
    env.worker.owners = mode;
    env.handler = handler(&env.pool, env.queue.clone())
        .with_default_branch_checks(true)
        .with_owners(mode);
}

async fn acme(env: &Env) {
    let octocat = Member {
        id: 100,
        login: "octocat".to_owned(),
    };
    directory(
        env,
        &[
            team(10, "payments"),
            team(11, "platform"),
            team(12, "legacy"),
        ],
        &[octocat],
    )
    .await;
}

#[tokio::test]
async fn an_unknown_owner_should_be_a_warning_on_its_line_with_the_nearest_slugs() {
    let mut env = checks_env().await;
    owners(&mut env, OwnersMode::Warn);
    acme(&env).await;
    let id = env.repo("shop", "name: shop\nowner: platform\n").await;
    env.quiet().await;
    let sha = env.fake.pr_commit(
        id,
        FILE,
        b"name: shop\ndescription: the shop\nowner: paymnts\n",
    );
    env.open_pr(id, "shop", 1, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert_eq!(
        run.title.as_deref(),
        Some("adds 0, changes 1, removes 0 · 1 owner to fix")
    );
    assert_eq!(run.annotations.len(), 1, "{:?}", run.annotations);
    let note = &run.annotations[0];
    assert_eq!(note["annotation_level"], "warning");
    assert_eq!(note["path"], FILE);
    assert_eq!(
        (note["start_line"].as_u64(), note["start_column"].as_u64()),
        (Some(3), Some(8))
    );
    assert_eq!(
        note["message"],
        "owner: no team or member \"paymnts\" in acme (did you mean payments?)"
    );
    assert!(run
        .summary
        .unwrap_or_default()
        .contains("ROSTER_OWNERS=warn"));
}

#[tokio::test]
async fn under_require_an_unknown_owner_should_fail_the_pull_request() {
    let mut env = checks_env().await;
    owners(&mut env, OwnersMode::Require);
    acme(&env).await;
    let id = env.repo("shop", "name: shop\nowner: '@octocat'\n").await;
    env.quiet().await;
    let sha = env.fake.pr_commit(
        id,
        FILE,
        b"projects:\n  - name: shop\n    owner: '@octocat'\n  - name: shop-web\n    owner: '@acme/nobody'\n",
    );
    env.open_pr(id, "shop", 2, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title.as_deref(), Some("1 problem"));
    let note = &run.annotations[0];
    assert_eq!(note["annotation_level"], "failure");
    assert_eq!(note["start_line"], 5);
    assert_eq!(
        note["message"],
        "projects[1].owner: no team or member \"@acme/nobody\" in acme"
    );
}

#[tokio::test]
async fn a_renamed_team_should_be_named_and_fail_only_a_file_that_newly_names_it() {
    let mut env = checks_env().await;
    owners(&mut env, OwnersMode::Require);
    acme(&env).await;
    let kept = env.repo("kept", "name: kept\nowner: payments\n").await;
    let other = env.repo("other", "name: other\nowner: platform\n").await;
    // `payments` becomes `payments-core`: the same team, by id.
    directory(
        &env,
        &[
            team(10, "payments-core"),
            team(11, "platform"),
            team(12, "legacy"),
        ],
        &[],
    )
    .await;
    env.quiet().await;
    let sha = env.fake.pr_commit(
        kept,
        FILE,
        b"name: kept\nowner: payments\ndescription: still ours\n",
    );
    env.open_pr(kept, "kept", 3, &sha).await;
    let newly = env
        .fake
        .pr_commit(other, FILE, b"name: other\nowner: payments\n");
    env.open_pr(other, "other", 4, &newly).await;
    env.settle().await;
    let run = env.only_run(kept, &sha);
    assert_eq!(
        run.conclusion.as_deref(),
        Some("success"),
        "the entry followed the team"
    );
    let renamed = "owner: \"payments\" was renamed to \"payments-core\"; update the file";
    assert_eq!(run.annotations[0]["annotation_level"], "warning");
    assert_eq!(run.annotations[0]["message"], renamed);
    let run = env.only_run(other, &newly);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.annotations[0]["annotation_level"], "failure");
    assert_eq!(run.annotations[0]["message"], renamed);
}

#[tokio::test]
async fn the_default_branch_run_should_flag_a_deleted_team() {
    let mut env = checks_env().await;
    owners(&mut env, OwnersMode::Warn);
    acme(&env).await;
    let id = env.repo("old", "name: old\nowner: platform\n").await;
    // `legacy` is deleted: a complete read no longer finds it.
    directory(&env, &[team(10, "payments"), team(11, "platform")], &[]).await;
    env.quiet().await;
    let head = env.fake.push_file(id, FILE, b"name: old\nowner: legacy\n");
    assert_eq!(env.reconcile(id).await, "synced");
    env.settle().await;
    let run = env.only_run(id, &head);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert_eq!(run.annotations.len(), 1);
    assert_eq!(run.annotations[0]["annotation_level"], "warning");
    assert_eq!(
        run.annotations[0]["message"],
        "owner: team \"legacy\" was deleted in acme"
    );
    assert_eq!(run.annotations[0]["start_line"], 2);
}

#[tokio::test]
async fn owners_off_should_say_nothing_and_an_unread_directory_neither() {
    let mut env = checks_env().await;
    owners(&mut env, OwnersMode::Off);
    acme(&env).await;
    let id = env.repo("free", "name: free\nowner: platform\n").await;
    env.quiet().await;
    let sha = env.fake.pr_commit(id, FILE, b"name: free\nowner: anyone\n");
    env.open_pr(id, "free", 5, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert!(run.annotations.is_empty());
    assert_eq!(run.title.as_deref(), Some("adds 0, changes 1, removes 0"));

    // Under `require`, an installation whose directory was never read is
    // not checked: nothing is known to compare with.
    let mut unread = checks_env().await;
    owners(&mut unread, OwnersMode::Require);
    let id = unread.repo("free", "name: free\nowner: platform\n").await;
    unread.quiet().await;
    let sha = unread
        .fake
        .pr_commit(id, FILE, b"name: free\nowner: anyone\n");
    unread.open_pr(id, "free", 6, &sha).await;
    unread.settle().await;
    let run = unread.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert!(run.annotations.is_empty());
}

/// A public repository's pull request, whose check anyone may read.
async fn open_public_pr(env: &Env, repo: i64, number: i64, sha: &str) {
    let pr = crate::support::pull_requests::Pr {
        repo,
        installation: ACME,
        owner: "acme",
        name: "shop",
        number,
        sha,
        base: "main",
    };
    let body = crate::support::pull_requests::pull_request("opened", &pr);
    env.deliver(
        "pull_request",
        crate::support::pull_requests::make_public(&body),
    )
    .await;
}

#[tokio::test]
async fn a_public_pull_requests_check_should_not_tell_a_member_from_nobody() {
    let mut env = checks_env().await;
    owners(&mut env, OwnersMode::Warn);
    let mut hush = team(13, "hush");
    hush.secret = true;
    let octocat = Member {
        id: 100,
        login: "octocat".to_owned(),
    };
    directory(&env, &[team(10, "payments"), hush], &[octocat]).await;
    let id = env.repo("shop", "name: shop\nowner: payments\n").await;
    env.quiet().await;

    // A member, nobody, a secret team and a slug no team has: one answer.
    let mut answers = Vec::new();
    for (number, owner) in [
        (1, "'@octocat'"),
        (2, "'@nobody-here'"),
        (3, "hush"),
        (4, "husk"),
    ] {
        let text = format!("name: shop\ndescription: the shop\nowner: {owner}\n");
        let sha = env.fake.pr_commit(id, FILE, text.as_bytes());
        open_public_pr(&env, id, number, &sha).await;
        env.settle().await;
        let run = env.only_run(id, &sha);
        let summary = run.summary.unwrap_or_default();
        assert!(
            summary.contains(roster::registry::check_records::owner_check::PRIVATE_OWNERS_LATER),
            "{owner}: {summary}"
        );
        answers.push((
            run.conclusion,
            run.title,
            run.annotations,
            // The summary shows the file's own change, owner included.
            summary.replace(owner.trim_matches('\''), "OWNER"),
        ));
    }
    assert!(
        answers.windows(2).all(|w| w[0] == w[1]),
        "the answers differ: {answers:#?}"
    );
    assert!(answers[0].2.is_empty(), "{:?}", answers[0].2);

    // An owner naming a visible team tells nothing private: no such line.
    let sha = env
        .fake
        .pr_commit(id, FILE, b"name: shop\nowner: payments\n");
    open_public_pr(&env, id, 5, &sha).await;
    env.settle().await;
    let summary = env.only_run(id, &sha).summary.unwrap_or_default();
    assert!(
        !summary.contains(roster::registry::check_records::owner_check::PRIVATE_OWNERS_LATER),
        "a visible team needs no such line: {summary}"
    );
}
