import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Router, type Request, type Response } from 'express';
import { SERVERS } from './document-parts';
import { buildInternalDocument, INTERNAL_DOCUMENT_PATH } from './internal-document';
import { buildMerchantDocument, MERCHANT_DOCUMENT_PATH } from './merchant-document';
import { publicBaseUrl } from '../http/public-origin';

/** Where the API reference page lives. */
const DOCS_PATH = '/docs';

// Swagger UI (swagger-ui-dist): kept by the OpenAPI Initiative's founding vendor, renders OpenAPI
// 3.1, shows several documents behind one selector, and ships as static files with no dependency,
// so the page is served from this process and asks no other host for anything. Only the files the
// page loads are served; its default validator badge (an outside service) is switched off.
const SWAGGER_UI_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: ReadonlyMap<string, { file: string; type: string }> = new Map([
  ['swagger-ui.css', { file: 'swagger-ui.css', type: 'text/css' }],
  ['swagger-ui-bundle.js', { file: 'swagger-ui-bundle.js', type: 'text/javascript' }],
  ['swagger-ui-standalone-preset.js', { file: 'swagger-ui-standalone-preset.js', type: 'text/javascript' }],
  ['favicon-32x32.png', { file: 'favicon-32x32.png', type: 'image/png' }],
]);

// Read on first use (the bundle is over a megabyte), then kept.
const assetCache = new Map<string, Buffer>();
function asset(file: string): Buffer {
  let body = assetCache.get(file);
  if (!body) {
    body = readFileSync(join(SWAGGER_UI_DIR, file));
    assetCache.set(file, body);
  }
  return body;
}

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Herald API reference</title>
  <link rel="icon" type="image/png" href="${DOCS_PATH}/favicon-32x32.png">
  <link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${DOCS_PATH}/swagger-ui-bundle.js"></script>
  <script src="${DOCS_PATH}/swagger-ui-standalone-preset.js"></script>
  <script src="${DOCS_PATH}/start.js"></script>
</body>
</html>
`;

// A script file rather than an inline one, so the page works under a Content-Security-Policy
// that allows scripts from this origin only. GET /events requires Content-Type: application/json
// on a request without a body, which Swagger UI never sets: "Try it out" adds it.
const START_SCRIPT = `window.ui = SwaggerUIBundle({
  urls: ${JSON.stringify([
    { url: MERCHANT_DOCUMENT_PATH, name: 'Merchant API' },
    { url: INTERNAL_DOCUMENT_PATH, name: 'Ingest and admin API' },
  ])},
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
  requestInterceptor: (request) => {
    if (request.method === 'GET' && new URL(request.url, window.location.href).pathname === '/events') {
      request.headers['Content-Type'] = 'application/json';
    }
    return request;
  },
});
`;

/**
 * The API's OpenAPI 3.1 documents (public, like any API's docs): the merchant API at
 * /openapi.json, the ingest and admin API at /openapi/internal.json; and GET /docs, a reference
 * page that renders both.
 */
export function openApiRouter(options: { publicUrl?: string | undefined } = {}): Router {
  const merchant = buildMerchantDocument();
  const internal = buildInternalDocument();
  const router = Router();
  router.get(MERCHANT_DOCUMENT_PATH, (req, res) => {
    res.type('application/json').send(JSON.stringify({ ...merchant, servers: serversFor(req, options.publicUrl) }));
  });
  router.get(INTERNAL_DOCUMENT_PATH, (req, res) => {
    res.type('application/json').send(JSON.stringify({ ...internal, servers: serversFor(req, options.publicUrl) }));
  });
  router.get(DOCS_PATH, (_req, res) => {
    res.type('text/html').send(PAGE);
  });
  router.get(`${DOCS_PATH}/start.js`, (_req, res) => {
    res.type('text/javascript').send(START_SCRIPT);
  });
  for (const [name, { file, type }] of ASSETS) {
    router.get(`${DOCS_PATH}/${name}`, (_req, res: Response) => {
      res.type(type).set('Cache-Control', 'public, max-age=3600').send(asset(file));
    });
  }
  return router;
}

/**
 * The API's base URL: PUBLIC_URL when set; otherwise as the client that fetched the document
 * reached it (publicBaseUrl).
 */
function serversFor(req: Request, publicUrl: string | undefined): Array<{ url: string; description: string }> {
  if (publicUrl) return [{ url: publicUrl, description: 'The Herald instance serving this document (PUBLIC_URL).' }];
  const url = publicBaseUrl(req, undefined);
  if (!url) return SERVERS;
  return [{ url, description: 'The Herald instance that served this document, as the request reached it.' }];
}
