"""Servers under test: how to reach them (connections) and
how far we may control them (managed local instance, or external with no control)."""
