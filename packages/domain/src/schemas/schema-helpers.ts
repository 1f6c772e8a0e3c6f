import { UUID_SOURCE } from '../uuid';

// Small builders shared by the schema files. They return plain JSON Schema, so the schemas stay
// usable as they are in the OpenAPI document.

// Ids name the schemas; nothing fetches them. `.example` keeps them from looking resolvable.
const SCHEMA_ID_BASE = 'https://herald.example/schemas/';

/** The `$id` of the domain schema called `name`. */
export function schemaId<const Name extends string>(name: Name): `${typeof SCHEMA_ID_BASE}${Name}.json` {
  return `${SCHEMA_ID_BASE}${name}.json`;
}

/** A reference to another domain schema by its `$id`. */
export function ref<const S extends { readonly $id: string }>(schema: S): { readonly $ref: S['$id'] } {
  return { $ref: schema.$id };
}

/**
 * `schema` or null, written the way OpenAPI 3.1 expects. The validator drops the errors of the null
 * branch, so a bad non-null value reports only what is wrong with it.
 */
export function nullable<const S extends object>(schema: S): { readonly anyOf: readonly [S, { readonly type: 'null' }] } {
  return { anyOf: [schema, { type: 'null' }] };
}

/** Pattern of an id made of the literal `prefix`, a hyphen, then a UUID (e.g. `Event-<uuid>`). */
export function prefixedUuidPattern(prefix: string): string {
  return `^${prefix}-${UUID_SOURCE}$`;
}
