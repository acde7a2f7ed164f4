// Yielding to the event loop (input, rendering, the page's own timers) between slices of work,
// without setTimeout's 4 ms clamp on nested timers. scheduler.yield() is not used: its
// continuations run before the page's timers, which would wait until all the work is done.
const channel = typeof MessageChannel === 'function' ? new MessageChannel() : undefined;
const queued: (() => void)[] = [];
if (channel) channel.port1.onmessage = () => queued.shift()?.();

export function nextTask(run: () => void) {
  if (!channel) return void setTimeout(run, 0);
  queued.push(run);
  channel.port2.postMessage(null);
}

/** A promise that settles in a task of its own, after the tasks already queued. */
export function yieldToPage(): Promise<void> {
  return new Promise((resolve) => nextTask(resolve));
}
