PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE schema_version (
	version INTEGER NOT NULL, 
	applied_at DATETIME NOT NULL, 
	PRIMARY KEY (version)
);
INSERT INTO schema_version VALUES(1,'2026-12-02 17:26:29.578528');
CREATE TABLE samples (
	id INTEGER NOT NULL, 
	study VARCHAR(128) NOT NULL, 
	dag_id VARCHAR(250) NOT NULL, 
	run_id VARCHAR(250) NOT NULL, 
	task_id VARCHAR(250) NOT NULL, 
	map_index INTEGER NOT NULL, 
	try_number INTEGER NOT NULL, 
	spec_hash VARCHAR(64) NOT NULL, 
	package_version VARCHAR(64) NOT NULL, 
	server_flavor VARCHAR(32), 
	server_version VARCHAR(128), 
	variables_hash VARCHAR(64), 
	host_hash VARCHAR(64), 
	dataset_id VARCHAR(64), 
	recorded_at DATETIME NOT NULL, 
	metric VARCHAR(128) NOT NULL, 
	value FLOAT, 
	unit VARCHAR(32) NOT NULL, 
	status VARCHAR(32) NOT NULL, 
	metadata TEXT NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO samples VALUES(1,'tpch_bka_study','tpch_bka_study','manual__2026-12-01T10:00:00+00:00','measure_point',3,1,'a1b2c3d4e5f60718','3caca7d00000','mariadb','10.11.14-MariaDB-0+deb12u2','0f0e0d0c0b0a0908','1122334455667788','tpch-sf0.01-abcdef0123456789','2026-12-02 17:26:29.583303','client_seconds',0.1233999999999999958,'s','ok','{"cache": "cold", "checksum": "deadbeef00112233", "order": 2, "point": "bka=on join_buffer_size=6M mrr_buffer_size=6M cache=cold", "query": "q03_bka", "repetition": 0, "seed": 11, "status": "ok", "swept": {"bka": true}}');
INSERT INTO samples VALUES(2,'tpch_bka_study','tpch_bka_study','manual__2026-12-01T10:00:00+00:00','measure_point',3,1,'a1b2c3d4e5f60718','3caca7d00000','mariadb','10.11.14-MariaDB-0+deb12u2','0f0e0d0c0b0a0908','1122334455667788','tpch-sf0.01-abcdef0123456789','2026-12-02 17:26:29.583303','Innodb_buffer_pool_reads',412.0,'count','ok','{"cache": "cold", "checksum": "deadbeef00112233", "order": 2, "point": "bka=on join_buffer_size=6M mrr_buffer_size=6M cache=cold", "query": "q03_bka", "repetition": 0, "seed": 11, "status": "ok", "swept": {"bka": true}}');
INSERT INTO samples VALUES(3,'tpch_bka_study','tpch_bka_study','manual__2026-12-01T10:00:00+00:00','measure_point',3,1,'a1b2c3d4e5f60718','3caca7d00000','mariadb','10.11.14-MariaDB-0+deb12u2','0f0e0d0c0b0a0908','1122334455667788','tpch-sf0.01-abcdef0123456789','2026-12-02 17:26:29.583303','Innodb_rows_read',NULL,'count','absent','{"cache": "cold", "checksum": "deadbeef00112233", "order": 2, "point": "bka=on join_buffer_size=6M mrr_buffer_size=6M cache=cold", "query": "q03_bka", "repetition": 0, "seed": 11, "status": "ok", "swept": {"bka": true}}');
INSERT INTO samples VALUES(4,'tpch_bka_study','tpch_bka_study','manual__2026-12-01T10:00:00+00:00','measure_point',3,1,'a1b2c3d4e5f60718','3caca7d00000','mariadb','10.11.14-MariaDB-0+deb12u2','0f0e0d0c0b0a0908','1122334455667788','tpch-sf0.01-abcdef0123456789','2026-12-02 17:26:29.583303','os_cpu_user_pct',41.5,'pct','ok','{"cache": "cold", "checksum": "deadbeef00112233", "order": 2, "point": "bka=on join_buffer_size=6M mrr_buffer_size=6M cache=cold", "query": "q03_bka", "repetition": 0, "seed": 11, "status": "ok", "swept": {"bka": true}}');
INSERT INTO samples VALUES(5,'tpch_bka_study','tpch_bka_study','manual__2026-12-01T10:00:00+00:00','validate',-1,1,'a1b2c3d4e5f60718','3caca7d00000','mariadb','10.11.14-MariaDB-0+deb12u2','0f0e0d0c0b0a0908','1122334455667788','tpch-sf0.01-abcdef0123456789','2026-12-02 17:26:29.609586','noise_flags',0.0,'count','ok','{"flags": []}');
CREATE TABLE validations (
	id INTEGER NOT NULL, 
	study VARCHAR(128) NOT NULL, 
	dag_id VARCHAR(250) NOT NULL, 
	run_id VARCHAR(250) NOT NULL, 
	task_id VARCHAR(250) NOT NULL, 
	map_index INTEGER NOT NULL, 
	try_number INTEGER NOT NULL, 
	spec_hash VARCHAR(64) NOT NULL, 
	package_version VARCHAR(64) NOT NULL, 
	server_flavor VARCHAR(32), 
	server_version VARCHAR(128), 
	variables_hash VARCHAR(64), 
	host_hash VARCHAR(64), 
	dataset_id VARCHAR(64), 
	recorded_at DATETIME NOT NULL, 
	suite VARCHAR(128) NOT NULL, 
	success BOOLEAN NOT NULL, 
	statistics TEXT NOT NULL, 
	failures TEXT NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO validations VALUES(1,'tpch_bka_study','tpch_bka_study','manual__2026-12-01T10:00:00+00:00','validate',-1,1,'a1b2c3d4e5f60718','3caca7d00000','mariadb','10.11.14-MariaDB-0+deb12u2','0f0e0d0c0b0a0908','1122334455667788','tpch-sf0.01-abcdef0123456789','2026-12-02 17:26:29.609586','tpch_bka_study',1,'{"checks": 12}','[]');
CREATE TABLE server_snapshots (
	variables_hash VARCHAR(64) NOT NULL, 
	server_flavor VARCHAR(32) NOT NULL, 
	server_version VARCHAR(128) NOT NULL, 
	variables TEXT NOT NULL, 
	first_seen DATETIME NOT NULL, 
	PRIMARY KEY (variables_hash)
);
INSERT INTO server_snapshots VALUES('d76cf995b16cd235','mariadb','10.11.14-MariaDB-0+deb12u2','{"innodb_buffer_pool_size": "67108864"}','2026-12-02 17:26:29.595358');
CREATE TABLE host_snapshots (
	host_hash VARCHAR(64) NOT NULL, 
	facts TEXT NOT NULL, 
	first_seen DATETIME NOT NULL, 
	PRIMARY KEY (host_hash)
);
INSERT INTO host_snapshots VALUES('7f04896bee56efce','{"cpu_count": 2, "kernel": "Linux 6.1"}','2026-12-02 17:26:29.602758');
CREATE TABLE datasets (
	dataset_id VARCHAR(64) NOT NULL, 
	generator VARCHAR(64) NOT NULL, 
	generator_version VARCHAR(64) NOT NULL, 
	scale_factor FLOAT NOT NULL, 
	manifest TEXT NOT NULL, 
	first_seen DATETIME NOT NULL, 
	PRIMARY KEY (dataset_id)
);
CREATE INDEX ix_samples_task ON samples (dag_id, run_id, task_id, map_index);
CREATE INDEX ix_validations_task ON validations (dag_id, run_id, task_id, map_index);
COMMIT;
