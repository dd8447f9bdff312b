//! GitHub webhook intake (SPEC §6): verify the signature, parse the event
//! into Roster's own [`WebhookEvent`], enqueue what it implies, record the
//! delivery, answer 202.
//!
//! Verify-then-parse: nothing reads the body before its signature matched.

pub mod deliveries;
pub mod event;
pub mod intake;
pub mod route;
pub mod signature;

pub use deliveries::{list_deliveries, DeliveriesError, DeliveryJson};
pub use event::{ParsedDelivery, WebhookEvent};
pub use route::{router, WebhookState, MAX_BODY_BYTES, PATH};
pub use signature::sign;
