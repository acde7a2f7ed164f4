// Keeps one of process.nextTick's queue entries alive for the life of the process, so that the
// hidden class V8 gives every later entry never dies. Node builds each entry as an object literal
// with computed keys, whose class comes from a per-size cache V8 holds weakly: a full GC at a
// moment when no entry is queued (a node between bursts) frees it, the next entry gets a new one,
// and after a few such GCs nextTick's property definitions go megamorphic, through the runtime,
// for good. Measured: 2-3% of a billed request's CPU (bench/README.md, "Run O"), and
// 6-10 times the cost of a tick in `node --expose-gc` with gc() between batches.
// Imported first by the CLI, beside noproto.ts: every way of starting the server has it.
import { createHook } from 'node:async_hooks';

let kept: object | undefined;
// The hook is on only while one tick is queued: no other async resource passes through it.
const hook = createHook({
  init(_asyncId, type, _triggerAsyncId, resource) {
    if (type === 'TickObject') kept ??= resource;
  },
});
hook.enable();
process.nextTick(() => {});
hook.disable();

/** The entry kept (exported so nothing mistakes it for unused state). */
export const keptTickEntry = kept;
