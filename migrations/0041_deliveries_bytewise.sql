-- The delivery log's text keys compare byte by byte. The database's own
-- collation (often C.UTF-8 or en_US.UTF-8) makes each comparison in the
-- log's three indexes a call to the C library's strcoll, a tenth or more of
-- each row's insert; ids and "owner/name" are ASCII, where both orders agree.
alter table deliveries
    alter column id type text collate "C",
    alter column repo type text collate "C";
