-- A reconcile that repeats the previous event of its repository (same kind,
-- same message) updates that event's time and counts it, instead of adding
-- a row (SPEC §8): a file resynced a thousand times is one event, ×1000.
alter table events add column count bigint not null default 1 check (count >= 1);
