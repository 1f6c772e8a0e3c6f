/**
 * GET /events on many events, seeded with SQL: page 1 beside its two ceilings in alternated
 * rounds (bench/paired-rounds.ts), then a filtered page and a deep page, once each, against it.
 */
import { callJson, requestJson } from '@herald/testing';
import { cannon } from '../ceilings';
import { listRoundRows, listRounds, median, medianRound, startListCeilings } from '../paired-rounds';
import { filteredCount, seedEvents } from '../seed-events';
import { ADMIN_TOKEN, SIZE } from '../settings';
import { log, round, startListening, type Bench, type Row } from './harness';

export async function listEvents(bench: Bench): Promise<Row[]> {
  const { apiUrl } = bench;
  log(`seeding ${SIZE.listEvents} events`);
  const seedStarted = performance.now();
  await callJson('POST', `${apiUrl}/admin/programs`, { token: ADMIN_TOKEN, body: { id: 'bench-l', name: 'list' }, expect: [201] });
  for (let m = 0; m < 4; m += 1)
    await callJson('POST', `${apiUrl}/admin/merchants`, {
      token: ADMIN_TOKEN,
      body: { id: `bench-l-m${m}`, programId: 'bench-l', name: 'list' },
      expect: [201],
    });
  const { key } = (await callJson('POST', `${apiUrl}/admin/api-keys`, { token: ADMIN_TOKEN, body: { merchantId: 'bench-l-m0' }, expect: [201] })) as {
    key: string;
  };
  await seedEvents(bench.prisma, SIZE.listEvents);
  log(`seeded in ${round((performance.now() - seedStarted) / 1000, 1)} s`);

  const listHeaders = {
    'x-api-key': key,
    'content-type': 'application/json',
    'accept-language': 'en-US',
    'user-agent': 'herald-bench',
    origin: 'https://bench.example',
  };
  const perMerchant = SIZE.listEvents / 4;
  const check = async (query: string, expectCount: number): Promise<string> => {
    const { status, body: text } = await requestJson('GET', `${apiUrl}/events?${query}`, { headers: listHeaders });
    if (status !== 200) throw new Error(`GET /events?${query} answered ${status}: ${text.slice(0, 300)}`);
    const body = JSON.parse(text) as { count: number; data: unknown[] };
    if (body.count !== expectCount || body.data.length !== 20)
      throw new Error(`GET /events?${query}: count ${body.count} (expected ${expectCount}), ${body.data.length} items`);
    return text;
  };
  const page1 = await check('page=1&pageSize=20', perMerchant);
  await check('origin=api&objectType=payment&page=1&pageSize=20', filteredCount(SIZE.listEvents));
  await check(`page=${SIZE.deepPage}&pageSize=20`, perMerchant);

  // Page 1 beside its two ceilings, in alternated rounds (bench/paired-rounds.ts).
  const listCeilings = await startListCeilings({ databaseUrl: bench.databaseUrl, page: page1, expectCount: perMerchant, startListening });
  const listRoundResults = await listRounds(
    { herald: `${apiUrl}/events?page=1&pageSize=20`, ...listCeilings },
    listHeaders,
    SIZE.rounds,
    SIZE.listRoundSeconds,
  );
  const rows: Row[] = [...listRoundRows(listRoundResults, { events: SIZE.listEvents, pageBytes: page1.length })];
  const page1P99 = medianRound(listRoundResults, 'static', (r) => r.rps).round.herald.p99;
  // The other pages, once each, against page 1 of the rounds.
  const staticRps = median(listRoundResults.map((r) => r.static.rps));
  const pages: Array<[string, string]> = [
    ['filtered page 1 (origin=api, objectType=payment)', 'origin=api&objectType=payment&page=1&pageSize=20'],
    [`page ${SIZE.deepPage}`, `page=${SIZE.deepPage}&pageSize=20`],
  ];
  for (const [name, query] of pages) {
    const r = await cannon(`${apiUrl}/events?${query}`, SIZE.listSeconds, listHeaders);
    rows.push({
      scenario: `GET /events ${name}, ${SIZE.listEvents} events, req/s`,
      figure: round(r.rps, 0),
      unit: 'req/s',
      ceiling: staticRps,
      ceilingName: 'bare Express (median of the rounds)',
      note: `p50 ${r.p50} ms, p99 ${r.p99} ms`,
    });
    if (name.startsWith('page ')) {
      rows.push({
        scenario: `GET /events ${name} p99 / page 1 p99`,
        figure: r.p99,
        unit: 'ms p99',
        ceiling: page1P99,
        ceilingName: 'page 1 p99',
        target: '<= 3',
      });
    }
  }
  return rows;
}
