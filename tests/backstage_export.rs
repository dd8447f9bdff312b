//! `GET /api/v1/backstage/entities.yaml` (docs/backstage.md) against a real
//! PostgreSQL: every document of the example organisation's export is a
//! valid Backstage entity by Backstage's own published schemas
//! (`tests/fixtures/backstage`, with their provenance), each entry maps as
//! docs/backstage.md says, names Backstage would refuse are left out and counted,
//! and a poll whose `ETag` still matches gets 304 without reading the
//! entries.

use std::path::Path;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use serde::Deserialize;
use serde_json::Value;

use crate::support;
use support::example_org;
use support::http::Answer;
use support::registry::github_repo;
use support::router::{self, send, Fixture, Options};
use support::seed::Seed;
use support::server::eventually;

const ROUTE: &str = "/api/v1/backstage/entities.yaml";

async fn fixture() -> Fixture {
    let options = Options {
        api_token: None,
        github_web_url: None,
    };
    router::fixture(options, |_, _| {}).await
}

async fn export(app: &Router, if_none_match: Option<&str>) -> Answer {
    let mut request = Request::get(ROUTE);
    if let Some(tag) = if_none_match {
        request = request.header(header::IF_NONE_MATCH, tag);
    }
    send(app, request.body(Body::empty()).expect("request")).await
}

/// The export's documents, read by a YAML parser.
fn documents(body: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(body)
        .map(|document| {
            let yaml = serde_yaml_ng::Value::deserialize(document)
                .unwrap_or_else(|e| panic!("not YAML ({e}): {body}"));
            serde_json::to_value(yaml).expect("YAML as JSON")
        })
        .collect()
}

/// Backstage's schemas, each under the base URL its bare `$id` resolves in.
struct Schemas {
    schemas: boon::Schemas,
    component: boon::SchemaIndex,
    system: boon::SchemaIndex,
    group: boon::SchemaIndex,
    envelope: boon::SchemaIndex,
}

const BASE: &str = "https://backstage.invalid/schema/";

fn backstage_schemas() -> Schemas {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/backstage");
    let mut compiler = boon::Compiler::new();
    for (file, id) in [
        ("Entity.schema.json", "Entity"),
        ("EntityEnvelope.schema.json", "EntityEnvelope"),
        ("EntityMeta.schema.json", "EntityMeta"),
        ("common.schema.json", "common"),
        ("Component.v1alpha1.schema.json", "ComponentV1alpha1"),
        ("System.v1alpha1.schema.json", "SystemV1alpha1"),
        ("Group.v1alpha1.schema.json", "GroupV1alpha1"),
    ] {
        let text = std::fs::read_to_string(dir.join(file)).expect(file);
        let value: Value = serde_json::from_str(&text).expect(file);
        assert_eq!(value["$id"], id, "{file}");
        compiler
            .add_resource(&format!("{BASE}{id}"), value)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    let mut schemas = boon::Schemas::new();
    let mut compile = |id: &str| {
        compiler
            .compile(&format!("{BASE}{id}"), &mut schemas)
            .unwrap_or_else(|e| panic!("{id}: {e:#}"))
    };
    let component = compile("ComponentV1alpha1");
    let system = compile("SystemV1alpha1");
    let group = compile("GroupV1alpha1");
    let envelope = compile("EntityEnvelope");
    Schemas {
        schemas,
        component,
        system,
        group,
        envelope,
    }
}

impl Schemas {
    /// Why `document` is not a valid entity of its kind, if it is not.
    fn refusal(&self, document: &Value) -> Option<String> {
        let kind = match document["kind"].as_str() {
            Some("Component") => self.component,
            Some("System") => self.system,
            Some("Group") => self.group,
            other => return Some(format!("unexpected kind {other:?}")),
        };
        [self.envelope, kind]
            .into_iter()
            .find_map(|index| self.schemas.validate(document, index).err())
            .map(|e| format!("{e:#}"))
    }
}

/// Backstage's `isValidObjectName`, written apart from the code under test.
fn backstage_accepts(name: &str) -> bool {
    let pattern = regex::Regex::new(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$").expect("regex");
    (1..=63).contains(&name.len()) && pattern.is_match(name)
}

/// `n` and the noun, singular for one.
fn plural(n: i64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn of_kind<'a>(documents: &'a [Value], kind: &str) -> Vec<&'a Value> {
    documents.iter().filter(|d| d["kind"] == kind).collect()
}

fn named<'a>(documents: &'a [Value], name: &str) -> &'a Value {
    documents
        .iter()
        .find(|d| d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no document named {name}"))
}

