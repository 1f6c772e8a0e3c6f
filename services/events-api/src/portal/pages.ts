import type { SigningSecretRecord } from '@herald/db';
import type { findOwnDelivery, listOwnDeliveries } from '../deliveries/merchant-deliveries';
import type { RecoveryView } from '../recoveries/recoveries';
import type { MerchantTargetView } from '../targets/merchant-target-health';
import { html, type SafeHtml } from './html';

// The portal's pages, written as functions of plain values: no request, no session lookup, no I/O.
// Every value goes through `html`, which escapes it.

/** Where the portal lives, and its stylesheet. */
export const PORTAL_PATH = '/portal';
export const STYLESHEET_PATH = `${PORTAL_PATH}/static/portal.css`;

type DeliveryItem = Awaited<ReturnType<typeof listOwnDeliveries>>['deliveries'][number];
type DeliveryDetailView = NonNullable<Awaited<ReturnType<typeof findOwnDelivery>>>;

/** What every page of a session shows in its header: whose portal it is, and the forms it posts with. */
export interface PageContext {
  /** "Merchant Acme (acme-1)" or "Program …". */
  owner: string;
  /** The session's synchronizer token, put into every form. */
  csrfToken: string;
  expiresAt: Date;
}

/** One page of a list, for the pager. */
export interface Paging {
  page: number;
  totalPages: number;
  count: number;
  /** The list's URL for another page (its other query parameters kept). */
  hrefOf: (page: number) => string;
}

