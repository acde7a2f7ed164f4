// Differential test against GNU gettext itself: every PO fixture under test/fixtures/quotes/po/
// (written after what Weblate, Launchpad, Pootle, Poedit, msgmerge and xgettext emit, and by
// hand) is imported through the real upload route and quoted, and its strings per state must be
// what `msgfmt --statistics` and `msgattrib` count, both run here on the same file. Every
// refused fixture must fail its import naming the line msgfmt -c names.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { Client, FIXTURES, startQuotesServer } from './helpers.js';

const ACCEPTED = join(FIXTURES, 'po/accepted');
const REFUSED = join(FIXTURES, 'po/refused');
const accepted = readdirSync(ACCEPTED).sort();
const refused = readdirSync(REFUSED).sort();

const hasGettext = spawnSync('msgfmt', ['--version']).status === 0;
if (!hasGettext && process.env.CI) throw new Error('msgfmt is missing: .ci/run installs Debian\'s "gettext"');

// Where quartet accepts more than `msgfmt -c`, on purpose (docs/quotes.md, "PO files"): gettext
// is then run without -c (and without the byte order mark, which it takes for a syntax error).
const LENIENT = new Map([
  ['notepad-bom-es.po', 'a UTF-8 byte order mark'],
  ['no-header-en.po', 'no header entry'],
  ['xgettext-template.pot', "a template's header (charset=CHARSET, nplurals=INTEGER)"],
  ['format-mismatch-it.po', 'format specifications that differ from the msgid'],
]);

interface Counts {
  translated: number;
  fuzzy: number;
  untranslated: number;
}

const work = mkdtempSync(join(tmpdir(), 'quartet-gettext-'));

function run(command: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
}

/** The fixture as gettext can read it: without a byte order mark. */
function forGettext(name: string, dir: string): string {
  const bytes = readFileSync(join(dir, name));
  const bom = bytes.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]));
  const path = join(work, name);
  writeFileSync(path, bom ? bytes.subarray(3) : bytes);
  return path;
}

/** `msgfmt --statistics` (with -c unless the fixture is lenient): "N translated messages, …". */
function msgfmtCounts(name: string): Counts {
  const path = forGettext(name, ACCEPTED);
  const answer = run('msgfmt', [...(LENIENT.has(name) ? [] : ['-c']), '--statistics', '-o', '/dev/null', path]);
  expect(answer.status, answer.stderr).toBe(0);
  const count = (pattern: RegExp) => Number(pattern.exec(answer.stderr)?.[1] ?? 0);
  return {
    translated: count(/(\d+) translated messages?/),
    fuzzy: count(/(\d+) fuzzy translations?/),
    untranslated: count(/(\d+) untranslated messages?/),
  };
}

/** The entries msgattrib keeps with these options, the header left out. */
function msgattribCount(path: string, options: string[]): number {
  const answer = run('msgattrib', ['--no-obsolete', '--no-wrap', ...options, path]);
  expect(answer.status, answer.stderr).toBe(0);
  const lines = answer.stdout.split('\n');
  const entries = lines.filter((line) => line.startsWith('msgid ')).length;
  // msgattrib writes the header first: a `msgid ""` that no msgctxt precedes.
  const first = lines.findIndex((line) => line.startsWith('msgid ') || line.startsWith('msgctxt '));
  return entries - (first >= 0 && lines[first] === 'msgid ""' ? 1 : 0);
}

function msgattribCounts(name: string): Counts {
  const path = forGettext(name, ACCEPTED);
  return {
    translated: msgattribCount(path, ['--translated', '--no-fuzzy']),
    fuzzy: msgattribCount(path, ['--translated', '--only-fuzzy']),
    untranslated: msgattribCount(path, ['--untranslated']),
  };
}

/** The first line msgfmt -c names in its errors. */
function msgfmtErrorLine(name: string): number {
  const path = forGettext(name, REFUSED);
  const answer = run('msgfmt', ['-c', '-o', '/dev/null', path]);
  expect(answer.status, `msgfmt -c accepts ${name}`).not.toBe(0);
  const errors = answer.stderr.split('\n').filter((text) => !text.includes('warning:'));
  const line = new RegExp(`${name.replace('.', '\\.')}:(\\d+):`).exec(errors.join('\n'))?.[1];
  expect(line, answer.stderr).toBeDefined();
  return Number(line);
}

