// The viewer: `new SwaggerUi(options)` then `.load()`. Loads and normalizes the description,
// renders the page skeleton at once, operations lazily, and wires search, deep links, themes,
// keyboard navigation and the Authorize panel. A JSON description is shown while it arrives: its
// first operations as soon as they are read (a preview), everything once the rest is in.
import { ClientAuthorizations, toAuthorization } from './auth.js';
import type { JsonObject } from './data.js';
import { LEARNED_EVENT, pageTranslator, t } from './i18n.js';
import { LoadError, loadDocument, resolverForObject, type FetchOptions } from './load.js';
import { markdown, warmUpMarkdown } from './markdown.js';
import { normalize } from './normalize/index.js';
import { Resolver } from './refs.js';
import type { ApiModel, Operation, Tag } from './normalize/model.js';
import { resolveOptions, type ResolvedOptions, type ViewerOptions } from './options.js';
import { authPanel } from './render/authpanel.js';
import { h, inChunks, tr } from './render/dom.js';
import { renderOperation, type OperationView, type RenderContext } from './render/operation.js';
import { SearchIndex } from './search.js';
import { yieldToPage } from './tasks.js';
import { validate } from './validate.js';

/** What the reader has opened or focused, carried over when the page is rendered again. */
interface ViewState {
  tags: Set<string>;
  operations: Set<string>;
  focus?: { tag: string; op?: string };
  validation: boolean;
}

const opKey = (op: Operation) => `${op.tag}\n${op.id}`;

interface TagView {
  tag: Tag;
  element: HTMLLIElement;
  list: HTMLUListElement;
  toggleButton: HTMLButtonElement;
  operations?: OperationView[];
}

/** What 2.x pages reach as `ui.api`. */
export interface ApiHandle {
  url?: string;
  info?: ApiModel['info'];
  model?: ApiModel;
  clientAuthorizations: ClientAuthorizations;
}

export class SwaggerUi {
  options: ResolvedOptions;
  api: ApiHandle;
  model?: ApiModel;
  private raw?: unknown;
  private root!: HTMLElement;
  /** The reader picked a theme (the button, or a stored choice): the system setting no longer applies. */
  private themeChosen = false;
  private message!: HTMLElement;
  private content!: HTMLElement;
  private tagViews: TagView[] = [];
  private search?: SearchIndex;
  private searchInput?: HTMLInputElement;
  private urlInput?: HTMLInputElement;
  /** Counts load() calls: a load that another one replaced renders nothing more. */
  private loads = 0;
  private abort?: AbortController;
  /** The model is a preview of a description still arriving (operation bodies wait for the rest). */
  private pending = false;
  /** The address's deep link has been followed (or there is none), so renders no longer scroll to it. */
  private deepLinked = false;
  /** Settles when load() has built (or cleared) the page for the description being read. */
  private shellReady: Promise<void> = Promise.resolve();
  /** Work held back until the first preview has been painted (see infoSection). */
  private afterFirstFrame?: (() => void)[];

  constructor(options: ViewerOptions = {}) {
    this.options = resolveOptions(options);
    this.api = { url: this.options.url, clientAuthorizations: new ClientAuthorizations() };
    for (const [name, value] of Object.entries(this.options.authorizations)) {
      const auth = toAuthorization(value);
      if (auth) this.api.clientAuthorizations.add(name, auth);
    }
    window.addEventListener(LEARNED_EVENT, () => {
      if (this.model && this.root?.isConnected) this.render();
    });
    window.addEventListener('hashchange', () => this.openDeepLink());
    // "/" anywhere on the page (not while typing) jumps to search.
    document.addEventListener('keydown', (event) => {
      const target = event.target as HTMLElement;
      if (
        event.key !== '/' ||
        !this.root?.isConnected ||
        /INPUT|TEXTAREA|SELECT/.test(target.tagName) ||
        target.isContentEditable
      ) {
        return;
      }
      event.preventDefault();
      this.searchInput?.focus();
    });
  }

  /** Where the interface goes: dom / dom_id, else 2.x's usual container, else a new element. */
  private container(): HTMLElement {
    const found =
      this.options.dom ??
      document.getElementById(this.options.dom_id) ??
      document.getElementById('swagger-ui-container');
    if (found) return found;
    const created = h('div', { id: this.options.dom_id });
    document.body.append(created);
    return created;
  }

