//! The controller on in-memory fakes and tokio's paused clock.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::controller::testing::flaky_queue::{FlakyQueue, Renewals};
use crate::controller::testing::memory_queue::MemoryQueue;
use crate::controller::*;

type Key = i64;

/// One handled call: key, the state given (or the failure), start and end.
type Call = (Key, Result<Option<String>, String>, Instant, Instant);

/// The world the fakes observe: key → value, plus scripted failures.
#[derive(Default)]
struct World {
    items: BTreeMap<Key, String>,
    tracked: BTreeSet<Key>,
    /// Failures still to give per key, each with an optional retry-after.
    failures: HashMap<Key, Vec<Option<Duration>>>,
    failing_partition: bool,
    /// The listing sends what it found, then takes this long to finish.
    listing_tail: Duration,
    /// Sweep at most this many keys at once; above it, sweep none.
    guard_limit: Option<usize>,
    /// What the guard was told: tracked count, listed keys.
    guard_seen: Vec<(usize, Vec<Key>)>,
    calls: Vec<Call>,
    /// Every attempt the handler began, finished or not.
    attempts: Vec<Attempt>,
    hints: Vec<(Key, Option<Vec<u8>>)>,
    work_time: Duration,
    /// Keys of each `get_many` call, in order.
    batches: Vec<Vec<Key>>,
    /// How long each `get_many` call takes.
    read_time: Duration,
    /// A deferral to give once per key (a spent budget), with its wait.
    deferrals: HashMap<Key, Duration>,
    /// The storage's read pace, read when the controller is built.
    pace: Option<ReadPace>,
}

/// One attempt seen by the handler: when it began, and when it finished or
/// was dropped unfinished.
#[derive(Debug, Clone)]
struct Attempt {
    key: Key,
    start: Instant,
    end: Option<Instant>,
    dropped: bool,
}

#[derive(Clone, Default)]
struct Fake(Arc<Mutex<World>>);

/// Marks an attempt ended when the handler's future finishes or is dropped.
struct Watch {
    fake: Fake,
    index: usize,
    finished: bool,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let (now, finished, index) = (Instant::now(), self.finished, self.index);
        self.fake.with(|w| {
            let attempt = &mut w.attempts[index];
            attempt.end = Some(now);
            attempt.dropped = !finished;
        });
    }
}

impl Fake {
    fn with<R>(&self, f: impl FnOnce(&mut World) -> R) -> R {
        let mut w = self.0.lock().expect("world lock");
        f(&mut w)
    }

