//! The queue's claim order (see [`super::conformance`]): work that a
//! listing alone asked for waits behind every other trigger, except for one
//! claim in ten, so neither starves.

use std::collections::BTreeSet;
use std::fmt::Debug;

use tokio::time::sleep;

use super::conformance_kit::{
    because, claim_now, fresh, hinted, key, ok, KeyOf, QueueHarness, POLL,
};
use crate::controller::queue::{Claim, Enqueue, Trigger, WorkQueue};

/// Enqueues each item alone, a little apart, so each is ready later than
/// the one before.
async fn one_by_one<Q: WorkQueue>(q: &Q, items: Vec<Enqueue<Q::Key>>) {
    for item in items {
        ok(q.enqueue(vec![item]).await, "enqueue");
        sleep(POLL).await;
    }
}

/// `n` single claims, each ended at once.
async fn claims<Q: WorkQueue>(q: &Q, n: usize) -> Vec<Claim<Q::Key>> {
    let mut taken = Vec::new();
    for _ in 0..n {
        let claim = claim_now(q, "w").await;
        ok(q.done(&claim).await, "done");
        taken.push(claim);
    }
    taken
}

fn keys<K: From<u32>>(ns: impl IntoIterator<Item = u32>) -> Vec<K> {
    ns.into_iter().map(key).collect()
}

fn split<K: Clone + Ord + Debug>(taken: &[Claim<K>], first: &BTreeSet<K>) -> (Vec<K>, Vec<K>) {
    taken
        .iter()
        .map(|c| c.key.clone())
        .partition(|k| first.contains(k))
}

/// Pushes, resyncs, events and other triggers are claimed before listing
/// work, oldest first; a listing key another trigger asks for takes its
/// rank (and reads afresh); one claim in ten goes to the listing work that
/// has waited longest, for single claims and batches alike; and
/// `claim_reads` leaves the keys whose read is in hand.
pub async fn claim_order<H: QueueHarness>(h: &H) {
    let q = h.open().await;
    one_by_one(&q, (1..=20).map(|n| hinted(n, b"listed")).collect()).await;
    one_by_one(
        &q,
        vec![
            because(101, Trigger::Push),
            because(102, Trigger::Resync),
            because(103, Trigger::Event),
            fresh(104),
            because(5, Trigger::Push),
            hinted(6, b"listed again"),
        ],
    )
    .await;

    // Five keys rank first; of ten claims, nine follow the rank, one is
    // the listing's.
    let first: BTreeSet<KeyOf<H>> = keys([5, 101, 102, 103, 104]).into_iter().collect();
    let taken = claims(&q, 10).await;
    let (ranked, listing) = split(&taken, &first);
    assert_eq!(
        ranked,
        keys::<KeyOf<H>>([5, 101, 102, 103, 104]),
        "work not from a listing must be claimed, oldest first, before listing work: {taken:?}"
    );
    let last_first = taken.iter().rposition(|c| first.contains(&c.key));
    assert!(
        last_first.is_some_and(|at| at <= 5),
        "at most one claim may go to listing work while other work waits: {taken:?}"
    );
    assert_eq!(
        listing,
        keys::<KeyOf<H>>([1, 2, 3, 4, 6]),
        "listing work must be claimed oldest first"
    );
    let five = taken.iter().find(|c| c.key == key(5));
    assert!(
        five.is_some_and(|c| c.trigger == Trigger::Push && c.hint.is_none()),
        "a listing key that a push asks for must run as the push's, reading afresh: {five:?}"
    );
    let six = taken.iter().find(|c| c.key == key(6));
    assert!(
        six.is_some_and(
            |c| c.trigger == Trigger::Listing && c.hint.as_deref() == Some(&b"listed again"[..])
        ),
        "a key listed again must stay listing work with the newer hint: {six:?}"
    );

    // While other work keeps coming, one claim in ten is the listing's.
    one_by_one(&q, (201..=240).map(fresh).collect()).await;
    let first: BTreeSet<KeyOf<H>> = keys(201..=240).into_iter().collect();
    let taken = claims(&q, 20).await;
    let (_, listing) = split(&taken, &first);
    assert_eq!(
        listing,
        keys::<KeyOf<H>>([7, 8]),
        "two claims in twenty must go to the listing work that waited longest: {taken:?}"
    );
    let batch = ok(q.claim_many("w", 10).await, "claim_many");
    let (ranked, listing) = split(&batch, &first);
    assert_eq!(
        (ranked.len(), listing),
        (9, keys::<KeyOf<H>>([9])),
        "a batch of ten must keep one claim for listing work: {batch:?}"
    );
    ok(q.done_many(&batch).await, "done_many");

    // The keys that need a read: the thirteen other keys left and a swept
    // key (listing work without a hint), none of the hinted listing keys.
    one_by_one(&q, vec![because(300, Trigger::Listing)]).await;
    let reads = ok(q.claim_reads("w", 100).await, "claim_reads");
    let got: BTreeSet<KeyOf<H>> = reads.iter().map(|c| c.key.clone()).collect();
    let want: BTreeSet<KeyOf<H>> = keys((228..=240).chain([300])).into_iter().collect();
    assert_eq!(
        got, want,
        "claim_reads must take exactly the keys without a hint"
    );
    ok(q.done_many(&reads).await, "done_many");
    let rest = ok(q.claim_many("w", 100).await, "claim_many");
    assert_eq!(
        rest.len(),
        11,
        "the hinted listing keys must still wait: {rest:?}"
    );
    assert!(rest.iter().all(|c| c.hint.is_some()));
}
