-- Which replica reads GitHub's webhook delivery log to ask for the
-- redelivery of missed deliveries (SPEC §6): exactly one row, taken by
-- whoever moves `last_started_at` forward first.
create table redelivery_schedule (
    id              boolean primary key default true check (id),
    last_started_at timestamptz not null default '-infinity'
);

insert into redelivery_schedule default values;
