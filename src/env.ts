// Typed readers for configuration variables. Each one throws ConfigError naming the
// variable, so a bad value stops the start with one clear line (see cli.ts: exit code 2).
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/**
 * Reads the .env file of `cwd` with Node's own parser (`util.parseEnv`: quotes, comments, `export`);
 * the process environment wins over the file. The result has no prototype: names are the file's.
 */
export function loadEnv(cwd = process.cwd(), processEnv: Env = process.env): Env {
  const path = resolve(cwd, '.env');
  const fromFile = existsSync(path) ? parseEnv(readFileSync(path, 'utf8')) : {};
  return Object.assign(Object.create(null) as Env, fromFile, processEnv);
}

function raw(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

export function str(env: Env, name: string, fallback: string): string {
  return raw(env, name) ?? fallback;
}

export function optionalStr(env: Env, name: string): string | undefined {
  return raw(env, name);
}

export function int(
  env: Env,
  name: string,
  fallback: number,
  min = Number.MIN_SAFE_INTEGER,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value)) throw new ConfigError(name, `expected an integer, got "${value}"`);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  }
  return n;
}

export function num(env: Env, name: string, fallback: number | undefined, min = 0): number | undefined {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min) throw new ConfigError(name, `expected a number >= ${min}, got "${value}"`);
  return n;
}

export function bool(env: Env, name: string, fallback: boolean): boolean {
  const value = raw(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(name, `expected true or false, got "${value}"`);
}

export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${value}"`);
  }
  return value as T;
}

export function list(env: Env, name: string, fallback: string[]): string[] {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

export function httpUrl(env: Env, name: string, fallback?: string): string | undefined {
  const value = raw(env, name) ?? fallback;
  if (value === undefined) return undefined;
  return checkUrl(name, value);
}

export function urlList(env: Env, name: string, fallback: string[]): string[] {
  return list(env, name, fallback).map((value) => checkUrl(name, value));
}

function checkUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, `not a valid URL: "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(name, `must be an http(s) URL, got "${value}"`);
  }
  return value.replace(/\/+$/, '');
}
