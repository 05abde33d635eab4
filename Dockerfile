# syntax=docker/dockerfile:1
#
# sessionmedic in a minimal non-root image: a static binary on distroless, nothing else.
#
#   docker build -t sessionmedic --build-arg VERSION=$(git describe --tags --always) .
#
# Beside an app container "openclaw" that runs as 1000:1000 with its state in
# /home/app/.openclaw (a state dir for sessionmedic made first, owned by that user:
# install -d -o 1000 -g 1000 -m 0700 /srv/sessionmedic-state):
#
#   docker run -d --name sessionmedic --user 1000:1000 --pid container:openclaw \
#     --read-only --cap-drop ALL --security-opt no-new-privileges \
#     -v /home/app/.openclaw:/home/app/.openclaw \
#     -v "$PWD/policy.yaml:/etc/sessionmedic/policy.yaml:ro" \
#     -v /srv/sessionmedic-state:/var/lib/sessionmedic \
#     sessionmedic -config /etc/sessionmedic/policy.yaml
#
# Run it with the uid and gid of the app that owns the session files, so that healed files
# keep their owner, and in the app's PID namespace (--pid container:APP; shareProcessNamespace
# in Kubernetes): OpenClaw judges a lock holder alive with kill(pid, 0). Mount the session dir
# at the same path as in the app. Kubernetes: deploy/kubernetes/.
#
# CI has no container engine, and the base images cannot be pulled there, so this file is
# not built with docker. .ci/container-check builds it with .ci/dockerbuild instead: each
# instruction in order, the build stage's RUN lines as written (same flags, CGO_ENABLED=0)
# on the host's Go (the version this FROM names) chrooted, on the build context this
# .dockerignore leaves, every COPY source required, the final stage's files as a root file
# system; then it checks the ENTRYPOINT binary (static, -trimpath, VERSION), USER, the
# state dir's owner and mode and EXPOSE, and runs the ENTRYPOINT chrooted there as USER
# with the Kubernetes sidecar's args. What it cannot check is the base images themselves
# (golang's toolchain, distroless's files and its nonroot user 65532). An instruction
# .ci/dockerbuild does not know fails the check until it is taught.

# ---- build: native toolchain, cross-compiled for the target platform
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO_ENABLED=0: a static binary that needs no libc in the final image.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" \
      -o /out/sessionmedic ./cmd/sessionmedic
# The state dir, owner-only, for the image's default user (distroless nonroot, 65532); a pod's
# fsGroup or a mounted volume takes over when the container runs with another uid.
RUN install -d -m 0700 -o 65532 -g 65532 /out/state

# ---- final: no shell, no package manager, non-root
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sessionmedic /sessionmedic
COPY LICENSE /usr/share/doc/sessionmedic/LICENSE
COPY --from=build --chown=65532:65532 /out/state /var/lib/sessionmedic
# quarantine/, last-good/ and journal/ go here; mount a volume to keep them.
ENV STATE_DIRECTORY=/var/lib/sessionmedic
USER 65532:65532
# /metrics, /healthz, /readyz when the policy sets http.listen: "0.0.0.0:9477" (127.0.0.1
# would only be reachable from inside the container).
EXPOSE 9477
# No HEALTHCHECK: distroless has no shell, curl or wget to run one, and the binary has no
# probe subcommand. Kubernetes liveness/readiness probes on /healthz and /readyz cover it.
# Without arguments: the embedded default policy (each app's default location under $HOME,
# /home/nonroot here); pass -config FILE to use a mounted policy.
ENTRYPOINT ["/sessionmedic", "run"]
