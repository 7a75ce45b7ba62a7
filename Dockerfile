# syntax=docker/dockerfile:1
# The sluice container image:  docker build -t sluice .   (compose/docker-compose.yml builds it)
#   docker run --rm -v "$PWD/sluice.toml:/etc/sluice/sluice.toml:ro" -p 8089:8089 sluice
# The configuration is read from /etc/sluice/sluice.toml (or SLUICE_CONFIG); SLUICE_* variables
# override it (see examples/full.toml). The API and /metrics listen on api.listen: set it to
# "0.0.0.0:8089" in a container.

# Build: the rdkafka crate is built with features cmake-build, ssl and zstd (and libz by
# default), so librdkafka is compiled from source with cmake against the system's OpenSSL and
# zlib, and zstd-sys compiles zstd into the binary; without the curl feature librdkafka needs
# no libcurl. mysql_async, reqwest and openssl use the same OpenSSL.
ARG RUST_VERSION=1.95
FROM rust:${RUST_VERSION}-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake build-essential pkg-config libssl-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
COPY examples ./examples
COPY schemas ./schemas
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin sluice \
    && install -D -m 0755 target/release/sluice /out/sluice \
    && strip --strip-debug /out/sluice

# Run: Debian slim with the shared libraries the binary links (OpenSSL 3, zlib) and the CA
# certificates (TLS to the source, Kafka or the registry with the system's roots).
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libssl3 zlib1g \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 sluice \
    && useradd --system --uid 10001 --gid sluice --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin sluice
COPY --from=build /out/sluice /usr/local/bin/sluice
COPY examples/full.toml /usr/share/doc/sluice/full.toml
USER 10001:10001
EXPOSE 8089
ENTRYPOINT ["sluice"]
CMD ["run", "--config", "/etc/sluice/sluice.toml"]
