// The worker's gate on the real Redis: which targets it expects to let in, so that the processor
// loads their deliveries while the gate decides (the delivery-worker's processor.ts), and which it does not.
import { randomUUID } from 'node:crypto';
import { useWorkerGates } from './support/worker-gates';

const gates = useWorkerGates();
describe('the worker’s expectation of the gate', () => {
  it('expects to let a target in until the gate turns one of its jobs away, and only for that target', async () => {
    const g = gates.gate({ TARGET_MAX_IN_FLIGHT: '1' });
    const [busy, quiet] = [randomUUID(), randomUUID()];
    expect(g.expectsAdmission(busy)).toBe(true);
    expect(await g.admit(busy, 'j1')).toMatchObject({ admitted: true });
    expect(g.expectsAdmission(busy)).toBe(true);
    expect(await g.admit(busy, 'j2')).toMatchObject({ admitted: false, reason: 'target_busy' });
    expect(g.expectsAdmission(busy)).toBe(false);
    expect(g.expectsAdmission(quiet)).toBe(true);
  });

  it('expects to let the target in again a second after (the busy delay being shorter)', async () => {
    const g = gates.gate({ TARGET_MAX_IN_FLIGHT: '1' });
    const target = randomUUID();
    await g.admit(target, 'j1');
    const turned = await g.admit(target, 'j2');
    expect(turned).toMatchObject({ admitted: false, reason: 'target_busy' });
    // The premise: a new target's busy delay is well under the second the worker remembers it for.
    expect(turned.admitted === false && turned.delayMs).toBeLessThan(1_000);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(g.expectsAdmission(target)).toBe(true);
  });

  it('does not expect to let a target in while its breaker is open or half-open', async () => {
    const g = gates.gate({ TARGET_BREAKER_FAILURES: '1', TARGET_BREAKER_OPEN_SECONDS: '1' });
    const target = randomUUID();
    await g.admit(target, 'j1');
    await g.release(target, 'j1', 'failure', 10);
    expect(await g.admit(target, 'j2')).toMatchObject({ admitted: false, reason: 'breaker_open' });
    expect(g.expectsAdmission(target)).toBe(false);
  });
});
