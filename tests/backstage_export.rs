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
    let envelope = compile("EntityEnvelope");
    Schemas {
        schemas,
        component,
        system,
        envelope,
    }
}

impl Schemas {
    /// Why `document` is not a valid entity of its kind, if it is not.
    fn refusal(&self, document: &Value) -> Option<String> {
        let kind = match document["kind"].as_str() {
            Some("Component") => self.component,
            Some("System") => self.system,
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
        "Left out, as Backstage would refuse a name: {hidden} components \
         (0 by their name, {hidden} by their owner's)"
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
    // Every dependency by name, the unknown one (fraud-detector) included:
    // Backstage shows a missing target itself.
    assert_eq!(
        checkout["spec"]["dependsOn"],
        serde_json::json!([
            "component:default/billing-api",
            "component:default/notifications",
            "component:default/fraud-detector"
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
            "Left out, as Backstage would refuse a name: 1 components \
             (0 by their name, 1 by their owner's), 1 tags."
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
