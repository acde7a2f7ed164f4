// What a describe's tests share: started once before them, closed after them.
import { afterAll, beforeAll } from 'vitest';

/** Starts `start()` before the describe's tests and hands it to `ready`; closes it after them. */
export function openForSuite<T extends { close(): Promise<unknown> }>(
  start: () => Promise<T>,
  ready: (opened: T) => void,
): void {
  let opened: T | undefined;
  beforeAll(async () => {
    opened = await start();
    ready(opened);
  });
  afterAll(async () => {
    await opened?.close();
  });
}
