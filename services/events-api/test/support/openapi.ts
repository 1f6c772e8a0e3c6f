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
  const problem = schemaProblem(document, name, ['paths', pathTemplate, method, 'responses', String(res.status), 'content', mediaType, 'schema'], res.body);
  if (problem) throw new Error(`${res.status} answer of ${pathTemplate} breaks the ${name} document: ${problem}\n${res.text}`);
}

/**
 * What is wrong with `value` by the schema at `location` of the document (its path segments), with
 * unknown members refused; undefined when nothing is.
 */
export function schemaProblem(document: OpenApiDocument, name: string, location: string[], value: unknown): string | undefined {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(refusingUnknownProperties(document) as object, name);
  const validate = ajv.compile({ $ref: `${name}#${pointerTo(location)}` });
  return validate(value) ? undefined : ajv.errorsText(validate.errors);
}

// Keywords whose subschemas are parts of one object's schema: a property one part declares is
// evaluated by the whole, so only the whole may refuse the unknown ones.
const PART_KEYWORDS = new Set(['allOf', 'anyOf', 'oneOf', 'if', 'then', 'else', 'not']);

/**
 * The document with every object schema that says nothing of other members refusing them
 * (`unevaluatedProperties: false`), so an answer carrying a field the document does not declare
 * fails the check: a generated client would not know that field.
 */
function refusingUnknownProperties(node: unknown, isPart = false): unknown {
  if (Array.isArray(node)) return node.map((item) => refusingUnknownProperties(item, isPart));
  if (node === null || typeof node !== 'object') return node;
  const schema = node as Record<string, unknown>;
  const copy = Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      PART_KEYWORDS.has(key)
        ? Array.isArray(value)
          ? value.map((part) => refusingUnknownProperties(part, true))
          : refusingUnknownProperties(value, true)
        : refusingUnknownProperties(value),
    ]),
  );
  const isObjectSchema = schema['type'] === 'object' || (typeof schema['properties'] === 'object' && !Array.isArray(schema['properties']));
  const saysOfOthers = 'additionalProperties' in schema || 'unevaluatedProperties' in schema || 'patternProperties' in schema;
  if (isObjectSchema && !isPart && !saysOfOthers) copy['unevaluatedProperties'] = false;
  return copy;
}
