//! Handing freed memory back to the system after a burst.
//!
//! glibc's allocator keeps what a burst of large answers freed (a page of
//! the change feed is up to 1 MiB, built per request on every worker
//! thread's arena) and the process's resident size stays at its peak for
//! good. `malloc_trim` returns the free pages at the top of each arena and
//! the free whole pages inside them; a pass over an idle heap takes
//! microseconds, so it runs on a short period instead of being tied to the
//! answers that cause it. On other allocators it does nothing.

use std::time::Duration;

use crate::shutdown::Shutdown;

/// How often freed memory is handed back.
pub const TRIM_PERIOD: Duration = Duration::from_secs(10);

/// Hands freed memory back every [`TRIM_PERIOD`] until `shutdown`, in a
/// task spawned through it.
pub fn return_freed(shutdown: &Shutdown) {
    let stopped = shutdown.wait();
    shutdown.spawn("memory trim", async move {
        tokio::pin!(stopped);
        let mut every = tokio::time::interval(TRIM_PERIOD);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = &mut stopped => return,
                _ = every.tick() => trim(),
            }
        }
    });
}

/// Returns the allocator's free pages to the system now.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only reads and updates the allocator's own state,
    // under its locks; any thread may call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_trim_task_ends_when_the_stop_is_asked() {
        let (stop, shutdown) = crate::shutdown::channel();
        return_freed(&shutdown);
        stop.stop();
        let joined = tokio::time::timeout(Duration::from_secs(5), stop.join())
            .await
            .expect("the task ends within 5 s");
        assert_eq!((joined.joined, joined.panicked), (1, 0));
    }
}
