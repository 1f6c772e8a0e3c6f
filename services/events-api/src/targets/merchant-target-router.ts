import { Router } from 'express';
import { authenticateMerchantRequest, ownTargetOf, type MerchantKeyDependencies } from '../auth/merchant-key';
import { HttpError } from '../http/http-error';
import { merchantTargetHealth, noTargetMessage, type MerchantTargetHealthDependencies } from './merchant-target-health';

export interface MerchantTargetDependencies extends MerchantKeyDependencies, MerchantTargetHealthDependencies {}

/**
 * GET /notification-target (the merchant API): the key's own target and how its callbacks are
 * going (merchantTargetHealth), so that a merchant sees its endpoint failing, and when Herald would
 * switch it off, before support has to tell it. Switching the target on or off stays with support
 * (the admin API).
 */
export function merchantTargetRouter(deps: MerchantTargetDependencies): Router {
  const router = Router();

  router.get('/notification-target', async (req, res) => {
    const caller = await authenticateMerchantRequest(deps, req, res);
    const owner = ownTargetOf(caller.scope);
    const view = await merchantTargetHealth(deps, owner);
    if (!view) throw new HttpError(404, 'not_found', 'Not Found', noTargetMessage(owner));
    res.json(view);
  });

  return router;
}
