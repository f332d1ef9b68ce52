-- Ids for inserts into split tables: the application side of splitting a table is choosing the
-- table, so a new row's id comes from one sequence first (InnoDB, so concurrent clients do not
-- serialize on a table lock), then the row goes to the table its id hashes to.
CREATE TABLE {table} (
  id bigint NOT NULL AUTO_INCREMENT,
  PRIMARY KEY (id)
) ENGINE=InnoDB AUTO_INCREMENT={first_id};
