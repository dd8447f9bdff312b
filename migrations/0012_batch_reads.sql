-- Batched reads from GitHub, and waiting out a spent rate limit.

alter table repositories
    -- GitHub's GraphQL node id: one query reads up to 100 repositories by
    -- it (`nodes(ids:)`), and unlike the name it survives renames and
    -- transfers. Learnt from webhooks and from GitHub's answers.
    add column node_id text check (node_id <> '');

-- A repository waiting for GitHub's rate limit to reset stays `pending`
-- and says what it waits for ("waiting for GitHub's rate limit, resets at
-- 14:05:00 UTC"); it also keeps the conflicts it had, since its entries
-- are kept as they were.
alter table repositories
    drop constraint repositories_error_matches_status,
    add constraint repositories_error_matches_status check (
        (status in ('invalid', 'conflict', 'error', 'removed')) = (error is not null)
        or (status = 'pending' and error is not null)
    ),
    drop constraint repositories_conflicts_match_status,
    add constraint repositories_conflicts_match_status check (
        status not in ('synced', 'no_file', 'removed')
        or cardinality(conflicts) = 0
    );
