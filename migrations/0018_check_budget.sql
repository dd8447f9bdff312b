-- Checks on GitHub, hardened: what a check may name, and how often a pull
-- request is evaluated.

-- Whether a repository is public, as the webhooks asking for its checks
-- say it. A public repository's check names only owners known to be public.
create table repo_visibility (
    repo_id bigint primary key,
    public boolean not null,
    seen_at timestamptz not null default now()
);

-- Whether the checked repository is public; true until a payload says
-- otherwise, so that an unknown reader sees no other repository's name.
alter table check_requests add column public boolean not null default true;

-- When each pull request (or lone commit) was last evaluated: a new
-- request for it waits until a minute after that.
create table check_evaluations (
    repo_id bigint not null,
    key text not null,
    at timestamptz not null default now(),
    primary key (repo_id, key)
);
