-- The registry: tracked repositories, the project entries they own, and a
-- short history of reconciles per repository (SPEC §2, §3).

create table repositories (
    -- GitHub's numeric repository id: stable across renames and transfers.
    id              bigint primary key,
    owner           text not null check (owner <> ''),
    name            text not null check (name <> ''),
    -- The GitHub App installation that sees it; null for the local folder source.
    installation_id bigint,
    default_branch  text,
    html_url        text,
    status          text not null default 'pending'
                    check (status in ('pending', 'synced', 'no_file', 'invalid',
                                      'conflict', 'error', 'removed')),
    -- The commit the entries reflect (synced, conflict).
    synced_sha      text,
    last_synced_at  timestamptz,
    error           text,
    -- Failed attempts since the last successful reconcile.
    attempts        integer not null default 0 check (attempts >= 0),
    -- Names this repository declares but another repository owns.
    conflicts       text[] not null default '{}',
    created_at      timestamptz not null default now(),
    updated_at      timestamptz not null default now(),

    -- A status that explains a problem carries its text; the others carry none.
    constraint repositories_error_matches_status check (
        (status in ('invalid', 'conflict', 'error', 'removed')) = (error is not null)
    ),
    -- Applied states name the commit they applied.
    constraint repositories_applied_has_sha check (
        status not in ('synced', 'conflict')
        or (synced_sha is not null and last_synced_at is not null)
    ),
    -- Only a conflict (or a state that kept it, invalid/error) lists conflicts.
    constraint repositories_conflicts_match_status check (
        status not in ('synced', 'no_file', 'removed', 'pending')
        or cardinality(conflicts) = 0
    )
);

-- Not unique: a rename can make two rows share a name until the stale one is
-- reconciled; lookups take the newest. Also serves keyset pagination.
create index repositories_owner_name on repositories (owner, name, id);
create index repositories_lower_full_name on repositories (lower(owner), lower(name));
create index repositories_installation on repositories (installation_id);
create index repositories_status on repositories (status);
create index repositories_conflicts on repositories using gin (conflicts)
    where cardinality(conflicts) > 0;

create table entries (
    -- One owner repository per name across the whole registry. "C" collation:
    -- names are ASCII, and byte order keeps pagination the same everywhere.
    name        text collate "C" primary key
                check (name ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
    repo_id     bigint not null references repositories (id) on delete cascade,
    owner       text not null check (owner <> '' and char_length(owner) <= 100),
    description text check (char_length(description) <= 1000),
    lifecycle   text check (lifecycle in ('experimental', 'production', 'deprecated')),
    tags        text[] not null default '{}' check (cardinality(tags) <= 20),
    links       jsonb not null default '[]' check (jsonb_typeof(links) = 'array'),
    labels      jsonb not null default '{}' check (jsonb_typeof(labels) = 'object'),
    -- The commit that last changed this entry.
    source_sha  text not null check (source_sha <> ''),
    created_at  timestamptz not null default now(),
    updated_at  timestamptz not null default now()
);

create index entries_repo on entries (repo_id);
create index entries_owner on entries (owner);
create index entries_tags on entries using gin (tags);

create table events (
    id      bigserial primary key,
    repo_id bigint not null references repositories (id) on delete cascade,
    at      timestamptz not null default now(),
    kind    text not null check (kind <> ''),
    message text not null
);

create index events_repo_newest on events (repo_id, id desc);