  private buildShell() {
    const host = this.container();
    host.textContent = '';
    this.root = h('div', { class: 'qv' });
    // The theme is always set here, so the stylesheet holds the dark palette once; without a
    // stored choice it follows the system's setting, also when that changes.
    const stored = storedTheme();
    const systemDark = matchMedia('(prefers-color-scheme: dark)');
    this.root.dataset.theme = stored ?? (systemDark.matches ? 'dark' : 'light');
    this.themeChosen = Boolean(stored);
    if (!stored) {
      systemDark.addEventListener('change', (event) => {
        if (this.themeChosen) return;
        this.root.dataset.theme = event.matches ? 'dark' : 'light';
        this.root.querySelector('.qv-theme')?.setAttribute('aria-pressed', String(event.matches));
      });
    }
    this.message = h('div', { class: 'qv-message', role: 'status', 'aria-live': 'polite' });
    this.content = h('main', { class: 'qv-content' });
    this.root.append(this.topBar(), this.message, this.content);
    this.root.addEventListener('keydown', (e) => this.arrowKeys(e));
    host.append(this.root);
  }

  private topBar(): HTMLElement {
    const bar = h('header', { class: 'qv-top' });
    const form = h('form', { class: 'qv-explore', role: 'search', 'aria-label': t('Description address') });
    // A 2.x page brings its own address box (#input_baseUrl / #explore); use it when present.
    const pageInput = document.getElementById('input_baseUrl') as HTMLInputElement | null;
    const { descriptions } = this.options;
    if (descriptions.length) {
      const select = h(
        'select',
        { class: 'qv-descriptions', 'aria-label': t('Select a description') },
        descriptions.map((d) => h('option', { value: d.url }, d.title ?? d.name ?? d.url)),
      );
      select.value = this.options.url ?? descriptions[0].url;
      select.addEventListener('change', () => this.explore(select.value));
      form.append(select);
    }
    if (pageInput) {
      pageInput.value = this.options.url ?? '';
      this.urlInput = pageInput;
      document.getElementById('explore')?.addEventListener('click', (e) => {
        e.preventDefault();
        this.explore(pageInput.value);
      });
      pageInput.form?.addEventListener('submit', (e) => {
        e.preventDefault();
        this.explore(pageInput.value);
      });
    } else {
      const input = h('input', {
        type: 'text',
        class: 'qv-url',
        id: 'qv-url',
        'aria-label': t('Description address'),
        placeholder: t('Address of an OpenAPI description'),
        'data-sw-translate': true,
      });
      input.value = this.options.url ?? '';
      this.urlInput = input;
      form.append(input, h('button', { type: 'submit', class: 'qv-button', 'data-sw-translate': true }, t('Explore')));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        this.explore(input.value);
      });
    }
    const searchInput = h('input', {
      type: 'search',
      class: 'qv-search',
      'aria-label': t('Search operations'),
      placeholder: t('Search operations'),
      'data-sw-translate': true,
    });
    let timer: number | undefined;
    searchInput.addEventListener('input', () => {
      clearTimeout(timer);
      timer = window.setTimeout(() => this.applySearch(searchInput.value), 120);
    });
    searchInput.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        searchInput.value = '';
        this.applySearch('');
      }
    });
    this.searchInput = searchInput;
    const authButton = h(
      'button',
      { type: 'button', class: 'qv-button qv-authorize', 'aria-expanded': 'false', 'data-sw-translate': true },
      t('Authorize'),
    );
    authButton.addEventListener('click', () => {
      const panel = this.root.querySelector<HTMLElement>('.qv-auth-panel');
      if (!panel) return;
      panel.hidden = !panel.hidden;
      authButton.setAttribute('aria-expanded', String(!panel.hidden));
      if (!panel.hidden) panel.querySelector<HTMLElement>('input, select')?.focus();
    });
    const themeButton = h(
      'button',
      {
        type: 'button',
        class: 'qv-button qv-secondary qv-theme',
        'aria-pressed': String(this.isDark()),
        'data-sw-translate': true,
      },
      t('Dark theme'),
    );
    themeButton.addEventListener('click', () => {
      const dark = !this.isDark();
      this.themeChosen = true;
      this.root.dataset.theme = dark ? 'dark' : 'light';
      themeButton.setAttribute('aria-pressed', String(dark));
      try {
        localStorage.setItem('quartet-viewer-theme', this.root.dataset.theme);
      } catch {
        // storage unavailable (file:// in some browsers): the choice lasts for this page
      }
    });
    bar.append(form, searchInput, authButton, themeButton);
    return bar;
  }

  private isDark() {
    return this.root?.dataset.theme === 'dark';
  }

  /** Loads another address (address box, selector) and reflects it in ?url=. */
  explore(url: string) {
    if (!url) return;
    this.options.url = url;
    this.options.spec = undefined;
    try {
      const page = new URL(location.href);
      page.searchParams.set('url', url);
      page.hash = '';
      history.replaceState(null, '', page.href);
    } catch {
      // file:// pages without history support keep their address
    }
    void this.load();
  }

  private fetchOptions(): FetchOptions {
    const pending = { headers: {} as Record<string, string>, query: [] as [string, string][] };
    this.api.clientAuthorizations.applyAll(pending);
    return pending;
  }

  async load(): Promise<void> {
    const { url, spec } = this.options;
    const inline = spec && typeof spec === 'object';
    const current = ++this.loads;
    this.abort?.abort();
    const abort = (this.abort = new AbortController());
    // The description's request goes out first: the rest of the page is parsed and the viewer's
    // frame built while it travels (previews wait for that frame, see preview()).
    let shown!: () => void;
    this.shellReady = new Promise((resolve) => (shown = resolve));
    let reading: { absolute: string; resolver: Promise<Resolver> } | undefined;
    let invalid: unknown;
    if (!inline && url) {
      try {
        const absolute = new URL(url, document.baseURI).href;
        const resolver = loadDocument(absolute, this.fetchOptions(), {
          signal: abort.signal,
          partial: (root, pathsDone) => this.preview(root, absolute, current, pathsDone),
        });
        reading = { absolute, resolver };
      } catch (error) {
        invalid = error; // an address URL cannot read: reported below, as any failure
      }
    }
    // A 2.x page may create the viewer from a script in <head>: wait for the container.
    if (document.readyState === 'loading') {
      await new Promise((resolve) => document.addEventListener('DOMContentLoaded', resolve, { once: true }));
    }
    if (!this.root || !this.root.isConnected) this.buildShell();
    this.content.textContent = '';
    this.tagViews = [];
    this.model = undefined;
    this.pending = false;
    this.deepLinked = false;
    shown();
    try {
      let resolver;
      if (invalid) throw invalid;
      if (inline) {
        resolver = await resolverForObject(
          spec,
          url ? new URL(url, document.baseURI).href : document.baseURI,
          this.fetchOptions(),
        );
      } else if (reading) {
        this.setMessage(`${t('fetching resource list')}: ${reading.absolute}`);
        resolver = await reading.resolver;
      } else {
        this.setMessage(t('Enter the address of an OpenAPI description and press Explore.'));
        return;
      }
      if (current !== this.loads) return;
      this.raw = resolver.root;
      this.setMessage(t('Finished Loading Resource Information. Rendering Swagger UI'));
      const model = await normalize(resolver, this.fetchOptions());
      if (current !== this.loads) return;
      this.model = model;
      this.pending = false;
      this.api.model = this.model;
      this.api.info = this.model.info;
      this.api.url = resolver.baseUrl;
      this.setMessage('');
      this.render(); // after clearing the message: a search carried over shows its count there
      warmUpMarkdown();
      this.options.onComplete?.(this.api, this);
      // A translator that has learned nothing has nothing to replace (GitHub: 20 ms saved).
      const translator = pageTranslator();
      if (!translator?._words || Object.keys(translator._words).length) translator?.translate?.();
    } catch (error) {
      if (current !== this.loads) return;
      // Whatever a preview showed goes: the page shows the failure alone, as before previews.
      this.content.textContent = '';
      this.tagViews = [];
      this.model = undefined;
      this.pending = false;
      const message =
        error instanceof LoadError
          ? error.message
          : `${t('Unable to read api')}: ${(error as Error)?.message ?? String(error)}`;
      this.setMessage(message, true);
      this.options.onFailure?.(message);
    }
  }

  /**
   * Shows the operations read so far of a description still arriving: the first time at once
   * (then one frame is let through, so they are painted before reading goes on), and again when
   * `paths` is complete. Only 2.0 and 3.x: 1.x needs its declarations.
   */
  private async preview(root: JsonObject, baseUrl: string, current: number, pathsDone: boolean) {
    await this.shellReady;
    if (current !== this.loads || (this.model && !pathsDone)) return;
    const version = (typeof root.openapi === 'string' && /^3\./.test(root.openapi)) || String(root.swagger) === '2.0';
    if (!version || !root.paths || typeof root.paths !== 'object') return;
    let model: ApiModel;
    try {
      model = await normalize(new Resolver(baseUrl, root), this.fetchOptions());
    } catch {
      return; // a part that cannot be shown yet; the whole description decides at the end
    }
    if (current !== this.loads || !model.tags.length) return;
    const first = !this.model;
    this.model = model;
    this.pending = true;
    if (first) this.afterFirstFrame = [];
    this.render();
    if (!first) return;
    // Then the tasks the page already has queued (input, its own timers), then what was held back.
    await nextFrame();
    await yieldToPage();
    const deferred = this.afterFirstFrame ?? [];
    this.afterFirstFrame = undefined;
    for (const run of deferred) run();
  }

  private setMessage(text: string, failure = false) {
    this.message.textContent = text;
    this.message.classList.toggle('qv-failure', failure);
    this.message.setAttribute('role', failure ? 'alert' : 'status');
    this.message.hidden = !text;
  }

  private render() {
    const model = this.model!;
    const state = this.viewState();
    this.content.textContent = '';
    this.tagViews = [];
    const webhooks = model.webhooks ?? [];
    this.search = new SearchIndex([...model.tags, ...webhooks].flatMap((tag) => tag.operations));
    const ctx = this.contextFor();
    this.content.append(this.infoSection(model, state.validation));
    // Credentials typed into a preview's panel would be lost with it: the panel waits for the rest.
    if (!this.pending) this.content.append(authPanel(model, this.api.clientAuthorizations, this.redirectUrl()));

    const tags = [...model.tags];
    if (this.options.apisSorter) tags.sort(this.options.apisSorter);
    const list = h('ul', { class: 'qv-resources', 'aria-label': t('Resources') });
    for (const tag of tags) {
      const view = this.tagView(tag, ctx);
      this.tagViews.push(view);
      list.append(view.element);
    }
    this.content.append(list);
    if (webhooks.length) {
      // 3.1 webhooks: requests the API sends, grouped by tag below the resources (shown, not tried).
      const hooks = h('ul', { class: 'qv-resources', 'aria-label': t('Webhooks') });
      for (const tag of this.options.apisSorter ? [...webhooks].sort(this.options.apisSorter) : webhooks) {
        const view = this.tagView(tag, ctx, 'webhook');
        this.tagViews.push(view);
        hooks.append(view.element);
      }
      this.content.append(h('section', { class: 'qv-webhooks' }, tr('Webhooks', 'h2'), hooks));
    }
    this.content.append(
      h(
        'footer',
        { class: 'qv-footer' },
        `[ ${t('base url')}: ${model.servers[0] ?? ''} , ${t('api version')}: ${model.info.version} ]`,
      ),
    );

    this.restore(state, ctx);
    const expansion = this.options.docExpansion;
    if (expansion !== 'none') {
      // The first tags open at once, the rest (GitHub: 1,200 operations) in idle-time slices;
      // with "full", operation bodies then fill in the same way (once the whole description is
      // in). The page stays interactive; a newer render stops the slices of an older one.
      const views = [...this.tagViews];
      const current = () => this.tagViews[0] === views[0];
      void inChunks(views, (view) => current() && this.toggleTag(view, ctx, true)).then(() => {
        if (expansion === 'full' && !ctx.pending && current()) {
          void inChunks(
            views.flatMap((v) => v.operations ?? []),
            (op) => current() && op.toggle(true),
          );
        }
      });
    }
    if (!this.deepLinked) this.deepLinked = this.openDeepLink() || !this.pending;
    const search = this.searchInput?.value.trim();
    if (search) this.applySearch(search);
  }

  /** oauth2RedirectUrl, else o2c.html next to the page, as 2.x (its providers have that address registered). */
  private redirectUrl(): string {
    if (this.options.oauth2RedirectUrl) return this.options.oauth2RedirectUrl;
    try {
      return new URL('o2c.html', location.href).href;
    } catch {
      return new URL('o2c.html', document.baseURI).href; // about:srcdoc frames and the like
    }
  }

  /** Open tags and operations, focus and the validation panel, by name (the views are about to be replaced). */
  private viewState(): ViewState {
    const state: ViewState = { tags: new Set(), operations: new Set(), validation: false };
    const active = document.activeElement;
    for (const view of this.tagViews) {
      if (!view.list.hidden) state.tags.add(view.tag.name);
      if (active === view.toggleButton) state.focus = { tag: view.tag.name };
      for (const op of view.operations ?? []) {
        if (op.isOpen()) state.operations.add(opKey(op.op));
        if (active && op.element.contains(active)) state.focus = { tag: view.tag.name, op: op.op.id };
      }
    }
    state.validation = Boolean(this.content?.querySelector<HTMLDetailsElement>('.qv-validation')?.open);
    return state;
  }

  private restore(state: ViewState, ctx: RenderContext) {
    for (const view of this.tagViews) {
      if (state.tags.has(view.tag.name)) this.toggleTag(view, ctx, true);
      for (const op of view.operations ?? []) if (state.operations.has(opKey(op.op))) op.toggle(true);
      if (state.focus?.tag !== view.tag.name) continue;
      const op = state.focus.op ? view.operations?.find((o) => o.op.id === state.focus!.op) : undefined;
      const target = op ? op.element.querySelector<HTMLElement>('.qv-op-head') : view.toggleButton;
      target?.focus({ preventScroll: true });
    }
  }

  private infoSection(model: ApiModel, validationOpen: boolean): HTMLElement {
    const info = model.info;
    const section = h('section', { class: 'qv-info', 'aria-label': t('API information') });
    section.append(
      h(
        'h1',
        { class: 'qv-title' },
        info.title || t('Untitled API'),
        ' ',
        h('span', { class: 'qv-version' }, info.version),
        ' ',
        h('span', { class: 'qv-spec-version' }, `OAS ${model.specVersion}`),
      ),
    );
    if (info.description) {
      const description = h('div', { class: 'qv-markdown qv-description' });
      // A first preview is painted without waiting for markdown's first run (marked compiling its
      // patterns, ~20–50 ms): the description follows right after that frame (see preview()).
      const fill = () => description.append(markdown(info.description));
      if (this.afterFirstFrame) this.afterFirstFrame.push(fill);
      else fill();
      section.append(description);
    }
    const links = h('ul', { class: 'qv-info-links' });
    if (info.termsOfService) {
      links.append(
        h(
          'li',
          null,
          h(
            'a',
            { href: info.termsOfService, rel: 'noopener noreferrer', target: '_blank', 'data-sw-translate': true },
            t('Terms of service'),
          ),
        ),
      );
    }
    if (info.contact?.name) links.append(h('li', null, tr('Created by'), ` ${info.contact.name}`));
    if (info.contact?.url) {
      links.append(
        h(
          'li',
          null,
          tr('See more at'),
          ' ',
          h('a', { href: info.contact.url, rel: 'noopener noreferrer', target: '_blank' }, info.contact.url),
        ),
      );
    }
    if (info.contact?.email) {
      links.append(
        h(
          'li',
          null,
          h('a', { href: `mailto:${info.contact.email}`, 'data-sw-translate': true }, t('Contact the developer')),
        ),
      );
    }
    if (info.license?.name) {
      links.append(
        h(
          'li',
          null,
          info.license.url
            ? h('a', { href: info.license.url, rel: 'noopener noreferrer', target: '_blank' }, info.license.name)
            : info.license.name,
        ),
      );
    }
    if (model.externalDocs) {
      links.append(
        h(
          'li',
          null,
          h(
            'a',
            { href: model.externalDocs.url, rel: 'noopener noreferrer', target: '_blank' },
            model.externalDocs.description ?? model.externalDocs.url,
          ),
        ),
      );
    }
    if (links.childElementCount) section.append(links);
    section.append(h('p', { class: 'qv-muted' }, `${t('base url')}: `, h('code', null, model.servers[0] ?? '')));
    const badge = this.validatorBadge(model);
    if (badge) section.append(badge);
    // Checked when opened: walking a 13 MB description must not delay the first render.
    const validation = h(
      'details',
      { class: 'qv-validation', open: validationOpen },
      h('summary', { 'data-sw-translate': true }, t('Validation')),
      h('p', { class: 'qv-muted' }, t('Checking…')),
    );
    // A preview's panel says "Checking…" until the rest has arrived and the page is rendered again.
    validation.addEventListener('toggle', () => {
      if (validation.open && !validation.dataset.checked && !this.pending) {
        validation.dataset.checked = 'true';
        setTimeout(() => this.runValidation(), 0);
      }
    });
    section.append(validation);
    return section;
  }

  /**
   * The online validator's badge for 2.0 descriptions fetched over http(s); for a local address
   * (localhost, 127.x, ::1) only when the page set validatorUrl itself, as 2.2.10.
   */
  private validatorBadge(model: ApiModel): HTMLElement | undefined {
    const validator = this.options.validatorUrl;
    const specUrl = this.api.url;
    if (!validator || !specUrl || model.specVersion !== '2.0' || this.options.spec) return undefined;
    let host: string;
    try {
      const parsed = new URL(specUrl);
      if (!/^https?:$/.test(parsed.protocol)) return undefined;
      host = parsed.hostname;
    } catch {
      return undefined;
    }
    if (!this.options.validatorUrlSet && /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|::1)$/.test(host)) return undefined;
    const encoded = encodeURIComponent(specUrl);
    return h(
      'a',
      {
        class: 'qv-validator-badge',
        href: `${validator}/debug?url=${encoded}`,
        target: '_blank',
        rel: 'noopener noreferrer',
      },
      h('img', { src: `${validator}?url=${encoded}`, alt: t('Online validator badge') }),
    );
  }

  private runValidation() {
    const panel = this.content.querySelector<HTMLDetailsElement>('.qv-validation');
    if (!panel || !this.model) return;
    const findings = validate(this.model, this.raw);
    const errors = findings.filter((f) => f.level === 'error').length;
    const summary = panel.querySelector('summary')!;
    summary.textContent = `${t('Validation')}: ${errors} ${t('errors')}, ${findings.length - errors} ${t('warnings')}`;
    panel.classList.toggle('qv-invalid-spec', errors > 0);
    const body = findings.length
      ? h(
          'ul',
          null,
          findings
            .slice(0, 500)
            .map((f) => h('li', { class: `qv-${f.level}` }, h('code', null, f.where), ` ${f.message}`)),
        )
      : h('p', null, t('No problems found.'));
    panel.replaceChild(body, panel.lastElementChild!);
  }

  private tagView(tag: Tag, ctx: RenderContext, kind: 'resource' | 'webhook' = 'resource'): TagView {
    const listId = `${kind}-${tag.name}-ops`.replace(/[^A-Za-z0-9_-]/g, '_');
    const toggleButton = h(
      'button',
      { type: 'button', class: 'qv-tag-toggle', 'aria-expanded': 'false', 'aria-controls': listId },
      tag.name,
    );
    const list = h('ul', { class: 'qv-ops', id: listId, hidden: true, 'aria-label': tag.name });
    const actions = h('span', { class: 'qv-tag-actions' });
    const element = h(
      'li',
      { class: 'qv-tag', id: `${kind}_${tag.name}`.replace(/[^A-Za-z0-9_-]/g, '_') },
      h(
        'div',
        { class: 'qv-tag-head' },
        h('h2', null, toggleButton),
        tag.description ? h('span', { class: 'qv-tag-desc' }, markdown(tag.description, true)) : '',
        actions,
      ),
      list,
    );
    const view: TagView = { tag, element, list, toggleButton };
    const action = (label: string, run: () => void) => {
      const button = h(
        'button',
        { type: 'button', class: 'qv-link', 'data-sw-translate': true, 'aria-label': `${t(label)}: ${tag.name}` },
        t(label),
      );
      button.addEventListener('click', run);
      actions.append(button);
    };
    action('Show/Hide', () => this.toggleTag(view, ctx));
    action('List Operations', () => {
      this.toggleTag(view, ctx, true);
      view.operations!.forEach((op) => op.toggle(false));
    });
    action('Expand Operations', () => {
      this.toggleTag(view, ctx, true);
      void inChunks(view.operations!, (op) => op.toggle(true));
    });
    toggleButton.addEventListener('click', () => this.toggleTag(view, ctx));
    return view;
  }

  /** Opens or closes a tag; its operation list is built the first time it opens. */
  private toggleTag(view: TagView, ctx: RenderContext, open = view.list.hidden) {
    if (open && !view.operations) {
      const ops = [...view.tag.operations];
      if (this.options.operationsSorter) ops.sort(this.options.operationsSorter);
      view.operations = ops.map((op) => renderOperation(op, ctx));
      const fragment = document.createDocumentFragment();
      for (const op of view.operations) fragment.append(op.element);
      view.list.append(fragment);
    }
    view.list.hidden = !open;
    view.toggleButton.setAttribute('aria-expanded', String(open));
    view.element.classList.toggle('qv-open', open);
  }

  private contextFor(): RenderContext {
    const model = this.model!;
    return {
      model,
      pending: this.pending,
      options: this.options,
      auth: this.api.clientAuthorizations,
      schemeNames: new Set(Object.keys(model.securitySchemes)),
      onToggle: (op, open) => this.rememberLink(op, open),
    };
  }

  private applySearch(query: string) {
    if (!this.search) return;
    const matches = this.search.match(query);
    const ctx = this.contextFor();
    let count = 0;
    for (const view of this.tagViews) {
      if (!matches) {
        view.element.hidden = false;
        view.operations?.forEach((op) => (op.element.hidden = false));
        continue;
      }
      const hasMatch = view.tag.operations.some((op) => matches.has(op));
      view.element.hidden = !hasMatch;
      if (!hasMatch) continue;
      this.toggleTag(view, ctx, true);
      for (const op of view.operations!) {
        op.element.hidden = !matches.has(op.op);
        if (!op.element.hidden) count++;
      }
    }
    this.setMessage(matches ? `${count} ${t('operations match')} "${query}"` : '');
  }

  private rememberLink(op: Operation, open: boolean) {
    const hash = open
      ? `#!/${encodeURIComponent(op.tag)}/${encodeURIComponent(op.id)}`
      : `#!/${encodeURIComponent(op.tag)}`;
    try {
      history.replaceState(null, '', hash);
    } catch {
      // ignore: deep links are a convenience
    }
  }

  /**
   * `#!/Tag` opens a tag; `#!/Tag/operationId` opens and scrolls to an operation. False while
   * the address names one that is not (yet) on the page.
   */
  private openDeepLink(): boolean {
    const match = /^#!\/([^/]+)(?:\/(.+))?$/.exec(location.hash);
    if (!match || !this.model) return true;
    const [tagName, opId] = [decodeURIComponent(match[1]), match[2] ? decodeURIComponent(match[2]) : undefined];
    // A tag's name may head both a resource and a webhook group: the one holding the operation wins.
    const view =
      this.tagViews.find((v) => v.tag.name === tagName && v.tag.operations.some((o) => o.id === opId)) ??
      this.tagViews.find((v) => v.tag.name === tagName);
    if (!view) return false;
    this.toggleTag(view, this.contextFor(), true);
    const target = opId ? view.operations!.find((o) => o.op.id === opId) : undefined;
    if (target) {
      target.toggle(true);
      target.element.scrollIntoView({ block: 'start' });
      target.element.querySelector<HTMLElement>('.qv-op-head')?.focus({ preventScroll: true });
    } else view.element.scrollIntoView({ block: 'start' });
    return !opId || Boolean(target);
  }

  /** Up/Down move between tag and operation headings. */
  private arrowKeys(event: KeyboardEvent) {
    const target = event.target as HTMLElement;
    if ((event.key !== 'ArrowDown' && event.key !== 'ArrowUp') || !target.matches('.qv-op-head, .qv-tag-toggle')) {
      return;
    }
    const heads = Array.from(this.root.querySelectorAll<HTMLElement>('.qv-op-head, .qv-tag-toggle')).filter(
      (el) => el.offsetParent !== null,
    );
    const index = heads.indexOf(target);
    const next = heads[index + (event.key === 'ArrowDown' ? 1 : -1)];
    if (next) {
      event.preventDefault();
      next.focus();
    }
  }
}

/** After the next frame has been produced (at once in a hidden tab, which produces none). */
function nextFrame(): Promise<void> {
  return new Promise((resolve) => {
    if (document.hidden) return resolve();
    requestAnimationFrame(() => setTimeout(resolve, 0));
    setTimeout(resolve, 1000); // frames can also stop for a frame outside the view
  });
}

function storedTheme(): string | undefined {
  try {
    const value = localStorage.getItem('quartet-viewer-theme');
    return value === 'dark' || value === 'light' ? value : undefined;
  } catch {
    return undefined;
  }
}
