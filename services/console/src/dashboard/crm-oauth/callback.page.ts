/**
 * The page the owner lands on after the CRM's consent screen: a plain HTML page (no script, no
 * style), since the callback is a browser navigation, not an API call. It says what happened
 * and links back to the dashboard; a failure page says why and that nothing was stored.
 */
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

export function callbackPage(outcome: { ok: boolean; title: string; detail: string }): string {
  const nothingStored = outcome.ok ? '' : '<p>Nothing was stored. Start again with “Connect” on the dashboard.</p>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(outcome.title)}</title></head>
<body><main>
<h1>${escape(outcome.title)}</h1>
<p>${escape(outcome.detail)}</p>
${nothingStored}
<p><a href="/dashboard/">Back to the dashboard</a></p>
</main></body></html>
`;
}
