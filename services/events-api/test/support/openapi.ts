import { pointerTo } from '@herald/domain';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Response } from 'supertest';

/** The parts of an OpenAPI document the tests read. */
export type OpenApiDocument = {
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, Record<string, unknown>>; headers: Record<string, unknown> };
};
type Operation = {
  parameters?: Array<{ name: string; in: string; required?: boolean; schema: Record<string, unknown> }>;
  responses: Record<string, { headers?: Record<string, { $ref?: string; required?: boolean }>; content?: Record<string, unknown> }>;
};

/** Checks a real answer against the document's operation: a documented status, media type, required headers and body schema. */
export function expectDocumented(document: OpenApiDocument, name: string, pathTemplate: string, method: string, res: Response): void {
  const operation = document.paths[pathTemplate]?.[method];
  if (!operation) throw new Error(`${method.toUpperCase()} ${pathTemplate} is not in the ${name} document`);
  const documented = operation.responses[String(res.status)];
  if (!documented) throw new Error(`${method.toUpperCase()} ${pathTemplate} answered ${res.status}, which the ${name} document does not list`);
  for (const [header, spec] of Object.entries(documented.headers ?? {})) {
    const required = spec.$ref ? (document.components.headers[spec.$ref.split('/').pop()!] as { required?: boolean }).required : spec.required;
    if (required) expect([header, res.headers[header.toLowerCase()]]).toEqual([header, expect.any(String)]);
  }
  if (!documented.content) {
    expect(res.text ?? '').toBe('');
    return;
  }
  const mediaType = String(res.type);
  expect(Object.keys(documented.content)).toContain(mediaType);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(document, name);
  const pointer = pointerTo(['paths', pathTemplate, method, 'responses', String(res.status), 'content', mediaType, 'schema']);
  const validate = ajv.compile({ $ref: `${name}#${pointer}` });
  if (!validate(res.body))
    throw new Error(`${res.status} answer of ${pathTemplate} breaks the ${name} document: ${ajv.errorsText(validate.errors)}\n${res.text}`);
}