    /// Waits (in paused time) until `cond` holds; panics after a virtual hour.
    async fn until(&self, what: &str, cond: impl Fn(&World) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(3600);
        while !self.with(|w| cond(w)) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Lister for Fake {
    type Key = Key;
    type Partition = String;
    async fn list(&self) -> Result<Vec<Listed<Key, String>>, Failure> {
        self.with(|w| {
            let items = w
                .items
                .keys()
                .map(|k| Enqueue {
                    key: *k,
                    hint: Some(k.to_string().into_bytes()),
                    trigger: Trigger::Listing,
                })
                .collect();
            let outcome = if w.failing_partition {
                Err(Failure::scripted("page 2 failed"))
            } else {
                Ok(())
            };
            Ok(vec![Listed {
                partition: "p".into(),
                items,
                outcome,
            }])
        })
    }

    async fn list_streaming(&self, found: Found<Key>) -> Result<Vec<Listed<Key, String>>, Failure> {
        let partitions = self.list().await?;
        for p in &partitions {
            let _ = found.send(p.items.clone());
        }
        let tail = self.with(|w| w.listing_tail);
        tokio::time::sleep(tail).await;
        Ok(partitions)
    }
}

impl Tracker for Fake {
    type Key = Key;
    type Partition = String;
    async fn tracked(&self, partition: &String) -> Result<Vec<Key>, Failure> {
        assert_eq!(partition, "p");
        Ok(self.with(|w| w.tracked.iter().copied().collect()))
    }

    async fn guard_sweep(
        &self,
        _: &String,
        tracked: usize,
        listed: &[Key],
        gone: Vec<Key>,
    ) -> Result<Vec<Key>, Failure> {
        self.with(|w| {
            let mut listed = listed.to_vec();
            listed.sort();
            w.guard_seen.push((tracked, listed));
            Ok(match w.guard_limit {
                Some(limit) if gone.len() > limit => Vec::new(),
                _ => gone,
            })
        })
    }
}

impl Storage for Fake {
    type Key = Key;
    type State = Option<String>;
    async fn get(&self, key: &Key, hint: Option<&[u8]>) -> Result<Option<String>, Failure> {
        self.with(|w| {
            w.hints.push((*key, hint.map(<[u8]>::to_vec)));
            if let Some(wait) = w.deferrals.remove(key) {
                return Err(Failure::scripted(format!("{key} waits")).deferred_for(wait));
            }
            if let Some(list) = w.failures.get_mut(key) {
                if !list.is_empty() {
                    let after = list.remove(0);
                    let f = Failure::scripted(format!("{key} unavailable"));
                    return Err(match after {
                        Some(d) => f.retry_after(d),
                        None => f,
                    });
                }
            }
            Ok(w.items.get(key).cloned())
        })
    }

    async fn get_many(
        &self,
        items: &[(Key, Option<&[u8]>)],
    ) -> Vec<Result<Option<String>, Failure>> {
        let read_time = self.with(|w| {
            w.batches.push(items.iter().map(|(k, _)| *k).collect());
            w.read_time
        });
        tokio::time::sleep(read_time).await;
        let mut states = Vec::new();
        for (key, hint) in items {
            states.push(self.get(key, *hint).await);
        }
        states
    }

    fn read_pace(&self) -> Option<ReadPace> {
        self.with(|w| w.pace)
    }
}

impl Handler for Fake {
    type Key = Key;
    type State = Option<String>;
    async fn apply(
        &self,
        key: &Key,
        state: Result<Option<String>, Failure>,
    ) -> Result<&'static str, Failure> {
        let start = Instant::now();
        let index = self.with(|w| {
            w.attempts.push(Attempt {
                key: *key,
                start,
                end: None,
                dropped: false,
            });
            w.attempts.len() - 1
        });
        let mut watch = Watch {
            fake: self.clone(),
            index,
            finished: false,
        };
        let work = self.with(|w| w.work_time);
        tokio::time::sleep(work).await;
        watch.finished = true;
        let end = Instant::now();
        self.with(|w| {
            w.calls
                .push((*key, state.clone().map_err(|f| f.message()), start, end));
            match &state {
                Ok(Some(_)) => {
                    w.tracked.insert(*key);
                }
                Ok(None) => {
                    w.tracked.remove(key);
                }
                Err(_) => {}
            }
        });
        match state {
            Ok(Some(_)) => Ok("synced"),
            Ok(None) => Ok("removed"),
            Err(f) => Err(f),
        }
    }
}

struct Running<Q = MemoryQueue<Key>> {
    stop: crate::shutdown::Stop,
    done: tokio::task::JoinHandle<()>,
    queue: Arc<Q>,
}

impl<Q> Running<Q> {
    async fn stop(self) {
        self.stop.stop();
        self.done.await.expect("controller task");
    }
}

fn start(fake: &Fake, config: ControllerConfig) -> Running {
    let queue = Arc::new(MemoryQueue::new(config.lease));
    start_on(fake, config, queue)
}

fn start_on<Q>(fake: &Fake, config: ControllerConfig, queue: Arc<Q>) -> Running<Q>
where
    Q: WorkQueue<Key = Key> + ListingSchedule,
{
    let f = Arc::new(fake.clone());
    let controller =
        Controller::new(queue.clone(), f.clone(), f.clone(), f.clone(), f).with_config(config);
    let (stop, shutdown) = crate::shutdown::channel();
    let done = tokio::spawn(controller.run(shutdown));
    Running { stop, done, queue }
}

fn config() -> ControllerConfig {
    ControllerConfig {
        workers: 4,
        resync_interval: Duration::from_secs(600),
        ..ControllerConfig::default()
    }
}

/// The status of key 7 after its first handling asked for 90 seconds:
/// still queued, and waiting most of them.
async fn waiting_90_seconds(running: &Running) -> ItemStatus {
    let status = running.queue.status(&7).await.expect("status");
    let status = status.expect("queued");
    let wait = status.ready_in;
    assert!(wait > Duration::from_secs(80), "{wait:?}");
    status
}

fn calls_for(w: &World, key: Key) -> usize {
    w.calls.iter().filter(|c| c.0 == key).count()
}

#[tokio::test(start_paused = true)]
async fn start_up_listing_should_reconcile_every_listed_key_once() {
    let fake = Fake::default();
    fake.with(|w| (1..=20).for_each(|k| drop(w.items.insert(k, format!("v{k}")))));
    let running = start(&fake, config());
    fake.until("20 keys", |w| w.calls.len() >= 20).await;
    running.stop().await;
    fake.with(|w| {
        for k in 1..=20 {
            assert_eq!(calls_for(w, k), 1, "key {k}");
        }
        // The lister's hint reached the storage.
        assert!(w
            .hints
            .iter()
            .all(|(k, h)| h.as_deref() == Some(k.to_string().as_bytes())));
    });
}

#[tokio::test(start_paused = true)]
async fn complete_listing_should_sweep_tracked_keys_that_disappeared() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(1, "a".into());
        w.tracked.extend([1, 2, 3]);
    });
    let running = start(&fake, config());
    fake.until("sweep", |w| {
        calls_for(w, 2) == 1 && calls_for(w, 3) == 1 && calls_for(w, 1) == 1
    })
    .await;
    running.stop().await;
    fake.with(|w| {
        assert_eq!(w.tracked, BTreeSet::from([1]));
        // Swept keys go to the storage without a hint: it must ask afresh.
        assert!(w.hints.iter().filter(|h| h.0 != 1).all(|h| h.1.is_none()));
    });
}

