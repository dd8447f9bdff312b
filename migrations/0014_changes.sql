-- History and the change feed: an append-only log of every change to a
-- registry entry, and the delivery cursors of outbound notifications.

-- The last `seq` handed out: exactly one row. A writing transaction takes
-- its numbers from it as its last statement before the commit; the row lock
-- it takes then is held until the commit, so transactions commit in the
-- order of their numbers and a reader never sees a gap (see
-- docs/architecture.md, "The change log").
create table change_head (
    id  boolean primary key default true check (id),
    seq bigint not null default 0 check (seq >= 0)
);

insert into change_head default values;

create table changes (
    seq     bigint primary key check (seq > 0),
    -- When the change committed (taken under the head's lock, so it never
    -- goes back as `seq` grows, barring a clock step).
    at      timestamptz not null default clock_timestamp(),
    kind    text not null check (kind in ('created', 'changed', 'removed')),
    name    text collate "C" not null,
    -- `owner/name` of the repository at the time; no foreign key: history
    -- outlives the repository.
    repo    text not null,
    repo_id bigint not null,
    -- The commit that caused the change; null when there is none (removal).
    sha     text,
    cause   text not null check (cause <> ''),
    before  jsonb,
    after   jsonb,
    constraint changes_kind_matches check (
        (kind = 'created' and before is null and after is not null)
        or (kind = 'changed' and before is not null and after is not null)
        or (kind = 'removed' and before is not null and after is null)
    )
);

create index changes_name on changes (name, seq desc);
create index changes_removed on changes (seq desc) where kind = 'removed';

-- One row per notification target: how far it has received the log, and
-- who delivers to it now (a lease, so replicas do not send twice).
create table notify_targets (
    url             text primary key,
    -- Every change with `seq <= cursor` was acknowledged by the target.
    cursor          bigint not null check (cursor >= 0),
    attempts        integer not null default 0 check (attempts >= 0),
    last_error      text,
    last_error_at   timestamptz,
    -- Not tried again before this (backoff after a failure); null: now.
    next_attempt_at timestamptz,
    last_sent_at    timestamptz,
    lease_owner     text,
    lease_until     timestamptz
);
