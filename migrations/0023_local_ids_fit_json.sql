-- A local folder's repository id (the `dir:` source) was a 64-bit hash,
-- beyond 2^53, the largest whole number a JSON reader in JavaScript holds
-- exactly. It is now a hash between 2^50 and 2^53 (src/source/dir/mod.rs:
-- 2^50 + the first 8 bytes of sha256('local/' || folder), big-endian,
-- modulo 2^53 - 2^50). This moves every local row written before to its
-- new id. GitHub's ids are far below 2^50 and are not touched. Running it
-- again changes nothing.

-- Entries and events follow their repository's id from now on.
alter table entries
    drop constraint entries_repo_id_fkey,
    add constraint entries_repo_id_fkey foreign key (repo_id)
        references repositories (id) on delete cascade on update cascade;
alter table events
    drop constraint events_repo_id_fkey,
    add constraint events_repo_id_fkey foreign key (repo_id)
        references repositories (id) on delete cascade on update cascade;

create temporary table local_id_moves as
select r.id as old_id,
       (1125899906842624 + h.n % (9007199254740992 - 1125899906842624))::bigint as new_id
from repositories r,
     lateral (
         select sum(get_byte(sha256(convert_to('local/' || r.name, 'UTF8')), i)::numeric
                    * (256::numeric ^ (7 - i))) as n
         from generate_series(0, 7) as i
     ) h
where r.id >= 1125899906842624;

delete from local_id_moves where new_id = old_id;

update repositories r set id = m.new_id from local_id_moves m where r.id = m.old_id;
update queue q set repo_id = m.new_id from local_id_moves m where q.repo_id = m.old_id;
update check_requests c set repo_id = m.new_id from local_id_moves m where c.repo_id = m.old_id;
update check_runs c set repo_id = m.new_id from local_id_moves m where c.repo_id = m.old_id;
-- The change log keeps the repository's id, and so does each version of
-- an entry it holds (`before`, `after`), which the feed serves as JSON.
update changes c
set repo_id = m.new_id,
    before = case when c.before ? 'repo_id'
                  then jsonb_set(c.before, '{repo_id}', to_jsonb(m.new_id)) else c.before end,
    after = case when c.after ? 'repo_id'
                 then jsonb_set(c.after, '{repo_id}', to_jsonb(m.new_id)) else c.after end
from local_id_moves m
where c.repo_id = m.old_id;

drop table local_id_moves;