#[tokio::test(start_paused = true)]
async fn incomplete_listing_should_sweep_nothing() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(1, "a".into());
        w.tracked.extend([1, 2, 3]);
        w.failing_partition = true;
    });
    let running = start(&fake, config());
    fake.until("listed key", |w| calls_for(w, 1) == 1).await;
    // Let any (wrong) sweep happen: well past the listing and a poll.
    tokio::time::sleep(Duration::from_secs(30)).await;
    running.stop().await;
    fake.with(|w| {
        assert_eq!(calls_for(w, 2) + calls_for(w, 3), 0);
        assert_eq!(w.tracked, BTreeSet::from([1, 2, 3]));
    });
}

#[tokio::test(start_paused = true)]
async fn failures_should_be_retried_with_growing_delay() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(7, "x".into());
        w.failures.insert(7, vec![None; 4]);
    });
    let running = start(&fake, config());
    fake.until("success after 4 failures", |w| {
        w.calls.iter().any(|c| c.0 == 7 && c.1.is_ok())
    })
    .await;
    let status = running.queue.status(&7).await.expect("status");
    running.stop().await;
    assert_eq!(status, None, "a success forgets the key");
    let starts: Vec<Instant> = fake.with(|w| w.calls.iter().map(|c| c.2).collect());
    assert_eq!(starts.len(), 5);
    let gaps: Vec<f64> = starts
        .windows(2)
        .map(|p| (p[1] - p[0]).as_secs_f64())
        .collect();
    // 1 s, 2 s, 4 s, 8 s, each ±20 %, plus at most one poll interval of latency.
    for (gap, nominal) in gaps.iter().zip([1.0, 2.0, 4.0, 8.0]) {
        assert!(
            *gap >= nominal * 0.8 && *gap <= nominal * 1.2 + 1.0,
            "gap {gap} for {nominal}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn retry_after_should_override_the_backoff() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(7, "x".into());
        w.failures.insert(7, vec![Some(Duration::from_secs(90))]);
    });
    let running = start(&fake, config());
    fake.until("failure", |w| calls_for(w, 7) == 1).await;
    let status = waiting_90_seconds(&running).await;
    assert_eq!(status.attempts, 1);
    assert_eq!(status.last_error.as_deref(), Some("7 unavailable"));
    fake.until("retry", |w| calls_for(w, 7) == 2).await;
    running.stop().await;
    let gap = fake.with(|w| w.calls[1].2 - w.calls[0].2);
    assert!(gap >= Duration::from_secs(90), "{gap:?}");
}

