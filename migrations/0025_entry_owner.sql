-- What each entry's owner was found to be in the organisation's directory
-- (SPEC §12): `owner` keeps the file's text, so an unchanged file never
-- records a change; the resolved team is kept beside it by GitHub's id, so
-- a renamed team is followed and a deleted one flagged.
alter table entries
    add column owner_status text not null default 'unchecked'
        check (owner_status in ('team', 'member', 'unknown', 'renamed', 'deleted', 'unchecked')),
    -- GitHub's id of the team the owner names (current, renamed or deleted).
    add column owner_team_id bigint,
    -- That team's slug now, or the member's login.
    add column owner_slug text check (char_length(owner_slug) <= 200);

-- A rename or deletion finds the entries of a team by its id.
create index entries_owner_team on entries (owner_team_id) where owner_team_id is not null;
