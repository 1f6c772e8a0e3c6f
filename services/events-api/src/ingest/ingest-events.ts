import { randomUUID } from 'node:crypto';
import { eventJsonBytes, numberedEvent, type IngestTransaction, type KnownTenants, type NewEvent } from '@herald/db';
import {
  depthViolations,
  EventConflictError,
  MAX_JSON_DEPTH,
  targetsToNotify,
  toDate,
  UnknownTenantError,
  ValidationError,
  validateIngestBatch,
  validateIngestEvent,
  type DeliveryRef,
  type Event,
  type IngestEvent,
  type RoutingTarget,
  type Validator,
  type Violation,
} from '@herald/domain';
import type { HeraldMetrics } from '@herald/metrics';
import { endSpan, errorTypeOf, postgresAttributes, SpanKind, startSpan, type TraceContext, type Tracer } from '@herald/telemetry';
import { contentHash } from './content-hash';

/** What an ingest request stored. */
export interface IngestResult {
  /** The body was a batch (`{"events": [...]}`), not one event. */
  batch: boolean;
  /** Every event of the request as stored, in input order. */
  events: Event[];
  /** How many of them this request stored; the others were stored before with the same content. */
  createdCount: number;
  /** For every event of `events`, in the same order, the deliveries this request created for it. */
  deliveries: EventDeliveries[];
}

/**
 * The deliveries one ingested event got. Empty when no enabled target takes the event (so no
 * callback will follow), and for an event stored before: its deliveries were created back then.
 */
export interface EventDeliveries {
  eventId: string;
  deliveries: CreatedDelivery[];
}

/** One delivery an ingest created, and the target it goes to. */
interface CreatedDelivery {
  deliveryId: string;
  targetId: string;
  /** Whose target: the program's own, or the event's merchant's. */
  targetOwner: 'program' | 'merchant';
}

/** The ingest's seams. */
export interface IngestDependencies {
  /** Runs the storing of one batch in one transaction (committed when the work resolves). */
  store: { transaction<T>(work: (tx: IngestTransaction) => Promise<T>): Promise<T> };
  /**
   * Adds the jobs of deliveries just committed. Never rejects: a delivery whose job could not be
   * added is left to the outbox sweeper (see @herald/outbox `createOutboxPublisher`).
   */
  publish(refs: readonly DeliveryRef[], parent?: TraceContext): Promise<void>;
  metrics: Pick<HeraldMetrics, 'eventsIngested'>;
  /** EVENT_MAX_BYTES: the largest event, in UTF-8 bytes of its JSON as its callbacks carry it. */
  eventMaxBytes: number;
  /** Ids of new events (without one of their own) and new deliveries. Default: random UUIDs. */
  newId?: () => string;
  /** The clock that dates events sent without createdAt. */
  now?: () => Date;
  /** Makes a database span of the ingest's transaction under the request's span; none when undefined (tracing off). */
  tracer?: Tracer | undefined;
}

/**
 * The ingest use case behind POST /internal/events: validates the body (one event or
 * `{"events": [...]}`), then in one transaction checks the tenants, stores the new events (an event
 * re-posted with the same content is returned as stored; different content is a conflict and the
 * whole batch is refused), creates a delivery for every target the routing rule picks, and adds
 * the events to the list counters; once committed, hands the deliveries to the queue.
 */
