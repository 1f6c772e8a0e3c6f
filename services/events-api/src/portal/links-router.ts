import { Router } from 'express';
import type { PortalScope, PortalSessionRepository, TenantRepository } from '@herald/db';
import { compileValidator, ValidationError } from '@herald/domain';
import { HttpError } from '../http/http-error';
import { publicBaseUrl } from '../http/public-origin';
import { parseBody } from '../http/validate-body';
import { ownerOf } from '../targets/router';
import { PORTAL_PATH } from './pages';
import { createPortalLinkSchema, type CreatePortalLinkBody } from './schemas';

const validateCreateLink = compileValidator<CreatePortalLinkBody>(createPortalLinkSchema);

export interface PortalLinksDependencies {
  sessions: Pick<PortalSessionRepository, 'createLink'>;
  tenants: Pick<TenantRepository, 'findMerchant' | 'findProgram'>;
  /** PORTAL_LINK_TTL_SECONDS: a link's lifetime, and the longest `expiresInSeconds` may ask for. */
  linkTtlSeconds: number;
  /** PUBLIC_URL, the base of the links; unset, the origin the request reached. */
  publicUrl: string | undefined;
}

/**
 * POST /admin/{merchants|programs}/{id}/portal-links (behind the admin token): support makes a
 * single-use link that opens the merchant portal for that merchant (or program) and hands it to
 * the merchant. Only the link's hash is kept; the answer is the one time the link is shown.
 */
export function portalLinksRouter(deps: PortalLinksDependencies): Router {
  const router = Router();
  for (const kind of ['program', 'merchant'] as const) {
    router.post(`/${kind}s/:ownerId/portal-links`, async (req, res) => {
      const owner = ownerOf(kind, req);
      const body = parseBody(validateCreateLink, req.body ?? {});
      const seconds = body.expiresInSeconds ?? deps.linkTtlSeconds;
      if (seconds > deps.linkTtlSeconds) {
        throw new ValidationError([
          { pointer: '/expiresInSeconds', message: `must be at most ${deps.linkTtlSeconds} (PORTAL_LINK_TTL_SECONDS)`, keyword: 'maximum' },
        ]);
      }
      const scope = await scopeOf(deps, owner);
      if (!scope) throw new HttpError(404, 'not_found', 'Not Found', `No ${kind} "${owner.kind === 'merchant' ? owner.merchantId : owner.programId}".`);
      const base = publicBaseUrl(req, deps.publicUrl);
      if (!base)
        throw new HttpError(400, 'bad_host', 'Bad Request', 'The Host header is not a plain host name: set PUBLIC_URL so that links name the portal.', {
          header: 'host',
        });
      const { token, expiresAt } = await deps.sessions.createLink(scope, new Date(Date.now() + seconds * 1000));
      res.status(201).json({ url: `${base}${PORTAL_PATH}/enter?token=${token}`, expiresAt });
    });
  }
  return router;
}

async function scopeOf(deps: PortalLinksDependencies, owner: ReturnType<typeof ownerOf>): Promise<PortalScope | null> {
  if (owner.kind === 'program') return (await deps.tenants.findProgram(owner.programId)) ? { kind: 'program', programId: owner.programId } : null;
  const merchant = await deps.tenants.findMerchant(owner.merchantId);
  return merchant ? { kind: 'merchant', programId: merchant.programId, merchantId: merchant.id } : null;
}
