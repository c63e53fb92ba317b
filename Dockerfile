# syntax=docker/dockerfile:1
# The tminus container image (issue 46; docs/install.md "Container image").
#
#   docker build -t tminus .
#   docker run --rm --user "$(id -u)" -v "$PWD:/work" tminus run suites/
#
# Stages: `builder` compiles with the Rust version Cargo.toml's
# rust-version names (so the image proves that version still builds);
# `runtime-base` is Debian slim with CA certificates, a non-root numeric
# user, WORKDIR /work and ENTRYPOINT ["tminus"]; `runtime` (the default, last
# stage) adds the built binary. `prebuilt` packs a binary built elsewhere
# (`--target prebuilt` with `tminus` in the build context's root), which is
# how dist/smoke-image.sh tests this file on a machine that cannot pull the
# Rust image.

ARG RUST_VERSION=1.88
ARG DEBIAN_RELEASE=bookworm
# The runtime's base; dist/smoke-image.sh gives a local Debian root
# filesystem here, since it cannot pull.
ARG RUNTIME_BASE=docker.io/library/debian:bookworm-slim

FROM docker.io/library/rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS builder
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --locked --release --bin tminus \
    && install -D -m 0755 target/release/tminus /out/tminus

FROM ${RUNTIME_BASE} AS runtime-base
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="tminus" \
      org.opencontainers.image.description="Certifies HTTP integrations before launch: idempotency, rate limits, webhooks, trace correlation and burst load" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/owner/tminus" \
      org.opencontainers.image.documentation="https://github.com/owner/tminus/blob/main/docs/install.md" \
      org.opencontainers.image.base.name="docker.io/library/debian:${DEBIAN_RELEASE}-slim"
# CA certificates: targets, token endpoints and --cacert-less https need the
# system roots. A base that already carries them (the smoke test's local
# root filesystem, which has no network to fetch them) skips apt.
RUN if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
    && test -s /etc/ssl/certs/ca-certificates.crt \
    && mkdir -p /work /usr/share/tminus \
    && chown 65532:65532 /work
COPY suites /usr/share/tminus/suites
# A numeric user, so Kubernetes' runAsNonRoot can verify it without
# /etc/passwd; `docker run --user "$(id -u)"` replaces it to write reports
# into a mounted folder as its owner.
USER 65532:65532
WORKDIR /work
ENV HOME=/tmp
ENTRYPOINT ["tminus"]
CMD ["--help"]

FROM runtime-base AS prebuilt
COPY --chmod=0755 tminus /usr/local/bin/tminus

FROM runtime-base AS runtime
COPY --from=builder /out/tminus /usr/local/bin/tminus
