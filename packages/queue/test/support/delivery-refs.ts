import { randomUUID } from 'node:crypto';
import type { DeliveryRef } from '@herald/domain';

/** `count` fresh deliveries of one program's target, as the ingest would enqueue them. */
export function deliveryRefs(targetId: string, count: number): DeliveryRef[] {
  return Array.from({ length: count }, () => ({
    deliveryId: randomUUID(),
    eventId: `Event-${randomUUID()}`,
    targetId,
    programId: 'p1',
    merchantId: null,
    targetOwner: 'program',
  }));
}
