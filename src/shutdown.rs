//! Stopping on SIGTERM or Ctrl-C, within a bound whatever the work in
//! flight is doing (SPEC §8).
//!
//! The graceful path lets reconciles and requests finish (the controller's
//! 20 s grace, the server's 10 s), closes the database connections and stops
//! the private PostgreSQL. Each step is bounded on its own, but a step can
//! still hang where no timeout reaches: a database that stops answering in
//! the middle of a query, a blocking read that never returns. So the signal
//! also arms a deadline that ends the process outright.

use std::time::Duration;

/// How long after the stop signal the process may still run. Above the
/// controller's grace (work handed back to the queue takes a moment more),
/// under SPEC §8's 30 s, so orchestrators never need to kill it.
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

    #[test]
    fn stop_deadline_should_outlast_the_graces_and_stay_under_thirty_seconds() {
        let controller = ControllerConfig::default().shutdown_grace;
        assert!(controller < STOP_DEADLINE, "{controller:?}");
        assert!(crate::web::serve::SHUTDOWN_GRACE < STOP_DEADLINE);
        assert!(STOP_DEADLINE < Duration::from_secs(30));
    }
}
