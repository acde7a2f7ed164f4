// The "Authorize" panel: one form per security scheme of the description. Credentials become
// client authorizations registered under the scheme's name, exactly what a 2.x page did with
// ui.api.clientAuthorizations.add(name, auth).
import type { ApiModel, OAuthFlow, SecurityScheme } from '../normalize/model.js';
import { ApiKeyAuthorization, BearerAuthorization, PasswordAuthorization, type ClientAuthorizations } from '../auth.js';
import { t } from '../i18n.js';
import { markdown } from '../markdown.js';
import { authorize, OAUTH_SETTINGS_EVENT, oauthSettings, openIdFlow } from '../oauth.js';
import { hasOwn, table } from '../own.js';
import { h, tr, uid } from './dom.js';

function field(label: string, type = 'text', autocomplete = 'off') {
  const id = uid('qv-auth');
  const input = h('input', { id, type, autocomplete, class: 'qv-input' });
  return {
    input,
    element: h('div', { class: 'qv-field' }, h('label', { for: id, 'data-sw-translate': true }, t(label)), ' ', input),
  };
}

export function authPanel(model: ApiModel, auth: ClientAuthorizations, redirectUrl: string): HTMLElement {
  const panel = h('section', { class: 'qv-auth-panel', 'aria-label': t('Authorizations'), hidden: true });
  panel.append(tr('Available authorizations', 'h2'));
  const schemes = Object.values(model.securitySchemes);
  if (!schemes.length) panel.append(tr('This description declares no security schemes.', 'p', { class: 'qv-muted' }));
  for (const scheme of schemes) panel.append(schemeForm(scheme, model, auth, redirectUrl));
  return panel;
}

function schemeForm(
  scheme: SecurityScheme,
  model: ApiModel,
  auth: ClientAuthorizations,
  redirectUrl: string,
): HTMLElement {
  const status = h('p', { class: 'qv-auth-status', role: 'status' });
  const box = h(
    'form',
    { class: 'qv-auth-scheme', 'aria-label': scheme.name },
    h(
      'h3',
      null,
      scheme.name,
      ' ',
      h('span', { class: 'qv-muted' }, `(${scheme.type}${scheme.in ? `, ${scheme.in}: ${scheme.paramName}` : ''})`),
    ),
    scheme.description ? h('div', { class: 'qv-markdown' }, markdown(scheme.description)) : '',
  );
  const refresh = () => {
    status.textContent = auth.authz[scheme.name] ? t('Authorized') : '';
  };
  auth.onChange(refresh);
  let submit: () => Promise<void> | void = () => {};
  if (scheme.type === 'apiKey') {
    const value = field('Value', 'password');
    box.append(value.element);
    submit = () => {
      if (value.input.value) {
        auth.add(
          scheme.name,
          new ApiKeyAuthorization(scheme.paramName ?? scheme.name, value.input.value, scheme.in ?? 'header'),
        );
      }
    };
  } else if (scheme.type === 'basic') {
    const user = field('Username', 'text', 'username');
    const pass = field('Password', 'password', 'current-password');
    box.append(user.element, pass.element);
    submit = () => {
      auth.add(scheme.name, new PasswordAuthorization(user.input.value, pass.input.value));
    };
  } else if (scheme.type === 'bearer') {
    const token = field('Token', 'password');
    box.append(token.element);
    submit = () => {
      if (token.input.value) auth.add(scheme.name, new BearerAuthorization(token.input.value));
    };
  } else if (scheme.type === 'oauth2' && scheme.flows?.length) {
    submit = oauthFields(scheme, scheme.flows, box, auth, redirectUrl, status);
  } else if (scheme.type === 'openIdConnect' && scheme.openIdConnectUrl) {
    // The endpoints come from the discovery document, read when Authorize is pressed; the
    // scopes are those the description's security requirements ask of this scheme.
    const configUrl = scheme.openIdConnectUrl;
    const scopes = requestedScopes(model, scheme.name);
    const flows = (['authorizationCode', 'implicit', 'clientCredentials'] as const).map((kind) => ({ kind, scopes }));
    box.append(h('p', null, h('a', { href: configUrl, rel: 'noopener noreferrer', target: '_blank' }, configUrl)));
    submit = oauthFields(scheme, flows, box, auth, redirectUrl, status, (flow) => openIdFlow(configUrl, flow));
  } else {
    box.append(
      tr('This kind of authorization is shown for information; the viewer cannot obtain it.', 'p', {
        class: 'qv-muted',
      }),
    );
    if (scheme.openIdConnectUrl) {
      box.append(
        h(
          'p',
          null,
          h(
            'a',
            { href: scheme.openIdConnectUrl, rel: 'noopener noreferrer', target: '_blank' },
            scheme.openIdConnectUrl,
          ),
        ),
      );
    }
    return box;
  }
  const authorizeButton = h(
    'button',
    { type: 'submit', class: 'qv-button', 'data-sw-translate': true },
    t('Authorize'),
  );
  const logout = h(
    'button',
    { type: 'button', class: 'qv-button qv-secondary', 'data-sw-translate': true },
    t('Logout'),
  );
  logout.addEventListener('click', () => auth.remove(scheme.name));
  box.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await submit();
      refresh();
    } catch (error) {
      status.textContent = `${t('Authorization failed')}: ${(error as Error).message}`;
    }
  });
  box.append(h('div', { class: 'qv-actions' }, authorizeButton, ' ', logout), status);
  return box;
}

