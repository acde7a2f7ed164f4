// The two timestamp forms of the OneSky API: `…_at` as YYYY-MM-DDTHH:MM:SS+0000 (UTC) and
// `…_at_timestamp` as Unix seconds. Stored times are Unix milliseconds.

export function oneSkyTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19) + '+0000';
}

export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

export type TimeFields<N extends string> = Record<`${N}_at` | `${N}_at_timestamp`, string | number | null>;

/** `{[name]_at, [name]_at_timestamp}` for a stored time, or nulls. */
export function timeFields<N extends string>(name: N, ms: number | null | undefined): TimeFields<N> {
  // TypeScript widens computed keys to string: the two names are those of the type.
  return {
    [`${name}_at`]: ms == null ? null : oneSkyTime(ms),
    [`${name}_at_timestamp`]: ms == null ? null : unixSeconds(ms),
  } as TimeFields<N>;
}
