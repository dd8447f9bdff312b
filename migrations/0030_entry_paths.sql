-- Several project files per repository (SPEC §13): each entry remembers the
-- path of the file that declares it. Entries registered before came from
-- the one file at the repository's root.
alter table entries
    add column path text not null default 'project.yaml'
        check (path <> '' and octet_length(path) <= 4096);
