/**
 * The TypeScript type a JSON Schema describes, for the subset of JSON Schema the domain schemas use:
 * type (one or a list), const, enum, properties + required, additionalProperties, items, anyOf and
 * $ref. `Refs` maps each `$id` to its schema so that `$ref`s resolve. Keywords that only narrow a
 * value (maxLength, pattern, format, if/then) do not change the type.
 */
export type FromSchema<S, Refs> = S extends { readonly $ref: infer Id }
  ? Id extends keyof Refs
    ? FromSchema<Refs[Id], Refs>
    : never
  : S extends { readonly anyOf: readonly (infer Branch)[] }
    ? FromSchema<Branch, Refs>
    : S extends { readonly const: infer Value }
      ? Value
      : S extends { readonly enum: readonly (infer Value)[] }
        ? Value
        : S extends { readonly type: infer Type }
          ? FromType<Type, S, Refs>
          : unknown;

/** Flattens an intersection into one object type, so editors show the fields. */
export type Simplify<T> = { [K in keyof T]: T[K] } & {};

type FromType<Type, S, Refs> = Type extends readonly (infer One)[]
  ? FromType<One, S, Refs>
  : Type extends 'string'
    ? string
    : Type extends 'integer' | 'number'
      ? number
      : Type extends 'boolean'
        ? boolean
        : Type extends 'null'
          ? null
          : Type extends 'array'
            ? S extends { readonly items: infer Item }
              ? FromSchema<Item, Refs>[]
              : unknown[]
            : Type extends 'object'
              ? FromObject<S, Refs>
              : never;

type FromObject<S, Refs> = S extends { readonly properties: infer Props }
  ? Simplify<
      { -readonly [K in keyof Props as K extends RequiredKeys<S> ? K : never]: FromSchema<Props[K], Refs> } & {
        -readonly [K in keyof Props as K extends RequiredKeys<S> ? never : K]?: FromSchema<Props[K], Refs>;
      }
    >
  : S extends { readonly additionalProperties: infer Values extends object }
    ? { [key: string]: FromSchema<Values, Refs> }
    : { [key: string]: unknown };

type RequiredKeys<S> = S extends { readonly required: readonly (infer K)[] } ? K : never;
