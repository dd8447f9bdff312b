-- The last walk of a repository's Git tree for project file patterns with
-- `**` (SPEC §13): the root tree oid walked, the patterns it was walked
-- for, and the matching entries it found. A listing whose head shows the
-- same root tree reuses the entries instead of asking the Git trees API.
create table walked_trees (
    repo_id bigint primary key,
    patterns text not null,
    tree_oid text not null,
    entries jsonb not null,
    walked_at timestamptz not null default now()
);
