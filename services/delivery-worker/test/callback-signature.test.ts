// Standard Webhooks signatures as a merchant checks them: every callback, verified with the
// specification's reference library (`standardwebhooks`) and the target's secret on the raw body
// the receiver got, across a rotation and after its grace period.
import { credentialsCipherFromConfig, fillMissingSigningSecrets } from '@herald/db';
import { type RecordedRequest, useMigratedDatabase } from '@herald/testing';
import { Webhook } from 'standardwebhooks';
import { useHttpRecorders, useWorlds, type World } from './support/world';

const world = useWorlds();
const server = useHttpRecorders();
const database = useMigratedDatabase('herald_signing');

/** Whether `secret` verifies the request as the receiver got it (raw body, headers). */
function verifies(secret: string, request: RecordedRequest, body = request.body): boolean {
  try {
    new Webhook(secret).verify(body, request.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

/** Delivers `n` events of the program and returns the requests the receiver got for them. */
async function deliver(w: World, programId: string, n = 1): Promise<void> {
  const sent = await w.sendEvents(programId, n);
  const rows = await w.settled(sent.map((s) => s.deliveryId));
  expect(rows.every((row) => row.status === 'succeeded')).toBe(true);
}

describe('the signature of a callback', () => {
  it("verifies with the target's secret on every callback, and fails for a body changed by one byte", async () => {
    const w = world();
    const receiver = await server();
    const { programId } = await w.createTarget(`${receiver.origin}/hooks`, { mode: 'basic', username: 'shop', password: 'pw' });
    const { secret } = (await w.targets().signingSecret({ kind: 'program', programId }))!;
    w.startWorker();
    await deliver(w, programId, 3);

    expect(receiver.requests).toHaveLength(3);
    for (const request of receiver.requests) {
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).toEqual(JSON.parse(request.body));
      const changed = request.body.replace('"gold"', '"golf"');
      expect(changed).toHaveLength(request.body.length);
      expect(verifies(secret, request, changed)).toBe(false);
    }
  });

  it("is signed with both secrets during a rotation's grace period (each verifies alone), then with the new one only", async () => {
    const w = world();
    const receiver = await server();
    const { programId, targetId } = await w.createTarget(`${receiver.origin}/hooks`);
    const owner = { kind: 'program', programId } as const;
    const old = (await w.targets().signingSecret(owner))!.secret;
    const rotated = (await w.targets().rotateSigningSecret(owner, 86_400))!.secret;
    w.startWorker();

    await deliver(w, programId);
    const during = receiver.requests.at(-1)!;
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect([verifies(rotated, during), verifies(old, during)]).toEqual([true, true]);

    // The grace period ends when the stored end says so: moved to the past instead of waiting a day.
    await w.prisma.notificationTarget.update({ where: { id: targetId }, data: { signingGraceEnds: new Date(Date.now() - 1_000) } });
    await deliver(w, programId);
    const after = receiver.requests.at(-1)!;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect([verifies(rotated, after), verifies(old, after)]).toEqual([true, false]);
  });

  it('gives a target stored before signatures a secret before the first job, and signs every callback with it', async () => {
    // A database of its own: the fill gives secrets to every target without, under this world's key.
    const w = world({}, database.url);
    const receiver = await server();
    const { programId, targetId } = await w.createTarget(`${receiver.origin}/hooks`);
    await w.prisma.notificationTarget.update({ where: { id: targetId }, data: { signingSecrets: null, signingKeyId: null } });
    // What the worker process does before it takes a job (main.ts): its load of a target only reads.
    await fillMissingSigningSecrets(w.pool, credentialsCipherFromConfig(w.config));
    w.startWorker();

    await deliver(w, programId, 2);
    const { secret } = (await w.targets().signingSecret({ kind: 'program', programId }))!;
    expect(receiver.requests.map((request) => verifies(secret, request))).toEqual([true, true]);
  });

  it('keeps the secrets out of the logs, the job data and the attempt log', async () => {
    const w = world();
    const receiver = await server(() => ({ status: 500, body: 'down' }));
    const { programId } = await w.createTarget(`${receiver.origin}/hooks?token=t0k3n-value`);
    const owner = { kind: 'program', programId } as const;
    const old = (await w.targets().signingSecret(owner))!.secret;
    const { secret } = (await w.targets().rotateSigningSecret(owner, 60))!;
    w.startWorker();
    const [sent] = await w.sendEvents(programId);
    await w.settled([sent!.deliveryId], ['failed']);

    const job = await w.finishedJob(sent!.deliveryId);
    const attempts = await w.attempts(sent!.deliveryId);
    expect(attempts.map((a) => a.url)).toEqual(attempts.map(() => `${receiver.origin}/hooks?token=***`));
    const seen = [
      w.logs(),
      JSON.stringify(job.data),
      JSON.stringify(job.returnvalue),
      String(job.failedReason),
      JSON.stringify(attempts.map(({ id: _id, ...attempt }) => attempt)),
    ].join('\n');
    for (const value of [old, secret, old.slice('whsec_'.length), secret.slice('whsec_'.length), 't0k3n-value']) expect(seen).not.toContain(value);
    expect(receiver.requests.length).toBeGreaterThan(0);
  });
});
