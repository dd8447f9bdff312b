-- Pushes that cannot have changed the project file cost no GitHub request:
-- a `synced` or `no_file` repository records what decided its state, so
-- that a push's payload alone can move its recorded commit.
alter table repositories
    -- What decided the recorded state: the project file pattern(s) and the
    -- rules' version (and room for later settings). A push is decided
    -- without a read only while it is the current one.
    add column fingerprint text,
    -- Git's blob id of the project file the last reconcile read (null
    -- without a readable file): a default-branch check run is posted only
    -- when it changes (or the status does).
    add column file_blob text;
