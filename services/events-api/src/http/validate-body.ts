import { ValidationError, type Validator } from '@herald/domain';

/** Returns the typed body or throws ValidationError (mapped to 400 problem+json naming each field). */
export function parseBody<T>(validator: Validator<T>, body: unknown): T {
  const result = validator(body);
  if (!result.ok) throw new ValidationError(result.violations);
  return result.value;
}
