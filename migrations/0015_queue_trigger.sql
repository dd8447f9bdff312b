-- What asked for each pending run (a push, a resync, a listing...), so the
-- change log can say why an entry changed. A code, ranked: when several
-- triggers wait for one run the largest is kept (`controller::Trigger`).
alter table queue
    add column trigger smallint not null default 0 check (trigger between 0 and 4);
