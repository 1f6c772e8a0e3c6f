import { MERCHANT_NOTIFICATION_OBJECT_TYPES } from './notifications';

/** What the routing rule reads of an event. */
export interface RoutedEvent {
  programId: string;
  /** Absent (or null) for an event of the program as a whole. */
  merchantId?: string | null;
  objectType: string;
  eventType: string;
}

/** What the routing rule reads of a notification target. */
export interface RoutingTarget {
  id: string;
  programId: string;
  /** The merchant a merchant-level target belongs to; null for the program's own target. */
  merchantId: string | null;
  /** Object types the target takes; empty means every one. */
  objectTypes: readonly string[];
  /** Event types the target takes; empty means every one. */
  eventTypes: readonly string[];
  enabled: boolean;
  /** Deleted targets are kept (their delivery history points at them) but never chosen. */
  deleted: boolean;
}

const MERCHANT_OBJECT_TYPES: ReadonlySet<string> = new Set(MERCHANT_NOTIFICATION_OBJECT_TYPES);

/**
 * Who gets notified of an event: of the candidate targets, those that get a delivery. The program's
 * target gets every event of the program; a merchant's target gets only that merchant's
 * transaction-related events (MERCHANT_NOTIFICATION_OBJECT_TYPES). Either way the target's own
 * objectTypes and eventTypes filters must let the event through (an empty list lets everything
 * through), and a target that is switched off or deleted gets nothing. Candidates of other tenants
 * are ignored, so callers may pass the targets of a whole batch.
 */
export function targetsToNotify<T extends RoutingTarget>(event: RoutedEvent, candidates: readonly T[]): T[] {
  return candidates.filter((target) => isOwnerOf(target, event) && target.enabled && !target.deleted && takes(target, event));
}

function isOwnerOf(target: RoutingTarget, event: RoutedEvent): boolean {
  if (target.merchantId === null) return target.programId === event.programId;
  return target.merchantId === event.merchantId && MERCHANT_OBJECT_TYPES.has(event.objectType);
}

function takes(target: RoutingTarget, event: RoutedEvent): boolean {
  return accepts(target.objectTypes, event.objectType) && accepts(target.eventTypes, event.eventType);
}

/** An empty list means every value. */
function accepts(list: readonly string[], value: string): boolean {
  return list.length === 0 || list.includes(value);
}
