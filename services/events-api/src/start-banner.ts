import { DEVELOPMENT_SECRETS, type ApiConfig } from '@herald/config';

/** Where the events-api listens: its HOST (undefined for every interface) and the port it bound. */
export interface Listening {
  readonly host: string | undefined;
  readonly port: number;
}

/**
 * What a developer sees once the events-api listens under NODE_ENV=development: where the API and
 * the dashboard are, how to log in, which tokens to send, and what to do next. A secret is shown
 * only when it is the public development default; otherwise the variable holding it is named.
 */
export function startBanner(config: Pick<ApiConfig, 'adminToken' | 'ingestToken' | 'dashboard'>, listening: Listening): string {
  const { host, port } = listening;
  const everyInterface = host === undefined || host === '0.0.0.0' || host === '::';
  // A browser cannot open 0.0.0.0 everywhere: the links go to loopback, which every interface includes.
  const linkHost = everyInterface ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const base = `http://${linkHost}:${port}`;
  const secret = (value: string, developmentDefault: string, variable: string): string => (value === developmentDefault ? value : `the value of ${variable}`);
  return [
    '',
    'Herald is ready.',
    everyInterface
      ? `  Listening on    every interface, port ${port} (HOST): anyone who reaches this machine can use the tokens below`
      : `  Listening on    ${host} port ${port} (HOST${host.startsWith('127.') || host === '::1' || host === 'localhost' ? '; only this machine can connect' : ''})`,
    `  API             ${base}   (readiness: ${base}/readyz)`,
    `  Dashboard       ${base}/admin/queues   user ${config.dashboard.username}, password ${secret(config.dashboard.password, DEVELOPMENT_SECRETS.dashboardPassword, 'DASHBOARD_PASSWORD')}`,
    `  Admin token     ${secret(config.adminToken, DEVELOPMENT_SECRETS.adminToken, 'ADMIN_TOKEN')}   (send Authorization: Bearer <token> to /admin; pnpm exec herald reads ADMIN_TOKEN)`,
    `  Ingest token    ${secret(config.ingestToken, DEVELOPMENT_SECRETS.ingestToken, 'INGEST_TOKEN')}   (send Authorization: Bearer <token> to POST /internal/events)`,
    `  OpenAPI         ${base}/openapi.json`,
    'Next: run `pnpm demo` in another terminal to see callbacks arrive at a demo merchant, or paste the',
    'quickstart of README.md to do each step by hand.',
    '',
  ].join('\n');
}