#[tokio::test(start_paused = true)]
async fn a_key_enqueued_while_handled_should_run_again_but_never_twice_at_once() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(1, "a".into());
        w.work_time = Duration::from_millis(500);
    });
    let mut cfg = config();
    cfg.workers = 8;
    let running = start(&fake, cfg);
    fake.until("first call started", |w| {
        !w.calls.is_empty() || w.hints.len() == 1
    })
    .await;
    // Hammer the key while the first call runs.
    for _ in 0..20 {
        running
            .queue
            .enqueue(vec![Enqueue::fresh(1)])
            .await
            .expect("enqueue");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fake.until("second call", |w| calls_for(w, 1) >= 2).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    running.stop().await;
    fake.with(|w| {
        let mut spans: Vec<(Instant, Instant)> = w.calls.iter().map(|c| (c.2, c.3)).collect();
        spans.sort();
        for pair in spans.windows(2) {
            assert!(
                pair[1].0 >= pair[0].1,
                "overlapping reconciles of one key: {pair:?}"
            );
        }
        // Twenty triggers during handling collapse into a few runs, not twenty.
        assert!(spans.len() <= 3, "{} runs", spans.len());
    });
}

#[tokio::test(start_paused = true)]
async fn shutdown_should_let_in_flight_work_finish() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(1, "a".into());
        w.work_time = Duration::from_secs(5);
    });
    let running = start(&fake, config());
    fake.until("work started", |w| w.hints.len() == 1).await;
    let queue = running.queue.clone();
    running.stop().await;
    fake.with(|w| assert_eq!(w.calls.len(), 1, "the in-flight reconcile completed"));
    assert_eq!(queue.status(&1).await.expect("status"), None);
}

#[tokio::test(start_paused = true)]
async fn shutdown_should_give_back_work_that_outlives_the_grace() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(1, "a".into());
        w.work_time = Duration::from_secs(600);
    });
    let mut cfg = config();
    cfg.lease = Duration::from_secs(1200);
    let running = start(&fake, cfg);
    fake.until("work started", |w| w.hints.len() == 1).await;
    let queue = running.queue.clone();
    let before = Instant::now();
    running.stop().await;
    assert!(
        before.elapsed() <= Duration::from_secs(21),
        "stopped within the grace"
    );
    fake.with(|w| assert!(w.calls.is_empty(), "the slow reconcile was dropped"));
    let status = queue
        .status(&1)
        .await
        .expect("status")
        .expect("still queued");
    assert!(!status.claimed && status.ready_in == Duration::ZERO && status.attempts == 0);
}

#[tokio::test(start_paused = true)]
async fn each_period_should_list_again() {
    let fake = Fake::default();
    fake.with(|w| drop(w.items.insert(1, "a".into())));
    let mut cfg = config();
    cfg.resync_interval = Duration::from_secs(60);
    let running = start(&fake, cfg);
    fake.until("three listings", |w| calls_for(w, 1) >= 3).await;
    running.stop().await;
    let starts: Vec<Instant> = fake.with(|w| w.calls.iter().map(|c| c.2).collect());
    assert!(
        starts[2] - starts[0] >= Duration::from_secs(119),
        "{:?}",
        starts[2] - starts[0]
    );
}

#[tokio::test(start_paused = true)]
async fn a_sweep_guard_should_be_able_to_hold_every_removal() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(1, "a".into());
        w.tracked.extend([1, 2, 3, 4]);
        w.guard_limit = Some(2);
    });
    let running = start(&fake, config());
    fake.until("listed key", |w| {
        calls_for(w, 1) == 1 && !w.guard_seen.is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    running.stop().await;
    fake.with(|w| {
        assert_eq!(w.guard_seen[0], (4, vec![1]));
        assert_eq!(
            calls_for(w, 2) + calls_for(w, 3) + calls_for(w, 4),
            0,
            "held: none swept"
        );
    });
}

#[tokio::test(start_paused = true)]
async fn keys_found_early_should_be_handled_before_the_listing_ends() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(1, "a".into());
        w.listing_tail = Duration::from_secs(600);
    });
    let started = Instant::now();
    let running = start(&fake, config());
    fake.until("key handled", |w| calls_for(w, 1) == 1).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    running.stop().await;
}

fn keys_of(batches: &[Vec<Key>]) -> Vec<usize> {
    let mut sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
    sizes.sort_unstable();
    sizes
}

