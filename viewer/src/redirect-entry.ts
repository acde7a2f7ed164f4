// oauth2-redirect.js: the page the authorization server returns to hands the parameters of its
// address to the viewer window that opened it, then closes.
// fromEntries makes every name an own property, `__proto__` too; the fragment's win.
import { globalsOf } from './page.js';

const params: Record<string, string> = Object.fromEntries([
  ...new URLSearchParams(location.search.slice(1)),
  ...new URLSearchParams(location.hash.slice(1)),
]);
const opener = window.opener as Window | null;
let delivered = false;
try {
  const receive = opener ? globalsOf(opener).onOAuthComplete : undefined;
  if (typeof receive === 'function') {
    receive(params);
    delivered = true;
  }
} catch {
  // a different origin: fall back to postMessage below
}
if (!delivered && opener) {
  opener.postMessage({ type: 'oauth2-redirect', params }, location.origin === 'null' ? '*' : location.origin);
}
const note = document.getElementById('status');
if (note) {
  note.textContent =
    delivered || opener
      ? 'Authorization received. You can close this window.'
      : 'No viewer window is waiting for this authorization.';
}
if (opener) window.close();
