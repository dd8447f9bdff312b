//! Hostile project files and pull requests against the `Roster` check run
//! and the sync: a NUL, a summary that is long in bytes, a name a private
//! repository owns seen from a public one, and invisible characters. Each
//! test performs the attack, checks the answer and that nothing registered
//! was lost.

use crate::checks::{env, get, web, yaml, ACME, FILE};
use crate::support::fake_github::routes;
use crate::support::pull_requests;

use roster::github::checks_api::PostError;
use roster::github::http::CallError;
use roster::registry::check_records::check_runs::{self, CheckIntent};
use roster::source::{InstallationId, RepoId};
use serde_json::json;

const NUL_MESSAGE: &str =
    "file: contains a NUL character (U+0000), which a project file may not hold";

#[tokio::test]
async fn a_nul_should_fail_the_pull_request_and_leave_the_repository_invalid_not_in_error() {
    let env = env().await;
    let id = env.repo("amp", &yaml("amp", "fine")).await;
    env.quiet().await;
    let before = env.dump().await;
    let nul = "name: amp\nowner: team-amp\ndescription: \"a\\0b\"\n";

    // The pull request's check says where the NUL is.
    let sha = env.fake.pr_commit(id, FILE, nul.as_bytes());
    env.open_pr(id, "amp", 1, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.annotations[0]["start_line"], 3);
    assert_eq!(run.annotations[0]["start_column"], 14);
    assert_eq!(run.annotations[0]["message"], NUL_MESSAGE);
    assert_eq!(env.dump().await, before, "a pull request changes nothing");

    // Merged: the sync makes the repository invalid, the entry stays.
    env.fake.push_file(id, FILE, nul.as_bytes());
    assert_eq!(env.reconcile(id).await, "invalid");
    assert_eq!(env.reconcile(id).await, "invalid", "and stays so, no error");
    let (status, error): (String, Option<String>) =
        sqlx::query_as("select status, error from repositories where id = $1")
            .bind(id)
            .fetch_one(&env.pool)
            .await
            .expect("repository");
    assert_eq!(status, "invalid");
    assert_eq!(
        error.as_deref(),
        Some(format!("project.yaml:3:14: {NUL_MESSAGE}").as_str())
    );
    let description: Option<String> =
        sqlx::query_scalar("select description from entries where name = 'amp'")
            .fetch_one(&env.pool)
            .await
            .expect("the entry is kept");
    assert_eq!(description.as_deref(), Some("fine"));
}

