"""The results store: every sample and validation with the lineage needed to reproduce it."""
