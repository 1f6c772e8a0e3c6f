/** Base of every error thrown by `@herald/callback-auth`; `code` is stable and safe to branch on. */
export abstract class CallbackAuthError extends Error {
  abstract readonly code: string;
}
