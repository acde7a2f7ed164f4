// A setup file of every test file (vitest.config.ts): at the end of the file, Object.prototype,
// Array.prototype and Function.prototype must hold their built-in properties only. A test, or a
// server it drives in this process, that wrote into one of them fails here, whatever it asserted.
import { runInNewContext } from 'node:vm';
import { afterAll, expect } from 'vitest';

const NAMES = ['Object', 'Array', 'Function'] as const;
const ownKeys = (name: string, realm: typeof globalThis) => Reflect.ownKeys((realm as any)[name].prototype).map(String);

// A fresh context has only the built-in members (and the same --disable-proto as this process).
const pristine = runInNewContext('globalThis') as typeof globalThis;
const builtIn = new Map(NAMES.map((name) => [name, new Set(ownKeys(name, pristine))]));

afterAll(() => {
  for (const name of NAMES) {
    const added = ownKeys(name, globalThis).filter((key) => !builtIn.get(name)!.has(key));
    expect(added, `properties added to ${name}.prototype`).toEqual([]);
  }
});