#[test]
fn backstages_schemas_should_refuse_what_backstage_refuses() {
    let schemas = backstage_schemas();
    let good = serde_json::json!({
        "apiVersion": "backstage.io/v1alpha1", "kind": "Component",
        "metadata": {"name": "api"},
        "spec": {"type": "service", "lifecycle": "production", "owner": "group:default/a"}
    });
    assert_eq!(schemas.refusal(&good), None);
    let mut no_owner = good.clone();
    no_owner["spec"]["owner"] = Value::Null;
    assert!(schemas.refusal(&no_owner).is_some());
    let mut stray = good;
    stray["extra"] = Value::from(1);
    assert!(schemas.refusal(&stray).is_some());
}

#[tokio::test]
async fn every_document_of_the_example_organisation_should_be_a_valid_backstage_entity() {
    let f = fixture().await;
    example_org::load(&f.pool, f.queue.clone()).await;
    let answer = export(&f.app, None).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(answer
        .header(header::CONTENT_TYPE)
        .starts_with("application/yaml"));
    let documents = documents(&answer.body);
    let schemas = backstage_schemas();
    for document in &documents {
        if let Some(why) = schemas.refusal(document) {
            panic!("{why}\n{document:#}");
        }
        let name = document["metadata"]["name"].as_str().unwrap_or_default();
        assert!(backstage_accepts(name), "{name}");
    }
    let entries: i64 = sqlx::query_scalar("select count(*) from entries")
        .fetch_one(&f.pool)
        .await
        .expect("count");
    // Without credentials, an owner naming a member or nobody is hidden
    // (the organisation's private data): such a component is left out.
    let hidden: i64 = sqlx::query_scalar(
        "select count(*) from entries where owner_status in ('member', 'unknown')",
    )
    .fetch_one(&f.pool)
    .await
    .expect("count");
    let components = of_kind(&documents, "Component");
    assert!(
        entries >= 10,
        "the example organisation holds {entries} entries"
    );
    assert_eq!(components.len() as i64, entries - hidden, "{}", answer.body);
    assert!(
        answer.body.starts_with(&format!(
            "# Roster's registry as Backstage catalog entities: {} components,",
            entries - hidden
        )),
        "{}",
        answer.body
    );
    let left_out = format!(
        "\n# Left out as this reader may not see its owner: {}.\n",
        plural(hidden, "component")
    );
    assert!(answer.body.contains(&left_out), "{}", answer.body);
}

#[tokio::test]
async fn an_entry_should_map_to_its_component_as_the_spec_says() {
    let f = fixture().await;
    example_org::load(&f.pool, f.queue.clone()).await;
    let documents = documents(&export(&f.app, None).await.body);
    let checkout = named(&documents, "checkout-api");
    assert_eq!(checkout["apiVersion"], "backstage.io/v1alpha1");
    assert_eq!(checkout["kind"], "Component");
    assert_eq!(
        checkout["metadata"]["description"],
        "Takes payments at checkout"
    );
    assert_eq!(
        checkout["metadata"]["tags"],
        serde_json::json!(["payments", "grpc"])
    );
    assert_eq!(
        checkout["metadata"]["links"][0],
        serde_json::json!({"url": "https://runbooks.example.com/checkout", "title": "Runbook"})
    );
    assert_eq!(checkout["spec"]["type"], "service");
    assert_eq!(checkout["spec"]["lifecycle"], "production");
    // A team of teams.yaml.
    assert_eq!(checkout["spec"]["owner"], "group:default/team-payments");
    // A local folder is not on GitHub: no GitHub annotations.
    assert_eq!(checkout["metadata"].get("annotations"), None);
    assert_eq!(checkout["spec"]["system"], "system:default/shop");
    // Every dependency on an exported component, in the file's order; the
    // unknown one (fraud-detector) is left out, not left dangling.
    assert_eq!(
        checkout["spec"]["dependsOn"],
        serde_json::json!([
            "component:default/billing-api",
            "component:default/notifications",
        ])
    );
    let systems: Vec<&str> = of_kind(&documents, "System")
        .iter()
        .filter_map(|s| s["metadata"]["name"].as_str())
        .collect();
    assert_eq!(systems, ["billing", "data", "shop"], "{documents:#?}");
}

