// Localization the 2.x way: a global translator whose dictionary maps English phrases to
// translations. Language files call `SwaggerTranslator.learn({...})`; every string the viewer
// shows goes through `t()`, and is also marked `data-sw-translate` so `translate()` of a 2.x page
// finds it. 2.x language files work unchanged.

import { hasOwn } from './own.js';

export interface Translator {
  _words: Record<string, string>;
  learn(words: Record<string, string>): void;
  translate(selector?: string): void;
  _tryTranslate(word: string): string | undefined;
}

export const LEARNED_EVENT = 'swagger-translator-learned';

export function createTranslator(): Translator {
  return {
    _words: {},
    learn(words) {
      this._words = words && typeof words === 'object' ? words : {};
      if (typeof window.dispatchEvent === 'function') window.dispatchEvent(new Event(LEARNED_EVENT));
    },
    _tryTranslate(word) {
      return Object.prototype.hasOwnProperty.call(this._words, word) ? this._words[word] : undefined;
    },
    translate(selector = '[data-sw-translate]') {
      for (const el of Array.from(document.querySelectorAll<HTMLElement>(selector))) {
        // Translations come from the site's own language files; written as text all the same.
        const own = this._tryTranslate(el.textContent?.trim() ?? '');
        if (own !== undefined) el.textContent = own;
        for (const attr of ['value', 'title', 'placeholder', 'aria-label']) {
          const current = el.getAttribute(attr);
          const translated = current ? this._tryTranslate(current.trim()) : undefined;
          if (translated !== undefined) el.setAttribute(attr, translated);
        }
      }
    },
  };
}

/** The page's translator: ours, 2.x's, or whatever a page put there (so each use checks it). */
export function pageTranslator(): Partial<Translator> | undefined {
  const value: unknown = (globalThis as { SwaggerTranslator?: unknown }).SwaggerTranslator;
  return value && typeof value === 'object' ? value : undefined;
}

/** Installs the global translator unless a page already has one (2.x's or ours). */
export function installTranslator(): Translator {
  const current = pageTranslator();
  if (current && typeof current.learn === 'function') return current as Translator;
  const created = createTranslator();
  (globalThis as { SwaggerTranslator?: Translator }).SwaggerTranslator = created;
  return created;
}

export function t(phrase: string): string {
  const words: unknown = pageTranslator()?._words;
  const hit =
    words && typeof words === 'object' && hasOwn(words, phrase)
      ? (words as Record<string, unknown>)[phrase]
      : undefined;
  return typeof hit === 'string' ? hit : phrase;
}
