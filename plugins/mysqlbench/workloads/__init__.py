"""Workloads: each a self-contained unit (dataset, schema, load, checks) behind one small interface."""
