// The rate card: a per-word price per target language, specialization and service level.
// Lookup order: the exact locale (ja-JP), then its language (ja), then "default". Prices are
// decimal strings and stay strings: totals are computed by decimal.ts, never with floats.
import { parseDecimal } from './decimal.js';
import type { Language } from '../common/locales.js';

export const SPECIALIZATIONS = ['general', 'game'] as const;
export type Specialization = (typeof SPECIALIZATIONS)[number];
export const LEVELS = ['translation_only', 'translation_and_review', 'review_only'] as const;
export type Level = (typeof LEVELS)[number];

export type LevelPrices = Record<Level, string>;
export type RateCard = Record<string, Partial<Record<Specialization, LevelPrices>>>;

// Defaults from the market figures of the reference: general 0.05–0.15 USD a word, games
// 0.10–0.16 for European languages and 0.12–0.22 for CJK; a review costs about half a
// translation, and translation with review is translation plus review.
const general: LevelPrices = { translation_only: '0.08', translation_and_review: '0.12', review_only: '0.04' };
const gameEuropean: LevelPrices = { translation_only: '0.12', translation_and_review: '0.18', review_only: '0.06' };
const cjk: LevelPrices = { translation_only: '0.10', translation_and_review: '0.15', review_only: '0.05' };
const gameCjk: LevelPrices = { translation_only: '0.16', translation_and_review: '0.24', review_only: '0.08' };

export const DEFAULT_RATES: RateCard = {
  default: { general, game: gameEuropean },
  ja: { general: cjk, game: gameCjk },
  zh: { general: cjk, game: gameCjk },
  ko: { general: cjk, game: gameCjk },
};

export function perWordRate(card: RateCard, language: Language, specialization: Specialization, level: Level): string {
  for (const key of [language.code, language.locale, 'default']) {
    const prices =
      card[key]?.[specialization] ?? (key === 'default' ? DEFAULT_RATES.default[specialization] : undefined);
    if (prices) return prices[level];
  }
  return DEFAULT_RATES.default[specialization]![level];
}

/** Checks a rate card from the rates file; returns a problem description or null. */
export function checkRateCard(card: unknown): string | null {
  if (!card || typeof card !== 'object' || Array.isArray(card)) {
    return '"rates" must be an object keyed by locale, language or "default"';
  }
  for (const [key, bySpecialization] of Object.entries(card)) {
    if (!bySpecialization || typeof bySpecialization !== 'object') {
      return `rates.${key} must be an object keyed by specialization`;
    }
    for (const [specialization, prices] of Object.entries(bySpecialization)) {
      if (!(SPECIALIZATIONS as readonly string[]).includes(specialization)) {
        return `rates.${key}.${specialization}: unknown specialization (general or game)`;
      }
      for (const level of LEVELS) {
        const price = (prices as Record<string, unknown>)?.[level];
        if (typeof price !== 'string') {
          return `rates.${key}.${specialization}.${level} must be a decimal string like "0.08"`;
        }
        try {
          parseDecimal(price);
        } catch (error) {
          return `rates.${key}.${specialization}.${level}: ${(error as Error).message}`;
        }
      }
    }
  }
  return null;
}
