import { Router } from 'express';
import type { TargetRepository } from '@herald/db';
import { maskQueryValues, targetOutlook } from '@herald/domain';
import type { TargetHealth } from '@herald/queue';
import { authenticateMerchantRequest, ownTargetOf, type MerchantKeyDependencies } from '../auth/merchant-key';
import { HttpError } from '../http/http-error';

export interface MerchantTargetDependencies extends MerchantKeyDependencies {
  targets: Pick<TargetRepository, 'find'>;
  /** The target's delivery health as the workers left it in Redis (the admin GET's reader). */
  health: (targetId: string) => Promise<TargetHealth>;
  /** TARGET_AUTO_DISABLE_AFTER, to say when the rule would switch a failing target off. */
  autoDisableAfterMs: number;
  /** EGRESS_ADDRESSES: where callbacks leave from, for the merchant's allow-list. */
  egressAddresses: readonly string[];
  /** The clock (tests pass their own). Default `() => new Date()`. */
  now?: () => Date;
}

/**
 * GET /notification-target (the merchant API): the key's own target and how its callbacks are
 * going, so that a merchant sees its endpoint failing, and when Herald would switch it off, before
 * support has to tell it. Only what the merchant may know: the URL with its query values masked
 * (merchants put tokens there, and the answer may reach a browser or a log), the auth mode without
 * any credential, the switch-off state, the breaker, and the stored health. Switching the target
 * on or off stays with support (the admin API).
 */
export function merchantTargetRouter(deps: MerchantTargetDependencies): Router {
  const router = Router();
  const now = deps.now ?? (() => new Date());

  router.get('/notification-target', async (req, res) => {
    const caller = await authenticateMerchantRequest(deps, req, res);
    const owner = ownTargetOf(caller.scope);
    const target = await deps.targets.find(owner);
    if (!target) {
      const whose = owner.kind === 'merchant' ? 'this merchant' : 'this program';
      throw new HttpError(404, 'not_found', 'Not Found', `No notification target is set for ${whose}: the platform's support sets one up.`);
    }
    // The breaker lives in Redis: while it cannot be read the rest is still shown, breaker null.
    const live = await deps.health(target.id).catch(() => null);
    const { disabledReason, autoDisableAt, warning } = targetOutlook(
      { enabled: target.enabled, disabledReason: target.disabledReason, failingSince: target.health.failingSince },
      deps.autoDisableAfterMs,
      now(),
    );
    res.json({
      url: maskQueryValues(target.url),
      authMode: target.auth.mode,
      notifications: target.notifications,
      enabled: target.enabled,
      ordering: target.ordering,
      disabledReason,
      disabledAt: target.disabledAt,
      breaker: live && { state: live.breaker.state, openedAt: live.breaker.openedAt, halfOpenAt: live.breaker.halfOpenAt },
      lastSuccessAt: target.health.lastSuccessAt,
      failingSince: target.health.failingSince,
      autoDisableAt,
      warning: warning
        ? `Every callback has failed since ${target.health.failingSince!.toISOString()}. Unless one succeeds first, Herald switches this target off at its first failed callback from ${autoDisableAt!.toISOString()}.`
        : null,
      egressAddresses: deps.egressAddresses,
    });
  });

  return router;
}
