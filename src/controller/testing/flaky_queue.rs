//! A [`MemoryQueue`] whose renewals can be made to fail, hang or report the
//! claim lost, as a queue behind an unreachable database would.

use std::fmt::{Debug, Display};
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::memory_queue::MemoryQueue;
use crate::controller::queue::{Claim, Enqueue, ItemStatus, ListingSchedule, WorkQueue};

/// Why a [`FlakyQueue`] operation failed: the renewal script said so,
/// as a store that cannot be reached would.
#[derive(Debug, thiserror::Error)]
pub enum FlakyError {
    #[error("work queue unreachable: {0}")]
    Unreachable(#[source] std::io::Error),
}

/// The memory queue underneath never fails.
impl From<std::convert::Infallible> for FlakyError {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

/// What the next renewals do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewals {
    /// Renew for real.
    Work,
    /// Answer an error this many more times (`u32::MAX`: always), then work.
    Fail(u32),
    /// Never answer.
    Hang,
    /// Say the claim was lost, without touching it.
    Lost,
}

/// Handles on one in-memory queue, sharing one renewal script.
#[derive(Clone)]
pub struct FlakyQueue<K> {
    pub inner: MemoryQueue<K>,
    renewals: Arc<Mutex<Renewals>>,
    /// Renewals asked for, whatever they did.
    asked: Arc<Mutex<u32>>,
}

impl<K: Clone + Eq + Hash + Ord> FlakyQueue<K> {
    pub fn new(lease: Duration) -> Self {
        Self {
            inner: MemoryQueue::new(lease),
            renewals: Arc::new(Mutex::new(Renewals::Work)),
            asked: Arc::default(),
        }
    }

    pub fn set(&self, renewals: Renewals) {
        *self.renewals.lock().expect("renewals lock") = renewals;
    }

    pub fn renewals_asked(&self) -> u32 {
        *self.asked.lock().expect("asked lock")
    }

    /// The scripted answer of one renewal, `None` to renew for real.
    fn next(&self) -> Option<Renewals> {
        *self.asked.lock().expect("asked lock") += 1;
        let mut renewals = self.renewals.lock().expect("renewals lock");
        match *renewals {
            Renewals::Work => None,
            Renewals::Fail(n) => {
                if n == 1 {
                    *renewals = Renewals::Work;
                } else if n != u32::MAX {
                    *renewals = Renewals::Fail(n - 1);
                }
                Some(Renewals::Fail(n))
            }
            other => Some(other),
        }
    }
}

impl<K> WorkQueue for FlakyQueue<K>
where
    K: Clone + Eq + Hash + Ord + Debug + Display + Send + Sync + 'static,
{
    type Key = K;
    type Error = FlakyError;

    async fn enqueue(&self, items: Vec<Enqueue<K>>) -> Result<(), FlakyError> {
        Ok(self.inner.enqueue(items).await?)
    }

    async fn claim(&self, worker: &str) -> Result<Option<Claim<K>>, FlakyError> {
        Ok(self.inner.claim(worker).await?)
    }

    async fn renew(&self, claim: &Claim<K>) -> Result<bool, FlakyError> {
        match self.next() {
            None => Ok(self.inner.renew(claim).await?),
            Some(Renewals::Hang) => std::future::pending().await,
            Some(Renewals::Lost) => Ok(false),
            Some(_) => Err(refused()),
        }
    }

    /// One scripted answer for the whole batch: one round trip, as a
    /// database renews them.
    async fn renew_many(&self, claims: &[Claim<K>]) -> Result<Vec<bool>, FlakyError> {
        match self.next() {
            None => Ok(self.inner.renew_many(claims).await?),
            Some(Renewals::Hang) => std::future::pending().await,
            Some(Renewals::Lost) => Ok(vec![false; claims.len()]),
            Some(_) => Err(refused()),
        }
    }

    async fn done(&self, claim: &Claim<K>) -> Result<(), FlakyError> {
        Ok(self.inner.done(claim).await?)
    }

    async fn fail(&self, claim: &Claim<K>, error: &str, delay: Duration) -> Result<(), FlakyError> {
        Ok(self.inner.fail(claim, error, delay).await?)
    }

    async fn release(&self, claim: &Claim<K>) -> Result<(), FlakyError> {
        Ok(self.inner.release(claim).await?)
    }

    async fn defer(&self, claim: &Claim<K>, delay: Duration) -> Result<(), FlakyError> {
        Ok(self.inner.defer(claim, delay).await?)
    }

    fn changed(&self) -> impl Future<Output = ()> + Send {
        self.inner.changed()
    }

    async fn depth(&self) -> Result<u64, FlakyError> {
        Ok(self.inner.depth().await?)
    }

    async fn status(&self, key: &K) -> Result<Option<ItemStatus>, FlakyError> {
        Ok(self.inner.status(key).await?)
    }
}

impl<K> ListingSchedule for FlakyQueue<K>
where
    K: Clone + Eq + Hash + Ord + Debug + Display + Send + Sync + 'static,
{
    async fn take_listing(&self, interval: Duration) -> Result<bool, FlakyError> {
        Ok(self.inner.take_listing(interval).await?)
    }

    async fn request_listing(&self) -> Result<(), FlakyError> {
        Ok(self.inner.request_listing().await?)
    }
}

/// What a store that cannot be reached answers.
fn refused() -> FlakyError {
    FlakyError::Unreachable(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
}
