// The name of an uploaded file or screenshot: a label in the project, never a path on disk.
// OneSky saves a file sent with a path under its base name (PHP 7.3+ sends a CURLFile's whole
// path, onesky-go "a full path to file"); a name that climbs out of its folder or holds control
// characters is refused.
import { HttpError } from '../../http/errors.js';

/** A segment as a server that percent-decodes would read it (`%2e%2e` is `..`); as sent if malformed. */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The base name of `sent` (after its last `/` or `\`), or a 400 naming `parameter` for control
 * characters (NUL included), a `..` segment (percent-encoded too), or a name that is only a path.
 * An empty name is returned as it is (the caller says what that means).
 */
export function baseName(parameter: string, sent: string): string {
  if (/[\u0000-\u001f\u007f]/.test(sent)) {
    throw new HttpError(400, `${parameter}: the file name contains control characters`);
  }
  const segments = sent.split(/[\\/]/);
  if (segments.some((segment) => decoded(segment).split(/[\\/]/).includes('..'))) {
    throw new HttpError(400, `${parameter}: the file name "${sent.slice(0, 80)}" climbs out of its folder (..)`);
  }
  const base = segments[segments.length - 1];
  if (segments.length > 1 && (base === '' || base === '.')) {
    throw new HttpError(400, `${parameter}: "${sent.slice(0, 80)}" is a folder, not a file name`);
  }
  return base;
}

/** A problem with a plain name (no path left in it) that fails its import, else null. */
export function fileNameProblem(name: string): string | null {
  if (!name || !name.trim()) return 'the file has no name';
  if (name.length > 255) return 'the file name is longer than 255 characters';
  if (/[\\/]/.test(name) || name === '.' || name === '..') {
    return `the file name "${name.slice(0, 80)}" contains a path; upload a plain file name`;
  }
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'the file name contains control characters';
  return null;
}

/** A name safe in a Content-Disposition header's quotes: all but letters, digits, `.`, `-`, `_`, space become `_`. */
export const safeName = (name: string) => name.replace(/[^\w.\- ]/g, '_');
