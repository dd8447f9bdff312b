-- The setup address replicas in setup mode print: its token, sealed with
-- ROSTER_SECRET_KEY, so that every replica prints the same one (a second
-- replica's start no longer retires the first one's address). One such row
-- at most; the tokens a setup page hands to a browser in place of a used
-- one ("start over") keep `sealed` null and are never printed.
alter table setup_tokens add column sealed bytea;
create unique index setup_tokens_one_logged on setup_tokens ((true)) where sealed is not null;
