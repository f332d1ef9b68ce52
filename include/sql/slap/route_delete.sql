-- A delete by id in split tables (as route_select).
CREATE PROCEDURE {procedure}(vid bigint)
BEGIN
  DECLARE part int DEFAULT MOD(vid, {parts});
  -- branch: IF part = {remainder} THEN DELETE FROM {table} WHERE id = vid; END IF;
END
