-- The organisation's directory: each account's teams and members, kept by
-- GitHub's numeric ids so that a renamed team or organisation still
-- resolves. Read with the listing (or from the local folder's teams.yaml),
-- re-read when a team, membership or organization webhook asks.

-- One row per account Roster reads a directory for (an organisation, a
-- personal account, or the local folder as account 0).
create table directory_orgs (
    org_id bigint primary key,
    login text not null,
    installation_id bigint,
    -- A personal account has no teams: owners there are not checked.
    personal boolean not null default false,
    -- Owner checking is off for this account (GitHub refused to show its
    -- teams: the App lacks `members: read`), and since when.
    off_reason text,
    off_since timestamptz,
    -- The last read that failed, or a teams.yaml that could not be read
    -- (the directory is kept as it was).
    read_error text,
    teams_read_at timestamptz,
    members_read_at timestamptz,
    -- Asked by a webhook: read the teams / the members again.
    teams_requested_at timestamptz,
    members_requested_at timestamptz,
    -- A replica reading this account holds it until then.
    claimed_until timestamptz
);

create index directory_orgs_requested on directory_orgs (org_id)
    where teams_requested_at is not null or members_requested_at is not null;

-- Every login an account had: `@oldname/team` resolves after a rename.
create table directory_org_logins (
    org_id bigint not null references directory_orgs (org_id) on delete cascade,
    login_lower text not null,
    primary key (org_id, login_lower)
);

create table directory_teams (
    org_id bigint not null references directory_orgs (org_id) on delete cascade,
    team_id bigint not null,
    slug text not null,
    name text not null,
    parent_id bigint,
    secret boolean not null default false,
    -- Set when a complete read no longer finds the team; it is kept, so
    -- that owners naming it show as deleted rather than unknown.
    deleted_at timestamptz,
    seen_at timestamptz not null default now(),
    primary key (org_id, team_id)
);

-- Every slug a team had: an owner naming an old slug is `renamed`.
create table directory_team_slugs (
    org_id bigint not null references directory_orgs (org_id) on delete cascade,
    slug_lower text not null,
    team_id bigint not null,
    primary key (org_id, slug_lower)
);

create table directory_members (
    org_id bigint not null references directory_orgs (org_id) on delete cascade,
    user_id bigint not null,
    login text not null,
    seen_at timestamptz not null default now(),
    primary key (org_id, user_id)
);

create index directory_members_login on directory_members (org_id, lower(login));