describe.skipIf(!hasGettext).each(databaseKinds)('PO imports against GNU gettext on %s', (kind) => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startQuotesServer(kind);
    client = await Client.create(server.url);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Strings of a quotation of `file` into de-DE, in the states the flags select. */
  const quoted = async (project: number, file: string, states: { nt: boolean; na: boolean; od: boolean }) => {
    const flag = (on: boolean) => (on ? '1' : '0');
    const answer = await client.get(
      `/1/projects/${project}/quotations?files=${encodeURIComponent(file)}&to_locale=de-DE` +
        `&is_including_not_translated=${flag(states.nt)}&is_including_not_approved=${flag(states.na)}` +
        `&is_including_outdated=${flag(states.od)}`,
    );
    expect(answer.status, answer.text).toBe(200);
    return answer.body.data.translation_only.string_count as number;
  };

  it.each(accepted)('%s: the strings per state are gettext’s', async (name) => {
    const content = readFileSync(join(ACCEPTED, name));
    const project = await client.createProject('en-US', ['de-DE']);
    // The same file is the source (its msgids) and the translation (its msgstrs); a translation
    // equal to its source is one here, as it is for gettext.
    const base = await client.importFile(project, name, content, 'GNU_PO');
    expect(base.message ?? base.status).toBe('completed');
    const translation = await client.importFile(project, name, content, 'GNU_PO', {
      locale: 'de-DE',
      is_allow_translation_same_as_original: 'true',
    });
    expect(translation.message ?? translation.status).toBe('completed');

    const untranslated = await quoted(project, name, { nt: true, na: false, od: false });
    const notApproved = await quoted(project, name, { nt: false, na: true, od: false });
    const outdated = await quoted(project, name, { nt: false, na: false, od: true });
    const all = await quoted(project, name, { nt: true, na: true, od: true });
    const quartet: Counts = {
      translated: base.string_count - all,
      // gettext's fuzzy entries are quartet's "not approved", or "outdated" when their #| msgid
      // differs from the msgid (no order has been placed in this project).
      fuzzy: notApproved + outdated,
      untranslated,
    };
    expect(quartet).toEqual(msgfmtCounts(name));
    expect(quartet).toEqual(msgattribCounts(name));
  });

  it.each(refused)('%s: refused, naming the line msgfmt -c names', async (name) => {
    const line = msgfmtErrorLine(name);
    const project = await client.createProject('en-US', ['de-DE']);
    const task = await client.importFile(project, name, readFileSync(join(REFUSED, name)), 'GNU_PO');
    expect(task.status).toBe('failed');
    expect(task.message).toMatch(new RegExp(`^not a valid GNU_PO file: .*\\bline ${line}\\b`));
  });

  it('has fixtures of every shape the issue lists', () => {
    const text = accepted.map((name) => readFileSync(join(ACCEPTED, name), 'latin1')).join('\n');
    expect(text).toMatch(/X-Generator: Weblate/);
    expect(text).toMatch(/X-Launchpad-Export-Date/);
    expect(text).toMatch(/X-Generator: Pootle/);
    expect(text).toMatch(/X-Generator: Poedit/);
    expect(text).toMatch(/#\| msgid_plural/); // msgmerge --previous
    expect(text).toMatch(/msgid_plural "[^"]*"\r?\nmsgstr\[0\] ""\r?\n\r?\n/); // untranslated plural, one form
    expect(text).toMatch(/\r\n/);
    expect(text).toMatch(/charset=ISO-8859-1/);
    expect(text).toMatch(/#~\| msgid/);
    expect(text).toMatch(/msgctxt ""/);
    expect(LENIENT.size).toBe(4);
  });
});

// Random files from the pieces real files are made of, some of them broken: quartet's reader
// must accept exactly what msgfmt -c accepts (these files have a header and no format flags, so
// none of quartet's leniencies applies), with the same counts, and name the same line when both
// refuse (a syntax error may be found a token later by gettext's parser: within two lines).
const RANDOM_FILES = Number(process.env.PO_RANDOM_FILES) || (process.env.QUARTET_TEST_FAST ? 60 : 200);

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)];

