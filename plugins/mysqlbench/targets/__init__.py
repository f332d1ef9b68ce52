"""Servers under test: how to reach them (connections), what they are (flavor and version), and
how far we may control them (managed local instance, or external with no control)."""
