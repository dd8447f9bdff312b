-- One trigger, one listing (docs/contract.md): an `installation` delivery
-- that arrives while a listing has started but not yet found its
-- installations leaves the decision to that listing: the partition waits in
-- `awaited`, and when the listing records what it found (or fails first)
-- it asks for another listing only if one awaited was not found.
alter table listing_schedule
    add column awaited text[] not null default '{}',
    add column partitions_recorded_at timestamptz not null default '-infinity';
