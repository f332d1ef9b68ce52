-- Seed 004's p_hash_select: the statement goes to user01..userNN by MOD(id, N) (0 -> the last
-- table). The workload repeats the branch line once per table.
CREATE PROCEDURE {procedure}(vid bigint)
BEGIN
  DECLARE part int DEFAULT MOD(vid, {parts});
  -- branch: IF part = {remainder} THEN SELECT * FROM {table} WHERE id = vid; END IF;
END
