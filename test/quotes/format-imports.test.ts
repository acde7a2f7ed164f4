// The formats of issue 15 over HTTP, as a OneSky client uses them: a base file and a translation
// are uploaded, the quotation counts each state, the translation is exported, and the export,
// uploaded into a new project, gives the same quotation; broken files end as failed imports.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords } from '../../src/quotes/jobs/wordcount.js';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { Client, fixture as readFixture, startQuotesServer } from './helpers.js';

const fixture = (name: string) => readFixture(`formats/${name}`);
/** The words of texts as the quotation counts them. */
const words = (...texts: string[]) => texts.reduce((sum, text) => sum + countWords(text), 0);
/** A string's source: its text, or a plural's one and other forms. */
type Source = string | [one: string, other: string];
/** [strings, words] of a list of sources. */
const tally = (sources: Source[] = []) => [sources.length, words(...sources.flat())];

const NT = '&is_including_not_approved=0&is_including_outdated=0';
const NA = '&is_including_not_translated=0&is_including_outdated=0';
const OD = '&is_including_not_translated=0&is_including_not_approved=0';

interface Scenario {
  format: string;
  base: [name: string, content: Buffer];
  /** The source texts of the file's strings. */
  sources: Source[];
  locale: string;
  translation: Buffer;
  /** Format of the translation upload when it differs (another PHP layout). */
  translationFormat?: string;
  /** Source texts of the strings per state in `locale`. */
  notTranslated: Source[];
  notApproved?: Source[];
  outdated?: Source[];
}

const SCENARIOS: Scenario[] = [
  {
    format: 'JAVA_PROPERTIES',
    base: ['messages.properties', fixture('messages.properties')],
    sources: [
      'Quartet Shop',
      'Welcome, {0}!',
      'Your cart is empty.',
      'You have {0} items in your cart.',
      'Check out now',
      'The page you requested could not be found.',
      '© 2024 Quartet Ltd. All rights reserved.',
      'Spaces in keys are escaped',
      'C:\\Program Files\\Quartet',
    ],
    locale: 'de-DE',
    translation: fixture('messages_de.properties'),
    // "Quartet Shop" is the same as its source: no translation.
    notTranslated: ['Quartet Shop', 'Check out now', 'Spaces in keys are escaped', 'C:\\Program Files\\Quartet'],
  },
  {
    format: 'RESX',
    base: ['Resources.resx', fixture('Resources.resx')],
    sources: [
      'Quartet Desktop',
      'Hello, {0}! You have {1} new messages.',
      'Save & close',
      'Read the <terms> before you continue.',
      'First line\nSecond line',
      'Version {0}',
    ],
    locale: 'de-DE',
    translation: fixture('Resources.de.resx'),
    notTranslated: [
      'Quartet Desktop',
      'Read the <terms> before you continue.',
      'First line\nSecond line',
      'Version {0}',
    ],
  },
  {
    format: 'IOS_STRINGSDICT_XML',
    base: ['Localizable.stringsdict', fixture('Localizable.stringsdict')],
    sources: [
      ['%d file', '%d files'],
      'Found %#@files@ in %#@folders@',
      ['%d file', '%d files'],
      ['one folder', '%ld folders'],
      'Tap to open',
      'Click to open',
    ],
    locale: 'ru-RU',
    translation: fixture('Localizable.ru.stringsdict'),
    // files_in_folders → files lacks few and many.
    notTranslated: [['%d file', '%d files'], 'Tap to open', 'Click to open'],
  },
  {
    format: 'RUBY_YAML',
    base: ['en.yml', fixture('en.rails.yml')],
    sources: [
      ['User', 'Users'],
      'Hello world',
      'Inbox',
      ['You have one message', 'You have %{count} messages'],
      '%Y-%m-%d',
      '%b %d',
      'Jan',
      'Feb',
      'Mar',
      ',',
    ],
    locale: 'ru-RU',
    translation: fixture('ru.rails.yml'),
    // The user model lacks few and many.
    notTranslated: [['User', 'Users'], '%Y-%m-%d', '%b %d', ','],
  },
  {
    format: 'CSV',
    base: ['strings.csv', fixture('strings.csv')],
    sources: ['Quartet', 'File', 'Quit "Quartet"', 'Welcome,\nnew user!', 'All changes saved'],
    locale: 'fr-FR',
    translation: fixture('strings.csv'),
    notTranslated: ['Quartet', 'Quit "Quartet"', 'Welcome,\nnew user!'],
  },
  {
    format: 'PHP_SHORT_ARRAY',
    base: ['auth.php', fixture('messages.php')],
    sources: [
      'These credentials do not match our records.',
      'The provided password is incorrect.',
      'Too many login attempts. Please try again in :seconds seconds.',
      "Welcome back, :name! It's good to see you.",
      'Account settings',
      'Sign in',
      'Verify your email',
      'A sentence written over two lines.',
      'Your session has expired.',
    ],
    locale: 'de-DE',
    translation: fixture('messages.de.php'),
    translationFormat: 'PHP_VARIABLES',
    notTranslated: [
      'Too many login attempts. Please try again in :seconds seconds.',
      'Verify your email',
      'A sentence written over two lines.',
      'Your session has expired.',
    ],
  },
  {
    format: 'INI',
    base: ['app.ini', fixture('app.ini')],
    sources: ['Quartet', 'Welcome to Quartet', 'You have %d items', 'File', 'Quit; save first', 'Clear recent files'],
    locale: 'de-DE',
    translation: fixture('app.de.ini'),
    notTranslated: ['Quartet', 'Quit; save first'],
  },
  {
    format: 'IOS_XCSTRINGS',
    base: ['Localizable.xcstrings', fixture('Localizable.xcstrings')],
    sources: [
      ['%lld item', '%lld items'],
      'Cancel',
      'Delete everything?',
      'Hello, world',
      'Tap to continue',
      'Click to continue',
      'Found %#@files@',
      ['%arg file', '%arg files'],
    ],
    locale: 'de-DE',
    translation: fixture('Localizable.xcstrings'),
    notTranslated: ['Delete everything?', 'Found %#@files@', ['%arg file', '%arg files']],
    notApproved: ['Cancel'],
  },
  {
    format: 'FLUTTER_ARB',
    base: ['app_en.arb', fixture('app_en.arb')],
    sources: [
      'Quartet',
      'Hello {userName}!',
      '{count, plural, =0{No items} =1{One item} other{{count} items}}',
      '{gender, select, male{He} female{She} other{They}} liked your post',
      'Sign out',
    ],
    locale: 'de-DE',
    translation: fixture('app_de.arb'),
    notTranslated: ['Quartet', '{gender, select, male{He} female{She} other{They}} liked your post'],
  },
];

