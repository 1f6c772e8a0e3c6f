import type { RequestHandler } from 'express';

/** Where the board's page loads Herald's script from, relative to the dashboard's base path. */
const SCRIPT_NAME = 'herald-board.js';

/**
 * The job actions bull-board draws as bare icons (lucide classes), with the label each gets and
 * whether Herald refuses it (router.ts's REFUSED_ROUTES: add, update-data, delay, priority,
 * remove-unprocessed-children). bull-board names them only in a tooltip that appears on hover,
 * so the buttons have no accessible name and no title; and it offers the refused ones, whose
 * dialogs close without a word on the 403.
 */
const JOB_ACTIONS: Readonly<Record<string, { label: string; refused: boolean }>> = {
  'lucide-refresh-cw': { label: 'Retry: run this job again now', refused: false },
  'lucide-corner-up-left': { label: 'Promote: run this delayed job now', refused: false },
  'lucide-trash-2': { label: 'Clean: remove this job (a pending delivery gets a new one from the reconciler)', refused: false },
  'lucide-files': { label: 'Duplicate (refused: jobs are added by Herald only)', refused: true },
  'lucide-pencil': { label: 'Update data (refused: job data is written by Herald only)', refused: true },
  'lucide-clock': { label: "Reschedule (refused: a job's run time is the retry policy's)", refused: true },
  'lucide-arrow-up-down': { label: "Change priority (refused: a job's priority is the fair share's)", refused: true },
  'lucide-list-x': { label: "Remove unprocessed children (refused: Herald's jobs have none)", refused: true },
};

/**
 * Runs in the board's page, before bull-board's own scripts: labels each job action button
 * (aria-label and title), hides the actions Herald refuses (hidden, not removed: React owns those
 * nodes), and shows in a notice any change the API refuses (bull-board's dialogs drop the answer).
 * Plain ES2020 in a string: it is sent to browsers as it is, compiled by nobody.
 */
const SCRIPT = `(() => {
  const actions = ${JSON.stringify(JOB_ACTIONS)};
  const label = () => {
    for (const button of document.querySelectorAll('ul[class^="jobActions"] button:not([data-herald])')) {
      button.setAttribute('data-herald', '');
      const icon = button.querySelector('svg');
      const name = icon && Object.keys(actions).find((className) => icon.classList.contains(className));
      if (!name) continue;
      const action = actions[name];
      button.setAttribute('aria-label', action.label);
      button.title = action.label;
      if (action.refused) {
        const item = button.closest('li') || button;
        item.style.display = 'none';
        item.setAttribute('aria-hidden', 'true');
      }
    }
  };
  new MutationObserver(label).observe(document.documentElement, { childList: true, subtree: true });

  const notice = (text) => {
    let box = document.getElementById('herald-refusal');
    if (!box) {
      box = document.createElement('div');
      box.id = 'herald-refusal';
      box.setAttribute('role', 'alert');
      box.title = 'Click to close';
      box.style.cssText = 'position:fixed;z-index:2147483647;left:50%;bottom:1.5rem;transform:translateX(-50%);max-width:40rem;' +
        'padding:.75rem 1rem;border-radius:.5rem;background:#7f1d1d;color:#fff;font:14px/1.4 sans-serif;cursor:pointer;box-shadow:0 4px 16px #0006';
      box.addEventListener('click', () => box.remove());
      document.body.append(box);
    }
    box.textContent = text;
  };
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    this.heraldMethod = String(method).toUpperCase();
    return open.call(this, method, url, ...rest);
  };
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    this.addEventListener('loadend', () => {
      if (this.heraldMethod === 'GET' || this.status < 400) return;
      let detail = '';
      try {
        const body = JSON.parse(this.responseText);
        detail = body.detail || body.message || '';
      } catch {}
      notice('Refused (HTTP ' + this.status + '): ' + (detail || this.statusText || 'no reason given'));
    });
    return send.apply(this, args);
  };
})();
`;

/** Serves the script above to the board's page. */
export const boardScript: RequestHandler = (req, res, next) => {
  if (req.method !== 'GET' || req.path !== `/${SCRIPT_NAME}`) return next();
  res.setHeader('Cache-Control', 'no-cache');
  res.type('application/javascript').send(SCRIPT);
};

/** The board's page with Herald's script loaded first, so that it sees every request the page makes. */
export function withBoardScript(html: string): string {
  return html.replace('</head>', `<script src="${SCRIPT_NAME}"></script></head>`);
}
