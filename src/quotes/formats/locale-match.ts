// Finding the upload's language among the language codes a file names itself (CSV columns,
// .xcstrings localizations, Rails root keys): `fr` and `fr_FR` are fr-FR, `zh-Hant` is zh-TW.

function maximal(code: string): Intl.Locale | null {
  try {
    return new Intl.Locale(code.trim().replace(/_/g, '-')).maximize();
  } catch {
    return null;
  }
}

/** 3: the same code; 2: the same once CLDR's likely subtags complete both; 1: the same language and script. */
function closeness(candidate: string, wanted: string): number {
  const normal = (code: string) => code.trim().replace(/_/g, '-').toLowerCase();
  if (normal(candidate) === normal(wanted)) return 3;
  const [a, b] = [maximal(candidate), maximal(wanted)];
  if (!a || !b || a.language !== b.language || a.script !== b.script) return 0;
  return a.region === b.region ? 2 : 1;
}

/** The candidate that names `wanted` best (the first of equals), if any names its language. */
export function pickLocale(candidates: Iterable<string>, wanted: string): string | undefined {
  let best: string | undefined;
  let bestScore = 0;
  for (const candidate of candidates) {
    const score = closeness(candidate, wanted);
    if (score > bestScore) [best, bestScore] = [candidate, score];
  }
  return best;
}

/** Whether two codes name the same language (and script): `en` and en-GB do. */
export const sameLanguage = (a: string, b: string): boolean => closeness(a, b) > 0;
