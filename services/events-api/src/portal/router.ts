import { timingSafeEqual } from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import type {
  DeliveryHistoryRepository,
  EventRepository,
  PortalSession,
  PortalSessionRepository,
  SigningSecretRecord,
  TargetOwner,
  TenantRepository,
} from '@herald/db';
import { compileValidator, NoTargetError, QueueUnavailableError, RecoveryRunningError, TargetSwitchedOffError, ValidationError } from '@herald/domain';
import { ownTargetOf } from '../auth/merchant-key';
import { findOwnDelivery, listOwnDeliveries } from '../deliveries/merchant-deliveries';
import { expensiveRead, type ExpensiveReads } from '../http/expensive-reads';
import { QUEUE_RETRY_AFTER_SECONDS } from '../http/error-handler';
import { HttpError } from '../http/http-error';
import { invalidQuery, parseQuery } from '../http/query';
import type { Recoveries } from '../recoveries/recoveries';
import { merchantTargetHealth, type MerchantTargetHealthDependencies } from '../targets/merchant-target-health';
import {
  deliveriesPage,
  deliveryPage,
  enterPage,
  eventsPage,
  messagePage,
  overviewPage,
  PORTAL_PATH,
  recoveryPage,
  signingSecretPage,
  STYLESHEET_PATH,
  type EventItem,
  type PageContext,
} from './pages';
import { html, type SafeHtml } from './html';
import { recoveryInputOf } from './recovery-form';
import { portalDeliveriesQuerySchema, portalEventsQuerySchema, type PortalDeliveriesQuery, type PortalEventsQuery } from './schemas';
import { PORTAL_CSS } from './styles';

/** Rows per page of the portal's lists. */
const PAGE_SIZE = 20;
const COOKIE = 'herald_portal';

// Nothing but this origin's stylesheet and forms: no script at all, no frame, no other host. A
// value escaped wrongly could then still not run.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const validateDeliveriesQuery = compileValidator<PortalDeliveriesQuery>(portalDeliveriesQuerySchema);
const validateEventsQuery = compileValidator<PortalEventsQuery>(portalEventsQuerySchema);

export interface PortalDependencies {
  sessions: PortalSessionRepository;
  tenants: Pick<TenantRepository, 'findMerchant' | 'findProgram'>;
  events: EventRepository;
  history: Pick<DeliveryHistoryRepository, 'listSummaries' | 'findSummary'>;
  /** How the merchant API reads the target's health (GET /notification-target). */
  target: MerchantTargetHealthDependencies;
  /** The target's signing secret (get-or-create, as the admin API's GET). */
  signingSecret: (owner: TargetOwner) => Promise<SigningSecretRecord | null>;
  /** The merchant API's turns and time budget: a portal session's lists take them as a key's do. */
  limits: ExpensiveReads;
  /** The merchant API's recoveries (POST /deliveries/recover): the recovery form starts and shows the same ones. */
  recoveries: Pick<Recoveries, 'recover' | 'find'>;
  /** RECOVERY_MAX_DAYS, shown beside the recovery form. */
  recoveryMaxDays: number;
  /** EVENTS_MAX_SKIP: most rows a page may skip. */
  maxSkip: number;
  /** PORTAL_SESSION_TTL_SECONDS. */
  sessionTtlSeconds: number;
  /** Whether the cookie is Secure (everywhere but development). */
  secureCookie: boolean;
}

/** A request of a live session: whose portal it is, as its pages show it. */
interface SessionRequest {
  session: PortalSession;
  owner: TargetOwner;
  context: PageContext;
  /** The id under which the session's reads share the merchant API's limits. */
  readerId: string;
}

/**
 * The merchant portal: server-rendered pages over the same reads as the merchant API
 * (merchantTargetHealth, listOwnDeliveries, findOwnDelivery, the events list), for the tenant its
 * session names. A support link (POST /admin/…/portal-links) opens it once; the session lives in a
 * cookie (HttpOnly, SameSite=Strict, Secure outside development) whose token PostgreSQL keeps
 * hashed. Every POST carries the session's CSRF token. No API key is ever involved.
 *
 * A new action (a form that changes something) is one `action(path, handler)` below and one form
 * in pages.ts: the session, the body and the CSRF check come with it.
 */