export function createIngest(deps: IngestDependencies): (body: unknown, parent?: TraceContext) => Promise<IngestResult> {
  const newId = deps.newId ?? randomUUID;
  const now = deps.now ?? (() => new Date());
  const { tracer } = deps;

  return async (body, parent) => {
    const { inputs, batch: isBatch } = validate(body);
    const receivedAt = now().toISOString();
    const batch = inputs.map((input) => toNewEvent(input, receivedAt, newId));
    checkSizes(batch, isBatch ? '/events/' : '', deps.eventMaxBytes);

    // One span for the transaction (its statements are the ingest's, and carry event data as values).
    const span =
      tracer && parent && startSpan(tracer, parent, TRANSACTION_SUMMARY, SpanKind.CLIENT, postgresAttributes('INSERT', 'events', TRANSACTION_SUMMARY));
    const transaction = deps.store.transaction(async (tx) => {
      const programIds = unique(batch.map((b) => b.programId));
      const merchantIds = unique(batch.flatMap((b) => (b.merchantId ? [b.merchantId] : [])));
      // Both reads in one round trip: the targets are read before it is known which events are
      // new, and serve only those.
      const { known, targets: candidates } = await tx.findTenantsAndTargets(programIds, merchantIds);
      checkTenants(known, batch);
      const { created: createdIds, storedAt } = await tx.insertNewEvents(batch);
      const existing = await storedBefore(tx, batch, createdIds);
      const created = batch.filter((item) => createdIds.has(item.event.id));
      // Re-posted events are not new: they get no second delivery.
      const routed = route(candidates, created, storedAt, newId);
      const deliveries = routed.map((r) => r.ref);
      const createdFor = new Map<string, CreatedDelivery[]>();
      for (const { ref, created: delivery } of routed) createdFor.set(ref.eventId, [...(createdFor.get(ref.eventId) ?? []), delivery]);
      // Last, with the COMMIT: every ingest of a program updates the same counter rows.
      tx.writeAtCommit({ deliveries, counted: created });
      return {
        events: batch.map((item) => existing.get(item.event.id) ?? numberedEvent(item.event, createdIds.get(item.event.id)!)),
        createdCount: created.length,
        deliveries,
        perEvent: batch.map((item) => ({ eventId: item.event.id, deliveries: createdFor.get(item.event.id) ?? [] })),
      };
    });
    const stored =
      span === undefined
        ? await transaction
        : await transaction.then(
            (value) => {
              span.setAttribute('herald.events.created', value.createdCount);
              endSpan(span);
              return value;
            },
            (error: unknown) => {
              endSpan(span, errorTypeOf(error));
              throw error;
            },
          );

    // Counted once committed: an idempotent repeat of a stored event adds nothing.
    deps.metrics.eventsIngested(stored.createdCount);
    await deps.publish(stored.deliveries, parent);
    return { batch: isBatch, events: stored.events, createdCount: stored.createdCount, deliveries: stored.perEvent };
  };
}

/** What the ingest's transaction does, as its span is named (the semantic conventions' db.query.summary). */
const TRANSACTION_SUMMARY = 'INSERT events deliveries';

/** The body's events, or ValidationError naming every violation. */
function validate(body: unknown): { inputs: IngestEvent[]; batch: boolean } {
  const batch = typeof body === 'object' && body !== null && !Array.isArray(body) && 'events' in body;
  const inputs = batch ? valid(validateIngestBatch, body).events : [valid(validateIngestEvent, body)];
  checkBatch(inputs, batch ? '/events/' : '');
  return { inputs, batch };
}

function valid<T>(validator: Validator<T>, body: unknown): T {
  const result = validator(body);
  if (!result.ok) throw new ValidationError(result.violations);
  return result.value;
}

/** Rules across the events of a batch and over free content, which JSON Schema cannot express. */
function checkBatch(inputs: readonly IngestEvent[], pointerBase: string): void {
  const violations: Violation[] = [];
  const seen = new Map<string, number>();
  inputs.forEach((input, index) => {
    const at = pointerBase ? `${pointerBase}${index}` : '';
    violations.push(...depthViolations(input, MAX_JSON_DEPTH, at));
    if (input.id === undefined) return;
    const first = seen.get(input.id);
    if (first !== undefined) {
      violations.push({ pointer: `${at}/id`, keyword: 'uniqueItems', message: `repeats the id of ${pointerBase}${first}` });
    } else {
      seen.set(input.id, index);
    }
  });
  if (violations.length > 0) throw new ValidationError(violations);
}

