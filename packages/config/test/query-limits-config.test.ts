import { loadApiConfig } from '../src';
import { configErrorOf } from './support/config-errors';

describe('the events-api query bounds', () => {
  it('default to a pool and a statement time limit per class of queries', () => {
    expect(loadApiConfig({}).queryClasses).toEqual({
      merchantReads: { poolSize: 6, statementTimeoutMs: 2_000 },
      ingest: { poolSize: 6, statementTimeoutMs: 10_000 },
      admin: { poolSize: 2, statementTimeoutMs: 30_000 },
    });
  });

  it('default to 10,000 skipped events, 1 concurrent expensive GET /events per key and 2 per process, and a 1 s wait for a turn', () => {
    expect(loadApiConfig({}).eventsList).toEqual({ maxSkip: 10_000, concurrencyPerKey: 1, concurrencyTotal: 2, msPerSecondPerKey: 500, queueWaitMs: 1_000 });
  });

  it('reads every variable that is set', () => {
    const config = loadApiConfig({
      MERCHANT_READS_POOL_SIZE: '10',
      MERCHANT_READS_STATEMENT_TIMEOUT_MS: '500',
      INGEST_POOL_SIZE: '3',
      INGEST_STATEMENT_TIMEOUT_MS: '4000',
      ADMIN_POOL_SIZE: '1',
      ADMIN_STATEMENT_TIMEOUT_MS: '60000',
      EVENTS_MAX_SKIP: '500',
      EVENTS_CONCURRENCY_PER_KEY: '3',
      EVENTS_EXPENSIVE_CONCURRENCY: '9',
      EVENTS_EXPENSIVE_MS_PER_SECOND: '0',
      EVENTS_QUEUE_WAIT_MS: '0',
    });
    expect(config.queryClasses).toEqual({
      merchantReads: { poolSize: 10, statementTimeoutMs: 500 },
      ingest: { poolSize: 3, statementTimeoutMs: 4_000 },
      admin: { poolSize: 1, statementTimeoutMs: 60_000 },
    });
    expect(config.eventsList).toEqual({ maxSkip: 500, concurrencyPerKey: 3, concurrencyTotal: 9, msPerSecondPerKey: 0, queueWaitMs: 0 });
    expect(Object.isFrozen(config.queryClasses.merchantReads)).toBe(true);
    expect(Object.isFrozen(config.eventsList)).toBe(true);
  });

  it('lowers the default concurrency of expensive reads below a small merchant reads pool', () => {
    expect(loadApiConfig({ MERCHANT_READS_POOL_SIZE: '2' }).eventsList).toMatchObject({ concurrencyTotal: 1, concurrencyPerKey: 1 });
  });

  it.each([
    ['MERCHANT_READS_POOL_SIZE', '1', /MERCHANT_READS_POOL_SIZE: must be between 2 and 100/],
    ['MERCHANT_READS_STATEMENT_TIMEOUT_MS', '0', /MERCHANT_READS_STATEMENT_TIMEOUT_MS: must be between 100 and 600000/],
    ['INGEST_POOL_SIZE', '0', /INGEST_POOL_SIZE: must be between 1 and 100/],
    ['INGEST_STATEMENT_TIMEOUT_MS', 'soon', /INGEST_STATEMENT_TIMEOUT_MS: must be a whole number/],
    ['ADMIN_POOL_SIZE', '101', /ADMIN_POOL_SIZE: must be between 1 and 100/],
    ['ADMIN_STATEMENT_TIMEOUT_MS', '99', /ADMIN_STATEMENT_TIMEOUT_MS: must be between 100 and 600000/],
    ['EVENTS_MAX_SKIP', '10', /EVENTS_MAX_SKIP: must be between 100 and 1000000/],
    ['EVENTS_CONCURRENCY_PER_KEY', '0', /EVENTS_CONCURRENCY_PER_KEY: must be between 1 and 100/],
    ['EVENTS_CONCURRENCY_PER_KEY', '3', /EVENTS_CONCURRENCY_PER_KEY: must be at most EVENTS_EXPENSIVE_CONCURRENCY \(2\)/],
    ['EVENTS_EXPENSIVE_CONCURRENCY', '0', /EVENTS_EXPENSIVE_CONCURRENCY: must be between 1 and 100/],
    ['EVENTS_EXPENSIVE_CONCURRENCY', '6', /EVENTS_EXPENSIVE_CONCURRENCY: must be below MERCHANT_READS_POOL_SIZE \(6\)/],
    ['EVENTS_EXPENSIVE_MS_PER_SECOND', '-1', /EVENTS_EXPENSIVE_MS_PER_SECOND: must be a whole number/],
    ['EVENTS_QUEUE_WAIT_MS', '60001', /EVENTS_QUEUE_WAIT_MS: must be between 0 and 60000/],
  ])('refuse %s=%s with a message naming the variable', (name, value, message) => {
    const error = configErrorOf(loadApiConfig, { [name]: value });
    expect(error.variable).toBe(name);
    expect(error.message).toMatch(message);
  });
});
