//! GitHub webhook intake (docs/contract.md#webhooks): verify the signature, parse the event
//! into Roster's own [`WebhookEvent`], enqueue what it implies, record the
//! delivery, answer 202.
//!
//! Verify-then-parse: nothing reads the body before its signature matched.
//! The checks make up the [`VerifiedDelivery`] extractor ([`verified`]);
//! the route's handler ([`route`]) only persists and answers.
//! Bounded (docs/contract.md#bounds): a declared length over 25 MiB or a missing signature
//! is refused before the body is read, a request waits for a turn to read
//! one ([`admission`]), and the delivery log is pruned ([`retention`]).

pub mod admission;
pub mod body;
pub mod deliveries;
pub mod delivery_writer;
pub mod envelope;
pub mod event;
pub mod free_push;
pub mod group;
mod plan;
pub mod redelivery;
pub mod retention;
pub mod route;
pub mod signature;
pub mod state;
pub mod verified;
pub mod write;

pub use admission::WebhookLimits;
pub use body::MAX_BODY_BYTES;
pub use deliveries::{list_deliveries, DeliveriesError, DeliveryRecord};
pub use event::{ParsedDelivery, WebhookEvent};
pub use route::PATH;
pub use signature::sign;
pub use state::WebhookState;
pub use verified::VerifiedDelivery;
