// Entry of viewer.js (a classic script, so it also runs from file://). Defines the globals of
// 2.x pages (SwaggerUi, SwaggerClient.*Authorization, SwaggerTranslator, initOAuth, hljs) and
// boots our own index.html when its script tag carries data-boot.
import './styles.css';
import { ApiKeyAuthorization, BearerAuthorization, PasswordAuthorization } from './auth.js';
import { installTranslator } from './i18n.js';
import { configureOAuth, installReceiver } from './oauth.js';
import { SwaggerUi } from './ui.js';
import type { ViewerOptions } from './options.js';
import { asArray, isRecord, record } from './data.js';
import { globalsOf, isHolder } from './page.js';

const w = globalsOf(window);
installTranslator();
installReceiver();
w.SwaggerUi = SwaggerUi;
w.SwaggerUI = SwaggerUi;
w.SwaggerClient = Object.assign(isHolder(w.SwaggerClient) ? w.SwaggerClient : {}, {
  ApiKeyAuthorization,
  PasswordAuthorization,
  BearerAuthorization,
});
w.ApiKeyAuthorization ??= ApiKeyAuthorization;
w.PasswordAuthorization ??= PasswordAuthorization;
// 2.x pages call initOAuth({clientId, clientSecret, realm, appName, scopeSeparator,
// additionalQueryStringParams}) (from onComplete, as its index.html does) and hljs.configure(...).
w.initOAuth ??= configureOAuth;
w.hljs ??= { configure() {}, highlightBlock() {} };
// 2.x's index.html wraps its set-up in jQuery's `$(function () {…})`, its only jQuery call. Without
// jQuery on the page, `$` runs such a function once the DOM is ready; other uses need jQuery itself.
w.$ ??= (ready: unknown) => {
  if (typeof ready !== 'function') {
    throw new TypeError('quartet viewer: $() only runs a function when the page is ready; include jQuery for more');
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => ready(), { once: true });
  else setTimeout(() => ready(), 0);
};

const script = document.currentScript as HTMLScriptElement | null;
if (script?.dataset.boot !== undefined) {
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
}

/** Our index.html: options from <meta name="viewer-config">, ?url= and ?lang= from the address. */
async function boot() {
  let config: ViewerOptions = {};
  const meta = document.querySelector<HTMLMetaElement>('meta[name="viewer-config"]');
  try {
    config = meta?.content ? JSON.parse(meta.content) : {};
  } catch {
    config = {};
  }
  const params = new URLSearchParams(location.search);
  const lang = params.get('lang');
  if (lang && /^[a-z]{2,3}(-[a-z]{2})?$/i.test(lang)) {
    await loadScript(`lang/${lang.toLowerCase()}.js`).catch(() => undefined);
  }
  if (!config.descriptions?.length && /^https?:$/.test(location.protocol)) {
    config.descriptions = await listedDescriptions();
  }
  const url = params.get('url') ?? config.url ?? config.descriptions?.[0]?.url;
  const ui = new SwaggerUi({ ...config, url, dom_id: config.dom_id ?? 'swagger-ui-container' });
  w.swaggerUi = ui;
  await ui.load();
}

/** quartet lists its mounted services' descriptions at ../openapi/; other hosts simply have none. */
async function listedDescriptions() {
  try {
    const response = await fetch(new URL('../openapi/', document.baseURI).href, {
      headers: { Accept: 'application/json' },
    });
    if (!response.ok) return [];
    const body: unknown = await response.json();
    return asArray(record(body).descriptions).filter(
      (d): d is { name?: string; title?: string; url: string } => isRecord(d) && typeof d.url === 'string',
    );
  } catch {
    return [];
  }
}

function loadScript(src: string) {
  return new Promise<void>((resolve, reject) => {
    const el = document.createElement('script');
    el.src = src;
    el.onload = () => resolve();
    el.onerror = () => reject(new Error(src));
    document.head.append(el);
  });
}
