-- The database and role Roster runs as, on a PostgreSQL 13 or later, run
-- once by an administrator:
--
--   psql -h DB_HOST -U postgres -v ON_ERROR_STOP=1 -f deploy/postgres/create-database.sql
--
-- then set the role's password (kept out of this file and of shell history):
--
--   psql -h DB_HOST -U postgres -c '\password roster'
--
-- and DATABASE_URL=postgres://roster:PASSWORD@DB_HOST:5432/roster.
--
-- Roster needs no superuser: it owns its database, so `roster migrate` (or
-- the init container) creates the tables in it. Nobody else may connect.

create role roster login;

create database roster owner roster encoding 'UTF8' template template0;

revoke all on database roster from public;

-- Past the connection, every object Roster creates belongs to it.
\connect roster
revoke all on schema public from public;
alter schema public owner to roster;
