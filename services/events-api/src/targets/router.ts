import { Router, type Request } from 'express';
import type { NotificationTargetRecord, TargetAuth, TargetInput, TargetOwner, TargetRepository } from '@herald/db';
import {
  compileValidator,
  effectiveDeliveryPolicy,
  TENANT_ID_PATTERN,
  ValidationError,
  type DeliveryPolicyDefaults,
  type EffectiveDeliveryPolicy,
  type Validator,
  type Violation,
} from '@herald/domain';
import type { Logger } from '@herald/logging';
import { resolveHost, type AddressPolicy, type ResolveHost } from '@herald/outbound';
import type { TargetHealth } from '@herald/queue';
import { HttpError } from '../http/http-error';
import { pageOf, parseQuery } from '../http/query';
import { parseBody } from '../http/validate-body';
import { mergeTargetPatch } from './merge-patch';
import {
  merchantTargetBodySchema,
  programTargetBodySchema,
  targetPatchSchema,
  targetPutQuerySchema,
  targetsQuerySchema,
  type TargetBody,
  type TargetPatch,
  type TargetPutQuery,
  type TargetsQuery,
} from './schemas';
import { checkCredentials, sendTestCallback, type TargetOutbound } from './target-outbound';
import { checkTargetUrl } from './url-guard';

const validators = {
  program: compileValidator<TargetBody>(programTargetBodySchema),
  merchant: compileValidator<TargetBody>(merchantTargetBodySchema),
};
const validatePutQuery = compileValidator<TargetPutQuery>(targetPutQuerySchema);
const validatePatch = compileValidator<TargetPatch>(targetPatchSchema);
const validateListQuery = compileValidator<TargetsQuery>(targetsQuerySchema);

const TENANT_ID = new RegExp(TENANT_ID_PATTERN);

export interface TargetsRouterDependencies {
  targets: TargetRepository;
  /** Where target URLs may point (ALLOW_PRIVATE_TARGETS, TARGET_HOST_ALLOWLIST). */
  urlPolicy: AddressPolicy;
  /** How host names are resolved for the URL guard. Default: dns.lookup, every address. */
  resolveHost?: ResolveHost;
  /** The target's delivery health (breaker, callbacks in flight and deferred), read from Redis. */
  health: (targetId: string) => Promise<TargetHealth>;
  /** Sends the OAuth credential check of a PUT and test callbacks. */
  outbound: TargetOutbound;
  logger: Logger;
  /** The settings a target's delivery policy falls back on (DELIVERY_ATTEMPTS, …), shown in its effective policy. */
  deliveryDefaults: DeliveryPolicyDefaults;
}

/**
 * The notification target of a program or of a merchant, set by admins (mounted under /admin,
 * behind the admin token): PUT creates or replaces it (an OAuth target's credentials checked first
 * with one token request, unless ?verify=false), PATCH changes some of it (a JSON merge patch that
 * keeps the credentials unless new ones are given), GET shows it with the password masked and its
 * delivery `health` (null while Redis cannot be read: the target itself is still shown), DELETE
 * switches it off, POST …/test sends it a test callback now. GET /notification-targets lists them.
 */
