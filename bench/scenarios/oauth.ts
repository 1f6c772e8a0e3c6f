/**
 * OAuth: the token requests of one target's callbacks, spread over the 2 running workers, with a
 * 60 s token (oauthTokens) and with a short-lived one renewed at a fixed rate (oauthRenewal).
 */
import { callJson } from '@herald/testing';
import { ADMIN_TOKEN, SIZE } from '../settings';
import { postEventsAtRate, round, type Bench, type Row } from './harness';
import { ingest } from './two-workers';

/** Program bench-o, whose target takes a 60 s token from the receiver. */
export async function createOauthTenant(bench: Bench): Promise<void> {
  await callJson('POST', `${bench.apiUrl}/admin/programs`, { token: ADMIN_TOKEN, body: { id: 'bench-o', name: 'oauth' }, expect: [201] });
  // ?verify=false: the scenario counts the worker's token requests, not the check a PUT makes.
  await callJson('PUT', `${bench.apiUrl}/admin/programs/bench-o/notification-target?verify=false`, {
    token: ADMIN_TOKEN,
    body: {
      url: `${bench.receiverUrl}/hook/oauth`,
      auth: { mode: 'oauth', authUrl: `${bench.receiverUrl}/token`, username: 'bench-client', password: 'bench-secret' },
    },
    expect: [200, 201],
  });
}

export async function oauthTokens(bench: Bench): Promise<Row[]> {
  await bench.reset();
  await ingest(bench, SIZE.oauthEvents, 'bench-o', undefined, 'subscription');
  const oauth = await bench.drain(SIZE.oauthEvents, [], 'delivery-worker');
  const tokenRequests = (await bench.stats()).tokens;
  return [
    {
      scenario: `OAuth: token requests for ${SIZE.oauthEvents} callbacks (2 workers, ${round(oauth.seconds, 1)} s, 60 s token)`,
      figure: tokenRequests,
      unit: 'token requests',
      target: `${Math.ceil(Math.max(oauth.seconds, 1) / 60)} (1 per token lifetime)`,
    },
  ];
}

// A token is reused until a tenth of its lifetime is left (packages/callback-auth), then renewed:
// one request per renewal period, never two for one period, whatever the number of workers.
export async function oauthRenewal(bench: Bench): Promise<Row[]> {
  const { apiUrl, receiverUrl } = bench;
  const lifetime = SIZE.renewalLifetime;
  const renewalPeriod = lifetime * 0.9;
  await callJson('POST', `${apiUrl}/admin/programs`, { token: ADMIN_TOKEN, body: { id: 'bench-r', name: 'renewal' }, expect: [201] });
  await callJson('PUT', `${apiUrl}/admin/programs/bench-r/notification-target?verify=false`, {
    token: ADMIN_TOKEN,
    body: {
      url: `${receiverUrl}/hook/renewal`,
      auth: { mode: 'oauth', authUrl: `${receiverUrl}/token/${lifetime}`, username: 'bench-client', password: 'bench-secret' },
    },
    expect: [200, 201],
  });
  await bench.reset();
  const renewalCount = SIZE.renewalRate * SIZE.renewalSeconds;
  await postEventsAtRate(apiUrl, renewalCount, SIZE.renewalRate, (i) => ({
    programId: 'bench-r',
    origin: 'automated',
    eventType: 'updated',
    objectId: `renewal-${i}`,
    objectType: 'subscription',
  }));
  await bench.drain(renewalCount, []);
  const renewal = await bench.stats();
  const tokenSpan = (renewal.lastCallbackAt - (renewal.tokenTimes[0] ?? renewal.lastCallbackAt)) / 1000;
  const gaps = renewal.tokenTimes.slice(1).map((at, i) => (at - renewal.tokenTimes[i]!) / 1000);
  return [
    {
      scenario: `OAuth renewal: token requests over ${round(tokenSpan, 1)} s of callbacks (${SIZE.renewalRate}/s, 2 workers), ${lifetime} s token`,
      figure: renewal.tokens,
      unit: 'token requests',
      target: `${1 + Math.floor(tokenSpan / renewalPeriod)} (1 per ${round(renewalPeriod, 1)} s renewal period)`,
      note: gaps.length > 0 ? `gaps between token requests ${round(Math.min(...gaps), 2)}-${round(Math.max(...gaps), 2)} s` : 'one token',
    },
  ];
}
