-- The seed's step: dss.ddl creates upper-case tables, the queries use lower case. One atomic RENAME.
RENAME TABLE REGION TO region, NATION TO nation, PART TO part, SUPPLIER TO supplier,
  PARTSUPP TO partsupp, CUSTOMER TO customer, ORDERS TO orders, LINEITEM TO lineitem;
