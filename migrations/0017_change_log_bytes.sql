-- The change log bounded by bytes (docs/architecture.md, "The change
-- log"): each change knows its size as stored and as the feed shows it, a
-- changed entry keeps only the old values of the fields that moved, and a
-- notification target that fell too far behind is marked stalled.

alter table changes
    -- Bytes the change takes as stored: its JSON and its text columns.
    add column bytes integer not null default 0 check (bytes >= 0),
    -- Bytes of the change as the feed and the history show it (with
    -- `before` whole again): pages are cut by it.
    add column shown_bytes integer not null default 0 check (shown_bytes >= 0);

-- A `changed` row keeps `after` whole and, in `before`, only the fields
-- whose value differs (their old values): `before` is `after` with them put
-- back. Every entry carries every field, so no field is missing from one side.
update changes c
set before = coalesce(
        (select jsonb_object_agg(b.key, b.value)
         from jsonb_each(c.before) b
         where c.after -> b.key is distinct from b.value),
        '{}'::jsonb)
where kind = 'changed';

update changes
set bytes = 64 + octet_length(name) + octet_length(repo) + octet_length(cause)
            + coalesce(octet_length(sha), 0)
            + coalesce(octet_length(before::text), 0)
            + coalesce(octet_length(after::text), 0);

update changes
set shown_bytes = bytes + case when kind = 'changed' then octet_length(after::text) else 0 end;

alter table notify_targets
    -- Set when the target fell more than ROSTER_HISTORY_MAX_BYTES behind:
    -- its backlog was dropped and the seqs it missed wait to be announced
    -- in one `gap` notification; cleared once the target acknowledged it.
    add column stalled_at timestamptz,
    add column gap_first bigint,
    add column gap_last bigint,
    add constraint notify_targets_gap check (
        (gap_first is null) = (gap_last is null) and (gap_first is null or gap_first <= gap_last));