/** `openid` and every scope a security requirement (global or an operation's) asks of the scheme. */
function requestedScopes(model: ApiModel, name: string): Record<string, string> {
  const scopes = table<string>(); // scope names are the description's
  scopes.openid = '';
  const requirements = [model.security, ...model.tags.flatMap((tag) => tag.operations.map((op) => op.security))];
  for (const alternatives of requirements) {
    for (const requirement of alternatives ?? []) {
      const asked = hasOwn(requirement, name) ? requirement[name] : undefined;
      for (const scope of Array.isArray(asked) ? asked : []) if (typeof scope === 'string') scopes[scope] = '';
    }
  }
  return scopes;
}

/**
 * The OAuth form: flow, client, scopes. `complete` fills in a flow's endpoints when Authorize is
 * pressed (OpenID Connect reads them from its discovery document).
 */
function oauthFields(
  scheme: SecurityScheme,
  flows: OAuthFlow[],
  box: HTMLElement,
  auth: ClientAuthorizations,
  redirectUrl: string,
  status: HTMLElement,
  complete: (flow: OAuthFlow) => OAuthFlow | Promise<OAuthFlow> = (flow) => flow,
) {
  const flowId = uid('qv-flow');
  const flowSelect = h(
    'select',
    { id: flowId },
    flows.map((f, i) => h('option', { value: String(i) }, f.kind)),
  );
  const clientId = field('Client ID');
  const secret = field('Client secret', 'password');
  const user = field('Username', 'text', 'username');
  const pass = field('Password', 'password', 'current-password');
  const appName = h('span', { class: 'qv-app-name' });
  // initOAuth() fills the client fields whenever it is called (2.x pages call it from onComplete,
  // after this form exists); what the reader typed stays.
  const applySettings = () => {
    const settings = oauthSettings();
    for (const [input, value] of [
      [clientId.input, settings.clientId],
      [secret.input, settings.clientSecret],
    ] as const) {
      if (!input.dataset.edited) input.value = value ?? '';
    }
    appName.textContent = settings.appName ? ` (${settings.appName})` : '';
  };
  for (const input of [clientId.input, secret.input]) {
    input.addEventListener('input', () => (input.dataset.edited = 'true'));
  }
  box.classList.add('qv-oauth');
  box.addEventListener(OAUTH_SETTINGS_EVENT, applySettings);
  applySettings();
  const scopesBox = h('fieldset', { class: 'qv-scopes' });
  const drawScopes = (flow: OAuthFlow) => {
    scopesBox.textContent = '';
    scopesBox.append(h('legend', null, h('span', { 'data-sw-translate': true }, t('Scopes')), appName));
    for (const [scope, description] of Object.entries(flow.scopes ?? {})) {
      const id = uid('qv-scope');
      scopesBox.append(
        h(
          'div',
          null,
          h('input', { type: 'checkbox', id, value: scope, checked: true }),
          ' ',
          h('label', { for: id }, scope),
          ' ',
          h('span', { class: 'qv-muted' }, String(description ?? '')),
        ),
      );
    }
    user.element.hidden = pass.element.hidden = flow.kind !== 'password';
  };
  flowSelect.addEventListener('change', () => drawScopes(flows[Number(flowSelect.value)]));
  drawScopes(flows[0]);
  box.append(
    h('div', { class: 'qv-field' }, h('label', { for: flowId, 'data-sw-translate': true }, t('Flow')), ' ', flowSelect),
    clientId.element,
    secret.element,
    user.element,
    pass.element,
    scopesBox,
    h('p', { class: 'qv-muted' }, `${t('Redirect URL')}: ${redirectUrl}`),
  );
  return async () => {
    status.textContent = t('Waiting for the authorization server…');
    const flow = await complete(flows[Number(flowSelect.value)]);
    const scopes = Array.from(scopesBox.querySelectorAll<HTMLInputElement>('input:checked')).map((i) => i.value);
    const token = await authorize({
      flow,
      schemeName: scheme.name,
      clientId: clientId.input.value,
      clientSecret: secret.input.value || undefined,
      scopes,
      redirectUrl,
      username: user.input.value,
      password: pass.input.value,
    });
    auth.add(scheme.name, new BearerAuthorization(token));
  };
}
