import { DOMAIN_SCHEMAS } from '@herald/domain';
import { withoutId, type Schema } from './document-parts';

const domainById = new Map<string, Schema>(DOMAIN_SCHEMAS.map((schema) => [schema.$id, schema as unknown as Schema]));

/**
 * The domain schemas `rootIds` name and every one they reference, as components named by title,
 * their `$ref`s rewritten to the components: a document lists no schema its paths do not use.
 */
export function domainComponents(rootIds: readonly string[]): Record<string, unknown> {
  const found = new Map<string, Schema>();
  const visit = (id: string) => {
    const schema = domainById.get(id);
    if (!schema || found.has(id)) return;
    found.set(id, schema);
    refsIn(schema).forEach(visit);
  };
  rootIds.forEach(visit);
  return Object.fromEntries([...found.values()].map((schema) => [schema['title'] as string, rewriteRefs(withoutId(schema))]));
}

function refsIn(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refsIn);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) => (key === '$ref' && typeof item === 'string' ? [item] : refsIn(item)));
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => {
      const target = key === '$ref' && typeof item === 'string' ? domainById.get(item) : undefined;
      return target ? [key, `#/components/schemas/${target['title'] as string}`] : [key, rewriteRefs(item)];
    }),
  );
}