const GITHUB_FILE: &str = "\
projects:
  - name: api
    owner: '@acme/payments'
    lifecycle: experimental
    tags: [pci--dss, grpc]
  - name: worker
    owner: '@carol'
  - name: legacy
    owner: Payments Team
";

#[tokio::test]
async fn a_github_repository_should_give_its_slug_and_file_and_an_unfit_owner_should_be_counted() {
    let f = fixture().await;
    Seed::new(&f.pool)
        .repo_as(7, github_repo("acme", "app", 1))
        .await
        .synced("abc", GITHUB_FILE)
        .await;
    let answer = export(&f.app, None).await;
    let documents = documents(&answer.body);
    let api = named(&documents, "api");
    assert_eq!(
        api["metadata"]["annotations"],
        serde_json::json!({
            "github.com/project-slug": "acme/app",
            "backstage.io/source-location": "url:https://github.com/acme/app/blob/main/project.yaml",
        })
    );
    // Backstage's tags are single-dashed: `pci--dss` is left out, the entry kept.
    assert_eq!(api["metadata"]["tags"], serde_json::json!(["grpc"]));
    // Not checked against a directory: read as the file writes it.
    assert_eq!(api["spec"]["owner"], "group:default/payments");
    assert_eq!(
        named(&documents, "worker")["spec"]["owner"],
        "user:default/carol"
    );
    // Backstage requires a lifecycle.
    assert_eq!(named(&documents, "worker")["spec"]["lifecycle"], "unknown");
    assert!(documents.iter().all(|d| d["metadata"]["name"] != "legacy"));
    assert!(
        answer.body.contains(
            "# Left out as Backstage would refuse its name: 0 components, 1 tag.\n\
             # Left out as Backstage would refuse its owner's name: 1 component.\n"
        ),
        "{}",
        answer.body
    );
}

#[tokio::test]
async fn the_etag_should_move_with_an_entry_and_a_repository_rename() {
    let f = fixture().await;
    let seed = Seed::new(&f.pool);
    seed.repo(1, "acme", "api")
        .await
        .synced("a", "name: api\nowner: team-a\n")
        .await;
    let first = export(&f.app, None).await;
    let tag = first.header(header::ETAG).to_owned();
    assert!(tag.starts_with('"') && tag.ends_with('"'), "{tag}");
    let again = export(&f.app, Some(&tag)).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert_eq!(again.header(header::ETAG), tag);
    assert!(again.body.is_empty());

    seed.repo(1, "acme", "api")
        .await
        .synced("b", "name: api\nowner: team-b\n")
        .await;
    let changed = export(&f.app, Some(&tag)).await;
    assert_eq!(changed.status, StatusCode::OK);
    assert!(changed.body.contains("group:default/team-b"));
    let tag = changed.header(header::ETAG).to_owned();

    seed.repo(1, "acme", "api-renamed").await;
    let renamed = export(&f.app, Some(&tag)).await;
    assert_eq!(renamed.status, StatusCode::OK);
    assert_ne!(renamed.header(header::ETAG), tag);
}

