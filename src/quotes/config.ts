// Configuration of this service, read from the environment (see .env.example).
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { ConfigError, type Env, int, optionalStr } from '../env.js';
import { DEFAULT_CAPACITY, type CapacityConfig, type Translator } from './quotation/estimate.js';
import { checkRateCard, DEFAULT_RATES, type RateCard } from './quotation/rates.js';

export interface QuotesConfig {
  /** Largest accepted |now - timestamp| of a signed request, in seconds. */
  timestampWindowS: number;
  /** Largest uploaded file in bytes; a larger one becomes a failed import. */
  maxFileBytes: number;
  /** Largest body of a screenshot upload (base64 images), and so of one image. */
  maxScreenshotBytes: number;
  /** A running import's lease: not renewed for this long (its process died or lost the database), it runs again. */
  importStaleS: number;
  /** How often a process looks for queued imports (e.g. queued by another process). */
  importPollMs: number;
  /** Worker threads reading uploaded files (parsing, word counts), per process. */
  importThreads: number;
  /** Longest time reading one file may take; then the import fails. */
  importTimeoutS: number;
  rates: RateCard;
  capacity: CapacityConfig;
}

export function loadQuotesConfig(env: Env): QuotesConfig {
  const file = optionalStr(env, 'QUOTES_RATES_FILE');
  const { rates, capacity } = file ? readRatesFile(file) : { rates: DEFAULT_RATES, capacity: DEFAULT_CAPACITY };
  return {
    timestampWindowS: int(env, 'QUOTES_TIMESTAMP_WINDOW_S', 600, 1, 86_400),
    maxFileBytes: int(env, 'QUOTES_MAX_FILE_BYTES', 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxScreenshotBytes: int(env, 'QUOTES_MAX_SCREENSHOT_BYTES', 10 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    importStaleS: int(env, 'QUOTES_IMPORT_STALE_S', 15, 3, 86_400),
    importPollMs: int(env, 'QUOTES_IMPORT_POLL_MS', 1000, 50, 600_000),
    // The main thread keeps a core for requests and the database work of imports.
    importThreads: int(env, 'QUOTES_IMPORT_THREADS', Math.max(1, Math.min(4, availableParallelism() - 1)), 1, 64),
    importTimeoutS: int(env, 'QUOTES_IMPORT_TIMEOUT_S', 120, 1, 86_400),
    rates,
    capacity,
  };
}

const NAME = 'QUOTES_RATES_FILE';

/**
 * The rates file (JSON): `{"rates": {<locale|language|default>: {<general|game>: {translation_only,
 * translation_and_review, review_only}}}, "translators": {"default": {...profile}, <locale>: [..]}}`.
 * Both parts are optional and merge over the defaults.
 */
/** A translator profile as the rates file writes it: every value is checked before use. */
interface RawProfile {
  name?: unknown;
  translators?: unknown;
  words_per_day_translation?: unknown;
  words_per_day_review?: unknown;
  time_zone?: unknown;
  hours?: unknown[];
}

/** The rates file as parsed (JSON): checkRateCard and the loop below check each part. */
interface RawRatesFile {
  rates?: RateCard;
  translators?: Record<string, RawProfile | (RawProfile | null)[] | null>;
}

function readRatesFile(path: string): { rates: RateCard; capacity: CapacityConfig } {
  let data: RawRatesFile | null;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(NAME, `cannot read ${path}: ${(error as Error).message}`);
  }
  if (!data || typeof data !== 'object') throw new ConfigError(NAME, 'must hold a JSON object');
  const rates = { ...DEFAULT_RATES, ...(data.rates ?? {}) };
  const problem = checkRateCard(rates);
  if (problem) throw new ConfigError(NAME, problem);
  // Locale keys are the file's: a table without a prototype (`__proto__` would replace one).
  const capacity: CapacityConfig = { default: { ...DEFAULT_CAPACITY.default }, locales: Object.create(null) };
  for (const [key, value] of Object.entries(data.translators ?? {})) {
    if (key === 'default') {
      const d: RawProfile = value && !Array.isArray(value) ? value : {};
      capacity.default = {
        translators: positive(d.translators ?? capacity.default.translators, 'translators.default.translators'),
        wordsPerDayTranslation: positive(
          d.words_per_day_translation ?? capacity.default.wordsPerDayTranslation,
          'translators.default.words_per_day_translation',
        ),
        wordsPerDayReview: positive(
          d.words_per_day_review ?? capacity.default.wordsPerDayReview,
          'translators.default.words_per_day_review',
        ),
        startHour: hour(d.hours?.[0] ?? capacity.default.startHour, 'translators.default.hours'),
        endHour: hour(d.hours?.[1] ?? capacity.default.endHour, 'translators.default.hours'),
        timeZone: d.time_zone === undefined ? null : zone(d.time_zone, 'translators.default.time_zone'),
      };
      if (capacity.default.endHour <= capacity.default.startHour) {
        throw new ConfigError(NAME, 'translators.default.hours: end must be after start');
      }
      continue;
    }
    if (!Array.isArray(value) || value.length === 0) {
      throw new ConfigError(NAME, `translators.${key} must be a non-empty list`);
    }
    capacity.locales[key] = value.map((t, index): Translator => {
      const where = `translators.${key}[${index}]`;
      if (typeof t?.name !== 'string' || !t.name) throw new ConfigError(NAME, `${where}.name is required`);
      const translator = {
        name: t.name,
        wordsPerDayTranslation: positive(t.words_per_day_translation ?? 2000, `${where}.words_per_day_translation`),
        wordsPerDayReview: positive(t.words_per_day_review ?? 6000, `${where}.words_per_day_review`),
        timeZone: zone(t.time_zone ?? 'UTC', `${where}.time_zone`),
        startHour: hour(t.hours?.[0] ?? 9, `${where}.hours`),
        endHour: hour(t.hours?.[1] ?? 17, `${where}.hours`),
      };
      if (translator.endHour <= translator.startHour) {
        throw new ConfigError(NAME, `${where}.hours: end must be after start`);
      }
      return translator;
    });
  }
  return { rates, capacity };
}

function positive(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ConfigError(NAME, `${where} must be a positive number`);
  }
  return value;
}

function hour(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 24) {
    throw new ConfigError(NAME, `${where} must be hours 0–24 like [9, 17]`);
  }
  return value;
}

function zone(value: unknown, where: string): string {
  try {
    // Throws a RangeError for a zone this runtime does not know.
    Intl.DateTimeFormat('en-US', { timeZone: String(value) });
    return String(value);
  } catch {
    throw new ConfigError(NAME, `${where}: unknown time zone "${String(value)}"`);
  }
}
