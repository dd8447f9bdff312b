-- A push that touched some project files re-reads only those (SPEC §13,
-- §11): the queue row carries what the push said (its `before`, `after`
-- and the touched matching paths) until a trigger that asks for a full
-- read, or a push that does not follow it, drops it.
alter table queue add column touched jsonb;

-- What two pushes to one repository touched, when the second follows the
-- first (its `before` is the first's `after`) and together they touched at
-- most 100 project files; null (a full read) otherwise.
create function touched_then(first jsonb, second jsonb) returns jsonb
language sql immutable as $$
    select case when first->>'after' = second->>'before' then (
        select case when count(*) <= 100 then jsonb_build_object(
            'before', first->'before',
            'after', second->'after',
            'paths', coalesce(jsonb_agg(p order by p), '[]'::jsonb))
        end
        from (select jsonb_array_elements_text(first->'paths')
              union
              select jsonb_array_elements_text(second->'paths')) as u(p))
    end
$$;
