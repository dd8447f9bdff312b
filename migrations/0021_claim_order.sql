-- Claim order: work that a listing alone asked for (trigger 1) is claimed
-- after every other ready row, oldest first in each group; the index gives
-- both orders (and one claim in ten takes the oldest listing row).
CREATE INDEX queue_claim_order ON queue ((trigger = 1), not_before);
DROP INDEX queue_not_before;
