// The capacity model behind `will_complete_at` (documented in docs/quotes.md):
// - each target language has a pool of translators, each with words a day for translation and
//   for review, a time zone and working hours; they work Monday–Friday in their own time zone;
// - a translator's backlog is the work already assigned by open orders: new work starts when
//   they are free (their latest `busy_until`), never before now;
// - work of W words at R words a day takes W / R working days of (end - start) hours;
// - translation and review: a second translator reviews after the translation ends (and after
//   their own backlog); with a one-person pool the same person reviews after translating;
// - "fastest" is the assignment that finishes first; "preferred" is the translator with the
//   most words translated on the project in that language, with their own backlog (the fastest
//   reviewer reviews their work). Without history the preferred translator is the fastest one.
import type { Level } from './rates.js';

export interface Translator {
  name: string;
  wordsPerDayTranslation: number;
  wordsPerDayReview: number;
  timeZone: string;
  startHour: number;
  endHour: number;
}

export interface Assignment {
  translator: string;
  role: 'translate' | 'review';
  words: number;
  startsAt: number;
  busyUntil: number;
}

export interface Plan {
  completesAt: number;
  assignments: Assignment[];
}

export interface LevelPlans {
  fastest: Plan;
  preferred: Plan;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const formatters = new Map<string, Intl.DateTimeFormat>();
// UTC offsets by time zone and quarter hour (transitions happen on quarter hours): the
// calendar walk asks for the same instants again and again, and Intl formatting is slow.
const offsets = new Map<string, number>();
const QUARTER = 900_000;

function offsetAt(ms: number, timeZone: string): number {
  const key = `${timeZone}|${Math.floor(ms / QUARTER)}`;
  const cached = offsets.get(key);
  if (cached !== undefined) return cached;
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, format);
  }
  const parts: Record<string, number> = {};
  for (const part of format.formatToParts(ms)) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const wall = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  const offset = wall - (ms - (((ms % 1000) + 1000) % 1000));
  if (offsets.size > 50_000) offsets.clear();
  offsets.set(key, offset);
  return offset;
}

/** Local weekday (1 = Monday … 7 = Sunday) and milliseconds since local midnight. */
function localClock(ms: number, timeZone: string): { weekday: number; msOfDay: number } {
  const local = ms + offsetAt(ms, timeZone);
  const day = new Date(local).getUTCDay();
  return { weekday: day === 0 ? 7 : day, msOfDay: ((local % DAY) + DAY) % DAY };
}

/** The instant when `workMs` of working time, started at `start`, is done in `who`'s calendar. */
export function addWorkingTime(
  start: number,
  workMs: number,
  who: Pick<Translator, 'timeZone' | 'startHour' | 'endHour'>,
): number {
  let t = start;
  let remaining = workMs;
  if (remaining <= 0) return t;
  const dayStart = who.startHour * HOUR;
  const dayEnd = who.endHour * HOUR;
  const dayLength = dayEnd - dayStart;
  for (let guard = 0; guard < 100_000; guard++) {
    const { weekday, msOfDay } = localClock(t, who.timeZone);
    if (weekday > 5 || msOfDay >= dayEnd) {
      t += DAY - msOfDay; // to the next local midnight
      continue;
    }
    if (msOfDay < dayStart) {
      t += dayStart - msOfDay;
      continue;
    }
    // Whole weeks at once from a Monday morning keeps long jobs cheap to plan.
    if (weekday === 1 && msOfDay === dayStart && remaining > 5 * dayLength) {
      const weeks = Math.floor((remaining - 1) / (5 * dayLength));
      t += weeks * 7 * DAY;
      remaining -= weeks * 5 * dayLength;
      continue;
    }
    const available = dayEnd - msOfDay;
    if (remaining <= available) return t + remaining;
    remaining -= available;
    t += available;
  }
  throw new Error('working calendar did not converge');
}

/** Working milliseconds for `words` at `wordsPerDay` in a day of the translator's hours. */
function workMs(words: number, wordsPerDay: number, who: Translator): number {
  return Math.ceil((words / wordsPerDay) * (who.endHour - who.startHour) * HOUR);
}

