-- The durable work queue of repository ids (SPEC §1, DESIGN "Durable queue
-- in PostgreSQL"). Independent of the registry tables on purpose: no foreign
-- keys, so an id can be queued before the registry knows it.

CREATE TABLE queue (
    repo_id       bigint PRIMARY KEY,
    -- Not claimable before this (backoff after a failure).
    not_before    timestamptz NOT NULL DEFAULT now(),
    -- Failed attempts since the last success.
    attempts      integer NOT NULL DEFAULT 0,
    last_error    text,
    -- What the lister fetched with the id; NULL once a trigger without one
    -- is pending, so a worker never acts on a stale prefetch.
    hint          bytea,
    -- The claim (lease): all three set together, or all NULL.
    claimed_by    text,
    claim_token   text,
    claimed_until timestamptz,
    -- Enqueued while claimed: run again when the claim ends.
    rerun         boolean NOT NULL DEFAULT false,
    enqueued_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT queue_claim_whole CHECK (
        (claimed_by IS NULL) = (claim_token IS NULL)
        AND (claimed_by IS NULL) = (claimed_until IS NULL)
    ),
    CONSTRAINT queue_rerun_only_claimed CHECK (NOT rerun OR claimed_by IS NOT NULL)
);

CREATE INDEX queue_not_before ON queue (not_before);

-- Which replica runs the periodic listing: exactly one row.
CREATE TABLE listing_schedule (
    id              boolean PRIMARY KEY DEFAULT true CHECK (id),
    last_started_at timestamptz NOT NULL DEFAULT '-infinity',
    requested       boolean NOT NULL DEFAULT false
);

INSERT INTO listing_schedule DEFAULT VALUES;
