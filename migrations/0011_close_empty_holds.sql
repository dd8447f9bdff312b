-- Holds that no repository points at any more are over (SPEC §3): earlier
-- versions could leave one active when its last two repositories came back
-- at the same moment. Close those; later ones close themselves.
update holds h set cleared_at = now()
where h.released_at is null and h.cleared_at is null
  and not exists (select 1 from repositories r where r.hold_id = h.id);
