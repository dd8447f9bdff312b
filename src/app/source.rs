//! What each source brings to the server: its lister and storage, its
//! routes, the links to its website and its background work. One function
//! per source builds them.

use std::path::Path;

use axum::Router;

use super::shared::Shared;
use crate::checks::ChecksWorker;
use crate::config::{ConfigError, Settings};
use crate::github::{GithubLister, GithubSource, GithubStorage};
use crate::intake::free_push::FreePushes;
use crate::intake::redelivery;
use crate::intake::retention::{self, Retention};
use crate::intake::{WebhookLimits, WebhookState};
use crate::source::dir::{DirLister, DirSource, DirStorage};

/// A source, wired: what the controller and the server need from it.
pub struct SourceParts<L, S> {
    pub lister: L,
    pub storage: S,
    /// The source's own routes (the webhook), merged into the server's.
    pub routes: Router,
    /// Base of links to repositories on the source's website, if it has one.
    pub web_url: Option<String>,
}

/// The `dir:` source: a local folder, watched for changes.
pub fn dir(
    path: &Path,
    settings: &Settings,
    shared: &Shared,
) -> Result<SourceParts<DirLister, DirStorage>, ConfigError> {
    let root = std::fs::canonicalize(path).map_err(|e| {
        ConfigError::new(
            "ROSTER_SOURCE",
            format!("cannot open {}: {e}", path.display()),
        )
    })?;
    let source = DirSource::with_files(root.clone(), settings.project_files.clone());
    // The folder's teams.yaml, the directory owners are checked against.
    let directory = crate::directory::DirectoryDb::new(shared.pool.clone());
    let shutdown = &shared.shutdown;
    shutdown.spawn(
        "teams.yaml",
        crate::source::dir::teams::run(root, directory, shutdown.wait()),
    );
    crate::source::dir::watch(source.clone(), shared.queue.clone(), shutdown)
        .map_err(|e| ConfigError::new("ROSTER_SOURCE", e.to_string()))?;
    Ok(SourceParts {
        lister: DirLister {
            source: source.clone(),
        },
        storage: DirStorage { source },
        routes: Router::new(),
        web_url: None,
    })
}

/// The `github` source: the App's installations, the webhook route, the
/// recovery of missed deliveries and the pruning of the delivery log.
pub async fn github(
    settings: &Settings,
    shared: &Shared,
) -> Result<SourceParts<GithubLister, GithubStorage>, ConfigError> {
    let app = settings
        .github
        .as_ref()
        .ok_or_else(|| ConfigError::new("GITHUB_APP_ID", "the github source needs a GitHub App"))?;
    let (pool, metrics) = (shared.pool.clone(), shared.metrics.clone());
    let source = GithubSource::connect(app, &settings.project_file(), pool, metrics)
        .await
        .map_err(|e| ConfigError::new(e.setting(), e.message()))?;
    let routes = crate::web::router::webhook(WebhookState {
        pool: shared.pool.clone(),
        queue: shared.queue.clone(),
        secret: app.webhook_secret.clone(),
        metrics: shared.metrics.clone(),
        limits: WebhookLimits {
            concurrency: settings.webhook_concurrency,
            ..WebhookLimits::default()
        },
        free_pushes: Some(
            FreePushes::with_files(settings.project_files.clone())
                .with_owners(settings.owners)
                .with_relations(settings.relations),
        ),
        shutdown: shared.shutdown.clone(),
    });
    let (lister, storage) = (source.lister(), source.storage());
    let shutdown = &shared.shutdown;
    // Re-reads of teams and members that webhooks ask for.
    shutdown.spawn("directory", source.directory().run(shutdown.wait()));
    // Check runs on GitHub (docs/checks.md).
    let checks = ChecksWorker::new(shared.pool.clone(), source.checks(), settings.checks)
        .with_owners(settings.owners)
        .with_relations(settings.relations)
        .with_files(settings.project_files.clone());
    shutdown.spawn("checks", checks.run(shutdown.wait()));
    // Missed deliveries: at start and every few minutes (docs/contract.md#webhooks). Stopping
    // it half-way is safe: each redelivery is recorded once asked, and an
    // unasked one is asked on the next pass.
    shutdown.spawn(
        "redelivery",
        redelivery::run_redelivery_loop(
            source,
            shared.pool.clone(),
            redelivery::DEFAULT_INTERVAL,
            shutdown.wait(),
        ),
    );
    // The delivery log's bounds (docs/contract.md#bounds).
    shutdown.spawn(
        "delivery log pruning",
        retention::run_pruning_loop(
            shared.pool.clone(),
            Retention::new(settings.delivery_retention),
            retention::PRUNE_INTERVAL,
            shutdown.wait(),
        ),
    );
    Ok(SourceParts {
        lister,
        storage,
        routes,
        // Where people see repositories: `GITHUB_URL`, or the API's web host.
        web_url: Some(
            settings
                .setup
                .github_url
                .as_str()
                .trim_end_matches('/')
                .to_owned(),
        ),
    })
}
