// The portal's one stylesheet, kept in the code rather than a file beside it: the production
// bundle (scripts/build.ts) carries it with no copy step, and there is nothing to build.
export const PORTAL_CSS = `:root {
  --ink: #1d2330;
  --muted: #6b7385;
  --line: #dde1ea;
  --accent: #2554c7;
  --bad: #b42318;
  --good: #067647;
  --wait: #b54708;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink);
  background: #f6f7fb;
}
body { margin: 0; }
header {
  display: flex;
  gap: 1.5rem;
  align-items: center;
  padding: 0.75rem 1.5rem;
  background: #fff;
  border-bottom: 1px solid var(--line);
}
header nav { display: flex; gap: 1rem; }
header .who { margin-left: auto; color: var(--muted); }
.brand { font-weight: 700; letter-spacing: 0.02em; }
main { max-width: 72rem; margin: 1.5rem auto; padding: 0 1.5rem; }
footer { max-width: 72rem; margin: 2rem auto; padding: 0 1.5rem; color: var(--muted); font-size: 0.85rem; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 0.5rem; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem 1.25rem 1rem; margin-bottom: 1rem; }
a { color: var(--accent); }
a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--ink); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.4rem 1.5rem; }
dt { color: var(--muted); }
dd { margin: 0; }
table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: 0.45rem 0.6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 0.8rem; text-transform: uppercase; color: var(--muted); font-weight: 600; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
pre { margin: 0; white-space: pre-wrap; word-break: break-all; max-width: 32rem; font-size: 0.85rem; }
code { font-size: 0.9em; word-break: break-all; }
time { white-space: nowrap; }
code.secret { display: inline-block; padding: 0.5rem 0.75rem; background: #fff; border: 1px solid var(--line); border-radius: 4px; }
.muted { color: var(--muted); }
.warning { background: #fef3f2; border: 1px solid #fecdca; color: var(--bad); padding: 0.75rem 1rem; border-radius: 6px; }
.badge { display: inline-block; padding: 0.1rem 0.5rem; border-radius: 999px; font-size: 0.8rem; font-weight: 600; background: #eef0f5; }
.badge.failed { background: #fef3f2; color: var(--bad); }
.badge.succeeded { background: #ecfdf3; color: var(--good); }
.badge.pending { background: #fffaeb; color: var(--wait); }
.badge.running { background: #fffaeb; color: var(--wait); }
.badge.finished { background: #ecfdf3; color: var(--good); }
form.recovery { display: grid; grid-template-columns: max-content 16rem; gap: 0.5rem 1rem; align-items: center; }
form.recovery .hint, form.recovery button { grid-column: 1 / -1; justify-self: start; margin: 0; }
input { font: inherit; padding: 0.3rem 0.5rem; border: 1px solid var(--line); border-radius: 4px; }
.filters { display: flex; gap: 1rem; margin-bottom: 0.75rem; }
.pager { display: flex; justify-content: space-between; margin: 0.75rem 0; }
form.inline { display: inline; }
button { font: inherit; padding: 0.4rem 0.9rem; border: 1px solid var(--accent); background: var(--accent); color: #fff; border-radius: 4px; cursor: pointer; }
button.link { background: none; border: none; color: var(--accent); padding: 0; text-decoration: underline; }
`;
