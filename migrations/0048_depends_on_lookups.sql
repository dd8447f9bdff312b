-- Who depends on a name is asked of `entries_depends_on` one name at a
-- time, up to 20,000 names for one graph (docs/contract.md#relations). A
-- GIN index's pending list is scanned whole by every lookup: with it, a
-- lookup took 1.6 ms instead of 3 µs until a vacuum merged the list. So
-- entries go into the index when written, and what is pending now is merged.
alter index entries_depends_on set (fastupdate = off);
select gin_clean_pending_list('entries_depends_on'::regclass);
