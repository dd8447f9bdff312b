//! Feeds arbitrary event names and bodies to the webhook-to-event mapping,
//! then plans what each parsed event would do.
//!
//! Input layout: `event \n body` (the `X-GitHub-Event` value, then the JSON
//! body). Besides "does not panic", it checks the plan's own promises: an
//! ignored event does nothing, every repository made known is enqueued,
//! removals never make a repository known, and no delivery names more than
//! `MAX_NAMED_REPOS` repositories to make known or enqueue.

#![no_main]

use libfuzzer_sys::fuzz_target;
use roster::intake::event::{parse, InstallationAction, RepositoryAction, WebhookEvent};
use roster::intake::write::{plan, MAX_NAMED_REPOS};

fuzz_target!(|data: &[u8]| {
    let (event, body) = match data.iter().position(|&byte| byte == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let event = String::from_utf8_lossy(event);
    let Ok(parsed) = parse(&event, body) else {
        return;
    };
    let plan = plan(&parsed.event);
    if plan.ignored.is_some() {
        assert!(plan.known.is_empty() && plan.enqueue.is_empty());
        assert!(!plan.listing && plan.tracked_of_installation.is_none());
    }
    for repo in &plan.known {
        assert!(plan.enqueue.contains(&repo.id), "{plan:?}");
    }
    assert!(plan.known.len() <= MAX_NAMED_REPOS && plan.enqueue.len() <= MAX_NAMED_REPOS);
    match &parsed.event {
        WebhookEvent::Repository {
            action: RepositoryAction::Deleted,
            ..
        } => assert!(plan.known.is_empty()),
        WebhookEvent::Installation {
            action: InstallationAction::Deleted | InstallationAction::Suspend,
            installation_id,
            ..
        } => {
            assert!(plan.known.is_empty());
            assert_eq!(plan.tracked_of_installation, Some(*installation_id));
        }
        WebhookEvent::InstallationRepositories { removed, .. } => {
            // Each removal is enqueued, or, past the bound, a listing finds it.
            for repo in removed {
                assert!(plan.enqueue.contains(&repo.id) || plan.listing);
            }
        }
        _ => {}
    }
});
