-- One trigger, one listing (docs/contract.md): each partition (an installation) a
-- listing found, and when. A listing that found an installation lists it
-- as it is then, so it has seen whatever the installation was created with:
-- an `installation` `created` delivery for it (late, redelivered, or sent
-- while that listing runs) asks for no other listing.
create table listed_partitions (
    partition text primary key,
    found_at  timestamptz not null
);
