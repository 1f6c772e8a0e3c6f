import type { TargetAuth, TargetInput } from '@herald/db';
import type { TargetPatch } from './schemas';

/**
 * The target a PATCH asks for, as a PUT body: `patch` merged into the stored `current` by JSON
 * merge patch rules (RFC 7396): members given replace, objects merge, `null` removes. The stored
 * password stays unless the patch gives one (it is never sent back to be patched). A patch that
 * changes auth.mode keeps only the stored fields the new mode takes: basic and oauth share the
 * username and password, `none` takes none. The result is checked against the PUT schema, which
 * names any field the new mode still lacks.
 */
export function mergeTargetPatch(current: TargetInput, patch: TargetPatch): Record<string, unknown> {
  return {
    url: patch.url ?? current.url,
    auth: patch.auth === undefined ? current.auth : mergeAuth(current.auth, patch.auth),
    notifications:
      patch.notifications === undefined ? current.notifications : patch.notifications === null ? {} : merge(current.notifications, patch.notifications),
    enabled: patch.enabled ?? current.enabled,
    ordering: patch.ordering ?? current.ordering,
    delivery: patch.delivery === undefined ? (current.delivery ?? {}) : patch.delivery === null ? {} : merge(current.delivery ?? {}, patch.delivery),
  };
}

// Every stored field of a mode, the optional ones included: a field left out here would be dropped
// by any patch of auth that keeps the mode.
const FIELDS_OF_MODE: Readonly<Record<string, readonly string[]>> = {
  none: [],
  basic: ['username', 'password'],
  oauth: ['authUrl', 'username', 'password', 'tokenRequest', 'scope'],
};

function mergeAuth(current: TargetAuth, patch: NonNullable<TargetPatch['auth']>): Record<string, unknown> {
  const mode = patch.mode ?? current.mode;
  // An unknown mode keeps nothing; the schema then refuses /auth/mode.
  const kept = Object.fromEntries(Object.entries(current).filter(([name]) => (FIELDS_OF_MODE[mode] ?? []).includes(name)));
  return merge({ ...kept, mode }, patch);
}

/** `target` with the members of `patch` replaced, and those `patch` sets to null removed. */
function merge(target: object, patch: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...target };
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete merged[name];
    else merged[name] = value;
  }
  return merged;
}
