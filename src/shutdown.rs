//! Stopping on SIGTERM or Ctrl-C, within a bound whatever the work in
//! flight is doing (docs/contract.md#bounds).
//!
//! The graceful path lets reconciles and requests finish (the controller's
//! 20 s grace, the server's 10 s), closes the database connections and stops
//! the private PostgreSQL. Each step is bounded on its own, but a step can
//! still hang where no timeout reaches: a database that stops answering in
//! the middle of a query, a blocking read that never returns. So the signal
//! also arms a deadline that ends the process outright.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long after the stop signal the process may still run. Above the
/// controller's grace (work handed back to the queue takes a moment more),
/// under the 30 s that docs/contract.md#bounds allows, so orchestrators never need to kill it.
pub const STOP_DEADLINE: Duration = Duration::from_secs(25);

/// Resolves on SIGTERM or Ctrl-C.
pub async fn signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => tracing::info!("Ctrl-C received"),
        _ = term => tracing::info!("SIGTERM received"),
    }
}

/// A stop every long-running part shares (the server, the controller, the
/// background loops): each waits on its own clone, and spawns its tasks
/// through it ([`Shutdown::spawn`]) so that [`Stop::join`] awaits every one
/// of them. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Shutdown {
    stopped: watch::Receiver<bool>,
    inner: Arc<Inner>,
}

/// Asks every [`Shutdown`] made with it to stop (dropping it does too), and
/// joins the tasks spawned through them.
#[derive(Debug)]
pub struct Stop {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    stop: watch::Sender<bool>,
    /// Tasks spawned and not joined yet, by name.
    running: Mutex<Vec<(&'static str, JoinHandle<()>)>>,
    spawned: AtomicUsize,
}

/// What [`Stop::join`] found: every task spawned through the shutdown, and
/// how many of them ended by a panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Joined {
    pub spawned: usize,
    pub joined: usize,
    pub panicked: usize,
}

/// A stop not asked yet, and what asks it.
pub fn channel() -> (Stop, Shutdown) {
    let (stop, stopped) = watch::channel(false);
    let inner = Arc::new(Inner {
        stop,
        running: Mutex::new(Vec::new()),
        spawned: AtomicUsize::new(0),
    });
    (
        Stop {
            inner: inner.clone(),
        },
        Shutdown { stopped, inner },
    )
}

impl Stop {
    /// Asks the parts to stop; they finish what they must on their own.
    pub fn stop(&self) {
        self.inner.stop.send_replace(true);
    }

    /// Asks the stop on SIGTERM or Ctrl-C, and arms [`STOP_DEADLINE`] then.
    /// The task that waits for the signal is one of the joined ones: it
    /// ends at the signal, or when the stop is asked otherwise.
    pub fn on_signal(&self, shutdown: &Shutdown) {
        let inner = self.inner.clone();
        let stopped = shutdown.wait();
        shutdown.spawn("signal", async move {
            tokio::select! {
                () = signal() => {
                    exit_after(STOP_DEADLINE);
                    inner.stop.send_replace(true);
                }
                () = stopped => {}
            }
        });
    }

    /// Waits for every task spawned through the shutdown to end, those
    /// spawned while it waits included. Call it after [`Stop::stop`]: a
    /// task that waits for the stop never ends before.
    pub async fn join(&self) -> Joined {
        let (mut joined, mut panicked) = (0, 0);
        loop {
            let running = match self.inner.running.lock() {
                Ok(mut running) => std::mem::take(&mut *running),
                Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
            };
            if running.is_empty() {
                break;
            }
            for (name, task) in running {
                joined += 1;
                if let Err(error) = task.await {
                    panicked += 1;
                    tracing::error!(task = name, %error, "a task ended by a panic");
                }
            }
        }
        Joined {
            spawned: self.inner.spawned.load(Ordering::SeqCst),
            joined,
            panicked,
        }
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        self.inner.stop.send_replace(true);
    }
}

impl Shutdown {
    /// Resolves once the stop is asked (at once if it already was).
    pub fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut stop = self.stopped.clone();
        async move {
            let _ = stop.wait_for(|stopped| *stopped).await;
        }
    }

    /// Whether the stop was asked.
    pub fn is_stopped(&self) -> bool {
        *self.stopped.borrow()
    }

    /// Spawns `task`, owned by the shutdown: [`Stop::join`] awaits it. The
    /// task must end by itself once the stop is asked (or once what feeds
    /// it is gone); `name` is for the log.
    pub fn spawn<F>(&self, name: &'static str, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let handle = tokio::spawn(task);
        self.inner.spawned.fetch_add(1, Ordering::SeqCst);
        match self.inner.running.lock() {
            Ok(mut running) => running.push((name, handle)),
            Err(poisoned) => poisoned.into_inner().push((name, handle)),
        }
    }
}

/// Ends the process with exit code 1 once `limit` has passed, unless it
/// ended by itself before. A thread of its own rather than a task: it fires
/// even when every thread of the async runtime is stuck.
///
/// The work it cuts short is safe to lose: an unfinished reconcile's lease
/// runs out and another worker takes the repository again, and a private
/// PostgreSQL left running is adopted by the next start.
pub fn exit_after(limit: Duration) {
    let armed = std::thread::Builder::new()
        .name("stop-deadline".into())
        .spawn(move || {
            std::thread::sleep(limit);
            tracing::error!(
                deadline_s = limit.as_secs(),
                "shutdown did not finish in time; exiting now"
            );
            std::process::exit(1);
        });
    if let Err(e) = armed {
        tracing::warn!(error = %e, "cannot arm the shutdown deadline");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::ControllerConfig;

    #[tokio::test]
    async fn every_clone_should_stop_once_asked_even_if_it_waits_later() {
        let (stop, shutdown) = channel();
        let early = tokio::spawn(shutdown.clone().wait());
        stop.stop();
        assert!(early.await.is_ok());
        // A part that starts waiting after the stop was asked stops at once.
        shutdown.wait().await;
        assert!(shutdown.is_stopped());
    }

    #[tokio::test]
    async fn join_should_await_every_task_spawned_through_any_clone() {
        let (stop, shutdown) = channel();
        let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
        for n in 0..3 {
            let (stopped, ended_tx, spawner) =
                (shutdown.wait(), ended_tx.clone(), shutdown.clone());
            shutdown.spawn("test", async move {
                stopped.await;
                // A task may spawn another while the join runs.
                let child_tx = ended_tx.clone();
                spawner.spawn("child", async move {
                    let _ = child_tx.send(n + 10);
                });
                let _ = ended_tx.send(n);
            });
        }
        drop(ended_tx);
        stop.stop();
        let joined = stop.join().await;
        assert_eq!(
            joined,
            Joined {
                spawned: 6,
                joined: 6,
                panicked: 0
            }
        );
        let mut seen = Vec::new();
        while let Some(n) = ended.recv().await {
            seen.push(n);
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2, 10, 11, 12]);
    }

    #[tokio::test]
    async fn dropping_the_stop_should_stop_every_clone() {
        let (stop, shutdown) = channel();
        drop(stop);
        shutdown.wait().await;
        assert!(shutdown.is_stopped());
    }

    #[test]
    fn stop_deadline_should_outlast_the_graces_and_stay_under_thirty_seconds() {
        let controller = ControllerConfig::default().shutdown_grace;
        assert!(controller < STOP_DEADLINE, "{controller:?}");
        assert!(crate::web::serve::SHUTDOWN_GRACE < STOP_DEADLINE);
        assert!(STOP_DEADLINE < Duration::from_secs(30));
    }
}
