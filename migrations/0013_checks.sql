-- Check runs on GitHub: pull requests (and commits) waiting to be
-- evaluated, the runs to post (an outbox, one row per repository and
-- commit), and the installations that refused the checks permission.

-- One row per pull request ('pr:17') or lone commit ('sha:…'): a flood of
-- `synchronize` events for one pull request leaves one row, its latest head.
create table check_requests (
    repo_id bigint not null,
    key text not null,
    pull_request integer,
    head_sha text not null,
    installation_id bigint not null,
    owner text not null,
    name text not null,
    -- Moves on every new request: an evaluation clears the row only when
    -- no newer request arrived while it ran.
    requested_at timestamptz not null default clock_timestamp(),
    -- A claim pushes it forward (the claim's lease); a failure by the backoff.
    not_before timestamptz not null default now(),
    attempts integer not null default 0,
    last_error text,
    primary key (repo_id, key)
);

create index check_requests_due on check_requests (not_before);

-- The `Roster` run of one commit: what the last evaluation said, and
-- whether GitHub has heard it yet (`pending`).
create table check_runs (
    repo_id bigint not null,
    sha text not null,
    pull_request integer,
    installation_id bigint not null,
    owner text not null,
    name text not null,
    conclusion text not null check (conclusion in ('success', 'failure', 'neutral')),
    title text not null,
    summary text not null,
    annotations jsonb not null default '[]',
    evaluated_at timestamptz not null default now(),
    -- Bumped by every evaluation that changed what the run says; a post
    -- clears `pending` only for the version it sent.
    version integer not null default 1,
    pending boolean not null default true,
    -- GitHub's id of the run, once created: later evaluations update it.
    run_id bigint,
    -- Set before a create is sent: a retry first looks for the run, so a
    -- crash between GitHub's answer and our record makes no second run.
    create_sent boolean not null default false,
    posted_at timestamptz,
    attempts integer not null default 0,
    not_before timestamptz not null default now(),
    last_error text,
    primary key (repo_id, sha)
);

create index check_runs_due on check_runs (not_before) where pending;
create index check_runs_recent on check_runs (repo_id, evaluated_at desc);

-- An installation that answered 403 to a post: nothing more is posted for
-- it until the App's permissions change (`new_permissions_accepted`).
create table check_permissions (
    installation_id bigint primary key,
    denied_at timestamptz not null default now(),
    message text not null
);
