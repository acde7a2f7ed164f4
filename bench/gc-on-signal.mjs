// Preloaded into the streams bench's targets (`--import`): SIGUSR2 runs a full garbage collection,
// so that a heap reading taken just after it counts the live data only, not garbage waiting to be
// collected. Bench only: neither quartet nor the bare proxy depends on it.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
process.on('SIGUSR2', () => gc());