/**
 * Every event within `maxBytes` as its callback body will be (the event as stored, written as
 * PostgreSQL writes it: eventJsonBytes); ValidationError naming each larger one by its batch index
 * otherwise. A 400 and not a 413: the request itself is within INGEST_BODY_LIMIT_BYTES, and
 * splitting the batch would not help; the event must shrink.
 */
function checkSizes(batch: readonly NewEvent[], pointerBase: string, maxBytes: number): void {
  const violations: Violation[] = [];
  batch.forEach(({ event }, index) => {
    const bytes = eventJsonBytes(event);
    if (bytes <= maxBytes) return;
    violations.push({
      pointer: pointerBase ? `${pointerBase}${index}` : '',
      keyword: 'maxBytes',
      message: `is ${bytes} bytes as JSON; an event may be at most ${maxBytes} bytes (EVENT_MAX_BYTES), since merchants' receivers refuse larger callbacks: move bulky content out of the event`,
    });
  });
  if (violations.length > 0) throw new ValidationError(violations);
}

function toNewEvent(input: IngestEvent, receivedAt: string, newId: () => string): NewEvent {
  const { programId, merchantId, ...fields } = input;
  // The producer's content, as sent: a retry of the same body hashes the same. The id is the key,
  // not content; an absent createdAt stays absent so a retry without it is still the same content.
  const { id: _id, ...content } = input;
  // createdAt as it is stored and read back (UTC milliseconds): the size check and the answer see
  // the event as stored.
  const createdAt = input.createdAt === undefined ? receivedAt : toDate(input.createdAt).toISOString();
  const event = { ...fields, id: input.id ?? `Event-${newId()}`, createdAt } as NewEvent['event'];
  return { event, programId, ...(merchantId === undefined ? {} : { merchantId }), contentHash: contentHash(content) };
}

/** Throws UnknownTenantError for the first event whose program does not exist, or whose merchant is not of its program. */
function checkTenants(known: KnownTenants, batch: readonly NewEvent[]): void {
  batch.forEach((item, index) => {
    if (!known.programIds.has(item.programId)) throw new UnknownTenantError('programId', item.programId, index);
    if (item.merchantId && known.merchantPrograms.get(item.merchantId) !== item.programId) {
      throw new UnknownTenantError('merchantId', item.merchantId, index);
    }
  });
}

/** The events of the batch that were stored before, by id; throws EventConflictError when one's content differs. */
async function storedBefore(tx: IngestTransaction, batch: readonly NewEvent[], createdIds: ReadonlyMap<string, number>): Promise<Map<string, Event>> {
  const others = batch.filter((item) => !createdIds.has(item.event.id));
  if (others.length === 0) return new Map();
  const stored = await tx.loadStoredEvents(others.map((item) => item.event.id));
  const events = new Map<string, Event>();
  for (const item of others) {
    const found = stored.get(item.event.id);
    if (!found || found.contentHash !== item.contentHash) throw new EventConflictError(item.event.id, batch.indexOf(item));
    events.set(item.event.id, found.event);
  }
  return events;
}

/**
 * One delivery per new event and target the routing rule picks: what is stored (at `storedAt`, by
 * the transaction that stores the events), and what the producer is told.
 */
function route(
  candidates: readonly RoutingTarget[],
  created: readonly NewEvent[],
  storedAt: Date,
  newId: () => string,
): Array<{ ref: DeliveryRef; created: CreatedDelivery }> {
  const stored = storedAt.toISOString();
  return created.flatMap(({ event, programId, merchantId }) =>
    targetsToNotify({ programId, merchantId, objectType: event.objectType, eventType: event.eventType }, candidates).map((target) => {
      const deliveryId = newId();
      const targetOwner = target.merchantId === null ? 'program' : 'merchant';
      return {
        ref: { deliveryId, eventId: event.id, targetId: target.id, programId, merchantId: merchantId ?? null, targetOwner, storedAt: stored },
        created: { deliveryId, targetId: target.id, targetOwner },
      };
    }),
  );
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
