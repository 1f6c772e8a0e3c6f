import type { CliConfig } from '@herald/config';
import { HeraldError } from '@herald/domain/herald-error';

/** The answer of the admin API: its status and its JSON body (undefined when there is none). */
export interface AdminResponse {
  status: number;
  body: unknown;
}

/** The admin API could not be reached, or answered something that is not JSON. */
export class AdminRequestError extends HeraldError {
  override readonly name = 'AdminRequestError';
  readonly code = 'admin_request_failed';
}

/** Longest wait for one answer of the events-api. */
const REQUEST_TIMEOUT_MS = 15_000;

/** One call of the events-api admin API, with the admin token, a timeout and no redirects followed. */
export async function adminRequest(
  config: CliConfig,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<AdminResponse> {
  const url = `${config.apiUrl.replace(/\/+$/, '')}/admin${path}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${config.adminToken}`,
        accept: 'application/json, application/problem+json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      redirect: 'manual',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    throw new AdminRequestError(`${method} ${url} failed: ${cause}`);
  }
  const text = await response.text();
  if (text === '') return { status: response.status, body: undefined };
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch {
    throw new AdminRequestError(`${method} ${url} answered ${response.status} with a body that is not JSON`);
  }
}
