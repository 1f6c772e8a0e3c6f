import { Router } from 'express';
import type { TargetRepository } from '@herald/db';
import { noTarget, ownerOf } from './router';

export interface SigningSecretRouterDependencies {
  targets: TargetRepository;
  /** SIGNING_SECRET_ROTATION_GRACE_SECONDS: how long a rotated-out secret keeps signing. */
  rotationGraceSeconds: number;
}

/**
 * The Standard Webhooks signing secret of a program's or a merchant's notification target (mounted
 * under /admin, behind the admin token): the one place any API shows it. GET shows it (a target
 * stored before signatures gets one now); POST …/rotate replaces it, and callbacks carry the
 * replaced secret's signature too until `previousSecretExpiresAt`. Like every answer of the API,
 * these are `Cache-Control: no-store` (app.ts).
 */
export function signingSecretRouter(deps: SigningSecretRouterDependencies): Router {
  const router = Router();
  for (const kind of ['program', 'merchant'] as const) {
    const path = `/${kind}s/:ownerId/notification-target/signing-secret`;

    router.get(path, async (req, res) => {
      const owner = ownerOf(kind, req);
      res.json((await deps.targets.signingSecret(owner)) ?? notFoundFor(owner));
    });

    router.post(`${path}/rotate`, async (req, res) => {
      const owner = ownerOf(kind, req);
      res.json((await deps.targets.rotateSigningSecret(owner, deps.rotationGraceSeconds)) ?? notFoundFor(owner));
    });
  }
  return router;
}

function notFoundFor(owner: Parameters<typeof noTarget>[0]): never {
  throw noTarget(owner);
}