#[tokio::test(start_paused = true)]
async fn keys_ready_together_should_be_read_in_batches_of_at_most_the_batch_size() {
    let fake = Fake::default();
    let running = start(&fake, config());
    running
        .queue
        .enqueue((1..=250).map(Enqueue::fresh).collect())
        .await
        .expect("enqueue");
    fake.until("250 keys", |w| w.calls.len() >= 250).await;
    running.stop().await;
    fake.with(|w| {
        for k in 1..=250 {
            assert_eq!(calls_for(w, k), 1, "key {k}");
        }
        assert_eq!(keys_of(&w.batches), vec![50, 100, 100], "{:?}", w.batches);
    });
}

#[tokio::test(start_paused = true)]
async fn a_single_key_should_start_at_once_in_a_batch_of_its_own() {
    let fake = Fake::default();
    let running = start(&fake, config());
    // Past the start-up listing, which lists nothing.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let enqueued = Instant::now();
    running
        .queue
        .enqueue(vec![Enqueue::fresh(9)])
        .await
        .expect("enqueue");
    fake.until("key handled", |w| calls_for(w, 9) == 1).await;
    running.stop().await;
    fake.with(|w| {
        assert_eq!(w.batches, vec![vec![9]]);
        let started = w.calls[0].2;
        assert_eq!(
            started - enqueued,
            Duration::ZERO,
            "no wait before the read"
        );
    });
}

#[tokio::test(start_paused = true)]
async fn keys_arriving_while_the_reads_are_busy_should_form_the_next_batch() {
    let fake = Fake::default();
    fake.with(|w| w.read_time = Duration::from_millis(50));
    let mut cfg = config();
    cfg.concurrent_reads = 1;
    let running = start(&fake, cfg);
    tokio::time::sleep(Duration::from_secs(5)).await;
    running
        .queue
        .enqueue(vec![Enqueue::fresh(1)])
        .await
        .expect("enqueue");
    tokio::time::sleep(Duration::from_millis(10)).await;
    for k in 2..=21 {
        running
            .queue
            .enqueue(vec![Enqueue::fresh(k)])
            .await
            .expect("enqueue");
    }
    fake.until("21 keys", |w| w.calls.len() >= 21).await;
    running.stop().await;
    fake.with(|w| {
        assert_eq!(w.batches.len(), 2, "{:?}", w.batches);
        assert_eq!(w.batches[0], vec![1]);
        let mut second = w.batches[1].clone();
        second.sort_unstable();
        assert_eq!(second, (2..=21).collect::<Vec<_>>());
    });
}

#[tokio::test(start_paused = true)]
async fn a_failure_in_a_batch_should_stay_with_its_key() {
    let fake = Fake::default();
    fake.with(|w| {
        (1..=5).for_each(|k| drop(w.items.insert(k, format!("v{k}"))));
        w.failures.insert(3, vec![None]);
    });
    let running = start(&fake, config());
    fake.until("5 keys tried", |w| w.calls.len() >= 5).await;
    let mut statuses = Vec::new();
    for k in 1..=5 {
        statuses.push(running.queue.status(&k).await.expect("status"));
    }
    fake.until("3 retried", |w| calls_for(w, 3) == 2).await;
    running.stop().await;
    fake.with(|w| assert_eq!(w.batches[0].len(), 5, "{:?}", w.batches));
    for (k, status) in (1..=5).zip(&statuses) {
        if k == 3 {
            let status = status.as_ref().expect("the failed key waits");
            assert_eq!(status.attempts, 1);
            assert_eq!(status.last_error.as_deref(), Some("3 unavailable"));
        } else {
            assert_eq!(status, &None, "key {k} is done");
        }
    }
}

// ---- leases that cannot be renewed (docs/contract.md#bounds) ----

const LEASE: Duration = Duration::from_secs(30);

/// The controller on a queue whose renewals follow `renewals`; the lease
/// is [`LEASE`], the work of one attempt takes `work`.
fn start_flaky(fake: &Fake, renewals: Renewals, work: Duration) -> Running<FlakyQueue<Key>> {
    fake.with(|w| {
        w.items.insert(1, "a".into());
        w.work_time = work;
    });
    start_flaky_on(fake, renewals)
}

