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
/// background loops): each waits on its own clone. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

/// Asks every [`Shutdown`] made with it to stop; dropping it does too.
#[derive(Debug)]
pub struct Stop(watch::Sender<bool>);

/// A stop not asked yet, and what asks it.
pub fn channel() -> (Stop, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (Stop(tx), Shutdown(rx))
}

impl Stop {
    /// Asks the parts to stop; they finish what they must on their own.
    pub fn stop(&self) {
        let _ = self.0.send(true);
    }
}

impl Shutdown {
    /// Resolves once the stop is asked (at once if it already was).
    pub fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut stop = self.0.clone();
        async move {
            let _ = stop.wait_for(|stopped| *stopped).await;
        }
    }
}

/// Asks `stop` on SIGTERM or Ctrl-C, and arms [`STOP_DEADLINE`] then.
/// The task waiting for the signal is handed back, to be ended once
/// everything has stopped.
pub fn stop_on_signal(stop: Stop) -> JoinHandle<()> {
    tokio::spawn(async move {
        signal().await;
        exit_after(STOP_DEADLINE);
        stop.stop();
    })
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
    }

    #[test]
    fn stop_deadline_should_outlast_the_graces_and_stay_under_thirty_seconds() {
        let controller = ControllerConfig::default().shutdown_grace;
        assert!(controller < STOP_DEADLINE, "{controller:?}");
        assert!(crate::web::serve::SHUTDOWN_GRACE < STOP_DEADLINE);
        assert!(STOP_DEADLINE < Duration::from_secs(30));
    }
}
