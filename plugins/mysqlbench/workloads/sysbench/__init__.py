"""sysbench 1.0.20 workloads: cpu, fileio and OLTP scripts (seed 003)."""