/// The controller, on a [`FlakyQueue`] with the lease [`LEASE`], over
/// whatever `fake` holds.
fn start_flaky_on(fake: &Fake, renewals: Renewals) -> Running<FlakyQueue<Key>> {
    let queue = Arc::new(FlakyQueue::new(LEASE));
    queue.set(renewals);
    let config = ControllerConfig {
        lease: LEASE,
        // One listing, at start: no attempt in flight when the test stops.
        resync_interval: Duration::from_secs(24 * 3600),
        ..config()
    };
    start_on(fake, config, queue)
}

fn attempts(fake: &Fake) -> Vec<Attempt> {
    fake.with(|w| w.attempts.clone())
}

/// No two attempts of `key` ran at the same time.
fn assert_never_overlapping(attempts: &[Attempt], key: Key) {
    let mut spans: Vec<(Instant, Instant)> = attempts
        .iter()
        .filter(|a| a.key == key)
        .map(|a| (a.start, a.end.unwrap_or_else(Instant::now)))
        .collect();
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[1].0 >= pair[0].1, "overlapping attempts: {pair:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_deferred_key_should_wait_without_counting_an_attempt() {
    let fake = Fake::default();
    fake.with(|w| {
        w.items.insert(7, "x".into());
        w.deferrals.insert(7, Duration::from_secs(90));
    });
    let running = start(&fake, config());
    fake.until("deferred", |w| calls_for(w, 7) == 1).await;
    let status = waiting_90_seconds(&running).await;
    assert_eq!((status.attempts, status.last_error), (0, None));
    fake.until("retry", |w| calls_for(w, 7) == 2).await;
    running.stop().await;
    fake.with(|w| {
        assert!(w.calls[0].1.is_err() && w.calls[1].1.is_ok());
        assert!(w.calls[1].2 - w.calls[0].2 >= Duration::from_secs(90));
    });
}

