import type { TargetOwner, TargetRepository } from '@herald/db';
import { maskQueryValues, targetOutlook } from '@herald/domain';
import type { TargetHealth } from '@herald/queue';

/** What the merchant's view of its target is read from: the merchant API's and the portal's. */
export interface MerchantTargetHealthDependencies {
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
 * A merchant's (or a program's) own notification target and how its callbacks are going, with
 * only what the merchant may know: the URL with its query values masked (merchants put tokens
 * there, and the answer may reach a browser or a log), the auth mode without any credential, the
 * switch-off state, the breaker, the stored health and when auto-disable would switch it off.
 * Null when the owner has no target. One reading for GET /notification-target and the portal.
 */
export async function merchantTargetHealth(deps: MerchantTargetHealthDependencies, owner: TargetOwner) {
  const target = await deps.targets.find(owner);
  if (!target) return null;
  // The breaker lives in Redis: while it cannot be read the rest is still shown, breaker null.
  const live = await deps.health(target.id).catch(() => null);
  const { disabledReason, autoDisableAt, warning } = targetOutlook(
    { enabled: target.enabled, disabledReason: target.disabledReason, failingSince: target.health.failingSince },
    deps.autoDisableAfterMs,
    (deps.now ?? (() => new Date()))(),
  );
  return {
    url: maskQueryValues(target.url),
    authMode: target.auth.mode,
    notifications: target.notifications,
    enabled: target.enabled,
    ordering: target.ordering,
    disabledReason,
    disabledAt: target.disabledAt,
    breaker: live && { state: live.breaker.state, openedAt: live.breaker.openedAt, halfOpenAt: live.breaker.halfOpenAt },
    pausedUntil: live?.pausedUntil ?? null,
    window: live?.window ?? null,
    lastSuccessAt: target.health.lastSuccessAt,
    failingSince: target.health.failingSince,
    autoDisableAt,
    warning: warning
      ? `Every callback has failed since ${target.health.failingSince!.toISOString()}. Unless one succeeds first, Herald switches this target off at its first failed callback from ${autoDisableAt!.toISOString()}.`
      : null,
    egressAddresses: deps.egressAddresses,
  };
}

/** The merchant's view of its target (merchantTargetHealth). */
export type MerchantTargetView = NonNullable<Awaited<ReturnType<typeof merchantTargetHealth>>>;

/** "No target" as the merchant API and the portal word it. */
export function noTargetMessage(owner: TargetOwner): string {
  const whose = owner.kind === 'merchant' ? 'this merchant' : 'this program';
  return `No notification target is set for ${whose}: the platform's support sets one up.`;
}
