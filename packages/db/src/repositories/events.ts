import type { DatabasePool } from '../pool';
import { run, type Sql } from '../sql';
import { locateOffset } from './event-counts';
import { countKey, eventListQueries, usesOnlyCountedFilters, type EventListQuery } from './event-list-statements';

export interface EventRepositoryOptions {
  /**
   * From this offset on, a page's start is found through the bucket counters; below it, skipping
   * index entries directly is cheaper. Default 2,000.
   */
  bucketWalkMinOffset?: number;
}

/** A page of events as GET /events sends it: the array's JSON text, built by PostgreSQL (eventJson). */
export interface EventListPage {
  count: number;
  /** The page's events as a JSON array, each as eventJson writes it. */
  eventsJson: string;
}

export function eventRepository(pool: DatabasePool, options: EventRepositoryOptions = {}) {
  const bucketWalkMinOffset = options.bucketWalkMinOffset ?? 2_000;
  return {
    /**
     * One page of a tenant's events, oldest first by (createdAt, id), and the exact count of all
     * matching events. Counts for the spec's filters and the createdFrom/createdTo range come from
     * the counters (event_counts, event_bucket_counts); eventType and objectId count over their index.
     */
    async list(query: EventListQuery): Promise<EventListPage> {
      const offset = (query.page - 1) * query.pageSize;
      // A deep page starts from the second the bucket counters point at, so only the events of that
      // second are skipped; a shallow one skips index entries directly. (Past the last event the
      // walk finds no bucket, and the count below leaves the page empty.) Under createdFrom, the
      // walk looks for the position past the events created before it.
      let start: { fromSecond: bigint; skip: number } | null = null;
      if (offset >= bucketWalkMinOffset && usesOnlyCountedFilters(query)) {
        const before = query.createdFrom === undefined ? 0 : await countBefore(pool, query, query.createdFrom);
        start = await locateOffset(pool, countKey(query), before + offset);
      }
      // A named statement: each connection parses it once (a few dozen shapes at most, one per set
      // of filters), then only binds and plans it (measured: a third less PostgreSQL CPU per request).
      const { rows } = await run(pool, eventListQueries.page(query, start ? { fromSecond: Number(start.fromSecond), skip: start.skip } : { skip: offset }), {
        prepared: 'events-page',
      });
      const [row] = rows;
      return { count: Number(row?.total ?? 0), eventsJson: row?.events ?? '[]' };
    },
  };
}

/** The exact number of the query's tenant's events (with its origin and objectType) created before `at`. */
async function countBefore(pool: Sql, query: EventListQuery, at: Date): Promise<number> {
  const { rows } = await run(pool, eventListQueries.countBefore(query, at), { prepared: 'events-before' });
  return Number(rows[0]?.before ?? 0);
}

/**
 * Whether the query's deep pages are found through the bucket counters (only the spec's filters
 * are set): then a page costs the same at any depth. Otherwise a page skips every event before it.
 */
export function pagesFoundThroughCounters(query: Omit<EventListQuery, 'scope' | 'page' | 'pageSize'>): boolean {
  return usesOnlyCountedFilters(query);
}

export type EventRepository = ReturnType<typeof eventRepository>;
