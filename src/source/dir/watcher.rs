//! Watches the local folder and enqueues the repositories whose files change.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use notify::{RecursiveMode, Watcher};
use tokio::sync::Notify;

use crate::controller::{Enqueue, WorkQueue};
use crate::shutdown::Shutdown;
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
/// that repository, until `shutdown` (the task spawned through it holds
/// the watch and drops it then).
pub fn watch<Q>(source: DirSource, queue: Arc<Q>, shutdown: &Shutdown) -> Result<(), WatchError>
where
    Q: WorkQueue<Key = RepoId>,
{
    // The changed folders gather in one set until the task takes them:
    // however many events a storm brings, what waits is at most one name
    // per repository, and an editor's save (several events) is one enqueue.
    let changed: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let wake = Arc::new(Notify::new());
    let (gathered, woken, of) = (changed.clone(), wake.clone(), source.clone());
    let handler = move |event: notify::Result<notify::Event>| match event {
        // Reading a file is an event too (access); only changes matter, or
        // every reconcile would trigger the next one.
        Ok(event) if !matches!(event.kind, notify::EventKind::Access(_)) => {
            let folders = event.paths.iter().filter_map(|p| of.folder_of(p));
            if let Ok(mut set) = gathered.lock() {
                set.extend(folders);
            }
            woken.notify_one();
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "folder watch error"),
    };
    // Never follow a link: a link to `/` would otherwise make the watch walk
    // and hold the whole file system (docs/contract.md#bounds). Changing the link itself is
    // still an event of the folder holding it.
    let config = notify::Config::default().with_follow_symlinks(false);
    let mut watcher =
        notify::RecommendedWatcher::new(handler, config).map_err(|source_err| WatchError {
            path: source.root.display().to_string(),
            source: source_err,
        })?;
    watcher
        .watch(&source.root, RecursiveMode::Recursive)
        .map_err(|e| WatchError {
            path: source.root.display().to_string(),
            source: e,
        })?;

    let stopped = shutdown.wait();
    shutdown.spawn("folder watch", async move {
        // The watch lives as long as this task.
        let _watcher = watcher;
        tokio::pin!(stopped);
        loop {
            tokio::select! {
                () = wake.notified() => {}
                () = &mut stopped => return,
            }
            let folders = match changed.lock() {
                Ok(mut set) => std::mem::take(&mut *set),
                Err(_) => return,
            };
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::testing::memory_queue::MemoryQueue;
    use std::time::{Duration, Instant};

    /// Waits until the queue holds `key`, waking on the queue's hint.
    async fn wait_enqueued(queue: &MemoryQueue<RepoId>, key: RepoId) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while queue.status(&key).await.ok().flatten().is_none() {
            assert!(Instant::now() < deadline, "{key} was never enqueued");
            let _ = tokio::time::timeout(Duration::from_millis(50), queue.changed()).await;
        }
    }

    #[tokio::test]
    async fn watch_should_not_follow_a_link_out_of_the_folder() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (org, outside) = (dir.path().join("org"), dir.path().join("outside"));
        std::fs::create_dir_all(org.join("inside")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::os::unix::fs::symlink(&outside, org.join("link")).expect("symlink");
        let queue = Arc::new(MemoryQueue::new(Duration::from_secs(60)));
        let (_stop, shutdown) = crate::shutdown::channel();
        watch(
            DirSource::new(&org, "project.yaml"),
            queue.clone(),
            &shutdown,
        )
        .expect("watch");

        // A change behind the link first, then one inside: events arrive in
        // order, so once the second is enqueued the first would be too.
        std::fs::write(outside.join("project.yaml"), "name: x\n").expect("write");
        std::fs::write(org.join("inside/project.yaml"), "name: y\n").expect("write");
        wait_enqueued(&queue, repo_id("inside")).await;
        assert_eq!(queue.status(&repo_id("link")).await.expect("status"), None);
    }
}
