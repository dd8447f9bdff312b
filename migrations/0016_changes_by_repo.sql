-- A reconcile asks for the name its repository had in the newest change
-- it logged (a rename is then logged as a change of each entry's `repo`).
create index changes_repo on changes (repo_id, seq desc);