#[tokio::test]
async fn a_matching_if_none_match_should_be_answered_without_reading_the_entries() {
    let f = fixture().await;
    Seed::new(&f.pool)
        .repo(1, "acme", "api")
        .await
        .synced("a", "name: api\nowner: team-a\n")
        .await;
    let tag = export(&f.app, None).await.header(header::ETAG).to_owned();

    // Nobody can read `entries` while this transaction holds it.
    let mut lock = f.pool.begin().await.expect("begin");
    sqlx::query("lock table entries in access exclusive mode")
        .execute(&mut *lock)
        .await
        .expect("lock");
    let unchanged = tokio::time::timeout(Duration::from_secs(10), export(&f.app, Some(&tag)))
        .await
        .expect("a 304 does not wait for the entries");
    assert_eq!(unchanged.status, StatusCode::NOT_MODIFIED);

    // The control: an export that reads the entries waits for the lock.
    let app = f.app.clone();
    let full = tokio::spawn(async move { export(&app, None).await });
    eventually(
        "the full export waits on the entries' lock",
        Duration::from_secs(10),
        || async {
            let waiting: i64 = sqlx::query_scalar(
            "select count(*) from pg_locks where relation = 'entries'::regclass and not granted",
        )
        .fetch_one(&f.pool)
        .await
        .ok()?;
            (waiting > 0).then_some(())
        },
    )
    .await;
    lock.rollback().await.expect("release");
    let full = full.await.expect("the export ends");
    assert_eq!(full.status, StatusCode::OK);
    assert!(full.body.contains("\"name\": \"api\""), "{}", full.body);
}

#[tokio::test]
async fn a_team_turning_secret_should_change_what_a_reader_without_credentials_is_sent() {
    let f = fixture().await;
    example_org::load(&f.pool, f.queue.clone()).await;
    let before = export(&f.app, None).await;
    let tag = before.header(header::ETAG).to_owned();
    assert!(before.body.contains("\"checkout-api\""));

    // Nothing of the registry changes: only the directory says the team is secret.
    sqlx::query("update directory_teams set secret = true where name = 'Payments'")
        .execute(&f.pool)
        .await
        .expect("a secret team");
    let after = export(&f.app, Some(&tag)).await;
    assert_eq!(after.status, StatusCode::OK, "a stale 304");
    assert_ne!(after.header(header::ETAG), tag);
    assert!(!after.body.contains("team-payments"), "{}", after.body);
    assert!(!after.body.contains("\"checkout-api\""));
}

const TOKEN: &str = "backstage-t0ken";

/// The router with the API token `TOKEN`.
async fn fixture_with_token() -> Fixture {
    let options = Options {
        api_token: Some(TOKEN),
        github_web_url: Some("https://github.com"),
    };
    router::fixture(options, |_, _| {}).await
}

/// The export as `headers` ask for it, its body as sent (bytes).
async fn export_raw(
    app: &Router,
    headers: &[(header::HeaderName, &str)],
) -> (StatusCode, header::HeaderMap, Vec<u8>) {
    use tower::ServiceExt;
    let mut request = Request::get(ROUTE);
    for (name, value) in headers {
        request = request.header(name, *value);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).expect("request"))
        .await
        .expect("router answers");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, headers, bytes.to_vec())
}

async fn export_with_token(app: &Router) -> Answer {
    let bearer = format!("Bearer {TOKEN}");
    let (status, headers, body) = export_raw(app, &[(header::AUTHORIZATION, &bearer)]).await;
    Answer {
        status,
        headers,
        body: String::from_utf8(body).expect("UTF-8"),
    }
}

/// Every reference a document makes (`spec.owner` aside, which may name
/// a user), as `kind:default/name`.
fn references(document: &Value) -> Vec<String> {
    let spec = &document["spec"];
    let mut refs: Vec<String> = spec["dependsOn"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d.as_str().map(str::to_owned))
        .collect();
    refs.extend(spec["system"].as_str().map(str::to_owned));
    refs.extend(spec["parent"].as_str().map(str::to_owned));
    if let Some(owner) = spec["owner"].as_str().filter(|o| o.starts_with("group:")) {
        refs.push(owner.to_owned());
    }
    refs
}

