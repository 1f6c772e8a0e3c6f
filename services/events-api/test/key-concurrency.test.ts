import { createKeyConcurrency } from '../src/http/key-concurrency';
import { HttpError } from '../src/http/http-error';

/** Work that runs until `finish` is called, recording when it started. */
function gate(started: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const work = async (): Promise<void> => {
    started.push(name);
    await done;
  };
  return { work, finish: () => finish() };
}

describe('createKeyConcurrency', () => {
  it('runs at most perKey calls of one key at once, the others in arrival order, and other keys freely', async () => {
    const limit = createKeyConcurrency({ perKey: 2, total: 10, queueWaitMs: 10_000 });
    const started: string[] = [];
    const gates = ['a1', 'a2', 'a3', 'a4', 'b1'].map((name) => ({ name, ...gate(started, name) }));
    const runs = gates.map((g) => limit(g.name[0]!, g.work));
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a1', 'a2', 'b1']);
    gates[1]!.finish();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
    for (const g of gates) g.finish();
    await Promise.all(runs);
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'a4']);
  });

  it('refuses a call that found no turn within queueWaitMs with a 429, and forgets it', async () => {
    const limit = createKeyConcurrency({ perKey: 1, total: 10, queueWaitMs: 50 });
    const started: string[] = [];
    const first = gate(started, 'first');
    const running = limit('k', first.work);
    const refused = await limit('k', async () => started.push('late')).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(HttpError);
    expect(refused).toMatchObject({ status: 429, code: 'too_many_concurrent_requests', headers: { 'Retry-After': '1' } });
    first.finish();
    await running;
    // The refused call never ran, and the key's turn is free again.
    await limit('k', async () => started.push('next'));
    expect(started).toEqual(['first', 'next']);
  });

  it('runs at most total calls of all keys at once, a key over it waiting behind the others in arrival order', async () => {
    const limit = createKeyConcurrency({ perKey: 1, total: 2, queueWaitMs: 10_000 });
    const started: string[] = [];
    const gates = ['a', 'b', 'c', 'd'].map((name) => ({ name, ...gate(started, name) }));
    const runs = gates.map((g) => limit(g.name, g.work));
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a', 'b']);
    gates[0]!.finish();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a', 'b', 'c']);
    for (const g of gates) g.finish();
    await Promise.all(runs);
    expect(started).toEqual(['a', 'b', 'c', 'd']);
  });

  it('refuses with a 429 naming the server-wide limit when no turn of the process frees up in time, and gives the key its turn back', async () => {
    const limit = createKeyConcurrency({ perKey: 1, total: 1, queueWaitMs: 50 });
    const started: string[] = [];
    const other = gate(started, 'other');
    const running = limit('other', other.work);
    const refused = await limit('k', async () => started.push('k')).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 429, code: 'too_many_concurrent_requests', headers: { 'Retry-After': '1' } });
    expect((refused as HttpError).detail).toMatch(/At most 1 GET \/events filtering on eventType or objectId run at once on this server/);
    other.finish();
    await running;
    // Both turns were given back: the key runs at once.
    await limit('k', async () => started.push('k'));
    expect(started).toEqual(['other', 'k']);
  });

  it('gives the turn back when the work throws', async () => {
    const limit = createKeyConcurrency({ perKey: 1, total: 10, queueWaitMs: 0 });
    await expect(limit('k', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limit('k', async () => 'ok')).resolves.toBe('ok');
  });
});