#[tokio::test(start_paused = true)]
async fn shutdown_should_give_back_the_part_of_a_batch_that_did_not_finish() {
    let fake = Fake::default();
    fake.with(|w| {
        (1..=5).for_each(|k| drop(w.items.insert(k, format!("v{k}"))));
        w.work_time = Duration::from_secs(8);
    });
    let mut cfg = config();
    cfg.lease = Duration::from_secs(1200);
    let running = start(&fake, cfg);
    fake.until("batch read", |w| w.hints.len() == 5).await;
    let queue = running.queue.clone();
    let before = Instant::now();
    running.stop().await;
    assert!(
        before.elapsed() <= Duration::from_secs(21),
        "within the grace"
    );
    let handled: Vec<Key> = fake.with(|w| w.calls.iter().map(|c| c.0).collect());
    assert_eq!(handled.len(), 2, "two keys fit in the grace: {handled:?}");
    for k in 1..=5 {
        let status = queue.status(&k).await.expect("status");
        if handled.contains(&k) {
            assert_eq!(status, None, "key {k} is done");
        } else {
            let status = status.expect("given back");
            assert!(
                !status.claimed && status.ready_in == Duration::ZERO && status.attempts == 0,
                "key {k}: {status:?}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_batch_longer_than_its_lease_should_keep_every_key() {
    let fake = Fake::default();
    fake.with(|w| {
        (1..=3).for_each(|k| drop(w.items.insert(k, format!("v{k}"))));
        w.work_time = Duration::from_secs(50);
    });
    let running = start(&fake, config());
    fake.until("batch read", |w| w.hints.len() == 3).await;
    tokio::time::sleep(Duration::from_secs(120)).await;
    let intruder = running
        .queue
        .claim_many("intruder", 10)
        .await
        .expect("claim");
    assert!(
        intruder.is_empty(),
        "a key of the batch was taken: {intruder:?}"
    );
    let last = running
        .queue
        .status(&3)
        .await
        .expect("status")
        .expect("queued");
    assert!(last.claimed, "the last key's lease ran out");
    fake.until("all applied", |w| w.calls.len() == 3).await;
    running.stop().await;
    fake.with(|w| {
        for k in 1..=3 {
            assert_eq!(calls_for(w, k), 1, "key {k}");
        }
    });
}

#[tokio::test(start_paused = true)]
async fn a_batch_whose_leases_cannot_be_renewed_should_be_dropped_before_they_run_out() {
    let fake = Fake::default();
    fake.with(|w| {
        (1..=3).for_each(|k| drop(w.items.insert(k, format!("v{k}"))));
        w.work_time = Duration::from_secs(50);
    });
    let running = start_flaky_on(&fake, Renewals::Fail(u32::MAX));
    fake.until("the batch dropped", |w| {
        w.attempts.iter().any(|a| a.dropped)
    })
    .await;
    // The database is back: the next batch renews and finishes.
    running.queue.set(Renewals::Work);
    fake.until("all applied", |w| w.calls.len() == 3).await;
    running.stop().await;

    let seen = attempts(&fake);
    let key_1: Vec<&Attempt> = seen.iter().filter(|a| a.key == 1).collect();
    assert_eq!(key_1.len(), 2, "key 1 was tried twice: {seen:?}");
    let (first, second) = (key_1[0], key_1[1]);
    assert!(first.dropped && !second.dropped, "{seen:?}");
    // The first attempt was dropped unfinished, with a third of the lease
    // still left; the key was claimed again only once that lease ran out.
    let ran = first.end.expect("ended") - first.start;
    assert!(ran <= LEASE * 2 / 3, "dropped after {ran:?}");
    let gap = second.start - first.end.expect("ended");
    assert!(gap >= LEASE / 3, "claimed again {gap:?} after the drop");
    fake.with(|w| {
        assert_eq!(calls_for(w, 1), 1, "only the second attempt finished");
        for k in 1..=3 {
            assert_eq!(calls_for(w, k), 1, "key {k}");
        }
    });
    // The rest of the batch went with it: keys 2 and 3 were never begun
    // in the dropped batch, and no key ran twice at once.
    for k in 1..=3 {
        assert_never_overlapping(&seen, k);
    }
    for k in 2..=3 {
        let begun: Vec<&Attempt> = seen.iter().filter(|a| a.key == k).collect();
        assert_eq!(begun.len(), 1, "key {k}: {begun:?}");
        assert!(
            begun[0].start >= second.start,
            "key {k} began in the dropped batch"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn renewals_that_keep_failing_should_drop_the_attempt_before_the_lease_ends() {
    let fake = Fake::default();
    let running = start_flaky(&fake, Renewals::Fail(u32::MAX), Duration::from_secs(600));
    fake.until("two attempts dropped", |w| {
        w.attempts.iter().filter(|a| a.dropped).count() >= 2
    })
    .await;
    // The database is back: the next attempt renews and finishes.
    running.queue.set(Renewals::Work);
    fake.until("an attempt finished", |w| calls_for(w, 1) == 1)
        .await;
    let renewals = running.queue.renewals_asked();
    running.stop().await;

    let seen = attempts(&fake);
    assert_never_overlapping(&seen, 1);
    let dropped: Vec<&Attempt> = seen.iter().filter(|a| a.dropped).collect();
    for attempt in &dropped {
        let ran = attempt.end.expect("ended") - attempt.start;
        // Given up when a third of the lease was still left, not at its end.
        assert!(ran <= LEASE * 2 / 3, "dropped after {ran:?}");
        assert!(ran >= LEASE / 2, "gave up at the first failure: {ran:?}");
    }
    for pair in seen.windows(2) {
        // The queue hands the key out again only when the lease ran out;
        // by then the previous attempt had been gone a third of a lease.
        let gap = pair[1].start - pair[0].end.expect("ended");
        assert!(gap >= LEASE / 3, "next attempt {gap:?} after the drop");
    }
    assert!(
        renewals >= 2 * 3,
        "failed renewals are retried before giving up ({renewals} asked)"
    );
    assert!(!seen.last().expect("attempts").dropped);
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_never_answers_should_not_keep_the_attempt_alive() {
    let fake = Fake::default();
    let running = start_flaky(&fake, Renewals::Hang, Duration::from_secs(600));
    fake.until("an attempt dropped", |w| {
        w.attempts.iter().any(|a| a.dropped)
    })
    .await;
    running.queue.set(Renewals::Work);
    fake.until("an attempt finished", |w| calls_for(w, 1) == 1)
        .await;
    running.stop().await;

    let seen = attempts(&fake);
    assert_never_overlapping(&seen, 1);
    let first = &seen[0];
    assert!(first.dropped);
    let ran = first.end.expect("ended") - first.start;
    assert!(ran <= LEASE * 2 / 3, "dropped after {ran:?}");
    assert!(
        seen[1].start - first.start >= LEASE,
        "claimed again too early"
    );
}

#[tokio::test(start_paused = true)]
async fn one_failed_renewal_should_not_drop_the_attempt() {
    let fake = Fake::default();
    // Outlives two leases: it needs every renewal after the failed one.
    let running = start_flaky(&fake, Renewals::Fail(1), LEASE * 2);
    fake.until("the attempt finished", |w| calls_for(w, 1) == 1)
        .await;
    running.stop().await;

    let seen = attempts(&fake);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(!seen[0].dropped);
}

#[tokio::test(start_paused = true)]
async fn a_lease_taken_by_another_worker_should_drop_the_attempt_at_the_next_renewal() {
    let fake = Fake::default();
    let running = start_flaky(&fake, Renewals::Lost, Duration::from_secs(600));
    fake.until("an attempt dropped", |w| {
        w.attempts.iter().any(|a| a.dropped)
    })
    .await;
    running.stop().await;

    let first = &attempts(&fake)[0];
    assert_eq!(first.end.expect("ended") - first.start, LEASE / 3);
    assert!(
        fake.with(|w| w.calls.is_empty()),
        "the attempt never finished"
    );
}

/// Enqueues keys `keys` one every `gap`, each fresh or with a hint.
async fn trickle<Q: WorkQueue<Key = Key>>(
    queue: &Q,
    keys: std::ops::RangeInclusive<Key>,
    gap: Duration,
    hinted: bool,
) -> HashMap<Key, Instant> {
    let mut enqueued = HashMap::new();
    for k in keys {
        let item = match hinted {
            true => Enqueue {
                key: k,
                hint: Some(k.to_string().into_bytes()),
                trigger: Trigger::Listing,
            },
            false => Enqueue::because(k, Trigger::Push),
        };
        queue.enqueue(vec![item]).await.expect("enqueue");
        enqueued.insert(k, Instant::now());
        tokio::time::sleep(gap).await;
    }
    enqueued
}

#[tokio::test(start_paused = true)]
async fn a_steady_trickle_above_the_read_pace_should_share_reads_and_wait_at_most_a_little() {
    let fake = Fake::default();
    fake.with(|w| {
        w.read_time = Duration::from_millis(50);
        w.pace = Some(ReadPace {
            burst: 3,
            every: Duration::from_secs(1),
        });
    });
    let running = start(&fake, config());
    tokio::time::sleep(Duration::from_secs(5)).await;
    // 100 keys over 10 s: unpaced, each would cost a read of its own.
    let enqueued = trickle(&*running.queue, 1..=100, Duration::from_millis(100), false).await;
    fake.until("100 keys", |w| w.calls.len() >= 100).await;
    running.stop().await;
    fake.with(|w| {
        for k in 1..=100 {
            assert_eq!(calls_for(w, k), 1, "key {k}");
        }
        // The burst, then one read a second (and one for the rounding).
        assert!(
            w.batches.len() <= 3 + 10 + 1,
            "{} reads: {:?}",
            w.batches.len(),
            w.batches
        );
        let longest = w
            .calls
            .iter()
            .map(|(k, _, start, _)| *start - enqueued[k])
            .max();
        assert!(
            longest.is_some_and(|d| d <= Duration::from_millis(2_100)),
            "a key waited {longest:?}"
        );
    });
}

#[tokio::test(start_paused = true)]
async fn keys_read_from_their_hints_should_not_wait_for_the_read_pace() {
    let fake = Fake::default();
    fake.with(|w| {
        w.pace = Some(ReadPace {
            burst: 1,
            every: Duration::from_secs(3600),
        });
    });
    let running = start(&fake, config());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let enqueued = trickle(&*running.queue, 1..=20, Duration::from_millis(100), true).await;
    fake.until("20 keys", |w| w.calls.len() >= 20).await;
    running.stop().await;
    fake.with(|w| {
        let longest = w
            .calls
            .iter()
            .map(|(k, _, start, _)| *start - enqueued[k])
            .max();
        assert_eq!(longest, Some(Duration::ZERO), "a hinted key waited");
    });
}
