/** The `herald` support CLI's settings: where the events-api is, and the admin token. */
import { readAdminToken, readIngestToken, readPort } from './api';
import { url, type Env } from './parsers';
import { readNodeEnv } from './shared';

export interface CliConfig {
  /** HERALD_API_URL: base URL (http or https) of the events-api the CLI calls. Default `http://127.0.0.1:<PORT>` (PORT default 3000). */
  readonly apiUrl: string;
  /** ADMIN_TOKEN, under the same rules as the events-api's (required, and not the default, in production). */
  readonly adminToken: string;
}

/** Reads only the CLI's variables: a client of the API needs neither the database nor the secrets key. */
export function loadCliConfig(env: Env = process.env): CliConfig {
  const production = readNodeEnv(env) === 'production';
  return Object.freeze({
    apiUrl: url(env, 'HERALD_API_URL', ['http:', 'https:'], `http://127.0.0.1:${readPort(env)}`),
    adminToken: readAdminToken(env, production),
  });
}

export interface DemoConfig extends CliConfig {
  /** INGEST_TOKEN: `pnpm demo` reports its sample events as the platform would. */
  readonly ingestToken: string;
}

/** `pnpm demo`'s settings: the CLI's, and the ingest token. */
export function loadDemoConfig(env: Env = process.env): DemoConfig {
  const production = readNodeEnv(env) === 'production';
  return Object.freeze({ ...loadCliConfig(env), ingestToken: readIngestToken(env, production) });
}
