-- An insert into split tables: a new id from the sequence, then the row into the table its id
-- hashes to (as route_select).
CREATE PROCEDURE {procedure}(vname varchar(30), vsex tinyint, vbirthday datetime, vemail varchar(50), vtel int,
                             vintro varchar(255))
BEGIN
  DECLARE vid bigint;
  DECLARE part int;
  INSERT INTO {sequence} VALUES (NULL);
  SET vid = LAST_INSERT_ID();
  SET part = MOD(vid, {parts});
  -- branch: IF part = {remainder} THEN INSERT INTO {table} VALUES (vid, vname, vsex, vbirthday, vemail, vtel, vintro); END IF;
END