export function targetsRouter(deps: TargetsRouterDependencies): Router {
  const router = Router();
  const resolve = deps.resolveHost ?? resolveHost;
  // Every answer shows the policy in force beside the one set, each value saying where it comes from.
  const view = (target: NotificationTargetRecord): NotificationTargetRecord & { effectiveDelivery: EffectiveDeliveryPolicy } => ({
    ...target,
    effectiveDelivery: effectiveDeliveryPolicy(target.delivery, deps.deliveryDefaults),
  });

  router.get('/notification-targets', async (req, res) => {
    const query = parseQuery(validateListQuery, req.query);
    const { page, pageSize } = pageOf(query);
    const filter = {
      ...(query.programId === undefined ? {} : { programId: query.programId }),
      ...(query.merchantId === undefined ? {} : { merchantId: query.merchantId }),
    };
    const { count, targets } = await deps.targets.list(filter, page, pageSize);
    res.json({ page, pageSize, count, totalPages: Math.ceil(count / pageSize), data: targets.map(view) });
  });

  for (const kind of ['program', 'merchant'] as const) {
    const path = `/${kind}s/:ownerId/notification-target`;

    router.put(path, async (req, res) => {
      const owner = ownerOf(kind, req);
      const { verify = 'true' } = parseQuery(validatePutQuery, req.query);
      const input = await parseTargetInput(validators[kind], req.body, deps.urlPolicy, resolve);
      const checked = verify === 'true' && input.auth.mode === 'oauth' ? await checkCredentials(owner, input.auth, deps.outbound) : undefined;
      // A program or merchant that does not exist: TargetOwnerNotFoundError, a 404 (http/error-handler.ts).
      const saved = await deps.targets.upsert(owner, input);
      // The token the check was issued serves the first callbacks; without it they fetch their own.
      await checked?.primeCache(saved.id).catch((error: unknown) => {
        deps.logger.warn('the checked OAuth token could not be cached', { targetId: saved.id, error: error instanceof Error ? error.message : String(error) });
      });
      res.json(view(saved));
    });

    router.post(`${path}/test`, async (req, res) => {
      const owner = ownerOf(kind, req);
      const target = await deps.targets.findForSending(owner);
      if (!target) throw noTarget(owner);
      res.json(await sendTestCallback(target, deps.outbound));
    });

    router.patch(path, async (req, res) => {
      const owner = ownerOf(kind, req);
      const patch = parseBody(validatePatch, req.body);
      const current = await deps.targets.findInput(owner);
      if (!current) throw noTarget(owner);
      const merge = (stored: TargetInput) => parseBody(validators[kind], mergeTargetPatch(stored, patch));
      // Only the URLs the patch sets are checked again: switching off a target whose host no
      // longer resolves must still work. They are the patch's own, so checking them once, before
      // the row is locked, holds whatever a concurrent change does meanwhile.
      await checkedInput(merge(current), deps.urlPolicy, resolve, { url: patch.url !== undefined, authUrl: typeof patch.auth?.authUrl === 'string' });
      // Merged again into the locked row: a concurrent PATCH of another field is kept, not overwritten.
      const changed = await deps.targets.change(owner, (stored) => inputOf(merge(stored)));
      if (!changed) throw noTarget(owner);
      res.json(view(changed));
    });

    router.get(path, async (req, res) => {
      const owner = ownerOf(kind, req);
      const target = await deps.targets.find(owner);
      if (!target) throw noTarget(owner);
      // The stored part of the health (last success, failing since) and, from Redis, the breaker's.
      const delivery = await deps.health(target.id).catch(() => null);
      res.json({
        ...view(target),
        health: { ...target.health, ...(delivery ?? { breaker: null, inFlight: null, deferred: null, pausedUntil: null, window: null }) },
      });
    });

    router.delete(path, async (req, res) => {
      const owner = ownerOf(kind, req);
      if (!(await deps.targets.remove(owner))) throw noTarget(owner);
      res.status(204).end();
    });
  }
  return router;
}

export function ownerOf(kind: 'program' | 'merchant', req: Request): TargetOwner {
  const id = String(req.params.ownerId);
  // An id no tenant can have names nothing: answer as for an unknown one, without a query.
  if (!TENANT_ID.test(id)) throw notFound(`No ${kind} "${id}".`);
  return kind === 'program' ? { kind, programId: id } : { kind, merchantId: id };
}

/** Schema first, then the URL rules (which resolve host names), each violation naming its field. */
async function parseTargetInput(validate: Validator<TargetBody>, raw: unknown, policy: AddressPolicy, resolve: ResolveHost): Promise<TargetInput> {
  return checkedInput(parseBody(validate, raw), policy, resolve, { url: true, authUrl: true });
}

/** The URL rules on the URLs of `check` (which resolve host names), each violation naming its field. */
async function checkedInput(body: TargetBody, policy: AddressPolicy, resolve: ResolveHost, check: { url: boolean; authUrl: boolean }): Promise<TargetInput> {
  const input = inputOf(body);
  const { auth } = input;
  const checks: Array<Promise<Violation | undefined>> = [];
  if (check.url) checks.push(checkTargetUrl(body.url, '/url', policy, resolve));
  if (check.authUrl && auth.mode === 'oauth') checks.push(checkTargetUrl(auth.authUrl, '/auth/authUrl', policy, resolve));
  const violations = (await Promise.all(checks)).filter((v): v is Violation => v !== undefined);
  if (violations.length > 0) throw new ValidationError(violations);
  return input;
}

function inputOf(body: TargetBody): TargetInput {
  return {
    url: body.url,
    auth: toAuth(body.auth),
    notifications: body.notifications ?? {},
    enabled: body.enabled ?? true,
    ordering: body.ordering ?? 'none',
    delivery: body.delivery ?? {},
  };
}

// The schema's per-mode rules guarantee the fields each mode needs.
function toAuth(auth: TargetBody['auth']): TargetAuth {
  const { mode, username = '', password = '', authUrl = '', tokenRequest = 'spec', scope } = auth;
  if (mode === 'none') return { mode };
  if (mode === 'basic') return { mode, username, password };
  return { mode, authUrl, username, password, tokenRequest, ...(scope === undefined ? {} : { scope }) };
}

export function noTarget(owner: TargetOwner): HttpError {
  const name = owner.kind === 'program' ? `program "${owner.programId}"` : `merchant "${owner.merchantId}"`;
  return notFound(`No notification target for ${name}.`);
}

function notFound(detail: string): HttpError {
  return new HttpError(404, 'not_found', 'Not Found', detail);
}
