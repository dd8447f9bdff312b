//! What a webhook event asks for, decided before anything is written
//! (pure: no I/O). Intake then writes the plan.

use std::collections::BTreeSet;

use super::event::{
    CheckRequest, DirectoryChange, InstallationAction, PayloadRepo, RepositoryAction, WebhookEvent,
};
use crate::source::{InstallationId, RepoId};

/// What an event asks for, before anything is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Repositories to make visible (as `pending` when new).
    pub known: Vec<PayloadRepo>,
    /// Ids to enqueue.
    pub enqueue: Vec<RepoId>,
    /// Also enqueue every repository tracked for this installation.
    pub tracked_of_installation: Option<InstallationId>,
    /// Ask for an org-wide listing.
    pub listing: bool,
    /// Which listing has seen what the event is about already, so that none
    /// is asked for then. `None`: only a listing started after the request.
    pub listing_seen: Option<ListingSeen>,
    /// Why nothing is done, when nothing is.
    pub ignored: Option<String>,
    /// Check runs to evaluate (pull requests, rerequested runs).
    pub checks: Vec<CheckRequest>,
    /// The installation whose App permissions changed: checks resume.
    pub permissions_changed: Option<InstallationId>,
    /// An organisation's directory to read again (or its new login).
    pub directory: Option<DirectoryChange>,
}

impl Plan {
    /// The repositories the event names: made known or enqueued.
    pub fn named(&self) -> impl Iterator<Item = RepoId> + '_ {
        self.known
            .iter()
            .map(|r| r.id)
            .chain(self.enqueue.iter().copied())
    }
}

/// What a listing must have done to have seen an installation as it was
/// created: found it (listed it, running or done), or started after it was
/// created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListingSeen {
    /// A listing that found this installation listed it whole.
    pub installation: InstallationId,
    /// A listing that started after this moment (Unix seconds) found it.
    pub created_at: Option<i64>,
}

pub use super::event::MAX_NAMED_REPOS;

/// The most repositories an `installation_repositories` `added` delivery
/// has read as they are (one batch read); more ask for a listing.
pub const MAX_ADDED_READ_DIRECTLY: usize = 100;

/// Decides what `event` asks for (pure: no I/O), repository by repository,
/// within [`MAX_NAMED_REPOS`].
pub fn plan(event: &WebhookEvent) -> Plan {
    let plan = match event {
        WebhookEvent::Ping => ignore("ping"),
        // A deleted repository is not made known: if Roster never tracked
        // it, there is nothing to show; if it did, the enqueue is enough.
        WebhookEvent::Repository {
            action: RepositoryAction::Deleted,
            repo,
        } => Plan {
            enqueue: vec![repo.id],
            ..Plan::default()
        },
        WebhookEvent::DefaultBranchPush { repo, .. } | WebhookEvent::Repository { repo, .. } => {
            Plan {
                enqueue: vec![repo.id],
                known: vec![repo.clone()],
                ..Plan::default()
            }
        }
        WebhookEvent::Installation {
            action,
            installation_id,
            repos,
            created_at,
        } => match action {
            // The listing reads every repository of every installation with
            // its file, 100 per request; the repositories the payload names
            // show up as pending at once. Enqueueing each would cost a read
            // per repository, however they are batched, and could leave a
            // large organisation waiting for the budget (issue 13).
            // A listing that found the installation (running or done), or
            // that started after it was created, lists all of it: the
            // repositories it was created with are read then, so none is
            // asked for again.
            // Past the bound the listing alone reads them (below); they
            // are not copied first, 100,000 of them at a time.
            InstallationAction::Created | InstallationAction::Unsuspend
                if repos.len() > MAX_NAMED_REPOS =>
            {
                Plan {
                    listing: true,
                    listing_seen: (*action == InstallationAction::Created).then_some(ListingSeen {
                        installation: *installation_id,
                        created_at: *created_at,
                    }),
                    ..Plan::default()
                }
            }
            InstallationAction::Created => Plan {
                known: repos.clone(),
                listing: true,
                listing_seen: Some(ListingSeen {
                    installation: *installation_id,
                    created_at: *created_at,
                }),
                ..Plan::default()
            },
            // Its repositories became readable just now: only a listing
            // started after the request reads them.
            InstallationAction::Unsuspend => Plan {
                known: repos.clone(),
                listing: true,
                ..Plan::default()
            },
            // Their reconcile finds the App lost access (deleted, removed
            // subject to the deletion guard) or cannot read them (suspended,
            // `error`, entries kept).
            InstallationAction::Deleted | InstallationAction::Suspend => Plan {
                enqueue: repos.iter().map(|r| r.id).collect(),
                tracked_of_installation: Some(*installation_id),
                ..Plan::default()
            },
            InstallationAction::NewPermissionsAccepted => Plan {
                listing: true,
                permissions_changed: Some(*installation_id),
                ..Plan::default()
            },
        },
        // A few added repositories are read together, one query for up to
        // a batch of them by their node ids, instead of a listing of the
        // whole installation (a hundred requests for 10,000 repositories);
        // more are left to a listing, as for a new installation. A removed
        // one is enqueued, so that its reconcile reads that the App lost it.
        WebhookEvent::InstallationRepositories { added, removed, .. } => {
            let read_directly = added.len() <= MAX_ADDED_READ_DIRECTLY;
            let mut enqueue: Vec<RepoId> = removed.iter().map(|r| r.id).collect();
            if read_directly {
                enqueue.extend(added.iter().map(|r| r.id));
            }
            Plan {
                known: added.clone(),
                enqueue,
                listing: !read_directly,
                ..Plan::default()
            }
        }
        WebhookEvent::CheckRequested { requests } => Plan {
            checks: requests.clone(),
            ..Plan::default()
        },
        WebhookEvent::Ignored { reason } => ignore(reason),
        WebhookEvent::Directory(change) => Plan {
            directory: Some(change.clone()),
            ..Plan::default()
        },
    };
    // Added repositories are only made known, removed ones only enqueued:
    // the bound is on the repositories named, whichever way.
    let named: BTreeSet<RepoId> = plan
        .known
        .iter()
        .map(|r| r.id)
        .chain(plan.enqueue.iter().copied())
        .collect();
    if named.len() <= MAX_NAMED_REPOS {
        return plan;
    }
    match plan.tracked_of_installation {
        Some(_) => Plan {
            known: Vec::new(),
            enqueue: Vec::new(),
            ..plan
        },
        None => Plan {
            listing: true,
            listing_seen: plan.listing_seen,
            ..Plan::default()
        },
    }
}

