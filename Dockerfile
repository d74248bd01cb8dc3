# The engine image for hosts with Docker or buildah: `docker build -t oracle-node:0.1.0 .` (or `make image`,
# which uses this file when docker/buildah is installed and image/build.sh, the same image built
# offline, when not). Every workload runs it: operator, coordinator, worker, gateway, start.
# `make image-dockerfile` builds it with buildah and no image registry (a local stand-in for NODE_IMAGE,
# image/dockerfile-check.sh) and checks the result.
#
# Runtime: distroless-like and FROM scratch: the glibc set that node needs (image/rootfs.sh, shared with
# the offline build), the node binary, the app. No shell, no package manager, user 65532, works with
# readOnlyRootFilesystem (writes only to /tmp when one is mounted). No init: node is PID 1 and the
# engine's long-running commands handle SIGTERM themselves.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
# The registry npm installs from, for mirrors: `--build-arg NPM_CONFIG_REGISTRY="$(npm config get registry)"`.
# Unset by default, so npm's own default applies.
ARG NPM_CONFIG_REGISTRY
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts || npm install --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN node_modules/.bin/tsc -p tsconfig.build.json && chmod 0755 dist/cli/index.js
# Production dependencies only, in a directory of their own.
RUN mkdir /prod && cp package.json package-lock.json /prod/ && cd /prod \
  && (npm ci --omit=dev --no-audit --no-fund --ignore-scripts || npm install --omit=dev --no-audit --no-fund --ignore-scripts) \
  && rm -f node_modules/.package-lock.json

FROM ${NODE_IMAGE} AS rootfs
COPY image/rootfs.sh /usr/local/lib/rootfs.sh
RUN bash /usr/local/lib/rootfs.sh /rootfs "$(command -v node)" "$(command -v env)" \
  && cp "$(readlink -f "$(command -v env)")" /rootfs/usr/bin/env \
  && mkdir -p /rootfs/usr/local/bin && cp "$(readlink -f "$(command -v node)")" /rootfs/usr/local/bin/node \
  && ln -s /app/dist/cli/index.js /rootfs/usr/local/bin/oracle-node

FROM scratch
COPY --from=rootfs /rootfs/ /
COPY --from=build /prod/node_modules /app/node_modules
COPY --from=build /src/package.json /app/package.json
COPY --from=build /src/dist /app/dist
COPY crds/*.yaml /app/crds/
ENV PATH=/usr/local/bin:/usr/bin:/bin NODE_ENV=production HOME=/home/nonroot
WORKDIR /app
USER 65532:65532
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/dist/cli/index.js"]
