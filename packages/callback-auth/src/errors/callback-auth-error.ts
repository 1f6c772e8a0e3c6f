import { HeraldError } from '@herald/domain';

/** Base of every error thrown by `@herald/callback-auth`; `code` is stable and safe to branch on. */
export abstract class CallbackAuthError extends HeraldError {}
