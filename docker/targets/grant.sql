-- The benchmark user may create and drop its schemas and set globals on this marked target.
GRANT ALL PRIVILEGES ON *.* TO 'mysqlbench'@'%';
