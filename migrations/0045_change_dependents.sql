-- Relations (docs/contract.md#relations): a `removed` change records who
-- depended on the removed entry at that moment, by name (the first 1,000
-- in name order), and how many did.
alter table changes
    add column dependents text[] collate "C",
    add column dependents_total integer check (dependents_total >= 0);
