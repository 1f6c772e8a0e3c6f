/** What the bench and bench/profile.ts set up the same way. */
import { callJson, startService as startServiceProcess, type ServiceProcess, type StartServiceOptions } from '@herald/testing';
import { buildAll } from '../scripts/build';
import { bundleOf, nodeOptionsOf } from '../scripts/bundles';

/** Builds the bundles of the events-api and the delivery-worker (as `pnpm build` does), for startService. */
export async function buildServices(): Promise<void> {
  await buildAll(['api', 'worker']);
}

/**
 * The bench measures what production runs: a Herald entry point named by its TypeScript source
 * (`services/delivery-worker/src/main.ts`) starts from its bundle of the build (call buildServices
 * first), with the options production gives node. Any other script (the bench's receiver) starts
 * from source, as @herald/testing's startService does.
 */
export function startService(script: string, env: Record<string, string>, options?: StartServiceOptions): ServiceProcess {
  return startHerald(script, true, env, options);
}

/**
 * `script` from source, or (`fromBuild`) from its bundle of the build when it has one, with the
 * node options production gives it unless `options` names others.
 */
export function startHerald(script: string, fromBuild: boolean, env: Record<string, string>, options: StartServiceOptions = {}): ServiceProcess {
  const bundle = fromBuild ? bundleOf(script) : undefined;
  if (bundle === undefined) return startServiceProcess(script, env, options);
  return startServiceProcess(bundle, env, { ...options, nodeOptions: options.nodeOptions ?? nodeOptionsOf(bundle) });
}

/** The environment of the events-api and delivery-worker processes of a bench run. */
export function serviceEnv(options: { databaseUrl: string; redisUrl: string; queuePrefix: string }): Record<string, string> {
  return {
    NODE_ENV: 'development',
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: options.queuePrefix,
    LOG_LEVEL: 'info',
    // The bench measures the API, not its rate limit.
    RATE_LIMIT_REQUESTS: '1000000',
    // Targets live on 127.0.0.1.
    ALLOW_PRIVATE_TARGETS: 'true',
    METRICS_PORT: '0',
  };
}

/**
 * Through the admin API: program bench-p with merchant bench-m, each with a target (no auth) at
 * `${hookBase}/program` and `${hookBase}/merchant`, so that a payment event of bench-m fans out to 2.
 */
export async function createPaymentTenant(apiUrl: string, adminToken: string, hookBase: string): Promise<void> {
  const call = async (method: string, path: string, body: unknown): Promise<void> => {
    await callJson(method, `${apiUrl}${path}`, { token: adminToken, body });
  };
  await call('POST', '/admin/programs', { id: 'bench-p', name: 'bench' });
  await call('POST', '/admin/merchants', { id: 'bench-m', programId: 'bench-p', name: 'bench' });
  await call('PUT', '/admin/programs/bench-p/notification-target', { url: `${hookBase}/program`, auth: { mode: 'none' } });
  await call('PUT', '/admin/merchants/bench-m/notification-target', { url: `${hookBase}/merchant`, auth: { mode: 'none' } });
}
