# A benchmark host for docker-compose.yaml: MariaDB (the server under test), sysbench and sysstat
# (the tools the measuring tasks run here over SSH), and sshd with the host key from docker/ssh/host
# (pinned in the workers' SSH connection). The workers log in as root with their key only: this
# container is the benchmark machine, whose server they restart and whose page cache they drop.
# BASE_IMAGE: Debian 12 unless a build says otherwise (the compose test's own bookworm base).
ARG BASE_IMAGE=debian:12
FROM ${BASE_IMAGE}

RUN apt-get update \
 && apt-get install -y --no-install-recommends mariadb-server mariadb-client sysbench sysstat openssh-server \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /run/sshd
COPY docker/benchhost/restart-mariadb docker/benchhost/entrypoint /usr/local/bin/
COPY docker/benchhost/benchmark.cnf /etc/mysql/mariadb.conf.d/90-benchmark.cnf
RUN chmod 0755 /usr/local/bin/restart-mariadb /usr/local/bin/entrypoint
EXPOSE 22 3306
ENTRYPOINT ["/usr/local/bin/entrypoint"]
