import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { authenticateMerchantRequest, type MerchantCaller, type MerchantKeyDependencies } from '../auth/merchant-key';
import { expensiveRead, type ExpensiveReads } from '../http/expensive-reads';
import { HttpError } from '../http/http-error';
import type { Recoveries } from './recoveries';

export interface MerchantRecoveriesDependencies extends MerchantKeyDependencies {
  recoveries: Recoveries;
  /** The key's turns and time budget, shared with its expensive reads: a recovery reads the window's events. */
  limits: ExpensiveReads;
}

/** The body of a recovery is two date-times: anything near this size is not one. */
const BODY_LIMIT = '4kb';

/**
 * The merchant's recovery on the merchant API (x-api-key and the spec's headers, as GET /deliveries):
 * POST /deliveries/recover starts one and answers 202 with it, GET /deliveries/recoveries/{id}
 * follows it. Thin: the work is the Recoveries service's, which the portal calls too.
 */
export function merchantRecoveriesRouter(deps: MerchantRecoveriesDependencies): Router {
  const router = Router();

  // The key is checked before the body is read, so that a 401 or 429 comes before any 400, as on every merchant route.
  const authenticated = async (req: Request, res: Response, next: NextFunction) => {
    res.locals.caller = await authenticateMerchantRequest(deps, req, res);
    next();
  };

  router.post('/deliveries/recover', authenticated, express.json({ limit: BODY_LIMIT }), async (req, res) => {
    const caller = res.locals.caller as MerchantCaller;
    const recovery = await expensiveRead(deps.limits, caller.keyId, () => deps.recoveries.recover(caller.scope, req.body));
    res.status(202).location(`/deliveries/recoveries/${recovery.id}`).json(recovery);
  });

  router.get('/deliveries/recoveries/:id', async (req, res) => {
    const caller = await authenticateMerchantRequest(deps, req, res);
    const id = req.params.id!;
    // One recovery and its tagged deliveries, each by its key: no turn is taken.
    const recovery = await deps.recoveries.find(caller.scope, id);
    if (!recovery) throw new HttpError(404, 'not_found', 'Not Found', `No recovery "${id}".`);
    res.json(recovery);
  });

  return router;
}
