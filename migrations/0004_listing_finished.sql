-- When the last complete org-wide listing finished, for the dashboard
-- (SPEC §5): null until one has. A listing that failed part-way leaves it
-- unchanged, so the dashboard never calls a partial listing complete.
ALTER TABLE listing_schedule ADD COLUMN last_finished_at timestamptz;
