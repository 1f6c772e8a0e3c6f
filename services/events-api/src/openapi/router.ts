import { Router } from 'express';
import { buildOpenApiDocument } from './document';

/** GET /openapi.json: the merchant API's OpenAPI 3.1 document (public, like the API's docs). */
export function openApiRouter(): Router {
  const document = JSON.stringify(buildOpenApiDocument());
  const router = Router();
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(document);
  });
  return router;
}
