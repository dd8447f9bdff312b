-- The GitHub App registered through the setup page (the manifest flow).
-- One row at most. Its secrets (private key, webhook secret, client
-- credentials) are sealed with ROSTER_SECRET_KEY: `sealed` is a 12-byte
-- nonce followed by the ChaCha20-Poly1305 ciphertext of their JSON.
create table setup_app (
    one boolean primary key default true check (one),
    app_id bigint not null,
    slug text not null,
    html_url text not null,
    sealed bytea not null,
    created_at timestamptz not null default now()
);

-- Setup addresses logged by replicas in setup mode: the SHA-256 of each
-- token (the token itself is only in the log). Valid until an App is stored.
create table setup_tokens (
    token_hash bytea primary key,
    created_at timestamptz not null default now()
);

-- The `state` of each manifest form handed out: what it was issued for,
-- and whether GitHub's callback has used it (single use, one hour).
create table setup_states (
    nonce text primary key,
    org text not null,
    public_url text not null,
    created_at timestamptz not null default now(),
    used_at timestamptz
);
