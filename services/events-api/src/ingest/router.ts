import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import type { DeliveryRef, EventRepository, NewEvent } from '@herald/db';
import { ValidationError, validateIngestBatch, validateIngestEvent, type Event, type IngestEvent, type Violation } from '@herald/domain';
import type { HeraldMetrics } from '@herald/metrics';
import { parseBody } from '../http/validate-body';
import { contentHash } from './content-hash';
import { depthViolations } from './json-depth';

// Deeper than any payment series (event > data > item > address > field is 5) with room to spare.
const MAX_JSON_DEPTH = 32;

/**
 * POST /internal/events: the platform's producers store events (never merchants). The body is one
 * event or `{"events": [...]}`; a batch is stored whole or not at all.
 */
export function ingestRouter(deps: {
  events: EventRepository;
  publish: (refs: readonly DeliveryRef[]) => Promise<void>;
  metrics: Pick<HeraldMetrics, 'eventsIngested'>;
}): Router {
  const router = Router();
  router.post('/events', async (req, res) => {
    const isBatch = typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body) && 'events' in req.body;
    const inputs = isBatch ? parseBody(validateIngestBatch, req.body).events : [parseBody(validateIngestEvent, req.body)];
    const pointerBase = isBatch ? '/events/' : '';
    checkBatch(inputs, pointerBase);

    const receivedAt = new Date().toISOString();
    const result = await deps.events.insert(inputs.map((input) => toNewEvent(input, receivedAt)));
    // Counted once committed: an idempotent repeat of a stored event adds nothing.
    deps.metrics.eventsIngested(result.createdCount);
    await deps.publish(result.deliveries);
    const status = result.createdCount > 0 ? 201 : 200;
    res.status(status).json(isBatch ? { events: result.events } : result.events[0]);
  });
  return router;
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

function toNewEvent(input: IngestEvent, receivedAt: string): NewEvent {
  const { programId, merchantId, ...fields } = input;
  // The producer's content, as sent: a retry of the same body hashes the same. The id is the key,
  // not content; an absent createdAt stays absent so a retry without it is still the same content.
  const { id: _id, ...content } = input;
  const event = { ...fields, id: input.id ?? `Event-${randomUUID()}`, createdAt: input.createdAt ?? receivedAt } as Event;
  return { event, programId, ...(merchantId === undefined ? {} : { merchantId }), contentHash: contentHash(content) };
}
