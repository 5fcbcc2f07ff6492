import type Router from '@koa/router';

export interface Probe {
  readonly name: string;
  readonly check: () => Promise<void>;
  /** Checked only for this role (`/readyz?role=…`); without one, for every role. */
  readonly role?: string;
}

/**
 * `/healthz`: the process is up and serving. `/readyz`: every role this
 * process runs has started and what it depends on (stream, store) answers now.
 * `/readyz?role=receivers` asks about one role only: what a load balancer in
 * front of the hook routes should route on (receivers never wait for the
 * consumer groups or the store).
 */
export function mountHealth(router: Router, probes: readonly Probe[], timeoutMs = 2000): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const role = typeof ctx.query.role === 'string' ? ctx.query.role : null;
    if (role !== null && !probes.some((p) => p.role === role)) {
      ctx.status = 404;
      ctx.body = { status: 'not ready', error: `this process does not run the role "${role}"` };
      return;
    }
    const results = await Promise.all(
      probes
        .filter((p) => role === null || p.role === undefined || p.role === role)
        .map(async (p) => {
          try {
            await withTimeout(p.check(), timeoutMs);
            return [p.name, 'ok'] as const;
          } catch (err) {
            return [p.name, `unavailable: ${(err as Error).message}`] as const;
          }
        }),
    );
    const ready = results.every(([, s]) => s === 'ok');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'not ready', checks: Object.fromEntries(results) };
  });
}

function withTimeout(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<void>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]);
}
