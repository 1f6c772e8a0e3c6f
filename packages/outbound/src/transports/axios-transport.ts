import type { IncomingMessage } from 'node:http';
import type { AxiosInstance, AxiosStatic } from 'axios';
import type { ConnectGuard } from '../connect-guard';
import { guardedAgents, type Transport } from './transport';

/**
 * axios over Node's client, configured down to what the node transport does: no redirect followed
 * (a 3xx is an answer), no proxy (not even one named by HTTP(S)_PROXY, which axios reads itself), no
 * compressed answer asked for or decoded, none of axios's default headers (Accept,
 * Accept-Encoding), every status an answer, and the body handed over unread, as a stream.
 */
export function axiosTransport(guard: ConnectGuard): Transport {
  const agents = guardedAgents(guard);
  // Loaded at the first request, not when this package is imported or a client made: the
  // events-api imports the package for its address policy and never sends with axios, and a worker
  // whose targets use no OAuth never requests a token.
  let loaded: Promise<{ axios: AxiosStatic; instance: AxiosInstance }> | undefined;
  const load = () =>
    (loaded ??= import('axios').then(({ default: axios }) => ({
      axios,
      instance: axios.create({
        adapter: 'http',
        httpAgent: agents.http,
        httpsAgent: agents.https,
        proxy: false,
        maxRedirects: 0,
        decompress: false,
        responseType: 'stream',
        validateStatus: () => true,
        transformRequest: [],
        transformResponse: [],
      }),
    })));

  return async ({ url, method, headers, body, deadline }) => {
    const { axios, instance } = await load();
    try {
      const response = await instance.request<IncomingMessage>({
        url: url.href,
        method,
        // `false` keeps axios from adding its own; a caller's value replaces it.
        headers: { accept: false, 'accept-encoding': false, ...headers },
        data: body === undefined ? undefined : Buffer.from(body, 'utf8'),
        signal: deadline.signal(),
      });
      return response.data;
    } catch (error) {
      throw unwrap(axios, error);
    }
  };
}

/**
 * axios wraps the error of the connection (the guard's refusal, a reset, a TLS failure) in its own,
 * which also carries the whole request (URL, headers, credentials): only the cause goes on.
 */
function unwrap(axios: AxiosStatic, error: unknown): unknown {
  return axios.isAxiosError(error) && error.cause !== undefined ? error.cause : error;
}
