// The option table of docs/viewer.md (Options), with its defaults. Unknown values fall back the way
// 2.x did.
import type { Operation, Tag } from './normalize/model.js';
import { hasOwn } from './own.js';

export const SUBMIT_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'];

export interface ViewerOptions {
  url?: string;
  authorizations?: Record<string, unknown>;
  spec?: unknown;
  validatorUrl?: string | null;
  dom_id?: string;
  /** A DOM element instead of dom_id (2.x accepted `dom`). */
  dom?: HTMLElement;
  booleanValues?: [unknown, unknown];
  docExpansion?: 'none' | 'list' | 'full';
  apisSorter?: 'alpha' | ((a: TagView, b: TagView) => number);
  operationsSorter?: 'alpha' | 'method' | ((a: Operation, b: Operation) => number);
  defaultModelRendering?: 'model' | 'schema';
  onComplete?: (api: unknown, ui: unknown) => void;
  onFailure?: (message: string) => void;
  highlightSizeThreshold?: number;
  supportedSubmitMethods?: string[];
  oauth2RedirectUrl?: string;
  showRequestHeaders?: boolean;
  jsonEditor?: boolean;
  /** Several descriptions offered in a selector: [{name, title, url}]. */
  descriptions?: { name?: string; title?: string; url: string }[];
}

export type TagView = Tag;

export interface ResolvedOptions {
  url?: string;
  spec?: unknown;
  authorizations: Record<string, unknown>;
  validatorUrl: string | null;
  /** The page set validatorUrl itself: then the badge shows for local descriptions too (2.2.10's rule). */
  validatorUrlSet: boolean;
  dom_id: string;
  dom?: HTMLElement;
  booleanValues: [string, string];
  docExpansion: 'none' | 'list' | 'full';
  apisSorter?: (a: TagView, b: TagView) => number;
  operationsSorter?: (a: Operation, b: Operation) => number;
  defaultModelRendering: 'model' | 'schema';
  onComplete?: (api: unknown, ui: unknown) => void;
  onFailure?: (message: string) => void;
  highlightSizeThreshold?: number;
  supportedSubmitMethods: string[];
  oauth2RedirectUrl?: string;
  showRequestHeaders: boolean;
  jsonEditor: boolean;
  descriptions: { name?: string; title?: string; url: string }[];
}

export const DEFAULT_VALIDATOR = 'https://online.swagger.io/validator';

export function resolveOptions(input: ViewerOptions = {}): ResolvedOptions {
  const o = input ?? {};
  const apisSorter =
    typeof o.apisSorter === 'function'
      ? o.apisSorter
      : o.apisSorter === 'alpha'
        ? (a: TagView, b: TagView) => a.name.localeCompare(b.name)
        : undefined;
  let operationsSorter: ResolvedOptions['operationsSorter'];
  if (typeof o.operationsSorter === 'function') operationsSorter = o.operationsSorter;
  else if (o.operationsSorter === 'alpha') operationsSorter = (a, b) => a.path.localeCompare(b.path);
  else if (o.operationsSorter === 'method') operationsSorter = (a, b) => a.method.localeCompare(b.method);
  // 2.2.10 asked `'validatorUrl' in options`: set to anything but an address, it disables the badge.
  const validatorUrlSet = hasOwn(o, 'validatorUrl');
  const booleans = Array.isArray(o.booleanValues) && o.booleanValues.length >= 2 ? o.booleanValues : ['true', 'false'];
  return {
    url: typeof o.url === 'string' ? o.url : undefined,
    spec: o.spec,
    authorizations: o.authorizations && typeof o.authorizations === 'object' ? o.authorizations : {},
    validatorUrl: !validatorUrlSet
      ? DEFAULT_VALIDATOR
      : typeof o.validatorUrl === 'string' && o.validatorUrl
        ? o.validatorUrl.replace(/\/$/, '')
        : null,
    validatorUrlSet,
    dom_id: typeof o.dom_id === 'string' ? o.dom_id : 'swagger_ui',
    dom: o.dom,
    booleanValues: [String(booleans[0]), String(booleans[1])],
    docExpansion: o.docExpansion === 'list' || o.docExpansion === 'full' ? o.docExpansion : 'none',
    apisSorter,
    operationsSorter,
    defaultModelRendering: o.defaultModelRendering === 'model' ? 'model' : 'schema',
    onComplete: typeof o.onComplete === 'function' ? o.onComplete : undefined,
    onFailure: typeof o.onFailure === 'function' ? o.onFailure : undefined,
    highlightSizeThreshold:
      typeof o.highlightSizeThreshold === 'number' && o.highlightSizeThreshold >= 0
        ? o.highlightSizeThreshold
        : undefined,
    supportedSubmitMethods: Array.isArray(o.supportedSubmitMethods)
      ? o.supportedSubmitMethods.map((m) => String(m).toLowerCase())
      : SUBMIT_METHODS,
    oauth2RedirectUrl: typeof o.oauth2RedirectUrl === 'string' ? o.oauth2RedirectUrl : undefined,
    showRequestHeaders: o.showRequestHeaders === true,
    jsonEditor: o.jsonEditor === true,
    descriptions: Array.isArray(o.descriptions) ? o.descriptions.filter((d) => d && typeof d.url === 'string') : [],
  };
}
