# threadsmith in a container: a static binary on Debian slim, with git (the
# bot's and the agent's) and the tools an agent usually reaches for.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t threadsmith .
#   docker run -d --name threadsmith --restart unless-stopped --stop-timeout 40 \
#     --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined \
#     -v "$PWD/config.yaml:/etc/threadsmith/config.yaml:ro" -v threadsmith-data:/data \
#     -e OPENAI_API_KEY -e SLACK_BOT_TOKEN -e SLACK_APP_TOKEN \
#     threadsmith
#
# VERSION is what `threadsmith -version` and the start line say (the build
# context has no .git to read it from; "devel" without it). --stop-timeout
# gives the bot its shutdown_grace (30s) and some more before docker stop
# kills it (Docker's default is 10s); raise both together.
#
# Its config.yaml wants data_dir: /data (the volume). The HEALTHCHECK asks
# /healthz on the config's http.listen (deploy/healthcheck.sh); without
# http.listen it has nothing to ask and says healthy.
#
# The image holds git and a shell, no language toolchain: the agent runs what
# the image has. deploy/toolchains.Dockerfile adds Go, Python, Node and a C
# compiler on top of it (docker build -f deploy/toolchains.Dockerfile .).
#
# The sandbox of the agent's commands is made of user, mount and PID
# namespaces, a fresh /proc and Landlock, created by the unprivileged bot;
# Docker's defaults forbid each of those steps, hence the three options:
#   seccomp=unconfined    Docker's seccomp profile refuses unshare(CLONE_NEWUSER)
#                         and mount without CAP_SYS_ADMIN (a custom profile that
#                         allows unshare, mount, umount2, pivot_root and setns
#                         does as well);
#   apparmor=unconfined   docker-default denies mount (hosts with AppArmor);
#   systempaths=unconfined  Docker masks parts of /proc (kcore, keys, sys…), and
#                         the kernel lets a user namespace mount a new /proc only
#                         where no such mask covers the old one.
# With sandbox.network: true the sandbox's network is slirp4netns (installed below), which
# needs the tun device: add --device /dev/net/tun (mode 0666 on the host, as Debian makes it).
# No capability and no --privileged are needed; the container still runs as an
# unprivileged user. On hosts that restrict unprivileged user namespaces
# (Ubuntu 23.10+, kernel.apparmor_restrict_unprivileged_userns=1) allow them
# for the container's runtime or set the sysctl to 0. Without a sandbox the bot
# refuses to start (exit 2) unless the config says sandbox.mode: none.

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# A static binary (SQLite is pure Go); the version comes from the build
# argument, since the build context has no .git to read it from.
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/threadsmith ./cmd/bot

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git openssh-client curl tini slirp4netns \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin threadsmith \
 && mkdir -p /data /etc/threadsmith && chown threadsmith:threadsmith /data
COPY --from=build /out/threadsmith /usr/local/bin/threadsmith
COPY deploy/healthcheck.sh /usr/local/bin/threadsmith-healthcheck
USER threadsmith
WORKDIR /data
VOLUME /data
EXPOSE 9090
# tini reaps whatever the bot's children leave behind and passes SIGTERM on;
# the bot then shuts down within shutdown_grace (give docker stop as long).
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/threadsmith"]
CMD ["-config", "/etc/threadsmith/config.yaml"]
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD ["/usr/local/bin/threadsmith-healthcheck"]