#[tokio::test]
async fn a_summary_long_in_bytes_should_be_cut_by_bytes_and_posted() {
    let env = env().await;
    let id = env.repo("cjk", &yaml("cjk", "v1")).await;
    env.quiet().await;
    // 40 projects, each with 1,000 characters of CJK (3 bytes each): about
    // 45,000 characters and 125,000 bytes of summary before the cut.
    let projects: String = (0..40)
        .map(|k| {
            format!(
                "  - name: p{k}\n    owner: t\n    description: {}\n",
                "漢".repeat(1000)
            )
        })
        .collect();
    let sha = env
        .fake
        .pr_commit(id, FILE, format!("projects:\n{projects}").as_bytes());
    env.open_pr(id, "cjk", 1, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    let summary = run.summary.unwrap_or_default();
    println!(
        "summary: {} characters, {} bytes",
        summary.chars().count(),
        summary.len()
    );
    assert!(summary.len() <= 65_535, "{} bytes", summary.len());
    assert!(summary.contains("longer than GitHub shows"));
    let detail = get(&web(&env), "/api/v1/repos/acme/cjk").await.json();
    assert_eq!(detail["checks"][0]["sha"], sha.as_str());
    assert_eq!(detail["checks"][0]["posted"], true);
    assert_eq!(detail["checks"][0]["post_error"], serde_json::Value::Null);
    assert_eq!(
        detail["projects"],
        json!(["cjk"]),
        "nothing registered changed"
    );
}

#[tokio::test]
async fn the_fake_should_refuse_a_summary_over_65535_bytes_as_github_does() {
    let env = env().await;
    let id = env.repo("big", &yaml("big", "v1")).await;
    let head = env.fake.head(id).expect("head");
    // 30,000 characters: under the limit in characters, 90,000 bytes.
    let body = json!({
        "status": "completed", "conclusion": "success",
        "output": {"title": "t", "summary": "漢".repeat(30_000)},
    });
    let refused = env
        .worker
        .api
        .create_run(InstallationId(ACME), "acme", "big", &head, body)
        .await
        .expect_err("refused");
    let PostError::Call(CallError::Status {
        status, message, ..
    }) = refused
    else {
        panic!("not a 422: {refused:?}");
    };
    assert_eq!(status, 422);
    assert!(
        message.contains("exceeds a maximum bytesize of 65535"),
        "{message}"
    );
}

#[tokio::test]
async fn a_post_github_refuses_should_be_shown_as_not_posted() {
    let env = env().await;
    let id = env.repo("refused", &yaml("refused", "v1")).await;
    env.quiet().await;
    // An intent for a commit GitHub does not have: GitHub answers 422.
    let gone = "0".repeat(40);
    let intent = CheckIntent {
        repo_id: RepoId(id),
        sha: gone.clone(),
        pull_request: Some(5),
        installation_id: InstallationId(ACME),
        owner: "acme".into(),
        name: "refused".into(),
        conclusion: "success".into(),
        title: "adds 0, changes 1, removes 0".into(),
        summary: "fine".into(),
        annotations: json!([]),
    };
    let mut conn = env.pool.acquire().await.expect("connection");
    check_runs::record_intent(&mut conn, &intent)
        .await
        .expect("intent");
    drop(conn);
    env.settle().await;
    assert_eq!(env.fake.count(routes::CHECK_RUN_CREATE), 1, "tried once");
    let app = web(&env);
    let detail = get(&app, "/api/v1/repos/acme/refused").await.json();
    let check = &detail["checks"][0];
    assert_eq!(check["sha"], gone.as_str());
    assert_eq!(check["posted"], false);
    assert_eq!(
        check["conclusion"],
        serde_json::Value::Null,
        "not reported as success"
    );
    assert_eq!(check["decided"], "success");
    let error = check["post_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("GitHub refused the check run (422)"),
        "{error}"
    );
    let page = get(&app, "/repos/acme/refused").await;
    assert!(page.body.contains("not posted"), "{}", page.body);
    assert!(
        !page.body.contains("kind-check-success"),
        "not shown as success"
    );
    env.settle().await;
    assert_eq!(env.fake.count(routes::CHECK_RUN_CREATE), 1, "not retried");
    assert_eq!(detail["projects"], json!(["refused"]));
}

#[tokio::test]
async fn a_public_repositorys_check_should_not_name_a_private_owner() {
    let env = env().await;
    env.repo("secret-merger-2027", &yaml("project-falcon", "hush"))
        .await;
    let open = env.repo("open", &yaml("open", "public")).await;
    env.quiet().await;
    let before = env.dump().await;
    let sha = env.fake.pr_commit(
        open,
        FILE,
        b"projects:\n  - name: open\n    owner: t\n  - name: project-falcon\n    owner: t\n",
    );
    let pr = pull_requests::Pr {
        repo: open,
        installation: ACME,
        owner: "acme",
        name: "open",
        number: 1,
        sha: &sha,
        base: "main",
    };
    let body = pull_requests::pull_request("opened", &pr);
    env.deliver("pull_request", pull_requests::make_public(&body))
        .await;
    env.settle().await;
    let run = env.only_run(open, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(
        run.annotations[0]["message"],
        "projects[1].name: \"project-falcon\" is owned by another repository of the organisation"
    );
    let summary = run.summary.unwrap_or_default();
    assert!(!summary.contains("secret-merger"), "{summary}");
    assert_eq!(env.dump().await, before, "nothing registered changed");

    // The same pull request on a private repository names the owner.
    let closed = env.repo("closed", &yaml("closed", "private")).await;
    let sha = env.fake.pr_commit(
        closed,
        FILE,
        b"projects:\n  - name: closed\n    owner: t\n  - name: project-falcon\n    owner: t\n",
    );
    env.open_pr(closed, "closed", 2, &sha).await;
    env.settle().await;
    let run = env.only_run(closed, &sha);
    assert_eq!(
        run.annotations[0]["message"],
        "projects[1].name: \"project-falcon\" is owned by acme/secret-merger-2027"
    );
}

#[tokio::test]
async fn a_default_branch_check_should_not_name_a_private_owner() {
    let env = env().await;
    env.repo("secret-merger", &yaml("project-falcon", "hush"))
        .await;
    let oss = env.repo("oss", &yaml("oss", "public")).await;
    env.quiet().await;
    let taken = b"projects:\n  - name: oss\n    owner: t\n  - name: project-falcon\n    owner: t\n";
    let sha = env.fake.push_file(oss, FILE, taken);
    assert_eq!(env.reconcile(oss).await, "conflict");
    env.settle().await;
    let run = env.only_run(oss, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(
        run.annotations[0]["message"],
        "projects[1].name: \"project-falcon\" is owned by another repository of the organisation"
    );
    let text = format!("{run:?}");
    assert!(!text.contains("secret-merger"), "{text}");

    // A repository known to be private (its pull requests said so) names
    // the owner on its default branch, as its pull requests do.
    let closed = env.repo("closed", &yaml("closed", "private")).await;
    let pr_sha = env
        .fake
        .pr_commit(closed, FILE, yaml("closed", "v2").as_bytes());
    env.open_pr(closed, "closed", 2, &pr_sha).await;
    env.settle().await;
    let sha = env.fake.push_file(
        closed,
        FILE,
        b"projects:\n  - name: closed\n    owner: t\n  - name: project-falcon\n    owner: t\n",
    );
    assert_eq!(env.reconcile(closed).await, "conflict");
    env.settle().await;
    let run = env.only_run(closed, &sha);
    assert_eq!(
        run.annotations[0]["message"],
        "projects[1].name: \"project-falcon\" is owned by acme/secret-merger"
    );
}

#[tokio::test]
async fn a_public_owner_should_still_be_named_on_a_public_repository() {
    let env = env().await;
    let owner = env.repo("shared", &yaml("shared-lib", "open")).await;
    let open = env.repo("open", &yaml("open", "public")).await;
    env.quiet().await;
    // A pull request on the owner tells that it is public.
    let sha = env
        .fake
        .pr_commit(owner, FILE, yaml("shared-lib", "v2").as_bytes());
    let pr = |repo, name, number, sha| pull_requests::Pr {
        repo,
        installation: ACME,
        owner: "acme",
        name,
        number,
        sha,
        base: "main",
    };
    let body = pull_requests::pull_request("opened", &pr(owner, "shared", 1, &sha));
    env.deliver("pull_request", pull_requests::make_public(&body))
        .await;
    let sha = env.fake.pr_commit(
        open,
        FILE,
        b"projects:\n  - name: open\n    owner: t\n  - name: shared-lib\n    owner: t\n",
    );
    let body = pull_requests::pull_request("opened", &pr(open, "open", 2, &sha));
    env.deliver("pull_request", pull_requests::make_public(&body))
        .await;
    env.settle().await;
    let run = env.only_run(open, &sha);
    assert_eq!(
        run.annotations[0]["message"],
        "projects[1].name: \"shared-lib\" is owned by acme/shared"
    );
}

#[tokio::test]
async fn invisible_characters_should_be_escaped_in_the_run_and_on_the_pages() {
    let env = env().await;
    let text = "name: amp\nowner: team-amp\ndescription: \"admin\u{202E}gnp.exe\u{200B}\"\n";
    let id = env.repo("amp", text).await;
    env.quiet().await;
    let sha = env.fake.pr_commit(
        id,
        FILE,
        "name: amp\nowner: \"team\u{2066}-amp\"\ndescription: \"x\u{202E}y\"\n".as_bytes(),
    );
    env.open_pr(id, "amp", 1, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    let summary = run.summary.unwrap_or_default();
    assert!(summary.contains("team\\u{2066}-amp"), "{summary}");
    assert!(summary.contains("x\\u{202E}y"), "{summary}");
    assert!(
        !summary.contains(['\u{202E}', '\u{2066}', '\u{200B}']),
        "{summary}"
    );
    // The registered entry keeps its text as written; the pages escape it.
    let stored: Option<String> =
        sqlx::query_scalar("select description from entries where name = 'amp'")
            .fetch_one(&env.pool)
            .await
            .expect("entry");
    assert_eq!(stored.as_deref(), Some("admin\u{202E}gnp.exe\u{200B}"));
    let app = web(&env);
    for path in ["/repos/acme/amp", "/projects", "/"] {
        let page = get(&app, path).await;
        assert_eq!(page.status, 200, "{path}");
        assert!(
            !page.body.contains(['\u{202E}', '\u{200B}']),
            "{path}: {}",
            page.body
        );
    }
    let page = get(&app, "/repos/acme/amp").await;
    assert!(
        page.body.contains("admin\\u{202E}gnp.exe\\u{200B}"),
        "{}",
        page.body
    );
}
