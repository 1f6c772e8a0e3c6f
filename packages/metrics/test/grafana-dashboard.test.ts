// docs/grafana-dashboard.json against what the two real processes export: every series a panel
// queries exists, and every gauge of shared state comes from one process kind and is aggregated
// with max, so the dashboard adds up with any number of replicas. The PromQL is parsed with the
// Prometheus project's own grammar (@prometheus-io/lezer-promql), not matched with patterns.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { startService, useMigratedDatabase, type ServiceProcess } from '@herald/testing';

jest.setTimeout(60_000);

// A database of its own: the worker's sweeper enqueues every forgotten delivery it finds.
const database = useMigratedDatabase('herald_metrics_dashboard');
const services: ServiceProcess[] = [];
afterAll(() => Promise.all(services.map((service) => service.stop('SIGTERM'))));

type Panel = { title: string; targets?: Array<{ expr: string }>; panels?: Panel[] };
const dashboard = JSON.parse(readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'grafana-dashboard.json'), 'utf8')) as { panels: Panel[] };

/** Every query of the dashboard, with the panel it belongs to. */
function queries(panels: Panel[]): Array<{ panel: string; expr: string }> {
  return panels.flatMap((panel) => [...(panel.targets ?? []).map(({ expr }) => ({ panel: panel.title, expr })), ...queries(panel.panels ?? [])]);
}

type Selector = { metric: string; aggregations: string[] };

/** The metrics an expression selects, each with the aggregations around it (innermost first); throws on a syntax error. */
function selectors(expr: string): Selector[] {
  // Grafana's variables ($__rate_interval, $__range, …) are durations in a range selector.
  const promql = expr.replace(/\$__\w+/g, '5m');
  const tree = parser.parse(promql);
  const found: Selector[] = [];
  tree.iterate({
    enter(ref) {
      if (ref.type.isError) throw new Error(`PromQL syntax error at ${ref.from} in: ${expr}`);
      if (ref.name !== 'VectorSelector') return;
      const identifier = ref.node.getChild('Identifier');
      if (!identifier) return;
      const aggregations: string[] = [];
      for (let node = ref.node.parent; node; node = node.parent) {
        const op = node.name === 'AggregateExpr' ? node.getChild('AggregateOp')?.firstChild : null;
        if (op) aggregations.push(op.name.toLowerCase());
      }
      found.push({ metric: promql.slice(identifier.from, identifier.to), aggregations });
    },
  });
  return found;
}

/** The series names a /metrics answer declares (`# TYPE`), histograms with their _bucket, _sum and _count, and which are gauges. */
function exported(text: string): { names: Set<string>; gauges: Set<string> } {
  const names = new Set<string>();
  const gauges = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'gauge') gauges.add(name!);
    if (type === 'histogram' || type === 'summary') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return { names, gauges };
}

async function scrape(service: ServiceProcess, log: string): Promise<string> {
  const { port } = (await service.waitForLog(log)) as { port: number };
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

describe('the Grafana dashboard in docs/', () => {
  let api: ReturnType<typeof exported>;
  let worker: ReturnType<typeof exported>;
  beforeAll(async () => {
    const env = { NODE_ENV: 'test', DATABASE_URL: database.url, LOG_LEVEL: 'info' };
    const apiProcess = startService('services/events-api/src/server.ts', { ...env, PORT: '0', HOST: '127.0.0.1' });
    const workerProcess = startService('services/delivery-worker/src/main.ts', { ...env, METRICS_PORT: '0' });
    services.push(apiProcess, workerProcess);
    [api, worker] = await Promise.all([scrape(apiProcess, 'events-api listening'), scrape(workerProcess, 'metrics listening')]).then((texts) =>
      texts.map(exported),
    );
  });

  const all = queries(dashboard.panels);

  it('holds queries, each valid PromQL', () => {
    expect(all.length).toBeGreaterThan(15);
    for (const { expr } of all) expect(selectors(expr).length).toBeGreaterThan(0);
  });

  it('queries only series that the events-api or the delivery-worker exports', () => {
    const missing = all.flatMap(({ panel, expr }) =>
      selectors(expr)
        .filter(({ metric }) => !api.names.has(metric) && !worker.names.has(metric))
        .map(({ metric }) => `${panel}: ${metric}`),
    );
    expect(missing).toEqual([]);
  });

  it('takes every Herald gauge (shared state) from one process kind, and aggregates it with max, never sum', () => {
    const heraldGauges = [...new Set([...api.gauges, ...worker.gauges])].filter((name) => name.startsWith('herald_'));
    expect(heraldGauges.length).toBeGreaterThan(0);
    for (const gauge of heraldGauges) expect([gauge, api.names.has(gauge) && worker.names.has(gauge)]).toEqual([gauge, false]);
    const misused = all.flatMap(({ panel, expr }) =>
      selectors(expr)
        .filter(({ metric, aggregations }) => heraldGauges.includes(metric) && aggregations[0] !== 'max')
        .map(({ metric }) => `${panel}: ${metric}`),
    );
    expect(misused).toEqual([]);
  });
});
