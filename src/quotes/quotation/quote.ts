// A quotation: the strings of the requested files that are in the requested states in the
// target language, their words, the price per service level and the completion estimate.
import type { Executor } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import type { QuotesConfig } from '../config.js';
import { totalCost } from './decimal.js';
import { planLevel, poolFor, type LevelPlans } from './estimate.js';
import { findLanguage, requireLanguage, type Language } from '../common/locales.js';
import { LEVELS, perWordRate, type Level, type Specialization } from './rates.js';
import { filesWithCounts } from '../store/files.js';
import { backlog, preferredTranslator } from '../store/orders.js';
import type { FileRow, Project } from '../store/rows.js';
import { oneSkyTime, unixSeconds } from '../common/time.js';

export interface QuoteRequest {
  files: string[];
  to: Language;
  from: Language;
  includeNotTranslated: boolean;
  includeNotApproved: boolean;
  includeOutdated: boolean;
  specialization: Specialization;
}

/** The quotation parameters of the API, as the route schemas validate them. */
export interface QuoteParameters {
  files: string[];
  to_locale: string;
  is_including_not_translated?: boolean;
  is_including_not_approved?: boolean;
  is_including_outdated?: boolean;
  specialization?: Specialization;
}

export function quoteRequestOf(project: Project, params: QuoteParameters): QuoteRequest {
  const to = requireLanguage('to_locale', params.to_locale);
  const from = findLanguage(project.base_locale)!;
  if (to.code === from.code) {
    throw new HttpError(400, `to_locale: ${to.code} is the base language of project ${project.id}`);
  }
  return {
    files: params.files,
    to,
    from,
    includeNotTranslated: params.is_including_not_translated ?? true,
    includeNotApproved: params.is_including_not_approved ?? true,
    includeOutdated: params.is_including_outdated ?? true,
    specialization: params.specialization ?? 'general',
  };
}

export interface Quotation {
  files: FileRow[];
  strings: number;
  words: number;
  levels: Record<Level, { perWord: string; total: string; plans: LevelPlans }>;
  now: number;
}

export async function makeQuotation(
  db: Executor,
  config: QuotesConfig,
  project: Project,
  request: QuoteRequest,
  now: number,
): Promise<Quotation> {
  const names = [...new Set(request.files)];
  // Independent reads at once: on PostgreSQL they travel in parallel over the pool.
  const [withCounts, busy, preferred] = await Promise.all([
    filesWithCounts(db, project.id, names, request.to.code),
    backlog(db, request.to.code, now),
    preferredTranslator(db, project.id, request.to.code),
  ]);
  const byName = new Map(withCounts.map((file) => [file.name, file]));
  const missing = names.filter((name) => !byName.has(name));
  if (missing.length) {
    throw new HttpError(
      400,
      `files: unknown file ${missing.map((name) => `"${name.slice(0, 100)}"`).join(', ')} in project ${project.id}`,
    );
  }
  const ordered = names.map((name) => byName.get(name)!);
  let strings = 0;
  let words = 0;
  for (const file of ordered) {
    const row = file.counts;
    // No row yet: nothing was ever translated or ordered in this language.
    if (!row) {
      if (request.includeNotTranslated) {
        strings += file.string_count;
        words += file.word_count;
      }
      continue;
    }
    if (request.includeNotTranslated) {
      strings += row.not_translated_strings;
      words += row.not_translated_words;
    }
    if (request.includeNotApproved) {
      strings += row.not_approved_strings;
      words += row.not_approved_words;
    }
    if (request.includeOutdated) {
      strings += row.outdated_strings;
      words += row.outdated_words;
    }
  }
  const pool = poolFor(config.capacity, request.to.code, request.to.region);
  const levels = {} as Quotation['levels'];
  for (const level of LEVELS) {
    const perWord = perWordRate(config.rates, request.to, request.specialization, level);
    levels[level] = {
      perWord,
      total: totalCost(perWord, words),
      plans: planLevel(level, words, now, pool, busy, preferred),
    };
  }
  return { files: ordered.map(({ counts: _counts, ...file }) => file), strings, words, levels, now };
}

export function completion(at: number, now: number) {
  return {
    will_complete_at: oneSkyTime(at),
    will_complete_at_timestamp: unixSeconds(at),
    seconds_to_complete: Math.max(0, Math.ceil((at - now) / 1000)),
  };
}

export function quotationBody(quotation: Quotation, request: QuoteRequest) {
  const estimate = (level: Level) => {
    const { perWord, total, plans } = quotation.levels[level];
    return {
      string_count: quotation.strings,
      word_count: quotation.words,
      per_word_cost: perWord,
      total_cost: total,
      ...completion(plans.fastest.completesAt, quotation.now),
      preferred_translator: completion(plans.preferred.completesAt, quotation.now),
    };
  };
  return {
    files: quotation.files.map((file) => ({ name: file.name })),
    from_language: request.from,
    to_language: request.to,
    is_including_not_translated: request.includeNotTranslated,
    is_including_not_approved: request.includeNotApproved,
    is_including_outdated: request.includeOutdated,
    specialization: request.specialization,
    translation_only: estimate('translation_only'),
    translation_and_review: estimate('translation_and_review'),
    review_only: estimate('review_only'),
  };
}
