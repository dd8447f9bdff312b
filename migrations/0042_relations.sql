-- Relations (docs/contract.md#relations): the projects an entry depends on, by name, and the
-- system it belongs to. Names are resolved when read, never stored as keys,
-- so a dependency may name a project that does not exist (yet).
alter table entries
    add column depends_on text[] collate "C" not null default '{}'
        check (cardinality(depends_on) <= 50),
    add column system text collate "C"
        check (system ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$');

-- Who depends on a name: `depends_on @> array[name]`.
create index entries_depends_on on entries using gin (depends_on);
create index entries_system on entries (system) where system is not null;
