//! Every GraphQL query Roster sends must be valid against GitHub's published
//! schema, so a typo or a removed field fails here instead of in production.

use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};

const SCHEMA_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/github/graphql/schema.graphql"
);

/// GitHub's schema, taken as valid even though it defines two fields of
/// `EnterpriseOwnerInfo` twice (a strict validator rejects the schema
/// itself; the rest of it is what GitHub serves).
fn github_schema() -> Valid<Schema> {
    let text =
        std::fs::read_to_string(SCHEMA_PATH).expect("the published schema is in the fixtures");
    match Schema::parse_and_validate(text, SCHEMA_PATH) {
        Ok(schema) => schema,
        Err(with_errors) => {
            let errors = with_errors.errors.to_string();
            assert!(
                errors.contains("EnterpriseOwnerInfo"),
                "unexpected schema errors: {errors}"
            );
            Valid::assume_valid(with_errors.partial)
        }
    }
}

#[test]
fn every_query_should_be_valid_against_githubs_schema() {
    let schema = github_schema();
    assert!(!roster::github::QUERIES.is_empty());
    for (name, query) in roster::github::QUERIES {
        if let Err(invalid) = ExecutableDocument::parse_and_validate(&schema, *query, *name) {
            panic!(
                "{name} is not valid against GitHub's schema:\n{}",
                invalid.errors
            );
        }
    }
}

#[test]
fn the_schema_check_should_reject_a_field_github_does_not_have() {
    let schema = github_schema();
    let broken = roster::github::LIST_REPOSITORIES.replace("isArchived", "isArchivedd");
    assert!(ExecutableDocument::parse_and_validate(&schema, broken, "broken.graphql").is_err());
}

#[test]
fn the_batch_read_with_repositories_asked_by_name_should_be_valid() {
    let schema = github_schema();
    for by_name in [1, 3, 100] {
        let query = roster::github::read_query::read_query(by_name);
        if let Err(invalid) =
            ExecutableDocument::parse_and_validate(&schema, query, "read_query.graphql")
        {
            panic!(
                "the batch read with {by_name} names is not valid:\n{}",
                invalid.errors
            );
        }
    }
}

#[test]
fn the_queries_for_several_project_files_should_be_valid() {
    let schema = github_schema();
    let patterns = roster::project::ProjectFiles::parse(
        "project.yaml,services/*/project.yaml,*/x.yaml,a/b/*/*/c.yaml,**/project.yaml",
    )
    .expect("patterns");
    let files = roster::github::file_query::FileQuery::new(&patterns).expect("patterns");
    let asks = [
        roster::github::blob_query::BlobAsk {
            owner: "acme",
            name: "api",
            expression: "abc:services/a/project.yaml".into(),
        },
        roster::github::blob_query::BlobAsk {
            owner: "acme",
            name: "web",
            expression: "def:project.yaml".into(),
        },
    ];
    let (blobs, _) = roster::github::blob_query::blob_query(&asks);
    let queries = [
        ("blobs", blobs),
        ("listing", roster::github::graphql::list_query(&files)),
        (
            "batch read",
            roster::github::read_query::read_query_for(&files, 0),
        ),
        (
            "batch read by name",
            roster::github::read_query::read_query_for(&files, 2),
        ),
        ("at commit", files.at_commit()),
    ];
    for (name, query) in queries {
        if let Err(invalid) = ExecutableDocument::parse_and_validate(&schema, &query, name) {
            panic!("{name} is not valid:\n{}\n{query}", invalid.errors);
        }
    }
}

#[test]
fn the_read_of_a_pull_requests_files_should_be_valid() {
    let schema = github_schema();
    for paths in [1, 5, 50] {
        let query = roster::github::checks_api::files_at_head_query(paths);
        if let Err(invalid) =
            ExecutableDocument::parse_and_validate(&schema, query, "files_at_head.graphql")
        {
            panic!(
                "the read of {paths} files at a pull request's head is not valid:\n{}",
                invalid.errors
            );
        }
    }
}

#[test]
fn the_read_of_touched_files_should_be_valid() {
    let schema = github_schema();
    for (repos, paths) in [(1, 1), (3, 5)] {
        let query = roster::github::touched_read::query_for(repos, paths);
        if let Err(invalid) =
            ExecutableDocument::parse_and_validate(&schema, query, "touched_read.graphql")
        {
            panic!(
                "the read of touched files is not valid:\n{}",
                invalid.errors
            );
        }
    }
}
