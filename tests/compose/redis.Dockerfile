# redis:7.2-bookworm's interface (redis-server on 6379, redis-cli for the health check) on Debian's
# Redis 7.0: a stand-in for the official image, which cannot be pulled here
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*
USER redis
WORKDIR /var/lib/redis
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
