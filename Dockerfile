# hooklog's image for docker-compose.yml. Debian (glibc) base: chdb's prebuilt engine needs glibc.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# patch-package applies patches/ at install (kafkajs's read_committed filter; see platform/stream/README.md).
COPY patches ./patches
# npm install, not npm ci: chdb lists optional engine packages for other platforms, which a lock file
# resolved on one platform cannot name, so npm ci calls it out of sync. This installs what the lock records.
RUN npm install --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
# Assets (platform/assets.ts): files the CLI reads, at the same path below /app as in the clone, where
# hooklog finds them from its package.json. test/assets.test.ts fails when one is not copied here.
COPY package.json ./
COPY --from=build /app/schemas/clickhouse ./schemas/clickhouse
# The shipped detection content (rule_paths: [/app/consumers/alerting/content]).
COPY --from=build /app/consumers/alerting/content/*.yaml ./consumers/alerting/content/
# The console's browser assets (built by npm run build into console/web/dist; served when console.enabled).
COPY --from=build /app/console/web/dist ./console/web/dist
# The data volume (embedded log if Kafka is not configured, admin socket) must be writable by the unprivileged user.
RUN mkdir -p /var/lib/hooklog && chown node:node /var/lib/hooklog
USER node
EXPOSE 8080
CMD ["node", "bin/hooklog.js", "start"]
