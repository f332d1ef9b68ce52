"""Alembic environment for the results store: always run programmatically by
``mysqlbench.results.store.migrate`` on a connection it hands over (no alembic.ini, no URL here)."""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
