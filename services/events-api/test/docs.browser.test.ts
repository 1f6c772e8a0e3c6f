// GET /docs in a real headless Chromium (Debian's package, driven by playwright-core; no browser is
// downloaded): the API reference renders both OpenAPI documents and every request the page makes
// goes to the events-api itself. Needs /usr/bin/chromium: see the README.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext } from 'playwright-core';
import { useChromium } from './support/chromium';
import request from 'supertest';
import { createTestApi } from './support/api';

jest.setTimeout(120_000);

const api = createTestApi();
let server: Server;
let apiUrl: string;
const browsers = useChromium();
let browser: BrowserContext;

beforeAll(async () => {
  server = api.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await browsers.open();
});

afterAll(async () => {
  // beforeAll may have failed before the server existed: then there is nothing to close, and
  // waiting for its close would hold up api.close(), which removes the test's Redis keys.
  if (server) await new Promise((resolve) => server.close(resolve));
  await api.close();
});

describe('GET /docs', () => {
  it('serves a page that loads only files of the events-api', async () => {
    const res = await request(api.app).get('/docs').expect(200);
    expect(res.type).toBe('text/html');
    expect(res.text).not.toMatch(/(src|href)="(https?:)?\/\//);
    const start = await request(api.app).get('/docs/start.js').expect(200);
    expect(start.text).toContain('validatorUrl: null');
    await request(api.app)
      .get('/docs/swagger-ui.css')
      .expect(200)
      .expect('Content-Type', /text\/css/);
    await request(api.app)
      .get('/docs/swagger-ui-bundle.js')
      .expect(200)
      .expect('Content-Type', /javascript/);
    // Only the files the page uses are served, not the package's folder.
    await request(api.app).get('/docs/package.json').expect(404);
  });

  it('renders both documents in a browser, every request going to the events-api', async () => {
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (req) => requested.push(req.url()));
    await page.goto(`${apiUrl}/docs`);
    await page.getByText('Herald merchant API').first().waitFor();
    await page.getByText('/events').first().waitFor();

    await page.getByLabel('Select a definition').selectOption({ label: 'Ingest and admin API' });
    await page.getByText('Herald ingest and admin API').first().waitFor();
    await page.getByText('/internal/events').first().waitFor();

    expect(requested).toEqual(expect.arrayContaining([`${apiUrl}/openapi.json`, `${apiUrl}/openapi/internal.json`]));
    // "Try it out" sends the Content-Type GET /events requires, which the document cannot make tools send.
    const tried = await page.evaluate(() => {
      const ui = (globalThis as unknown as { ui: { getConfigs(): { requestInterceptor(r: object): { headers: Record<string, string> } } } }).ui;
      return ui.getConfigs().requestInterceptor({ method: 'GET', url: '/events?pageSize=5', headers: {} }).headers;
    });
    expect(tried).toEqual({ 'Content-Type': 'application/json' });
    // data: URIs (the stylesheet's inline icons) ask no host for anything.
    expect(requested.filter((url) => !url.startsWith(`${apiUrl}/`) && !url.startsWith('data:'))).toEqual([]);
    await page.close();
  });
});
