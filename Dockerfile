# Roster's container image: `docker build -t roster .` at the repository root.
#
# Two stages. The builder compiles a release binary; the runtime image holds
# that binary, the CA bundle and nothing else. The dashboard's templates
# (askama) and stylesheet (include_str!) are compiled into the binary and the
# migrations are embedded by sqlx::migrate!, so the runtime image needs no
# files from the source tree.

# ---------------------------------------------------------------- builder ----
# The official Rust image on Debian 12. The slim variant already carries gcc
# and libc6-dev, which `ring` (TLS to GitHub through rustls) needs to compile
# its C and assembly parts; no OpenSSL headers are needed because nothing
# links OpenSSL. `1` follows the latest stable Rust, which satisfies the
# crate's rust-version; pin a full version (rust:1.X.Y-slim-bookworm) when
# builds must not change compiler on their own.
FROM rust:1-slim-bookworm AS builder

WORKDIR /build

# Dependencies first, in a layer of their own: it is rebuilt only when
# Cargo.toml or Cargo.lock change, not on every source edit. A placeholder
# library and binary let cargo compile every dependency without our code.
# Cargo refuses a manifest whose declared [[bench]], [[test]] or [[example]]
# file is missing, even for a plain build, so the awk program writes a
# placeholder for each one too; those stay for the real build below, since
# benches/ and tests/ are not part of the build context (.dockerignore).
# The library's manifest (src/Cargo.toml) and the test kit's (a workspace
# member, which cargo reads even when it builds only the binary) are copied
# too, with an empty library in place of each one's sources.
COPY Cargo.toml Cargo.lock build.rs ./
COPY src/Cargo.toml ./src/
COPY tests/support/Cargo.toml ./tests/support/
RUN echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs tests/support/lib.rs \
    && awk '/^\[\[(bench|test|example)\]\]/ { flush(); kind = $0; gsub(/[][]/, "", kind); name = ""; path = ""; next } \
            /^\[/ { flush(); next } \
            kind != "" && /^[ \t]*(name|path)[ \t]*=/ { match($0, /"[^"]*"/); value = substr($0, RSTART + 1, RLENGTH - 2); if ($0 ~ /^[ \t]*name/) name = value; else path = value } \
            END { flush() } \
            function flush() { if (kind == "") return; dir = kind == "bench" ? "benches" : kind == "test" ? "tests" : "examples"; print (path != "" ? path : dir "/" name ".rs"); kind = "" }' \
         Cargo.toml > /tmp/targets \
    && while read -r target; do mkdir -p "$(dirname "$target")" && echo 'fn main() {}' > "$target"; done < /tmp/targets \
    && cargo build --profile dist --locked \
    && rm -rf src

# Then the sources. Everything the build reads at compile time is here:
# src/ (code, and askama's settings in src/askama.toml), migrations/
# (include_str!), templates/ (askama) and static/ (include_str!). tests/ and
# benches/ are not needed for the binary.
COPY src ./src
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static

# `touch` gives the real entry points a newer mtime than the placeholders
# compiled above; otherwise cargo may believe the crate is up to date and
# ship the empty main. The build is the `dist` profile (release, with the
# program and its crates optimised as one; see Cargo.toml), and --locked
# refuses to drift from Cargo.lock.
# The commit the image is built from, for `roster --version` and
# `roster_build_info` (build.rs; the context has no .git):
# `docker build --build-arg ROSTER_REVISION=$(git rev-parse HEAD) .`
ARG ROSTER_REVISION=unknown
RUN touch src/main.rs src/lib.rs \
    && ROSTER_REVISION="$ROSTER_REVISION" cargo build --profile dist --locked \
    && install -D -m 0755 target/dist/roster /out/roster

# ---------------------------------------------------------------- runtime ----
# Same Debian release as the builder, so the glibc the binary was linked
# against is the one it runs on.
FROM debian:bookworm-slim

# ca-certificates only: rustls reads the system's trust store
# (rustls-native-certs) to verify api.github.com (or a GitHub Enterprise
# Server). No curl: see the HEALTHCHECK below. The apt lists are
# removed so they do not bloat the layer.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# A fixed, unprivileged user. The numeric uid (10001, above the range a
# distribution's own accounts use) lets Kubernetes' runAsNonRoot check the
# user without reading /etc/passwd, and matches deploy/kubernetes.
RUN groupadd --system --gid 10001 roster \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin roster

COPY --from=builder /out/roster /usr/local/bin/roster

# In a container Roster must listen on every interface, not the loopback
# default of a developer's machine. DATABASE_URL must be set: the image has
# no PostgreSQL binaries, so the private-database fallback cannot start (the
# server then stops with `error: DATABASE_URL: …`).
ENV ROSTER_LISTEN=0.0.0.0:8080
EXPOSE 8080

USER 10001:10001

# Liveness for plain Docker and Compose (Kubernetes ignores HEALTHCHECK and
# uses the probes in deploy/kubernetes instead). The slim image has no curl
# and installing it would add libcurl and its TLS and HTTP/2 libraries (about
# 10 MB and more packages to patch) for one local request. bash (part of
# every Debian base) can open a TCP socket through /dev/tcp, which is enough
# for one HTTP/1.0 request to /healthz; the port is taken from ROSTER_LISTEN
# so an overridden port is still probed.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${ROSTER_LISTEN##*:} && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]

# Exec form: roster is PID 1 and receives SIGTERM itself, so it can stop
# claiming work and let in-flight reconciles finish within its 20 s grace.
# `docker run roster migrate` or `docker run roster check project.yaml` run
# the other subcommands.
ENTRYPOINT ["/usr/local/bin/roster"]
CMD ["serve"]