export function portalRouter(deps: PortalDependencies): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 });

  router.use(PORTAL_PATH, (_req, res, next) => {
    res.setHeader('Content-Security-Policy', CSP);
    // The link's token is in the entry page's URL: no Referer may carry it anywhere.
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  });

  router.get(STYLESHEET_PATH, (_req, res) => {
    res.type('text/css').set('Cache-Control', 'public, max-age=3600').send(PORTAL_CSS);
  });

  // The link support sends opens this page, which exchanges it only when its button is pressed:
  // mail scanners and link previews that fetch the URL do not use it up.
  router.get(`${PORTAL_PATH}/enter`, (req, res) => {
    const token = typeof req.query.token === 'string' ? req.query.token : '';
    if (!token) return sendPage(res, 400, messagePage('Link incomplete', 'This portal link has no token: open the whole link support sent you.'));
    sendPage(res, 200, enterPage(token));
  });

  router.post(`${PORTAL_PATH}/enter`, form, async (req, res) => {
    // The entry page is this origin's: a form posted from another site is someone else's link.
    const site = req.get('sec-fetch-site');
    if (site !== undefined && site !== 'same-origin') return refuse(res, 403, 'This form must be sent from the portal link’s own page.');
    const token = typeof req.body?.token === 'string' ? req.body.token : '';
    const expiresAt = new Date(Date.now() + deps.sessionTtlSeconds * 1000);
    const exchanged = token ? await deps.sessions.exchangeLink(token, expiresAt) : null;
    if (!exchanged) return refuse(res, 403, 'This portal link was used already or has expired. Ask support for a new one.');
    res.cookie(COOKIE, exchanged.token, {
      httpOnly: true,
      secure: deps.secureCookie,
      sameSite: 'strict',
      path: PORTAL_PATH,
      expires: exchanged.session.expiresAt,
    });
    res.redirect(303, PORTAL_PATH);
  });

  /** A page of a live session; without one, 401 and a page saying how to get in. */
  const page = (path: string, handler: (req: Request, res: Response, session: SessionRequest) => Promise<void>) => {
    router.get(path, async (req, res) => {
      const session = await sessionOf(req);
      if (!session) return refuse(res, 401, 'Your portal session has ended or was never opened. Ask support for a new portal link.');
      await handler(req, res, session);
    });
  };

  /** A form's POST of a live session carrying its CSRF token; otherwise 403 and a page. */
  const action = (path: string, handler: (req: Request, res: Response, session: SessionRequest) => Promise<void>) => {
    router.post(path, form, async (req, res) => {
      const session = await sessionOf(req);
      if (!session) return refuse(res, 403, 'Your portal session has ended or was never opened. Ask support for a new portal link.');
      if (!sameToken(req.body?.csrf, session.session.csrfToken)) {
        return refuse(res, 403, 'This form did not come from your portal session. Go back to the portal and try again.');
      }
      await handler(req, res, session);
    });
  };

  page(PORTAL_PATH, async (_req, res, { owner, context, readerId }) => {
    const [target, failed] = await Promise.all([
      merchantTargetHealth(deps.target, owner),
      expensiveRead(deps.limits, readerId, () => listOwnDeliveries(deps.history, owner, { filter: { status: 'failed' }, page: 1, pageSize: 1 })),
    ]);
    sendPage(res, 200, overviewPage(context, target, failed.count, deps.recoveryMaxDays));
  });

  page(`${PORTAL_PATH}/deliveries`, async (req, res, { owner, context, readerId }) => {
    const query = parseQuery(validateDeliveriesQuery, req.query);
    const pageNumber = query.page ?? 1;
    checkDepth(pageNumber, deps.maxSkip);
    const filter = {
      ...(query.status === undefined ? {} : { status: query.status }),
      ...(query.eventId === undefined ? {} : { eventId: query.eventId }),
    };
    const { count, deliveries } = await expensiveRead(deps.limits, readerId, () =>
      listOwnDeliveries(deps.history, owner, { filter, page: pageNumber, pageSize: PAGE_SIZE }),
    );
    const hrefOf = (n: number) => `${PORTAL_PATH}/deliveries?${new URLSearchParams({ ...filter, page: String(n) }).toString()}`;
    sendPage(res, 200, deliveriesPage(context, query.status, deliveries, { page: pageNumber, count, totalPages: Math.ceil(count / PAGE_SIZE), hrefOf }));
  });

  page(`${PORTAL_PATH}/deliveries/:id`, async (req, res, { owner, context }) => {
    const id = String(req.params.id);
    const delivery = await findOwnDelivery(deps.history, owner, id);
    // Another tenant's delivery reads as one that does not exist.
    if (!delivery) return sendPage(res, 404, messagePage('Not found', `No delivery "${id}".`, context));
    sendPage(res, 200, deliveryPage(context, delivery));
  });

  page(`${PORTAL_PATH}/events`, async (req, res, { session, context, readerId }) => {
    const query = parseQuery(validateEventsQuery, req.query);
    const pageNumber = query.page ?? 1;
    checkDepth(pageNumber, deps.maxSkip);
    const { count, eventsJson } = await expensiveRead(deps.limits, readerId, () =>
      deps.events.list({ scope: session.scope, page: pageNumber, pageSize: PAGE_SIZE }),
    );
    const events = JSON.parse(eventsJson) as EventItem[];
    const hrefOf = (n: number) => `${PORTAL_PATH}/events?page=${n}`;
    sendPage(res, 200, eventsPage(context, events, { page: pageNumber, count, totalPages: Math.ceil(count / PAGE_SIZE), hrefOf }));
  });

  action(`${PORTAL_PATH}/signing-secret`, async (_req, res, { owner, context }) => {
    const record = await deps.signingSecret(owner);
    if (!record)
      return sendPage(res, 404, messagePage('Not found', 'No notification target is set up for you yet: the platform’s support sets one up.', context));
    sendPage(res, 200, signingSecretPage(context, record));
  });

  action(`${PORTAL_PATH}/recoveries`, async (req, res, { session, context, readerId }) => {
    try {
      const input = recoveryInputOf(req.body ?? {});
      // The merchant route's turn: a recovery reads the window's events, as the lists do.
      const recovery = await expensiveRead(deps.limits, readerId, () => deps.recoveries.recover(session.scope, input));
      res.redirect(303, `${PORTAL_PATH}/recoveries/${encodeURIComponent(recovery.id)}`);
    } catch (error) {
      const refusal = recoveryRefusal(error);
      if (!refusal) throw error;
      res.set(refusal.headers ?? {});
      sendPage(res, refusal.status, messagePage(refusal.title, refusal.message, context));
    }
  });

  page(`${PORTAL_PATH}/recoveries/:id`, async (req, res, { session, context }) => {
    const id = String(req.params.id);
    // One recovery and its tagged deliveries, each by its key: no turn is taken, as on the merchant route.
    const recovery = await deps.recoveries.find(session.scope, id);
    // Another tenant's recovery reads as one that does not exist.
    if (!recovery) return sendPage(res, 404, messagePage('Not found', `No recovery "${id}".`, context));
    sendPage(res, 200, recoveryPage(context, recovery));
  });

  action(`${PORTAL_PATH}/logout`, async (req, res) => {
    await deps.sessions.endSession(cookieOf(req)!);
    res.clearCookie(COOKIE, { httpOnly: true, secure: deps.secureCookie, sameSite: 'strict', path: PORTAL_PATH });
    sendPage(res, 200, messagePage('Signed out', 'Your portal session has ended. Support can send you a new link.'));
  });

  async function sessionOf(req: Request): Promise<SessionRequest | null> {
    const token = cookieOf(req);
    const session = token ? await deps.sessions.findSession(token) : null;
    if (!session) return null;
    const owner = ownTargetOf(session.scope);
    return {
      session,
      owner,
      context: { owner: await ownerName(deps, owner), csrfToken: session.csrfToken, expiresAt: session.expiresAt },
      readerId: `portal:${ownerKeyOf(owner)}`,
    };
  }

  return router;
}

