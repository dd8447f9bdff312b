-- The organisation's directory pays for what changed (SPEC §12, §8): a
-- `team`, `membership` or `organization` webhook records what its payload
-- says about one team or one member here, and the directory loop applies
-- it without reading the whole organisation again.

-- One row per team or member a webhook spoke about and that the directory
-- does not reflect yet. Deliveries about the same team or member coalesce
-- into one row (the newest payload's data); when more than one arrived,
-- their order is not known, so the team is read once from GitHub after
-- the payload is applied (`needs_read`).
create table directory_changes (
    org_id bigint not null references directory_orgs (org_id) on delete cascade,
    kind text not null check (kind in ('team', 'member')),
    -- GitHub's id of the team or the member.
    subject_id bigint not null,
    -- GraphQL node id of a team, by which it is read alone.
    node_id text,
    -- A team's slug, or a member's login.
    slug text,
    name text,
    secret boolean not null default true,
    -- Whether the payload said which team is the parent (and which).
    parent_known boolean not null default false,
    parent_id bigint,
    -- The team was deleted, or the member left the organisation.
    gone boolean not null default false,
    -- The payload has been written to the directory.
    applied boolean not null default false,
    -- The team is to be read from GitHub before the row is done.
    needs_read boolean not null default false,
    -- Consecutive failed reads, for the backoff.
    failures integer not null default 0,
    requested_at timestamptz not null default clock_timestamp(),
    -- A replica reading this team holds it until then; after a failure or
    -- while the budget is kept for the sync, it waits until then.
    claimed_until timestamptz,
    primary key (org_id, kind, subject_id)
);

create index directory_changes_to_apply on directory_changes (requested_at) where not applied;

-- Consecutive failed reads of an account's whole directory, for the
-- backoff of its next one.
alter table directory_orgs add column read_failures integer not null default 0;
