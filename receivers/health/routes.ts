import type Router from '@koa/router';

export interface Probe {
  readonly name: string;
  readonly check: () => Promise<void>;
}

/**
 * `/healthz`: the process is up and serving. `/readyz`: every dependency a
 * delivery needs (stream, store) answers now; load balancers route on this.
 */
export function mountHealth(router: Router, probes: readonly Probe[], timeoutMs = 2000): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const results = await Promise.all(
      probes.map(async (p) => {
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
