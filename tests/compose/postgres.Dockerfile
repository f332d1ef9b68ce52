# postgres:16's interface (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, PGDATA, pg_isready) on
# Debian's PostgreSQL 15: a stand-in for the official image, which cannot be pulled here
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY tests/compose/postgres-entrypoint /usr/local/bin/docker-entrypoint
RUN chmod 0755 /usr/local/bin/docker-entrypoint
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/docker-entrypoint"]
