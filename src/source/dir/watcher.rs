//! Watches the local folder and enqueues the repositories whose files change.

use std::collections::BTreeSet;
use std::sync::Arc;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::controller::{Enqueue, WorkQueue};
use crate::source::RepoId;

use super::{repo_id, DirSource};

/// Why the folder cannot be watched.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch {path}: {source}")]
pub struct WatchError {
    path: String,
    #[source]
    source: notify::Error,
}

/// Starts watching `source.root`; every change under a sub-folder enqueues
/// that repository. The returned watcher must be kept alive: dropping it
/// stops the watch.
pub fn watch<Q>(source: DirSource, queue: Arc<Q>) -> Result<notify::RecommendedWatcher, WatchError>
where
    Q: WorkQueue<Key = RepoId>,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<notify::Event>();
    let mut watcher =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            // Reading a file is an event too (access); only changes matter, or
            // every reconcile would trigger the next one.
            Ok(event) if !matches!(event.kind, notify::EventKind::Access(_)) => {
                let _ = tx.send(event);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "folder watch error"),
        })
        .map_err(|source_err| WatchError {
            path: source.root.display().to_string(),
            source: source_err,
        })?;
    watcher
        .watch(&source.root, RecursiveMode::Recursive)
        .map_err(|e| WatchError {
            path: source.root.display().to_string(),
            source: e,
        })?;

    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            // Take whatever else arrived at once: an editor's save is several events.
            let mut folders = BTreeSet::new();
            let mut event = Some(first);
            while let Some(e) = event {
                folders.extend(e.paths.iter().filter_map(|p| source.folder_of(p)));
                event = rx.try_recv().ok();
            }
            let items: Vec<_> = folders.iter().map(|f| Enqueue::fresh(repo_id(f))).collect();
            if items.is_empty() {
                continue;
            }
            tracing::debug!(?folders, "local change");
            if let Err(e) = queue.enqueue(items).await {
                tracing::warn!(error = %e, "could not enqueue a local change; the next listing repairs it");
            }
        }
    });
    Ok(watcher)
}
