import { useMigratedDatabase, type Reply } from '@herald/testing';
import { report } from './support/report';
import { recordSecret } from './support/run-dir';
import { useHttpRecorders, useWorlds } from './support/world';

// Scenario 5: the merchant's OAuth token endpoint fails in every way in turn (500, invalid JSON,
// no access_token, expires_in -1, expires_in 0, a token the target then rejects with 401) before it
// hands out a good token. The attempts must fail with clear errors and be retried, every callback
// must end delivered, and the token requests must stay few (one fetch at a time, cached), not one
// per callback.

const CALLBACKS = 100;

const database = useMigratedDatabase('herald_faults_oauth');

const world = useWorlds('5-oauth-failing');
const startReceiver = useHttpRecorders();

// Tokens and the client secret are long and distinctive, so that scenario 8 can search the whole
// run for them (a token named "good" would be found in any text).
const CLIENT_SECRET = 'faults-oauth-client-secret-5c1e9b';
const TOKENS = {
  broken: 'faults-oauth-token-broken-json-0a7d',
  negative: 'faults-oauth-token-negative-3b8e',
  zero: 'faults-oauth-token-zero-91f2',
  revoked: 'faults-oauth-token-revoked-c4d6',
  good: 'faults-oauth-token-good-e7a3',
};
const BAD_TOKEN_ANSWERS: Reply[] = [
  { status: 500, body: { error: 'server_error' } },
  { status: 200, body: `{"access_token": "${TOKENS.broken}", ` },
  { status: 200, body: { expires_in: 3600, token_type: 'Bearer' } },
  { status: 200, body: { access_token: TOKENS.negative, expires_in: -1, token_type: 'Bearer' } },
  { status: 200, body: { access_token: TOKENS.zero, expires_in: 0, token_type: 'Bearer' } },
  { status: 200, body: { access_token: TOKENS.revoked, expires_in: 3600, token_type: 'Bearer' } },
];

it(`delivers all of ${CALLBACKS} OAuth callbacks through a failing token endpoint without a token request storm`, async () => {
  const w = world({ DELIVERY_ATTEMPTS: '10', DELIVERY_BACKOFF_MS: '50', WORKER_CONCURRENCY: '16' }, database.url);
  recordSecret('oauth client secret', CLIENT_SECRET);
  for (const token of Object.values(TOKENS)) recordSecret('oauth access token', token);
  const tokens = await startReceiver(
    (_request, index) => BAD_TOKEN_ANSWERS[index] ?? { status: 200, body: { access_token: TOKENS.good, expires_in: 3600, token_type: 'Bearer' } },
  );
  const target = await startReceiver((request) => (request.headers.authorization === `Bearer ${TOKENS.good}` ? { status: 200 } : { status: 401 }));
  const { programId } = await w.createTarget(`${target.origin}/hook`, {
    mode: 'oauth',
    authUrl: `${tokens.origin}/token`,
    username: 'client',
    password: CLIENT_SECRET,
  });
  const sent = await w.sendEvents(programId, CALLBACKS);
  const started = Date.now();
  w.startWorker();
  const rows = await w.settled(
    sent.map((s) => s.deliveryId),
    ['succeeded', 'failed'],
    60_000,
  );
  const attempts = await w.prisma.deliveryAttempt.findMany({ where: { deliveryId: { in: sent.map((s) => s.deliveryId) } } });
  const byKind: Record<string, number> = {};
  for (const attempt of attempts) byKind[attempt.errorKind ?? 'none (delivered)'] = (byKind[attempt.errorKind ?? 'none (delivered)'] ?? 0) + 1;
  const oauthMessages = [...new Set(attempts.filter((a) => a.errorKind === 'oauth').map((a) => a.errorMessage))];
  const delivered = rows.filter((row) => row.status === 'succeeded').length;

  report(
    '5. OAuth endpoint failing',
    `${CALLBACKS} callbacks to an OAuth target; the token endpoint answered in turn: 500, invalid JSON, no access_token, expires_in -1, expires_in 0, a token the target rejects (401); then good tokens`,
    {
      'events accepted': CALLBACKS,
      delivered,
      'token requests': tokens.requests.length,
      'callback requests': target.requests.length,
      'attempts by error kind': byKind,
      'oauth attempt errors (distinct messages)': oauthMessages,
      seconds: ((Date.now() - started) / 1000).toFixed(1),
    },
  );
  expect(delivered).toBe(CALLBACKS);
  expect(oauthMessages.every((message) => typeof message === 'string' && message.length > 0 && !message.includes(CLIENT_SECRET))).toBe(true);
  // One token fetch at a time per target: a storm would be one per callback or more.
  expect(tokens.requests.length).toBeLessThan(CALLBACKS / 2);
});