function step(
  who: Translator,
  role: 'translate' | 'review',
  words: number,
  notBefore: number,
  busy: Map<string, number>,
): Assignment {
  const startsAt = Math.max(notBefore, busy.get(who.name) ?? 0);
  const rate = role === 'translate' ? who.wordsPerDayTranslation : who.wordsPerDayReview;
  return {
    translator: who.name,
    role,
    words,
    startsAt,
    busyUntil: addWorkingTime(startsAt, workMs(words, rate, who), who),
  };
}

function single(
  level: Level,
  who: Translator,
  words: number,
  now: number,
  busy: Map<string, number>,
  pool: Translator[],
): Plan {
  if (level !== 'translation_and_review') {
    const work = step(who, level === 'review_only' ? 'review' : 'translate', words, now, busy);
    return { completesAt: work.busyUntil, assignments: [work] };
  }
  const translation = step(who, 'translate', words, now, busy);
  const others = pool.filter((t) => t.name !== who.name);
  const reviewers = others.length ? others : [who];
  const afterTranslation = new Map(busy).set(who.name, translation.busyUntil);
  let best: Assignment | null = null;
  for (const reviewer of reviewers) {
    const review = step(reviewer, 'review', words, translation.busyUntil, afterTranslation);
    if (!best || review.busyUntil < best.busyUntil) best = review;
  }
  return { completesAt: best!.busyUntil, assignments: [translation, best!] };
}

/**
 * The fastest and the preferred plan for one service level.
 * `busy`: each translator's backlog end; `preferred`: name of the project's preferred translator.
 */
export function planLevel(
  level: Level,
  words: number,
  now: number,
  pool: Translator[],
  busy: Map<string, number>,
  preferred: string | null,
): LevelPlans {
  if (pool.length === 0) throw new Error('no translator in the pool');
  let fastest: Plan | null = null;
  for (const who of pool) {
    const plan = single(level, who, words, now, busy, pool);
    if (!fastest || plan.completesAt < fastest.completesAt) fastest = plan;
  }
  const favourite = preferred ? pool.find((t) => t.name === preferred) : undefined;
  return { fastest: fastest!, preferred: favourite ? single(level, favourite, words, now, busy, pool) : fastest! };
}

/** A translator pool: configured for the locale or its language, else the default profile. */
export interface CapacityConfig {
  default: {
    translators: number;
    wordsPerDayTranslation: number;
    wordsPerDayReview: number;
    startHour: number;
    endHour: number;
    timeZone: string | null;
  };
  locales: Record<string, Translator[]>;
}

export const DEFAULT_CAPACITY: CapacityConfig = {
  // About 2,000 words a day for translation, review three times faster, 9:00–17:00.
  default: {
    translators: 3,
    wordsPerDayTranslation: 2000,
    wordsPerDayReview: 6000,
    startHour: 9,
    endHour: 17,
    timeZone: null,
  },
  locales: {},
};

const defaultPools = new WeakMap<CapacityConfig, Map<string, Translator[]>>();

export function poolFor(capacity: CapacityConfig, code: string, region: string): Translator[] {
  const configured = capacity.locales[code] ?? capacity.locales[code.split('-')[0]];
  if (configured?.length) return configured;
  let pools = defaultPools.get(capacity);
  if (!pools) defaultPools.set(capacity, (pools = new Map()));
  let pool = pools.get(code);
  if (!pool) pools.set(code, (pool = defaultPool(capacity, code, region)));
  return pool;
}

function defaultPool(capacity: CapacityConfig, code: string, region: string): Translator[] {
  const profile = capacity.default;
  const timeZone = profile.timeZone ?? regionTimeZone(code, region);
  return Array.from({ length: profile.translators }, (_, index) => ({
    name: `${code} translator ${index + 1}`,
    wordsPerDayTranslation: profile.wordsPerDayTranslation,
    wordsPerDayReview: profile.wordsPerDayReview,
    timeZone,
    startHour: profile.startHour,
    endHour: profile.endHour,
  }));
}

/** The region's time zone when CLDR knows exactly one (Intl.Locale#timeZones), else UTC. */
function regionTimeZone(code: string, _region: string): string {
  try {
    const zones = (new Intl.Locale(code) as unknown as { timeZones?: string[] }).timeZones;
    return zones?.length === 1 ? zones[0] : 'UTC';
  } catch {
    return 'UTC';
  }
}
