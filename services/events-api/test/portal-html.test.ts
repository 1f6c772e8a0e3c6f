import { html } from '../src/portal/html';

describe('the portal HTML template', () => {
  it('escapes every interpolated value, in text and in attributes', () => {
    const name = `<script>alert("x")</script>&'`;
    expect(html`<p title="${name}">${name}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</p>',
    );
  });

  it('keeps nested templates and lists as they are, and writes nothing for null, undefined and false', () => {
    const rows = ['a<', 'b'].map((cell) => html`<td>${cell}</td>`);
    expect(html`<tr>${rows}</tr>${null}${undefined}${false}`.text).toBe('<tr><td>a&lt;</td><td>b</td></tr>');
  });

  it('writes dates as ISO 8601 and numbers as text', () => {
    expect(html`${new Date('2026-01-02T03:04:05.000Z')} ${42}`.text).toBe('2026-01-02T03:04:05.000Z 42');
  });
});
