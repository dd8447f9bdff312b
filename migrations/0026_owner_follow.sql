-- Following owners by id (SPEC §12): when an account's directory changes in
-- a way that can move an owner's resolution (a read of its teams or members
-- finished, its login changed, owner checking turned off or on), its
-- entries' resolved owners are brought up to date by the registry, and a
-- team's rename or deletion is logged as a change of each entry it owns.
alter table directory_orgs
    -- The last change that can move an owner's resolution.
    add column changed_at timestamptz not null default clock_timestamp(),
    -- The change the entries' owners were last brought up to date with.
    add column owners_followed_at timestamptz;

create function directory_orgs_changed() returns trigger language plpgsql as $$
begin
    if (old.login, old.personal, old.off_reason, old.teams_read_at, old.members_read_at)
       is distinct from
       (new.login, new.personal, new.off_reason, new.teams_read_at, new.members_read_at) then
        new.changed_at := clock_timestamp();
    end if;
    return new;
end
$$;

create trigger directory_orgs_changed before update on directory_orgs
    for each row execute function directory_orgs_changed();

create index directory_orgs_to_follow on directory_orgs (changed_at)
    where owners_followed_at is null or owners_followed_at < changed_at;