/// That every reference of every document names a document of the export.
fn assert_whole(documents: &[Value], body: &str) {
    let exported: std::collections::BTreeSet<String> = documents
        .iter()
        .map(|d| {
            format!(
                "{}:default/{}",
                d["kind"].as_str().unwrap_or_default().to_lowercase(),
                d["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    for document in documents {
        for reference in references(document) {
            assert!(
                exported.contains(&reference),
                "{} refers to {reference}, not exported:\n{body}",
                document["metadata"]["name"]
            );
        }
    }
}

const TANGLED_FILE: &str = "\
projects:
  - name: api
    owner: '@acme/payments'
    system: shop
    depends_on: [worker, legacy, ghost]
  - name: worker
    owner: '@carol'
    depends_on: [api]
  - name: legacy
    owner: Payments Team
    system: old-shop
";

#[tokio::test]
async fn no_exported_entity_should_refer_to_one_left_out() {
    let f = fixture().await;
    Seed::new(&f.pool)
        .repo_as(7, github_repo("acme", "app", 1))
        .await
        .synced("abc", TANGLED_FILE)
        .await;
    let answer = export(&f.app, None).await;
    let tangled = documents(&answer.body);
    // `legacy` is left out (Backstage refuses its owner's name), `ghost`
    // does not exist: neither is named by `api`.
    assert_eq!(
        named(&tangled, "api")["spec"]["dependsOn"],
        serde_json::json!(["component:default/worker"])
    );
    assert!(!answer.body.contains("old-shop"), "{}", answer.body);
    assert!(
        answer
            .body
            .contains("# Left out as it names a project not exported: 2 dependencies.\n"),
        "{}",
        answer.body
    );
    assert_whole(&tangled, &answer.body);

    // The example organisation without credentials: members' and nobody's
    // components are left out, and nothing names them.
    let f = fixture().await;
    example_org::load(&f.pool, f.queue.clone()).await;
    let answer = export(&f.app, None).await;
    let example = documents(&answer.body);
    assert_whole(&example, &answer.body);
}

fn team(id: i64, slug: &str, parent: Option<i64>, secret: bool) -> roster::directory::Team {
    roster::directory::Team {
        id,
        slug: slug.to_owned(),
        name: format!("The {slug} team"),
        parent_id: parent,
        secret,
    }
}

/// acme (org 50, installation 1): teams platform, payments (under
/// platform), a secret security, ops (under security); member carol.
async fn acme_directory(pool: &sqlx::PgPool) {
    use roster::directory::db::Account;
    use roster::directory::{DirectoryDb, Member, Part, Rows};
    let db = DirectoryDb::new(pool.clone());
    db.ensure_account(&Account {
        org_id: 50,
        login: "acme".into(),
        installation_id: Some(roster::source::InstallationId(1)),
        personal: false,
    })
    .await
    .expect("account");
    let started = db.read_started().await.expect("start");
    let teams = [
        team(1, "platform", None, false),
        team(2, "payments", Some(1), false),
        team(3, "security", None, true),
        team(4, "ops", Some(3), false),
    ];
    db.put(50, Rows::Teams(&teams), started)
        .await
        .expect("teams");
    db.finish(50, Part::Teams, started).await.expect("teams");
    let carol = Member {
        id: 9,
        login: "carol".into(),
    };
    db.put(50, Rows::Members(&[carol]), started)
        .await
        .expect("members");
    db.finish(50, Part::Members, started)
        .await
        .expect("members");
}

const OWNED_FILE: &str = "\
projects:
  - name: api
    owner: '@acme/payments'
  - name: billing
    owner: payments
  - name: deploys
    owner: ops
  - name: audit
    owner: security
  - name: worker
    owner: '@carol'
  - name: legacy
    owner: Payments Team
";

#[tokio::test]
async fn each_team_owning_a_component_the_reader_may_see_should_be_a_group() {
    let f = fixture_with_token().await;
    acme_directory(&f.pool).await;
    Seed::new(&f.pool)
        .repo_as(7, github_repo("acme", "app", 1))
        .await
        .synced("abc", OWNED_FILE)
        .await;
    let schemas = backstage_schemas();

    let answer = export(&f.app, None).await;
    let public = documents(&answer.body);
    for document in &public {
        if let Some(why) = schemas.refusal(document) {
            panic!("{why}\n{document:#}");
        }
    }
    let groups: Vec<&Value> = of_kind(&public, "Group");
    let names: Vec<&str> = groups
        .iter()
        .filter_map(|g| g["metadata"]["name"].as_str())
        .collect();
    // platform owns no project: no Group of its own, but payments' parent.
    assert_eq!(names, ["ops", "payments", "platform"], "{}", answer.body);
    let payments = named(&public, "payments");
    assert_eq!(payments["spec"]["type"], "team");
    assert_eq!(payments["spec"]["children"], serde_json::json!([]));
    assert_eq!(payments["spec"]["parent"], "group:default/platform");
    assert_eq!(
        payments["spec"]["profile"]["displayName"],
        "The payments team"
    );
    // Without credentials a secret team is not named, not even as a parent.
    assert_eq!(named(&public, "ops")["spec"].get("parent"), None);
    assert!(!answer.body.contains("security"), "{}", answer.body);
    assert_whole(&public, &answer.body);
    assert!(
        answer.body.starts_with(
            "# Roster's registry as Backstage catalog entities: \
             3 components, 0 systems, 3 groups.\n"
        ),
        "{}",
        answer.body
    );

    // With the API token, every team that owns a component.
    let answer = export_with_token(&f.app).await;
    let documents = documents(&answer.body);
    let names: Vec<&str> = of_kind(&documents, "Group")
        .iter()
        .filter_map(|g| g["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["ops", "payments", "platform", "security"]);
    assert_eq!(
        named(&documents, "ops")["spec"]["parent"],
        "group:default/security"
    );
    assert_whole(&documents, &answer.body);
}

#[tokio::test]
async fn the_top_comment_should_count_each_reason_apart_in_right_plurals() {
    let f = fixture_with_token().await;
    acme_directory(&f.pool).await;
    Seed::new(&f.pool)
        .repo_as(7, github_repo("acme", "app", 1))
        .await
        .synced("abc", OWNED_FILE)
        .await;
    // Without credentials: carol is a member and `Payments Team` names
    // nobody, both private; the secret team's component too.
    let answer = export(&f.app, None).await;
    assert!(
        answer.body.contains(
            "# Left out as Backstage would refuse its name: 0 components, 0 tags.\n\
             # Left out as Backstage would refuse its owner's name: 0 components.\n\
             # Left out as this reader may not see its owner: 3 components.\n"
        ),
        "{}",
        answer.body
    );
    // With the token nothing is private: `Payments Team` is a name
    // Backstage refuses, one component, said in the singular.
    let answer = export_with_token(&f.app).await;
    assert!(
        answer.body.starts_with(
            "# Roster's registry as Backstage catalog entities: \
             5 components, 0 systems, 4 groups.\n"
        ),
        "{}",
        answer.body
    );
    assert!(
        answer.body.contains(
            "# Left out as Backstage would refuse its owner's name: 1 component.\n\
             # Left out as this reader may not see its owner: 0 components.\n"
        ),
        "{}",
        answer.body
    );
}

/// Whether `c` is outside YAML 1.2's printable set, or a C1 control.
fn unprintable(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}')
}

/// PyYAML's reading of `body` as JSON, or `None` when PyYAML is not there.
fn read_by_pyyaml(body: &str) -> Option<Result<Value, String>> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let script = "import json, sys, yaml\n\
                  docs = list(yaml.safe_load_all(sys.stdin.buffer))\n\
                  print(json.dumps(docs))\n";
    let probe = Command::new("python3")
        .args(["-c", "import yaml"])
        .output()
        .ok()?;
    if !probe.status.success() {
        return None;
    }
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("write");
    let output = child.wait_with_output().expect("python3 ends");
    if !output.status.success() {
        return Some(Err(String::from_utf8_lossy(&output.stderr).into_owned()));
    }
    Some(serde_json::from_slice(&output.stdout).map_err(|e| e.to_string()))
}

#[tokio::test]
async fn characters_outside_yamls_printable_set_should_be_written_escaped() {
    let f = fixture().await;
    let description = "a\u{80}b\u{7f}c\u{85}d\u{9f}e\u{fffe}f\u{ffff}g\u{1b}h\tlast";
    let file = format!(
        "name: api\nowner: team-a\ndescription: {}\n",
        serde_json::to_string(description).expect("JSON")
    );
    Seed::new(&f.pool)
        .repo(1, "acme", "api")
        .await
        .synced("a", &file)
        .await;
    let answer = export(&f.app, None).await;
    let raw: Vec<char> = answer.body.chars().filter(|c| unprintable(*c)).collect();
    assert!(raw.is_empty(), "written raw: {raw:?}\n{}", answer.body);
    // A strict YAML reader reads the whole stream, the text as it was.
    let documents = documents(&answer.body);
    assert_eq!(
        named(&documents, "api")["metadata"]["description"],
        description
    );
    let mut strict = saphyr_parser::Parser::new_from_str(&answer.body);
    for event in &mut strict {
        if let Err(e) = event {
            panic!("{e}\n{}", answer.body);
        }
    }
    match read_by_pyyaml(&answer.body) {
        Some(Ok(read)) => assert_eq!(read[0]["metadata"]["description"], description),
        Some(Err(why)) => panic!("PyYAML refuses the export: {why}"),
        None => eprintln!("PyYAML is not installed: the strict Rust reading stands alone"),
    }
}

#[tokio::test]
async fn source_location_should_be_percent_encoded() {
    let f = fixture().await;
    let repo = roster::testing::on_branch(github_repo("acme", "app", 1), "rel#1?x %");
    Seed::new(&f.pool)
        .repo_as(7, repo)
        .await
        .synced("abc", "name: api\nowner: team-a\n")
        .await;
    let documents = documents(&export(&f.app, None).await.body);
    assert_eq!(
        named(&documents, "api")["metadata"]["annotations"]["backstage.io/source-location"],
        "url:https://github.com/acme/app/blob/rel%231%3Fx%20%25/project.yaml"
    );
}

#[tokio::test]
async fn the_export_should_be_gzipped_for_a_reader_that_accepts_it_and_keep_its_304() {
    use std::io::Read;
    let f = fixture().await;
    example_org::load(&f.pool, f.queue.clone()).await;
    let plain = export(&f.app, None).await;
    assert_eq!(plain.headers.get(header::CONTENT_ENCODING), None);

    let gzip = [(header::ACCEPT_ENCODING, "br;q=1, gzip;q=0.8")];
    let (status, headers, body) = export_raw(&f.app, &gzip).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_ENCODING], "gzip");
    assert!(headers[header::VARY]
        .to_str()
        .unwrap_or_default()
        .to_lowercase()
        .contains("accept-encoding"));
    let mut unzipped = String::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut unzipped)
        .expect("a gzip stream");
    assert_eq!(unzipped, plain.body);
    assert!(body.len() * 3 < plain.body.len(), "{} bytes", body.len());

    // Each form has its own tag, and each still gets its 304.
    let tag = headers[header::ETAG].to_str().expect("tag").to_owned();
    assert_ne!(tag, plain.header(header::ETAG));
    let again = [
        (header::ACCEPT_ENCODING, "gzip"),
        (header::IF_NONE_MATCH, tag.as_str()),
    ];
    let (status, _, body) = export_raw(&f.app, &again).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    let plain_again = export(&f.app, Some(plain.header(header::ETAG))).await;
    assert_eq!(plain_again.status, StatusCode::NOT_MODIFIED);

    // `gzip;q=0` refuses it.
    let refused = [(header::ACCEPT_ENCODING, "gzip;q=0, identity")];
    let (_, headers, _) = export_raw(&f.app, &refused).await;
    assert_eq!(headers.get(header::CONTENT_ENCODING), None);
}
