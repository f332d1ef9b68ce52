-- Seed 004's user table (biguser / user01..user10 / puser / iuser / ibiguser), one statement per
-- table. The slap workload fills in {table} and {engine} from allow-listed values and
-- {partitioning} with "" or " PARTITION BY HASH (id) PARTITIONS <n>". utf8mb4 instead of the
-- seed's utf8 (an alias of utf8mb3 today).
CREATE TABLE {table} (
  id bigint NOT NULL AUTO_INCREMENT,
  username varchar(30) NOT NULL,
  sex tinyint NOT NULL,
  birthday datetime NOT NULL,
  email varchar(50) NOT NULL,
  tel int NOT NULL,
  intro varchar(255) NOT NULL,
  PRIMARY KEY (id)
) ENGINE={engine} DEFAULT CHARSET=utf8mb4{partitioning};
