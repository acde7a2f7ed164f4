// `npm run bench [name…]`: runs bench/<name>.bench.ts (all when none is named), prints a table,
// writes bench/results/latest.json and the table in bench/README.md.
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from './harness.js';

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace(/\.bench\.ts$/, '')))
  .sort();

const results: (BenchResult & { bench: string })[] = [];
const failures: string[] = [];
// The machine is shared: each benchmark's figures go with the load average (1, 5, 15 min) around them.
const loads: Record<string, { before: number[]; after: number[] }> = Object.create(null);
const loadText = (load: number[]) => load.map((n) => n.toFixed(1)).join(' ');
for (const file of files) {
  const name = file.replace(/\.bench\.ts$/, '');
  loads[name] = { before: loadavg(), after: [] };
  process.stdout.write(`running ${name}… (load average ${loadText(loads[name].before)})\n`);
  try {
    const module = await import(join(here, file));
    for (const result of (await module.default()) as BenchResult[]) {
      results.push({ bench: name, ...result });
      console.log(`  ${format(result)}`);
    }
  } catch (error) {
    failures.push(name);
    console.error(`  ${name} failed: ${error instanceof Error ? error.stack : String(error)}`);
  }
  loads[name].after = loadavg();
  console.log(`  (load average ${loadText(loads[name].after)})`);
}

function format(r: BenchResult): string {
  const anchor = r.anchor ? ` vs ${r.anchorValue ?? '?'} ${r.unit} (${r.anchor})` : '';
  const ratio = r.ratio !== undefined ? ` → ratio ${r.ratio}` : '';
  return `${r.name}: ${r.value} ${r.unit}${anchor}${ratio}${r.goal ? ` [goal ${r.goal}]` : ''}`;
}

const meta = { date: new Date().toISOString(), node: process.version, cpus: cpus().length, loads };
mkdirSync(join(here, 'results'), { recursive: true });
// A full run is `latest.json`; a partial one is named after the benchmarks it ran.
const resultsFile = wanted.length ? `${wanted.join('+')}.json` : 'latest.json';
writeFileSync(join(here, 'results', resultsFile), JSON.stringify({ ...meta, results }, null, 2) + '\n');

const table = [
  `Last run: ${meta.date}, Node ${meta.node}, ${meta.cpus} CPUs; load average (1 min) before → after: ` +
    Object.entries(loads)
      .map(([name, load]) => `${name} ${load.before[0].toFixed(1)} → ${load.after[0].toFixed(1)}`)
      .join(', ') +
    '.',
  '',
  '| benchmark | result | anchor (same run) | ratio | goal | notes |',
  '|---|---|---|---|---|---|',
  ...results.map((r) => {
    const anchor = r.anchor ? `${r.anchorValue ?? ''} ${r.unit} (${r.anchor})` : '';
    return `| ${r.name} | ${r.value} ${r.unit} | ${anchor} | ${r.ratio ?? ''} | ${r.goal ?? ''} | ${r.notes ?? ''} |`;
  }),
].join('\n');
const readmePath = join(here, 'README.md');
const readme = readFileSync(readmePath, 'utf8');
const start = '<!-- results:start -->';
const end = '<!-- results:end -->';
if (wanted.length === 0 && readme.includes(start)) {
  writeFileSync(readmePath, readme.replace(new RegExp(`${start}[\\s\\S]*${end}`), `${start}\n${table}\n${end}`));
}
console.log(
  `\nresults written to bench/results/${resultsFile}${failures.length ? `; FAILED: ${failures.join(', ')}` : ''}`,
);
process.exit(failures.length ? 1 : 0);
