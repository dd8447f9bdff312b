-- Dashboard sessions ended by signing out (SPEC §8). A session is a signed
-- cookie the server does not store; signing out records its id here until
-- the cookie would have expired anyway, so that every replica refuses it.
-- Rows past `expires_at` are pruned at each sign-out: the table holds at
-- most the sign-outs of one session's lifetime (12 hours).
create table revoked_sessions (
    id         text primary key,
    expires_at timestamptz not null
);