function layout(title: string, context: PageContext | null, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Herald portal</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<header>
<span class="brand">Herald</span>
${
  context &&
  html`<nav>
<a href="${PORTAL_PATH}">Overview</a>
<a href="${PORTAL_PATH}/deliveries">Deliveries</a>
<a href="${PORTAL_PATH}/events">Events</a>
</nav>
<span class="who">${context.owner}</span>
<form method="post" action="${PORTAL_PATH}/logout" class="inline">${csrfField(context)}<button type="submit" class="link">Sign out</button></form>`
}
</header>
<main>
<h1>${title}</h1>
${body}
</main>
${context && html`<footer>This session ends at ${when(context.expiresAt)}. Support can send you a new link.</footer>`}
</body>
</html>
`.text;
}

function csrfField(context: PageContext): SafeHtml {
  return html`<input type="hidden" name="csrf" value="${context.csrfToken}">`;
}

function when(date: Date | null): SafeHtml {
  return date
    ? html`<time datetime="${date}">${date
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC')}</time>`
    : html`<span class="muted">—</span>`;
}

function statusBadge(status: string): SafeHtml {
  return html`<span class="badge ${status}">${status}</span>`;
}

function outcome(statusCode: number | null, errorKind: string | null): SafeHtml {
  if (statusCode !== null) return html`HTTP ${statusCode}`;
  if (errorKind !== null) return html`${errorKind}`;
  return html`<span class="muted">—</span>`;
}

function pager(paging: Paging): SafeHtml {
  if (paging.totalPages <= 1) return html`<p class="muted">${paging.count} in all.</p>`;
  return html`<nav class="pager">
${paging.page > 1 ? html`<a href="${paging.hrefOf(paging.page - 1)}" rel="prev">← Previous</a>` : html`<span></span>`}
<span>Page ${paging.page} of ${paging.totalPages} (${paging.count} in all)</span>
${paging.page < paging.totalPages ? html`<a href="${paging.hrefOf(paging.page + 1)}" rel="next">Next →</a>` : html`<span></span>`}
</nav>`;
}

/** The overview: the target's health (and the auto-disable warning), the recovery form and the signing secret's form. */
export function overviewPage(context: PageContext, target: MerchantTargetView | null, failedCount: number, recoveryMaxDays: number): string {
  const body = target
    ? html`${target.warning && html`<p class="warning" role="alert">${target.warning}</p>`}
${!target.enabled && html`<p class="warning" role="alert">This target is switched off (${target.disabledReason ?? 'switched-off'}${target.disabledAt ? html` since ${when(target.disabledAt)}` : ''}): no callback is sent. Ask support to switch it on once your endpoint works.</p>`}
<section>
<h2>Notification target</h2>
<dl>
<dt>URL</dt><dd><code>${target.url}</code></dd>
<dt>Authentication</dt><dd>${target.authMode}</dd>
<dt>State</dt><dd>${target.enabled ? 'on' : html`off (${target.disabledReason})`}</dd>
<dt>Circuit breaker</dt><dd>${target.breaker ? target.breaker.state : html`<span class="muted">unknown just now</span>`}</dd>
<dt>Last success</dt><dd>${when(target.lastSuccessAt)}</dd>
<dt>Failing since</dt><dd>${when(target.failingSince)}</dd>
<dt>Auto-disable at</dt><dd>${when(target.autoDisableAt)}</dd>
${target.egressAddresses.length > 0 && html`<dt>Callbacks come from</dt><dd>${target.egressAddresses.join(', ')}</dd>`}
</dl>
<p><a href="${PORTAL_PATH}/deliveries?status=failed">${failedCount} failed ${failedCount === 1 ? 'callback' : 'callbacks'}</a> · <a href="${PORTAL_PATH}/deliveries">every callback</a></p>
</section>
${recoveryForm(context, recoveryMaxDays)}
<section>
<h2>Signing secret</h2>
<p>Every callback is signed (Standard Webhooks: the <code>webhook-signature</code> header). Your endpoint verifies it with this secret.</p>
<form method="post" action="${PORTAL_PATH}/signing-secret">${csrfField(context)}<button type="submit">Show the signing secret</button></form>
</section>`
    : html`<p class="warning">No notification target is set up for you yet: the platform's support sets one up. Your events are listed under <a href="${PORTAL_PATH}/events">Events</a>.</p>`;
  return layout('Overview', context, body);
}

/** The target's signing secret, shown on request (a POST, so that no link or prefetch shows it). */
export function signingSecretPage(context: PageContext, record: SigningSecretRecord): string {
  return layout(
    'Signing secret',
    context,
    html`<p>Keep it on your server only. Herald signs each callback with it; see the <code>webhook-id</code>, <code>webhook-timestamp</code> and <code>webhook-signature</code> headers.</p>
<p><code class="secret" id="signing-secret">${record.secret}</code></p>
${record.previousSecretExpiresAt && html`<p>The secret was rotated: until ${when(record.previousSecretExpiresAt)} callbacks also carry a signature by the previous secret.</p>`}
<p><a href="${PORTAL_PATH}">Back to the overview</a></p>`,
  );
}

/**
 * The recovery form. Times are UTC: a datetime-local input has no zone, and the browser's own zone
 * would make the same window mean different events to the merchant and to support.
 */
function recoveryForm(context: PageContext, maxDays: number): SafeHtml {
  return html`<section>
<h2>Recover missed callbacks</h2>
<p>Sends your target, once more, every callback of the window that was not delivered: the ones that failed, and the ones never sent because the target was off. One recovery runs at a time.</p>
<form method="post" action="${PORTAL_PATH}/recoveries" class="recovery">${csrfField(context)}
<label for="recovery-from">From (UTC)</label>
<input type="datetime-local" id="recovery-from" name="from" required step="1">
<label for="recovery-to">To (UTC)</label>
<input type="datetime-local" id="recovery-to" name="to" step="1">
<p class="muted hint">At most ${maxDays} ${maxDays === 1 ? 'day' : 'days'} back. Leave “To” empty to recover up to now.</p>
<button type="submit">Recover</button>
</form>
</section>`;
}

/** A recovery as it goes: its window, how many callbacks it queued, and how they are going. */
export function recoveryPage(context: PageContext, recovery: RecoveryView): string {
  return layout(
    'Recovery',
    context,
    html`<dl>
<dt>Id</dt><dd><code>${recovery.id}</code></dd>
<dt>Status</dt><dd>${statusBadge(recovery.status)}</dd>
<dt>Window (UTC)</dt><dd>${when(new Date(recovery.from))} to ${when(new Date(recovery.to))}</dd>
<dt>Covered</dt><dd>${
      recovery.complete
        ? 'the whole window'
        : html`up to ${when(new Date(recovery.coveredTo))}: the window held more than one recovery queues; once this one has finished, recover again from there for the rest`
    }</dd>
<dt>Started</dt><dd>${when(new Date(recovery.createdAt))}</dd>
<dt>Finished</dt><dd>${when(recovery.finishedAt === null ? null : new Date(recovery.finishedAt))}</dd>
</dl>
<table class="recovery-counts">
<thead><tr><th>Queued</th><th>Never sent before</th><th>Pending</th><th>Sent</th><th>Delivered</th><th>Failed</th></tr></thead>
<tbody><tr>
<td class="number" id="recovery-queued">${recovery.queued}</td>
<td class="number" id="recovery-never-sent">${recovery.neverSent}</td>
<td class="number" id="recovery-pending">${recovery.pending}</td>
<td class="number" id="recovery-sent">${recovery.sent}</td>
<td class="number" id="recovery-delivered">${recovery.delivered}</td>
<td class="number" id="recovery-failed">${recovery.failed}</td>
</tr></tbody>
</table>
<p><a href="${PORTAL_PATH}/recoveries/${encodeURIComponent(recovery.id)}">Refresh</a>${
      recovery.failed > 0 && html` · <a href="${PORTAL_PATH}/deliveries?status=failed">the failed callbacks</a>`
    } · <a href="${PORTAL_PATH}">Back to the overview</a></p>`,
  );
}

const STATUS_FILTERS = ['pending', 'succeeded', 'failed'] as const;

/** One page of the callbacks to the owner's target, newest first, filtered by status. */
export function deliveriesPage(context: PageContext, status: string | undefined, deliveries: DeliveryItem[], paging: Paging): string {
  const filters = html`<nav class="filters">
<a href="${PORTAL_PATH}/deliveries"${status === undefined ? html` aria-current="page"` : ''}>all</a>
${STATUS_FILTERS.map((each) => html`<a href="${PORTAL_PATH}/deliveries?status=${each}"${status === each ? html` aria-current="page"` : ''}>${each}</a>`)}
</nav>`;
  const rows = deliveries.map(
    (delivery) => html`<tr>
<td>${when(delivery.createdAt)}</td>
<td>${statusBadge(delivery.status)}</td>
<td><a href="${PORTAL_PATH}/deliveries/${encodeURIComponent(delivery.id)}">${delivery.eventId}</a></td>
<td>${delivery.objectType} <code>${delivery.objectId}</code></td>
<td class="number">${delivery.attemptsMade}</td>
<td>${when(delivery.lastAttemptAt)}</td>
<td>${outcome(delivery.lastStatusCode, delivery.lastErrorKind)}</td>
</tr>`,
  );
  const table =
    deliveries.length === 0
      ? html`<p class="muted">No callbacks${status ? html` with status ${status}` : ''}.</p>`
      : html`<table>
<thead><tr><th>Created</th><th>Status</th><th>Event</th><th>Object</th><th>Attempts</th><th>Last attempt</th><th>Last outcome</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
  return layout('Deliveries', context, html`${filters}${table}${pager(paging)}`);
}

/** One callback with every attempt and the first bytes of each answer (redacted as stored). */
export function deliveryPage(context: PageContext, delivery: DeliveryDetailView): string {
  const attempts = delivery.attempts.map(
    (attempt) => html`<tr>
<td class="number">${attempt.number}</td>
<td>${when(attempt.startedAt)}</td>
<td class="number">${attempt.durationMs === null ? '—' : `${attempt.durationMs} ms`}</td>
<td>${outcome(attempt.statusCode, attempt.errorKind)}</td>
<td>${attempt.responseBody === null || attempt.responseBody === '' ? html`<span class="muted">—</span>` : html`<pre>${attempt.responseBody}</pre>`}</td>
</tr>`,
  );
  return layout(
    'Delivery',
    context,
    html`<dl>
<dt>Id</dt><dd><code>${delivery.id}</code></dd>
<dt>Status</dt><dd>${statusBadge(delivery.status)}</dd>
<dt>Event</dt><dd><code>${delivery.eventId}</code></dd>
<dt>Object</dt><dd>${delivery.objectType} <code>${delivery.objectId}</code></dd>
<dt>Created</dt><dd>${when(delivery.createdAt)}</dd>
<dt>Completed</dt><dd>${when(delivery.completedAt)}</dd>
<dt>Deferrals</dt><dd>${delivery.deferrals.count}${delivery.deferrals.lastReason && html` (last: ${delivery.deferrals.lastReason}, ${when(delivery.deferrals.lastAt)})`}</dd>
</dl>
<h2>Attempts</h2>
${
  attempts.length === 0
    ? html`<p class="muted">No attempt yet.</p>`
    : html`<table class="attempts">
<thead><tr><th>#</th><th>Started</th><th>Duration</th><th>Outcome</th><th>Answer (first bytes)</th></tr></thead>
<tbody>${attempts}</tbody>
</table>`
}
<p><a href="${PORTAL_PATH}/deliveries">All deliveries</a></p>`,
  );
}

/** An event as the portal lists it (a few fields of the Event the merchant API shows). */
export interface EventItem {
  id: string;
  createdAt: string;
  eventType: string;
  objectType: string;
  objectId: string;
  origin: string;
  sequence: number;
}

/** One page of the owner's events, as GET /events lists them. */
export function eventsPage(context: PageContext, events: EventItem[], paging: Paging): string {
  const rows = events.map(
    (event) => html`<tr>
<td>${when(new Date(event.createdAt))}</td>
<td><code>${event.id}</code></td>
<td>${event.eventType}</td>
<td>${event.objectType} <code>${event.objectId}</code></td>
<td class="number">${event.sequence}</td>
<td>${event.origin}</td>
<td><a href="${PORTAL_PATH}/deliveries?eventId=${encodeURIComponent(event.id)}">callbacks</a></td>
</tr>`,
  );
  const table =
    events.length === 0
      ? html`<p class="muted">No events yet.</p>`
      : html`<table>
<thead><tr><th>Created</th><th>Id</th><th>Type</th><th>Object</th><th>Sequence</th><th>Origin</th><th></th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
  return layout('Events', context, html`${table}${pager(paging)}`);
}

/** A page that only says something: a refusal, a missing delivery, the end of a session. */
export function messagePage(title: string, message: string | SafeHtml, context: PageContext | null = null): string {
  return layout(title, context, html`<p>${message}</p>`);
}

/** The page a portal link opens: a button that exchanges the link (a POST, so that link previews do not use it up). */
export function enterPage(linkToken: string): string {
  return layout(
    'Merchant portal',
    null,
    html`<p>This link opens your delivery history, your notification target's health and your signing secret. It works once.</p>
<form method="post" action="${PORTAL_PATH}/enter"><input type="hidden" name="token" value="${linkToken}"><button type="submit">Open the portal</button></form>`,
  );
}