describe.each(databaseKinds)('more file formats on %s', (kind) => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startQuotesServer(kind);
    client = await Client.create(server.url);
  });
  afterAll(async () => {
    await server?.close();
  });

  const counts = (project: number, file: string, locale: string, flags = '') =>
    client.quoteCounts(project, file, locale, flags);
  const quotation = async (project: number, file: string, locale: string) => ({
    notTranslated: await counts(project, file, locale, NT),
    notApproved: await counts(project, file, locale, NA),
    outdated: await counts(project, file, locale, OD),
  });
  /** One project with the base file and a translation, both imported. */
  const projectWith = async (scenario: Scenario, translation: Buffer) => {
    const { format, base, locale } = scenario;
    const project = await client.createProject('en-US', [locale]);
    const imported = await client.importFile(project, base[0], base[1], format);
    expect(imported, imported.message).toMatchObject({ status: 'completed', string_count: scenario.sources.length });
    const translated = await client.importFile(project, base[0], translation, scenario.translationFormat ?? format, {
      locale,
    });
    expect(translated.status, translated.message).toBe('completed');
    return project;
  };
  const exported = async (project: number, file: string, locale: string) => {
    const answer = await client.get(`/1/projects/${project}/translations?locale=${locale}&source_file_name=${file}`);
    expect(answer.status, answer.text).toBe(200);
    return Buffer.from(answer.text);
  };

  it.each(SCENARIOS.map((scenario) => [scenario.format, scenario] as const))(
    '%s: import, quotation per state, export, and the export imported again',
    async (_format, scenario) => {
      const { base, locale } = scenario;
      const project = await projectWith(scenario, scenario.translation);
      const files = await client.get(`/1/projects/${project}/files`);
      expect(files.body.data[0]).toMatchObject({
        name: base[0],
        file_format: scenario.format,
        string_count: scenario.sources.length,
        word_count: tally(scenario.sources)[1],
      });
      const quoted = await quotation(project, base[0], locale);
      expect(quoted).toEqual({
        notTranslated: tally(scenario.notTranslated),
        notApproved: tally(scenario.notApproved),
        outdated: tally(scenario.outdated),
      });

      // The translation as exported, uploaded over the same base in a new project: the same quotation.
      const translation = await exported(project, base[0], locale);
      const again = await projectWith({ ...scenario, translationFormat: undefined }, translation);
      expect(await quotation(again, base[0], locale)).toEqual(quoted);
      // The base language exported and uploaded as the base: the same strings and words.
      const source = await exported(project, base[0], 'en-US');
      const fresh = await client.createProject('en-US', [locale]);
      expect(await client.importFile(fresh, base[0], source, scenario.format)).toMatchObject({
        status: 'completed',
        string_count: scenario.sources.length,
        word_count: tally(scenario.sources)[1],
      });
    },
  );

  it('reads a multilingual file (CSV, .xcstrings) in the language of each upload', async () => {
    const project = await client.createProject('en-US', ['de-DE', 'fr-FR', 'ru-RU']);
    await client.importFile(project, 'strings.csv', fixture('strings.csv'), 'CSV');
    await client.importFile(project, 'strings.csv', fixture('strings.csv'), 'CSV', { locale: 'de-DE' });
    await client.importFile(project, 'strings.csv', fixture('strings.csv'), 'CSV', { locale: 'fr-FR' });
    // German: "Quartet" (same as source) and the empty "All changes saved".
    expect(await counts(project, 'strings.csv', 'de-DE', NT)).toEqual([2, words('Quartet', 'All changes saved')]);
    expect((await counts(project, 'strings.csv', 'fr-FR', NT))[0]).toBe(3);
    const catalog = fixture('Localizable.xcstrings');
    await client.importFile(project, 'Localizable.xcstrings', catalog, 'IOS_XCSTRINGS');
    await client.importFile(project, 'Localizable.xcstrings', catalog, 'IOS_XCSTRINGS', { locale: 'ru-RU' });
    // Russian: "Hello, world" is stale (outdated); the plural lacks "many"; no device or "Found" strings.
    expect(await counts(project, 'Localizable.xcstrings', 'ru-RU', OD)).toEqual([1, words('Hello, world')]);
    expect(await counts(project, 'Localizable.xcstrings', 'ru-RU', NT)).toEqual(
      tally([
        ['%lld item', '%lld items'],
        'Delete everything?',
        'Tap to continue',
        'Click to continue',
        'Found %#@files@',
        ['%arg file', '%arg files'],
      ]),
    );
    const columns = await client.importFile(project, 'strings.csv', fixture('strings.csv'), 'CSV', { locale: 'ru-RU' });
    expect(columns).toMatchObject({
      status: 'failed',
      message: 'no column for ru-RU: the header names "en", "de", "fr"',
    });
  });

  const failures: [string, string, string | Buffer, string, string | RegExp][] = [
    ['properties: bad escape', 'a.properties', 'a=\\u12', 'JAVA_PROPERTIES', 'malformed \\uXXXX escape at line 1'],
    [
      'resx: entity expansion',
      'a.resx',
      '<!DOCTYPE root [<!ENTITY a "aaaa">]><root><data name="x"><value>&a;</value></data></root>',
      'RESX',
      /DOCTYPE or ENTITY declaration is refused/,
    ],
    [
      'stringsdict: external DTD',
      'a.stringsdict',
      '<!DOCTYPE plist SYSTEM "http://example.test/evil.dtd"><plist><dict/></plist>',
      'IOS_STRINGSDICT_XML',
      /DOCTYPE or ENTITY declaration is refused/,
    ],
    ['Rails YAML without its locale', 'en.yml', 'hello: Hello\n', 'RUBY_YAML', /single root key, its locale/],
    ['CSV: unclosed quote', 'a.csv', 'key,en\na,"oops\n', 'CSV', /not valid CSV: .*Quote Not Closed/],
    ['PHP: a function call', 'a.php', "<?php return ['a' => __('x')];", 'PHP', /call at line 1 is not a literal/],
    ['PHP: a syntax error', 'a.php', '<?php return [', 'PHP_SHORT_ARRAY', /^not valid PHP/],
    ['INI: deep sections', 'a.ini', '[' + 'a.'.repeat(200) + 'b]\nk=v\n', 'INI', /nests deeper than 64 levels/],
    ['xcstrings: not a catalog', 'a.xcstrings', '{"strings": {}}', 'IOS_XCSTRINGS', /not a string catalog/],
    ['ARB: an object as a message', 'a.arb', '{"a": {"b": 1}}', 'FLUTTER_ARB', 'the ARB message "a" is not a string'],
  ];

  it.each(failures)('%s → a failed import with a clear message', async (_name, fileName, content, format, message) => {
    const project = await client.createProject('en-US', ['de-DE']);
    const task = await client.importFile(project, fileName, content, format);
    expect(task.status).toBe('failed');
    expect(task.message).toMatch(message);
    expect((await client.get(`/1/projects/${project}/files`)).body.meta.record_count).toBe(0);
  });
});
