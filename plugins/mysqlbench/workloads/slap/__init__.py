"""Seed 004: MyISAM vs InnoDB, one table vs hash partitions vs split tables, with mariadb-slap."""
