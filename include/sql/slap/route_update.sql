-- An update by id in split tables (as route_select).
CREATE PROCEDURE {procedure}(vid bigint, vtel int, vintro varchar(255))
BEGIN
  DECLARE part int DEFAULT MOD(vid, {parts});
  -- branch: IF part = {remainder} THEN UPDATE {table} SET tel = vtel, intro = vintro WHERE id = vid; END IF;
END
