-- When an observation of the repository (a read of GitHub, or a push
-- decided without one) was last applied. A listing's prefetched answer read
-- before this time is older than what the registry holds, and is read
-- afresh instead of applied.
alter table repositories add column observed_at timestamptz;
