-- The delivery log keeps one order, newest first (`deliveries_newest`),
-- and no longer a second one per repository: every delivery paid for that
-- index's entry (about a sixth of the database's work per delivery at
-- full intake: docs/performance.md), for a list asked for rarely. A list
-- filtered by repository now walks the newest-first order; the log holds
-- at most 100,000 rows (its cap), which such a list reads in about 20 ms
-- at worst.
drop index if exists deliveries_repo_newest;
