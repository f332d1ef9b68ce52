"""Studies: a spec (YAML under include/configs/studies/, overridable from the trigger form) turned
into a DAG of sweep points by one factory."""
