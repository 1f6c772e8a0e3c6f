// The README and docs/ against the product and the repository: what a reader copies or looks up
// must exist in a clone (commits, files, routes), each measured figure says when and where it was
// measured, and the CLI is spelt one way.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { buildInternalDocument } from '../src/openapi/internal-document';
import { buildMerchantDocument } from '../src/openapi/merchant-document';

const ROOT = path.resolve(__dirname, '../../..');
const PAGES = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).map((file) => `docs/${file}`)].filter((file) => file.endsWith('.md'));
const text = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');

/** Every match of `pattern` in every page, with the page and the text just before it. */
function citations(pattern: RegExp): Array<{ page: string; match: RegExpExecArray; before: string }> {
  return PAGES.flatMap((page) => {
    const content = text(page);
    return [...content.matchAll(pattern)].map((match) => ({ page, match, before: content.slice(Math.max(0, match.index - 60), match.index) }));
  });
}

function isCommit(hash: string): boolean {
  try {
    execFileSync('git', ['cat-file', '-e', `${hash}^{commit}`], { cwd: ROOT, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// Routes served beside the OpenAPI documents' own: the ops endpoints, the documents themselves, and
// the admin lists and target PATCH, which the internal document does not describe yet.
const OTHER_ROUTES = [
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
  'GET /openapi.json',
  'GET /openapi/internal.json',
  'GET /docs',
  'GET /docs/{}',
  'GET /admin/programs',
  'GET /admin/merchants',
  'GET /admin/api-keys',
  'GET /admin/notification-targets',
  'PATCH /admin/programs/{}/notification-target',
  'PATCH /admin/merchants/{}/notification-target',
];

function documentedRoutes(): Set<string> {
  const routes = new Set(OTHER_ROUTES);
  for (const document of [buildInternalDocument(), buildMerchantDocument()] as Array<{ paths: Record<string, Record<string, unknown>> }>) {
    for (const [route, operations] of Object.entries(document.paths)) {
      for (const method of Object.keys(operations)) routes.add(`${method.toUpperCase()} ${route.replace(/\{[^}]+\}/g, '{}')}`);
    }
  }
  return routes;
}

describe('the README and docs/', () => {
  it('cite only commits of this repository', () => {
    // A short hash: 7 hexadecimal characters with a letter and a digit, not part of a UUID.
    const cited = citations(/(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7}(?![\w-])/g);
    expect(cited.length).toBeGreaterThan(0);
    expect(cited.filter(({ match }) => !isCommit(match[0])).map(({ page, match }) => `${page}: ${match[0]}`)).toEqual([]);
  });

  it('date every figure they give with its commit', () => {
    const undated = citations(/commit [0-9a-f]{7}/g).filter(({ before }) => !/\d{4}-\d{2}-\d{2}[^.]*$/.test(before));
    expect(undated.map(({ page, match, before }) => `${page}: …${before}${match[0]}`)).toEqual([]);
  });

  it('cite only files a clone has, but for the files a command writes', () => {
    const missing = citations(/`((?:packages|services|bench|docs|scripts|prisma|faults)\/[\w./-]+\.\w+)`/g).filter(
      // A bundle is `pnpm build`'s output, and another missing file must be one the sentence says a command writes.
      ({ match, before }) => !existsSync(path.join(ROOT, match[1]!)) && !match[1]!.includes('/dist/') && !/\bwrites\s*$/.test(before),
    );
    expect(missing.map(({ page, match }) => `${page}: ${match[1]}`)).toEqual([]);
  });

  it('name only routes the events-api serves', () => {
    const routes = documentedRoutes();
    const named = citations(/`(GET|POST|PUT|PATCH|DELETE) (\/[^`\s?]*)[^`]*`/g).flatMap(({ page, match }) => {
      // {programs|merchants} names two routes; :id, {id}, <id> and … each stand for a path segment.
      const alternatives = /\{(\w+)\|(\w+)\}/.exec(match[2]!);
      const paths = alternatives ? alternatives.slice(1).map((word) => match[2]!.replace(alternatives[0], word)) : [match[2]!];
      return paths.map((route) => ({ page, route: `${match[1]} ${route.replace(/:\w+|\{[^}]+\}|<[^>]+>|…/g, '{}')}` }));
    });
    const unknown = named.filter(({ route }) => !routes.has(route));
    expect(unknown.map(({ page, route }) => `${page}: ${route}`)).toEqual([]);
  });

  it('spell the CLI one way: pnpm exec herald', () => {
    const sources = ['services/events-api/src/start-banner.ts', 'services/events-api/src/cli/demo.ts', 'services/events-api/src/cli/herald.ts'];
    const other = [...PAGES, ...sources].filter((file) => /pnpm herald\b/.test(text(file)));
    expect(other).toEqual([]);
  });
});
