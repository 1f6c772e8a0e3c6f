import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ConnectGuard } from '../connect-guard';
import { guardedAgents, type Transport } from './transport';

/**
 * Node's own http client. It adds nothing that must stay out: it follows no redirect, asks for no
 * compressed answer and sends no header it was not given but Host, Connection and Content-Length.
 */
export function nodeTransport(guard: ConnectGuard): Transport {
  const agents = guardedAgents(guard);
  return ({ url, method, headers, body, deadline }) =>
    new Promise((resolve, reject) => {
      const https = url.protocol === 'https:';
      const sent = (https ? httpsRequest : httpRequest)(url, { method, headers, agent: https ? agents.https : agents.http }, resolve);
      // Also after the answer arrived (a reset mid-body): the bounded read sees that on the response.
      sent.on('error', reject);
      // Past the time limit the request goes, with its connection and so its answer's body.
      deadline.onExpiry(() => sent.destroy(Object.assign(new Error('the request timed out'), { code: 'ABORT_ERR' })));
      sent.end(body);
    });
}