function ownerKeyOf(owner: TargetOwner): string {
  return owner.kind === 'merchant' ? `merchant:${owner.merchantId}` : `program:${owner.programId}`;
}

async function ownerName(deps: Pick<PortalDependencies, 'tenants'>, owner: TargetOwner): Promise<string> {
  if (owner.kind === 'merchant') {
    const merchant = await deps.tenants.findMerchant(owner.merchantId);
    return `Merchant ${merchant?.name ?? ''} (${owner.merchantId})`;
  }
  const program = await deps.tenants.findProgram(owner.programId);
  return `Program ${program?.name ?? ''} (${owner.programId})`;
}

/** The session cookie's value, or undefined (no Cookie header, no such cookie). */
function cookieOf(req: Request): string | undefined {
  for (const pair of (req.get('cookie') ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === COOKIE) return pair.slice(at + 1).trim() || undefined;
  }
  return undefined;
}

/** Compares a form's CSRF token with the session's in constant time. */
function sameToken(given: unknown, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function checkDepth(page: number, maxSkip: number): void {
  if ((page - 1) * PAGE_SIZE <= maxSkip) return;
  throw invalidQuery([{ parameter: 'page', message: `must be at most ${Math.floor(maxSkip / PAGE_SIZE) + 1}: a page may skip at most ${maxSkip} rows` }]);
}

/** A page's answer to a refused recovery. */
interface Refusal {
  status: number;
  title: string;
  message: string | SafeHtml;
  headers?: Record<string, string>;
}

/**
 * The recovery's refusals as the portal words them: the same statuses as the merchant API's
 * problems (http/error-handler.ts), said for a person at a form rather than a program at a route.
 * Undefined for anything else, which the error handler answers.
 */
function recoveryRefusal(error: unknown): Refusal | undefined {
  if (error instanceof ValidationError) {
    const fields = error.violations.map(({ pointer, message }) => `${pointer.replace(/^\//, '') || 'the form'} ${message}`);
    return { status: 400, title: 'Recovery not started', message: `Change the form and send it again: ${fields.join('; ')}.` };
  }
  if (error instanceof RecoveryRunningError) {
    const href = `${PORTAL_PATH}/recoveries/${encodeURIComponent(error.recoveryId)}`;
    return {
      status: 409,
      title: 'A recovery is running',
      message: html`Your target has one recovery at a time, and <a href="${href}">recovery ${error.recoveryId}</a> is still running: some of its callbacks are not delivered or failed for good yet. Recover again once it has finished.`,
    };
  }
  if (error instanceof TargetSwitchedOffError) {
    const why = error.disabledReason === 'auto-disabled' ? ' by Herald, after every callback failed for too long' : '';
    return {
      status: 409,
      title: 'Target switched off',
      message: `Your notification target is switched off${why}, so nothing can be recovered to it. Fix your endpoint if needed and ask support to switch the target on; then recover: the events produced while it was off are recovered too.`,
    };
  }
  if (error instanceof NoTargetError) {
    return {
      status: 404,
      title: 'No target',
      message: 'No notification target is set up for you yet, so there is nothing to recover to: the platform’s support sets one up.',
    };
  }
  if (error instanceof QueueUnavailableError) {
    return {
      status: 503,
      title: 'Try again shortly',
      message: 'The delivery queue is unavailable just now and nothing was recovered. Try again in a few seconds.',
      headers: { 'Retry-After': String(QUEUE_RETRY_AFTER_SECONDS) },
    };
  }
  // The session's turns and time budget, as a key's (429).
  if (error instanceof HttpError && error.status === 429) {
    return {
      status: 429,
      title: 'Too busy',
      message: 'Your portal is reading or recovering too much at once just now, and nothing was recovered. Wait a few seconds and send the form again.',
      headers: error.headers,
    };
  }
  return undefined;
}

function sendPage(res: Response, status: number, body: string): void {
  res.status(status).type('html').send(body);
}

function refuse(res: Response, status: 401 | 403, message: string): void {
  sendPage(res, status, messagePage(status === 401 ? 'Session needed' : 'Refused', message));
}