fn ignore(reason: &str) -> Plan {
    Plan {
        ignored: Some(reason.to_owned()),
        ..Plan::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(id: i64) -> PayloadRepo {
        PayloadRepo {
            id: RepoId(id),
            info: crate::testing::installed_repo("acme", format!("repo-{id}"), 7),
            node_id: Some(format!("R_{id}")),
        }
    }

    #[test]
    fn default_branch_push_should_make_known_and_enqueue_the_repository() {
        let plan = plan(&WebhookEvent::DefaultBranchPush {
            repo: repo(1),
            change: None,
        });
        assert_eq!(plan.known, vec![repo(1)]);
        assert_eq!(plan.enqueue, vec![RepoId(1)]);
        assert!(!plan.listing);
    }

    #[test]
    fn repository_deleted_should_enqueue_without_making_known() {
        let plan = plan(&WebhookEvent::Repository {
            action: RepositoryAction::Deleted,
            repo: repo(2),
        });
        assert!(plan.known.is_empty());
        assert_eq!(plan.enqueue, vec![RepoId(2)]);
    }

    #[test]
    fn installation_created_should_request_a_listing_and_enqueue_nothing() {
        for action in [InstallationAction::Created, InstallationAction::Unsuspend] {
            let plan = plan(&WebhookEvent::Installation {
                action,
                installation_id: InstallationId(7),
                created_at: None,
                repos: vec![repo(3), repo(4)],
            });
            assert!(plan.listing);
            assert!(plan.enqueue.is_empty(), "{:?}", plan.enqueue);
            assert_eq!(plan.known, vec![repo(3), repo(4)]);
        }
    }

    #[test]
    fn installation_deleted_and_suspend_should_enqueue_tracked_repositories_only() {
        for action in [InstallationAction::Deleted, InstallationAction::Suspend] {
            let plan = plan(&WebhookEvent::Installation {
                action,
                installation_id: InstallationId(7),
                created_at: None,
                repos: vec![],
            });
            assert_eq!(plan.tracked_of_installation, Some(InstallationId(7)));
            assert!(plan.known.is_empty());
            assert!(!plan.listing);
        }
    }

    #[test]
    fn new_permissions_should_request_a_listing_and_resume_checks() {
        let plan = plan(&WebhookEvent::Installation {
            action: InstallationAction::NewPermissionsAccepted,
            installation_id: InstallationId(7),
            created_at: None,
            repos: vec![repo(5)],
        });
        assert_eq!(
            plan,
            Plan {
                listing: true,
                permissions_changed: Some(InstallationId(7)),
                ..Plan::default()
            }
        );
    }

    #[test]
    fn installation_repositories_should_enqueue_a_few_added_and_the_removed() {
        let plan = plan(&WebhookEvent::InstallationRepositories {
            installation_id: InstallationId(7),
            added: vec![repo(6)],
            removed: vec![repo(8)],
        });
        assert_eq!(plan.known, vec![repo(6)]);
        assert_eq!(plan.enqueue, vec![RepoId(8), RepoId(6)]);
        assert!(!plan.listing, "one batch read serves a few added ones");

        let many = (1..=MAX_ADDED_READ_DIRECTLY as i64 + 1)
            .map(repo)
            .collect::<Vec<_>>();
        let many_added = super::plan(&WebhookEvent::InstallationRepositories {
            installation_id: InstallationId(7),
            added: many.clone(),
            removed: vec![],
        });
        assert_eq!(many_added.known, many);
        assert!(many_added.enqueue.is_empty());
        assert!(many_added.listing, "a listing reads many added ones");

        let only_removed = super::plan(&WebhookEvent::InstallationRepositories {
            installation_id: InstallationId(7),
            added: vec![],
            removed: vec![repo(8)],
        });
        assert_eq!(only_removed.enqueue, vec![RepoId(8)]);
        assert!(!only_removed.listing, "nothing new to list");
    }

    #[test]
    fn a_delivery_naming_more_repositories_than_the_bound_should_ask_for_a_listing() {
        let many = |n: i64| (1..=n).map(repo).collect::<Vec<_>>();
        let bound = MAX_NAMED_REPOS as i64;
        let at_the_bound = plan(&WebhookEvent::InstallationRepositories {
            installation_id: InstallationId(7),
            added: vec![],
            removed: many(bound),
        });
        assert_eq!(at_the_bound.enqueue.len(), MAX_NAMED_REPOS);
        assert!(!at_the_bound.listing);
        // Added ones are made known (and listed), removed ones enqueued:
        // both count towards the bound.
        let split = plan(&WebhookEvent::InstallationRepositories {
            installation_id: InstallationId(7),
            added: many(bound / 2),
            removed: ((bound / 2 + 1)..=bound).map(repo).collect(),
        });
        assert_eq!(split.known.len() + split.enqueue.len(), MAX_NAMED_REPOS);
        assert_eq!(split.enqueue.len(), MAX_NAMED_REPOS / 2);
        let one_more = plan(&WebhookEvent::InstallationRepositories {
            installation_id: InstallationId(7),
            added: many(bound / 2 + 1),
            removed: ((bound / 2 + 2)..=bound + 1).map(repo).collect(),
        });
        assert_eq!(
            one_more,
            Plan {
                listing: true,
                ..Plan::default()
            },
            "{} named",
            bound + 1
        );
        for action in [InstallationAction::Created, InstallationAction::Unsuspend] {
            let installed = plan(&WebhookEvent::Installation {
                action,
                installation_id: InstallationId(7),
                repos: many(bound + 1),
                created_at: Some(1),
            });
            let seen = (action == InstallationAction::Created).then_some(ListingSeen {
                installation: InstallationId(7),
                created_at: Some(1),
            });
            let listing = Plan {
                listing: true,
                listing_seen: seen,
                ..Plan::default()
            };
            assert_eq!(installed, listing, "{action:?}, {} named", bound + 1);
        }
        for event in [
            WebhookEvent::InstallationRepositories {
                installation_id: InstallationId(7),
                added: many(bound + 1),
                removed: vec![],
            },
            WebhookEvent::InstallationRepositories {
                installation_id: InstallationId(7),
                added: vec![],
                removed: many(bound + 1),
            },
            WebhookEvent::Installation {
                action: InstallationAction::Created,
                installation_id: InstallationId(7),
                created_at: None,
                repos: many(bound + 1),
            },
        ] {
            let asked = plan(&event);
            assert_eq!(
                asked,
                Plan {
                    listing: true,
                    listing_seen: asked.listing_seen,
                    ..Plan::default()
                }
            );
        }
        let uninstalled = plan(&WebhookEvent::Installation {
            action: InstallationAction::Deleted,
            installation_id: InstallationId(7),
            created_at: None,
            repos: many(bound + 1),
        });
        assert_eq!(
            uninstalled,
            Plan {
                tracked_of_installation: Some(InstallationId(7)),
                ..Plan::default()
            }
        );
    }

    #[test]
    fn ping_and_ignored_events_should_do_nothing() {
        assert!(plan(&WebhookEvent::Ping).ignored.is_some());
        let plan = plan(&WebhookEvent::Ignored {
            reason: "tag".to_owned(),
        });
        assert_eq!(plan.ignored.as_deref(), Some("tag"));
        assert!(plan.enqueue.is_empty());
    }
}
