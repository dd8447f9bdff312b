-- What each installation granted the App (its permissions and the events it
-- delivers), as GitHub's list of installations says, so that the dashboard
-- names what Roster asks for in app.yml and an installation lacks
-- (SPEC §12: existing registrations do not change when app.yml does).
create table installation_grants (
    installation_id bigint primary key,
    account text not null,
    organization boolean not null,
    app_slug text,
    -- permission name -> read | write | admin
    permissions jsonb not null,
    events text[] not null,
    listed_at timestamptz not null default now()
);
