-- Webhook deliveries Roster received (SPEC §5, §6): what the dashboard shows,
-- and what the redelivery of missed deliveries compares GitHub's log with.

create table deliveries (
    -- GitHub's X-GitHub-Delivery: a redelivery reuses the id, so it is a key.
    id                    text primary key,
    event                 text not null,
    action                text,
    -- "owner/name" of the payload's repository, when it names one.
    repo                  text,
    -- queued | ignored | rejected
    outcome               text not null,
    at                    timestamptz not null default now(),
    -- Set once Roster asked GitHub to redeliver it, so it asks only once.
    redelivery_requested  boolean not null default false
);

-- Newest first, with the id as a tie-breaker for keyset pagination.
create index deliveries_newest on deliveries (at desc, id desc);
create index deliveries_repo_newest on deliveries (repo, at desc, id desc);
