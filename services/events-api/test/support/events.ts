import { randomUUID } from 'node:crypto';

/** A minimal valid ingest event for a tenant; override any field. */
export function ingestEvent(tenant: { programId: string; merchantId?: string }, fields: Record<string, unknown> = {}) {
  return {
    programId: tenant.programId,
    ...(tenant.merchantId ? { merchantId: tenant.merchantId } : {}),
    id: `Event-${randomUUID()}`,
    createdAt: '2026-01-01T00:00:00.000Z',
    origin: 'api',
    eventType: 'created',
    objectId: `obj-${randomUUID()}`,
    objectType: 'payment',
    ...fields,
  };
}

/** `n` timestamps one second apart from a base, as ISO strings. */
export function seconds(n: number, base = Date.parse('2026-01-01T00:00:00.000Z')): string[] {
  return Array.from({ length: n }, (_, i) => new Date(base + i * 1000).toISOString());
}
