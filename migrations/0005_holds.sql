-- The deletion guard (SPEC §3): when one listing period would remove more
-- than ROSTER_MAX_REMOVALS of a partition's repositories (an installation,
-- or the local folder), none is removed; they keep their status and entries
-- and point at a hold until an operator releases it or they come back.

create table holds (
    id          bigserial primary key,
    -- The listing partition: `installation/<id>` or `local`.
    partition   text not null check (partition <> ''),
    since       timestamptz not null default now(),
    reason      text not null check (reason <> ''),
    -- An operator released it: its repositories are removed normally.
    released_at timestamptz,
    -- Every held repository came back: nothing is held any more.
    cleared_at  timestamptz,
    constraint holds_ends_once check (released_at is null or cleared_at is null)
);

-- At most one active hold per partition: later removals join it.
create unique index holds_one_active_per_partition on holds (partition)
    where released_at is null and cleared_at is null;

alter table repositories
    -- The hold this repository's removal waits on (or, once removed, the
    -- released hold that let it go; such removals are not counted again).
    add column hold_id bigint references holds (id),
    -- When a removal the guard counts last happened, to count the removals
    -- of the current listing period.
    add column removed_at timestamptz;

create index repositories_hold on repositories (hold_id) where hold_id is not null;
create index repositories_removed_at on repositories (installation_id, removed_at)
    where status = 'removed';
