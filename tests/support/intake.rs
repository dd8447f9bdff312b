//! A webhook delivery written as the route writes it, without HTTP: for
//! tests of what an event does once it is accepted.

use std::sync::atomic::{AtomicU64, Ordering};

use roster::db::queue::PgQueue;
use roster::intake::event;
use roster::intake::event::Accepted;
use roster::intake::write::{write, Intake};
use sqlx::PgPool;

/// Parses `body` as an `X-GitHub-Event: name` delivery and writes it
/// through the one intake path (its effects and its record, committed);
/// its outcome. Each call is a delivery of its own id.
pub async fn deliver(pool: &PgPool, queue: &PgQueue, name: &str, body: &[u8]) -> Intake {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let parsed = event::parse(name, body).expect("a valid payload");
    let accepted = Accepted {
        delivery_id: format!("test-delivery-{}", NEXT.fetch_add(1, Ordering::Relaxed)),
        event: name.to_owned(),
        parsed,
    };
    let mut intakes = write(pool, queue, None, &[&accepted])
        .await
        .expect("intake");
    intakes.pop().expect("one intake per delivery")
}