function randomPo(seed: number): string {
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  const chance = (p: number) => random() < p;
  const nplurals = pick(random, [1, 2, 3]);
  const formulas: Record<number, string> = { 1: '0', 2: '(n != 1)', 3: '(n==1 ? 0 : n>=2 && n<=4 ? 1 : 2)' };
  const formula = chance(0.05) ? pick(random, ['n==1 ? 0 : 3', 'n / (n - n)', 'n +']) : formulas[nplurals];
  const lines = [
    'msgid ""',
    'msgstr ""',
    '"Content-Type: text/plain; charset=UTF-8\\n"',
    `"Plural-Forms: nplurals=${nplurals}; plural=${formula};\\n"`,
    '',
  ];
  const ids = ['Open', 'Close', 'Save as', 'Done.\\n', '\\tIndented', 'Ünïcödé', 'A "quote"', 'x', 'Line\\nbreak'];
  const texts = ['Öffnen', '', 'Schließen', 'Fertig.', '', 'Speichern\\t', 'x', 'a\\"b'];
  // Mostly as the msgid ends (a translation of "Done.\n" ends with "\n"), sometimes not.
  const translation = (id: string) => {
    const text = pick(random, texts);
    return text && id.endsWith('\\n') !== chance(0.05) ? `${text}\\n` : text;
  };
  // Mostly distinct msgids (a few duplicates).
  const msgid = (entry: number) =>
    `${pick(random, ids)}${chance(0.9) ? ` ${entry}` : ''}`.replace(/^(Done\.\\n|Line\\nbreak) (\d+)$/, '$2 $1');
  const string = (value: string) =>
    chance(0.2) && value.length > 2
      ? `""\n"${value.slice(0, 2).replace(/\\$/, '')}"\n"${value.slice(2).replace(/^[^\\]*?\\$/, '')}"`
      : `"${value}"`;
  const entries = 3 + Math.floor(random() * 8);
  for (let e = 0; e < entries; e++) {
    const entry: string[] = [];
    if (chance(0.3)) entry.push(pick(random, ['# translator', '#: src/a.c:1', '#. extracted', '#, c++-format']));
    if (chance(0.3)) entry.push(pick(random, ['#, fuzzy', '#,fuzzy,no-wrap', '#, no-wrap, fuzzy', '#! fuzzy']));
    if (chance(0.15)) entry.push(`#| msgid ${string(pick(random, ids))}`);
    if (chance(0.25)) entry.push(`msgctxt ${string(pick(random, ['menu', '', 'button']))}`);
    const id = msgid(e);
    entry.push(`msgid ${string(id)}`);
    if (chance(0.35)) {
      entry.push(`msgid_plural ${string(id.endsWith('\\n') ? 'Plural.\\n' : 'Plural')}`);
      const forms = chance(0.85) ? nplurals : Math.floor(random() * 4);
      for (let f = 0; f < forms; f++) {
        const index = chance(0.03) ? f + 1 : f;
        entry.push(`msgstr[${index}] ${string(translation(id))}`);
      }
    } else if (chance(0.98)) {
      entry.push(`msgstr ${string(translation(id))}`);
    }
    if (chance(0.1)) entry.splice(0, entry.length, ...entry.map((line) => `#~ ${line}`));
    if (chance(0.02)) entry.splice(Math.floor(random() * entry.length), 0, pick(random, ['msgstr = "x"', '"\\q"']));
    if (chance(0.02)) entry[entry.length - 1] = `#~ ${entry[entry.length - 1]}`;
    lines.push(...entry, '');
  }
  return lines.join('\n');
}

describe.skipIf(!hasGettext)('random PO files against GNU gettext', () => {
  it(`accepts and refuses what msgfmt -c does, with its counts (${RANDOM_FILES} files)`, async () => {
    const { parsePo } = await import('../../src/quotes/formats/po.js');
    let refusedByBoth = 0;
    for (let seed = 1; seed <= RANDOM_FILES; seed++) {
      const text = randomPo(seed);
      const path = join(work, `random-${seed}.po`);
      writeFileSync(path, text);
      const gettext = run('msgfmt', ['-c', '--statistics', '-o', '/dev/null', path]);
      const errors = gettext.stderr.split('\n').filter((line) => !line.includes('warning:') && /:\d+:/.test(line));
      let quartet: Counts | string;
      try {
        const units = parsePo(Buffer.from(text), 'GNU_PO').units;
        quartet = {
          translated: units.filter((unit) => !unit.untranslated && !unit.fuzzy).length,
          fuzzy: units.filter((unit) => !unit.untranslated && unit.fuzzy).length,
          untranslated: units.filter((unit) => unit.untranslated).length,
        };
      } catch (error) {
        quartet = (error as Error).message;
      }
      const context = `seed ${seed}:\n${text}\n--- msgfmt -c:\n${gettext.stderr}`;
      if (gettext.status === 0) {
        const count = (pattern: RegExp) => Number(pattern.exec(gettext.stderr)?.[1] ?? 0);
        expect(quartet, context).toEqual({
          translated: count(/(\d+) translated messages?/),
          fuzzy: count(/(\d+) fuzzy translations?/),
          untranslated: count(/(\d+) untranslated messages?/),
        });
      } else {
        expect(typeof quartet, context).toBe('string');
        const line = Number(/:(\d+):/.exec(errors[0] ?? '')?.[1]);
        const named = Number(/line (\d+)/.exec(quartet as string)?.[1]);
        const also = [...(quartet as string).matchAll(/line (\d+)/g)].map((match) => Number(match[1]));
        expect(also.some((n) => Math.abs(n - line) <= 2) || Math.abs(named - line) <= 2, context).toBe(true);
        refusedByBoth++;
      }
    }
    // Both kinds of file were drawn.
    expect(refusedByBoth).toBeGreaterThan(RANDOM_FILES / 10);
    expect(refusedByBoth).toBeLessThan(RANDOM_FILES * 0.9);
  });
});
