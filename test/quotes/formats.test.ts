// The file formats added for issue 15, read and written without a server: each fixture (modelled
// on what the format's own tools write) reads to the strings and states it holds, each export is
// read back by the format's own maintained parser (dot-properties, csv-parse, plist, an XML
// parser, php-parser, ini, yaml, JSON) and by quartet to the same strings, and broken or hostile
// files fail with a message that says what is wrong.
import { parse as parseCsvText } from 'csv-parse/sync';
import { parse as parsePropertiesText } from 'dot-properties';
import fc from 'fast-check';
import { XMLValidator } from 'fast-xml-parser';
import { parse as parseIniText } from 'ini';
import { Engine } from 'php-parser';
import { parse as parsePlistText } from 'plist';
import { describe, expect, it } from 'vitest';
import { parse as parseYamlText } from 'yaml';
import {
  FORMATS,
  type ExportEntry,
  type ExportRequest,
  type ParsedFile,
  type ParsedUnit,
} from '../../src/quotes/formats/index.js';
import type { FileFormat } from '../../src/quotes/formats/index.js';
import { fixture as readFixture } from './helpers.js';

const fixture = (name: string) => readFixture(`formats/${name}`);

async function read(format: FileFormat, content: Buffer | string, locale = 'en-US'): Promise<ParsedFile> {
  return FORMATS[format].parse(Buffer.from(content), { locale });
}

/** The message a file fails with. */
async function failure(format: FileFormat, content: Buffer | string, locale = 'en-US'): Promise<string> {
  try {
    await read(format, content, locale);
  } catch (error) {
    expect((error as Error).name, (error as Error).stack).toBe('FormatError');
    return (error as Error).message;
  }
  throw new Error(`${format} read a file it should refuse`);
}

/** What an export of `base`'s strings writes: the base language, or with the translations of `translated`. */
async function write(
  format: FileFormat,
  base: ParsedFile,
  translated?: { file: ParsedFile; locale: string },
): Promise<Buffer> {
  const forms = new Map(translated?.file.units.map((unit) => [unit.key, unit]));
  const entries = base.units.map((unit): ExportEntry => ({
    key: unit.key,
    context: unit.context,
    source: unit.source,
    sourcePlural: unit.sourcePlural,
    forms: translated ? (forms.get(unit.key)?.forms ?? null) : null,
    fuzzy: forms.get(unit.key)?.fuzzy ?? false,
    stale: forms.get(unit.key)?.stale ?? false,
  }));
  const request: ExportRequest = {
    entries,
    meta: JSON.parse(JSON.stringify(base.meta)),
    locale: translated?.locale ?? 'en-US',
    sourceLocale: 'en-US',
    fileName: 'file',
    isBase: !translated,
  };
  return FORMATS[format].write(request);
}

const texts = (file: ParsedFile) => Object.fromEntries(file.units.map((unit) => [unit.key, unit.forms[0]]));
const states = (file: ParsedFile) =>
  Object.fromEntries(file.units.map((unit) => [unit.key, { forms: unit.forms, fuzzy: unit.fuzzy, stale: unit.stale }]));
const sources = (file: ParsedFile) =>
  Object.fromEntries(file.units.map((unit) => [unit.key, [unit.source, unit.sourcePlural]]));
const path = (...segments: (string | number)[]) => JSON.stringify(segments);

// Texts that stress escaping: quotes, backslashes, separators, comment characters, markup,
// line breaks, leading and trailing spaces, non-Latin-1 and astral characters.
const SPECIALS = [
  '"',
  "'",
  '\\',
  '=',
  ':',
  ';',
  '#',
  '!',
  ',',
  '<',
  '>',
  '&',
  '\n',
  '\r\n',
  '\t',
  ' ',
  'é',
  'ß',
  '€',
  '日本',
  '😀',
  '%d',
  '{0}',
];
const tricky = (maxLength = 12) =>
  fc
    .array(fc.oneof(fc.constantFrom(...SPECIALS), fc.string({ unit: 'binary', maxLength: 3 })), { maxLength })
    .map((parts) => parts.join(''));
// XML 1.0 cannot carry most C0 controls: the XML formats replace them (tested apart).
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;
const xmlText = (maxLength?: number) => tricky(maxLength).filter((text) => !NOT_XML.test(text));
// Text formats that refuse NUL bytes (a binary file) cannot carry U+0000 either.
const textual = (maxLength?: number) => tricky(maxLength).filter((text) => !text.includes('\u0000'));
const identifier = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,11}$/);
/** Maps of distinct keys to texts, as arrays of pairs. */
const pairs = (key: fc.Arbitrary<string>, text: fc.Arbitrary<string>) =>
  fc.uniqueArray(fc.tuple(key, text), { minLength: 1, maxLength: 8, selector: ([name]) => name });

describe('JAVA_PROPERTIES', () => {
  const SOURCE = {
    'app.title': 'Quartet Shop',
    'app.welcome': 'Welcome, {0}!',
    'cart.empty': 'Your cart is empty.',
    'cart.items': 'You have {0} items in your cart.',
    'checkout.button': 'Check out now',
    'error.notfound': 'The page you requested could not be found.',
    'legal.copyright': '© 2024 Quartet Ltd. All rights reserved.',
    'key with spaces': 'Spaces in keys are escaped',
    'path.example': 'C:\\Program Files\\Quartet',
  };

  it('reads separators, continuation lines, escapes and comments; UTF-8 or ISO-8859-1', async () => {
    const base = await read('JAVA_PROPERTIES', fixture('messages.properties'));
    expect(texts(base)).toEqual(SOURCE);
    expect(base.meta).toEqual({ encoding: 'ascii' });
    const german = await read('JAVA_PROPERTIES', fixture('messages_de.properties'), 'de-DE');
    expect(texts(german)['error.notfound']).toBe('Die angeforderte Seite wurde nicht gefunden.');
    expect(texts(german)['legal.copyright']).toBe('© 2024 Quartet GmbH. Alle Rechte vorbehalten.');
    expect(german.meta).toEqual({ encoding: 'utf-8' });
    // Not valid UTF-8: ISO-8859-1, as Java's resource bundles fall back to.
    const latin1 = await read('JAVA_PROPERTIES', Buffer.from('cafe=Café crème\nkey=a\\u00e9b\n', 'latin1'), 'fr-FR');
    expect(texts(latin1)).toEqual({ cafe: 'Café crème', key: 'aéb' });
    // A key given twice keeps its last value, as Properties.load does.
    expect(texts(await read('JAVA_PROPERTIES', 'a=1\nb=2\na=3\n'))).toEqual({ a: '3', b: '2' });
  });

  it('writes what Properties.load reads: ASCII with \\u escapes, or UTF-8 as uploaded', async () => {
    const base = await read('JAVA_PROPERTIES', fixture('messages.properties'));
    const german = await read('JAVA_PROPERTIES', fixture('messages_de.properties'), 'de-DE');
    const exported = await write('JAVA_PROPERTIES', base, { file: german, locale: 'de-DE' });
    expect(exported.every((byte) => byte < 0x80)).toBe(true);
    expect(exported.toString()).toContain('legal.copyright = \\u00a9 2024 Quartet GmbH.');
    expect(parsePropertiesText(exported.toString())).toEqual({ ...texts(german) });
    expect(texts(await read('JAVA_PROPERTIES', exported, 'de-DE'))).toEqual(texts(german));
    const utf8Base = await read('JAVA_PROPERTIES', fixture('messages_de.properties'));
    expect((await write('JAVA_PROPERTIES', utf8Base)).toString()).toContain('© 2024 Quartet GmbH');
  });

  it('round-trips any keys and texts through dot-properties and back', async () => {
    await fc.assert(
      fc.asyncProperty(pairs(tricky(6), tricky()), fc.boolean(), async (entries, utf8) => {
        const meta = { encoding: utf8 ? 'utf-8' : 'ascii' };
        const base: ParsedFile = { units: entries.map(([key, text]) => unit(key, text)), meta };
        const exported = await write('JAVA_PROPERTIES', base);
        const expected = Object.fromEntries(entries);
        expect(new Map(Object.entries(parsePropertiesText(exported.toString())))).toEqual(new Map(entries));
        expect(texts(await read('JAVA_PROPERTIES', exported))).toEqual(expected);
      }),
      { seed: 15, numRuns: 200 },
    );
  });

  it('refuses a malformed \\u escape, as Properties.load does, but not in a comment', async () => {
    expect(await failure('JAVA_PROPERTIES', 'ok=1\nbad=caf\\u00e\n')).toBe('malformed \\uXXXX escape at line 2');
    expect(texts(await read('JAVA_PROPERTIES', '# see \\u escapes\nok=\\\\u00e\n'))).toEqual({ ok: '\\u00e' });
    expect(await failure('JAVA_PROPERTIES', Buffer.from('a=b\n', 'utf16le'))).toMatch(/UTF-16/);
  });
});

function unit(key: string, text: string): ParsedUnit {
  return { key, context: null, source: text, sourcePlural: null, forms: [text], fuzzy: false, stale: false };
}

describe('RESX', () => {
  it('reads string resources only: not images, typed objects or the designer entries', async () => {
    const base = await read('RESX', fixture('Resources.resx'));
    expect(texts(base)).toEqual({
      AppTitle: 'Quartet Desktop',
      Greeting: 'Hello, {0}! You have {1} new messages.',
      'SaveButton.Text': 'Save & close',
      Terms: 'Read the <terms> before you continue.',
      Multiline: 'First line\nSecond line',
      Version: 'Version {0}',
    });
  });

  it('writes a valid .resx with its resheaders that reads back the same', async () => {
    const base = await read('RESX', fixture('Resources.resx'));
    const german = await read('RESX', fixture('Resources.de.resx'), 'de-DE');
    const exported = (await write('RESX', base, { file: german, locale: 'de-DE' })).toString();
    expect(XMLValidator.validate(exported)).toBe(true);
    expect(exported).toContain('<value>text/microsoft-resx</value>');
    expect(exported).toContain('<value>Speichern &amp; schließen</value>');
    expect(texts(await read('RESX', exported, 'de-DE'))).toEqual(texts(german));
    expect(texts(await read('RESX', await write('RESX', base)))).toEqual(texts(base));
  });

  it('round-trips any names and texts, and keeps the XML valid with characters XML cannot carry', async () => {
    await fc.assert(
      fc.asyncProperty(
        pairs(
          xmlText(6).filter((name) => name !== '' && !name.startsWith('>>')),
          xmlText(),
        ),
        async (entries) => {
          const exported = await write('RESX', { units: entries.map(([key, text]) => unit(key, text)), meta: {} });
          expect(XMLValidator.validate(exported.toString())).toBe(true);
          expect(new Map(Object.entries(texts(await read('RESX', exported))))).toEqual(new Map(entries));
        },
      ),
      { seed: 15, numRuns: 200 },
    );
    const control = await write('RESX', { units: [unit('a', 'bell\u0007 here')], meta: {} });
    expect(XMLValidator.validate(control.toString())).toBe(true);
    expect(texts(await read('RESX', control))).toEqual({ a: 'bell\ufffd here' });
  });

  it('refuses entities, DTDs, deep nesting and broken XML with a clear message', async () => {
    const bomb =
      '<?xml version="1.0"?><!DOCTYPE root [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>' +
      '<root><data name="x"><value>&b;</value></data></root>';
    expect(await failure('RESX', bomb)).toMatch(/DOCTYPE or ENTITY declaration is refused/);
    expect(await failure('RESX', '<root><data name="x"><value>&nbsp;</value></data></root>')).toMatch(
      /undeclared entity &nbsp;/,
    );
    expect(await failure('RESX', '<root><data><value>x</value></data></root>')).toMatch(/no name attribute/);
    expect(await failure('RESX', '<root><data name="x"><value>x</data></root>')).toMatch(/not well-formed XML/);
    const deep = '<root><data name="x"><value>' + '<b>'.repeat(5000) + '</b>'.repeat(5000) + '</value></data></root>';
    expect(await failure('RESX', deep)).toMatch(/nested deeper than 64 levels/);
    expect(await failure('RESX', '<resources/>')).toMatch(/not a \.resx file/);
  });
});

describe('IOS_STRINGSDICT_XML', () => {
  it('reads formats, plural variables by the language’s CLDR categories, and device rules', async () => {
    const base = await read('IOS_STRINGSDICT_XML', fixture('Localizable.stringsdict'));
    expect(sources(base)).toEqual({
      [path('files_count', 'files')]: ['%d file', '%d files'],
      [path('files_in_folders')]: ['Found %#@files@ in %#@folders@', null],
      [path('files_in_folders', 'files')]: ['%d file', '%d files'],
      [path('files_in_folders', 'folders')]: ['one folder', '%ld folders'],
      [path('tap_hint', 'NSStringDeviceSpecificRuleType', 'iphone')]: ['Tap to open', null],
      [path('tap_hint', 'NSStringDeviceSpecificRuleType', 'mac')]: ['Click to open', null],
    });
    // English has one and other; an explicit zero comes first.
    expect(base.units[0].forms).toEqual(['No files', '%d file', '%d files']);
    const russian = await read('IOS_STRINGSDICT_XML', fixture('Localizable.ru.stringsdict'), 'ru-RU');
    expect(states(russian)[path('files_count', 'files')].forms).toEqual([
      '%d файл',
      '%d файла',
      '%d файлов',
      '%d файла',
    ]);
    // few and many missing: an incomplete plural, i.e. not translated.
    expect(states(russian)[path('files_in_folders', 'files')].forms).toEqual(['%d файл', '', '', '%d файла']);
  });

  it('writes a property list that plist reads back, with each language’s categories', async () => {
    const base = await read('IOS_STRINGSDICT_XML', fixture('Localizable.stringsdict'));
    const russian = await read('IOS_STRINGSDICT_XML', fixture('Localizable.ru.stringsdict'), 'ru-RU');
    const exported = (await write('IOS_STRINGSDICT_XML', base, { file: russian, locale: 'ru-RU' })).toString();
    expect(exported).toContain('<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN"');
    const plist = parsePlistText(exported) as any;
    expect(plist.files_count).toEqual({
      NSStringLocalizedFormatKey: '%#@files@',
      files: {
        NSStringFormatSpecTypeKey: 'NSStringPluralRuleType',
        NSStringFormatValueTypeKey: 'd',
        one: '%d файл',
        few: '%d файла',
        many: '%d файлов',
        other: '%d файла',
      },
    });
    expect(plist.files_in_folders.NSStringLocalizedFormatKey).toBe('Найдено %#@files@ в %#@folders@');
    expect(plist.files_in_folders.folders.NSStringFormatValueTypeKey).toBe('ld');
    // Untranslated everywhere: left out, as in the other key-value formats.
    expect(plist.tap_hint).toBeUndefined();
    expect(states(await read('IOS_STRINGSDICT_XML', exported, 'ru-RU'))).toEqual(states(russian));
    const source = parsePlistText((await write('IOS_STRINGSDICT_XML', base)).toString()) as any;
    expect(source.tap_hint).toEqual({
      NSStringDeviceSpecificRuleType: { iphone: 'Tap to open', mac: 'Click to open' },
    });
    expect(sources(await read('IOS_STRINGSDICT_XML', await write('IOS_STRINGSDICT_XML', base)))).toEqual(sources(base));
  });

  it('refuses any DTD but Apple’s line, entities, a plural without other, and other roots', async () => {
    const dict = (body: string, doctype = '') =>
      `<?xml version="1.0" encoding="UTF-8"?>${doctype}<plist version="1.0"><dict>${body}</dict></plist>`;
    const bomb = '<!DOCTYPE plist [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>';
    expect(await failure('IOS_STRINGSDICT_XML', dict('<key>k</key><string>&b;</string>', bomb))).toMatch(
      /DOCTYPE or ENTITY declaration is refused/,
    );
    const external = '<!DOCTYPE plist SYSTEM "file:///etc/passwd">';
    expect(await failure('IOS_STRINGSDICT_XML', dict('', external))).toMatch(/DOCTYPE/);
    const noOther =
      '<key>k</key><dict><key>NSStringLocalizedFormatKey</key><string>%#@n@</string><key>n</key><dict>' +
      '<key>NSStringFormatSpecTypeKey</key><string>NSStringPluralRuleType</string><key>one</key><string>x</string>' +
      '</dict></dict>';
    expect(await failure('IOS_STRINGSDICT_XML', dict(noOther))).toMatch(/needs its "other" form/);
    expect(await failure('IOS_STRINGSDICT_XML', dict('<key>k</key><string>x</string>'))).toMatch(/must be a <dict>/);
    expect(await failure('IOS_STRINGSDICT_XML', '<plist><array/></plist>')).toMatch(/holds a dictionary/);
    expect(await failure('IOS_STRINGSDICT_XML', dict('<key>k</key><dict><key>a</key></string></dict>'))).toMatch(
      /not well-formed XML/,
    );
    const deep = dict('<key>k</key>' + '<array>'.repeat(3000) + '</array>'.repeat(3000));
    expect(await failure('IOS_STRINGSDICT_XML', deep)).toMatch(/nested deeper than 64 levels/);
  });
});

describe('RUBY_YAML', () => {
  it('reads the locale root, nested keys, lists and plural maps', async () => {
    const base = await read('RUBY_YAML', fixture('en.rails.yml'));
    expect(base.meta).toEqual({ rootLocale: 'en' });
    expect(sources(base)).toEqual({
      [path('activerecord', 'models', 'user')]: ['User', 'Users'],
      [path('hello')]: ['Hello world', null],
      [path('inbox', 'title')]: ['Inbox', null],
      [path('inbox', 'messages')]: ['You have one message', 'You have %{count} messages'],
      [path('date', 'formats', 'default')]: ['%Y-%m-%d', null],
      [path('date', 'formats', 'short')]: ['%b %d', null],
      [path('date', 'abbr_month_names', 1)]: ['Jan', null],
      [path('date', 'abbr_month_names', 2)]: ['Feb', null],
      [path('date', 'abbr_month_names', 3)]: ['Mar', null],
      [path('number', 'format', 'delimiter')]: [',', null],
    });
    const russian = await read('RUBY_YAML', fixture('ru.rails.yml'), 'ru-RU');
    expect(states(russian)[path('inbox', 'messages')].forms).toHaveLength(4);
    expect(states(russian)[path('activerecord', 'models', 'user')].forms).toEqual([
      'Пользователь',
      '',
      '',
      'Пользователи',
    ]);
  });

  it('writes the locale root and each language’s plural categories, as Rails reads them', async () => {
    const base = await read('RUBY_YAML', fixture('en.rails.yml'));
    const russian = await read('RUBY_YAML', fixture('ru.rails.yml'), 'ru-RU');
    const exported = await write('RUBY_YAML', base, { file: russian, locale: 'ru-RU' });
    const yaml = parseYamlText(exported.toString());
    expect(Object.keys(yaml)).toEqual(['ru']);
    expect(yaml.ru.inbox.messages).toEqual({
      one: 'У вас %{count} сообщение',
      few: 'У вас %{count} сообщения',
      many: 'У вас %{count} сообщений',
      other: 'У вас %{count} сообщения',
    });
    expect(yaml.ru.date.abbr_month_names).toEqual([null, 'янв.', 'февр.', 'марта']);
    expect(states(await read('RUBY_YAML', exported, 'ru-RU'))).toEqual(states(russian));
    expect(sources(await read('RUBY_YAML', await write('RUBY_YAML', base)))).toEqual(sources(base));
  });

  it('needs its locale root key, the upload’s language', async () => {
    expect(await failure('RUBY_YAML', 'hello: Hello\nbye: Bye\n')).toMatch(/single root key, its locale/);
    expect(await failure('RUBY_YAML', 'fr:\n  hello: Bonjour\n', 'de-DE')).toBe(
      'the file\'s root key "fr" is not the upload\'s locale de-DE',
    );
    const bomb =
      'en:\n  a: &a ["x","x","x","x","x","x","x","x","x"]\n' +
      Array.from(
        { length: 8 },
        (_, i) =>
          `  ${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [` +
          Array(9)
            .fill(`*${String.fromCharCode(97 + i)}`)
            .join(',') +
          ']',
      ).join('\n');
    expect(await failure('RUBY_YAML', bomb)).toMatch(/YAML refused|alias/i);
  });
});

describe('CSV', () => {
  it('reads the column of the upload’s locale; an empty cell is untranslated', async () => {
    const csv = fixture('strings.csv');
    const base = await read('CSV', csv);
    expect(texts(base)).toEqual({
      'app.title': 'Quartet',
      'menu.file': 'File',
      'menu.quit': 'Quit "Quartet"',
      welcome: 'Welcome,\nnew user!',
      'status.saved': 'All changes saved',
    });
    expect(texts(await read('CSV', csv, 'fr-FR'))).toEqual({
      'app.title': '',
      'menu.file': 'Fichier',
      'menu.quit': '',
      welcome: '',
      'status.saved': 'Toutes les modifications sont enregistrées',
    });
    expect(texts(await read('CSV', csv, 'de-AT'))['menu.file']).toBe('Datei');
    // A single text column is the upload's language; Excel's semicolons; "Unicode text" (UTF-16, tabs).
    expect(texts(await read('CSV', 'id,value\nhello,Hallo\n', 'de-DE'))).toEqual({ hello: 'Hallo' });
    expect(texts(await read('CSV', 'key;en;de\nsave;Save;"Sichern; jetzt"\n', 'de-DE'))).toEqual({
      save: 'Sichern; jetzt',
    });
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('key\tja\nhello\tこんにちは\n', 'utf16le')]);
    expect(texts(await read('CSV', utf16, 'ja-JP'))).toEqual({ hello: 'こんにちは' });
  });

  it('writes key, source and translation columns named as uploaded, that csv-parse reads back', async () => {
    const base = await read('CSV', fixture('strings.csv'));
    const french = await read('CSV', fixture('strings.csv'), 'fr-FR');
    const exported = await write('CSV', base, { file: french, locale: 'fr-FR' });
    expect(exported.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    const rows = parseCsvText(exported, { bom: true });
    expect(rows[0]).toEqual(['key', 'en', 'fr']);
    expect(rows).toContainEqual(['welcome', 'Welcome,\nnew user!', '']);
    expect(texts(await read('CSV', exported, 'fr-FR'))).toEqual(texts(french));
    expect(texts(await read('CSV', exported))).toEqual(texts(base));
  });

  it('round-trips any keys and texts', async () => {
    await fc.assert(
      fc.asyncProperty(
        pairs(
          textual(6).filter((key) => key.trim() !== ''),
          textual(),
        ),
        fc.constantFrom(',', ';', '\t'),
        async (entries, delimiter) => {
          const base = {
            units: entries.map(([key, text]) => unit(key, text)),
            meta: { delimiter, keyHeader: 'key', languages: ['en'] },
          };
          const exported = await write('CSV', base);
          expect(new Map(Object.entries(texts(await read('CSV', exported))))).toEqual(new Map(entries));
        },
      ),
      { seed: 15, numRuns: 200 },
    );
  });

  it('refuses files without a header, a locale column, keys, or closed quotes', async () => {
    expect(await failure('CSV', 'just one column\n')).toMatch(/starts with a header row/);
    expect(await failure('CSV', 'key,en,de\na,b,c\n', 'ja-JP')).toBe(
      'no column for ja-JP: the header names "en", "de"',
    );
    expect(await failure('CSV', 'key,en\na,x\na,y\n')).toBe('duplicate key "a" at row 3');
    expect(await failure('CSV', 'key,en\n,orphan text\n')).toBe('row 2 has a text but no key');
    expect(await failure('CSV', 'key,en\na,"never closed\n')).toMatch(/^not valid CSV: .*Quote Not Closed/);
    expect(await failure('CSV', 'key,en\na,' + 'x'.repeat(1_100_000) + '\n')).toMatch(
      /^not valid CSV: Max Record Size: .* at line 2$/,
    );
  });
});

describe('PHP, PHP_SHORT_ARRAY, PHP_VARIABLES', () => {
  const SOURCE = {
    [path('failed')]: 'These credentials do not match our records.',
    [path('password')]: 'The provided password is incorrect.',
    [path('throttle')]: 'Too many login attempts. Please try again in :seconds seconds.',
    [path('welcome')]: "Welcome back, :name! It's good to see you.",
    [path('nested', 'title')]: 'Account settings',
    [path('nested', 'steps', '0')]: 'Sign in',
    [path('nested', 'steps', '1')]: 'Verify your email',
    [path('long')]: 'A sentence written over two lines.',
    [path('notice')]: 'Your session has expired.',
  };

  it('reads return arrays, assignments to one variable, heredocs, nowdocs and concatenations', async () => {
    expect(texts(await read('PHP', fixture('messages.php')))).toEqual(SOURCE);
    const german = await read('PHP_VARIABLES', fixture('messages.de.php'), 'de-DE');
    expect(texts(german)).toMatchObject({
      [path('welcome')]: 'Willkommen zurück, :name! Schön, dich zu sehen.',
      [path('nested', 'steps', '0')]: 'Anmelden',
    });
    expect(german.meta).toEqual({ style: 'assign', variable: 'lang' });
    // PHP's own keys: a list counts from the largest integer key, a repeated key keeps its last value.
    const list = await read('PHP', "<?php return [5 => 'five', 'six', 'a' => 'x', 'a' => 'y'];");
    expect(texts(list)).toEqual({ [path('5')]: 'five', [path('6')]: 'six', [path('a')]: 'y' });
  });

  const engine = new Engine({ parser: { php7: true, extractDoc: false }, ast: {} });
  for (const [format, layout] of [
    ['PHP', /^<\?php\n\nreturn array\(\n/],
    ['PHP_SHORT_ARRAY', /^<\?php\n\nreturn \[\n/],
    ['PHP_VARIABLES', /^<\?php\n\n\$lang\['failed'\] = 'These/],
  ] as const) {
    it(`${format} writes PHP that php-parser reads, with the same strings`, async () => {
      const base = await read(format, fixture('messages.php'));
      const exported = await write(format, base);
      expect(exported.toString()).toMatch(layout);
      expect(() => engine.parseCode(exported.toString(), 'x.php')).not.toThrow();
      expect(texts(await read(format, exported))).toEqual(SOURCE);
    });
  }

  it('round-trips any keys and texts in every layout', async () => {
    await fc.assert(
      fc.asyncProperty(
        pairs(textual(6), textual()),
        fc.constantFrom<FileFormat>('PHP', 'PHP_SHORT_ARRAY', 'PHP_VARIABLES'),
        async (entries, format) => {
          const base = { units: entries.map(([key, text]) => unit(path(key), text)), meta: {} };
          const exported = await write(format, base);
          expect(new Map(Object.entries(texts(await read(format, exported))))).toEqual(
            new Map(entries.map(([key, text]) => [path(key), text])),
          );
        },
      ),
      { seed: 15, numRuns: 200 },
    );
  });

  it('refuses what has no fixed text, broken PHP and deep nesting, naming the line', async () => {
    expect(await failure('PHP', '<?php\nreturn [\n  \'a\' => "Hello $name",\n];')).toBe(
      'a string with PHP variables at line 3 has no fixed text',
    );
    expect(await failure('PHP', "<?php\nreturn ['a' => trans('x')];")).toBe(
      'a PHP call at line 2 is not a literal string',
    );
    expect(await failure('PHP', "<?php\n$a['x'] = 'one';\n$b['y'] = 'two';")).toMatch(
      /two variables \(\$a, \$b at line 3\)/,
    );
    expect(await failure('PHP', "<?php return ['a' => 'x'")).toMatch(/^not valid PHP: /);
    expect(await failure('PHP', '<?php return ' + '['.repeat(100) + ']'.repeat(100) + ';')).toMatch(
      /nested deeper than 64 levels/,
    );
    expect(await failure('PHP', '<?php return ' + '['.repeat(50_000) + ']'.repeat(50_000) + ';')).toMatch(
      /nested too deeply|nested deeper/,
    );
    expect(await failure('PHP', "<?php return ['a' => " + "'x' . ".repeat(100_000) + "'y'];")).toMatch(
      /nested too deeply/,
    );
  });
});

describe('INI', () => {
  it('reads sections, nested sections, quoted values and comments; true/false are not texts', async () => {
    expect(texts(await read('INI', fixture('app.ini')))).toEqual({
      [path('COM_QUARTET')]: 'Quartet',
      [path('COM_QUARTET_WELCOME')]: 'Welcome to Quartet',
      [path('COM_QUARTET_ITEMS')]: 'You have %d items',
      [path('menu', 'FILE')]: 'File',
      [path('menu', 'QUIT')]: 'Quit; save first',
      [path('menu', 'recent', 'CLEAR')]: 'Clear recent files',
    });
  });

  it('writes INI that the ini package reads back to the same tree', async () => {
    const base = await read('INI', fixture('app.ini'));
    const german = await read('INI', fixture('app.de.ini'), 'de-DE');
    const exported = (await write('INI', base, { file: german, locale: 'de-DE' })).toString();
    expect(parseIniText(exported)).toEqual({
      COM_QUARTET_WELCOME: 'Willkommen bei Quartet',
      COM_QUARTET_ITEMS: 'Sie haben %d Artikel',
      menu: { FILE: 'Datei', recent: { CLEAR: 'Zuletzt geöffnete Dateien leeren' } },
    });
    expect((await write('INI', base)).toString()).toContain('QUIT = "Quit; save first"');
    expect(texts(await read('INI', await write('INI', base)))).toEqual(texts(base));
  });

  it('round-trips any texts of any keys', async () => {
    const notIniLiteral = (text: string) => !['true', 'false', 'null'].includes(text);
    await fc.assert(
      fc.asyncProperty(pairs(identifier, textual().filter(notIniLiteral)), fc.boolean(), async (entries, inSection) => {
        const key = (name: string) => (inSection ? path('section', name) : path(name));
        const exported = await write('INI', { units: entries.map(([name, text]) => unit(key(name), text)), meta: {} });
        expect(new Map(Object.entries(texts(await read('INI', exported))))).toEqual(
          new Map(entries.map(([name, text]) => [key(name), text])),
        );
      }),
      { seed: 15, numRuns: 200 },
    );
  });

  it('refuses sections nested deeper than 64 levels before building them', async () => {
    expect(await failure('INI', 'a=1\n[' + 'x.'.repeat(100_000) + 'y]\nb=2\n')).toBe(
      'INI section at line 2 nests deeper than 64 levels',
    );
  });
});

describe('IOS_XCSTRINGS', () => {
  it('reads each language with its states, plurals, device variations and substitutions', async () => {
    const catalog = fixture('Localizable.xcstrings');
    const base = await read('IOS_XCSTRINGS', catalog);
    // Not strings: the empty key, shouldTranslate false, extractionState stale.
    expect(sources(base)).toEqual({
      [path('%lld items')]: ['%lld item', '%lld items'],
      [path('Cancel')]: ['Cancel', null],
      [path('Delete everything?')]: ['Delete everything?', null],
      [path('Hello, world')]: ['Hello, world', null],
      [path('tap_to_continue', 'device', 'iphone')]: ['Tap to continue', null],
      [path('tap_to_continue', 'device', 'mac')]: ['Click to continue', null],
      [path('Found %#@files@')]: ['Found %#@files@', null],
      [path('Found %#@files@', 'substitutions', 'files')]: ['%arg file', '%arg files'],
    });
    const german = states(await read('IOS_XCSTRINGS', catalog, 'de-DE'));
    expect(german[path('Cancel')]).toEqual({ forms: ['Abbrechen'], fuzzy: true, stale: false });
    expect(german[path('Delete everything?')]).toEqual({ forms: [''], fuzzy: false, stale: false });
    expect(german[path('%lld items')].forms).toEqual(['%lld Artikel', '%lld Artikel']);
    expect(german[path('Found %#@files@')].forms).toEqual(['']);
    const russian = states(await read('IOS_XCSTRINGS', catalog, 'ru-RU'));
    expect(russian[path('Hello, world')]).toEqual({ forms: ['Здравствуй, мир'], fuzzy: false, stale: true });
    expect(russian[path('%lld items')].forms).toEqual(['%lld товар', '%lld товара', '', '%lld товара']);
  });

  it('writes the catalog with the source and the exported language, which reads back the same', async () => {
    const catalog = fixture('Localizable.xcstrings');
    const base = await read('IOS_XCSTRINGS', catalog);
    const german = await read('IOS_XCSTRINGS', catalog, 'de-DE');
    const exported = await write('IOS_XCSTRINGS', base, { file: german, locale: 'de-DE' });
    const json = JSON.parse(exported.toString());
    expect(json.sourceLanguage).toBe('en');
    expect(json.strings.Cancel.localizations).toEqual({
      en: { stringUnit: { state: 'translated', value: 'Cancel' } },
      de: { stringUnit: { state: 'needs_review', value: 'Abbrechen' } },
    });
    expect(json.strings['%lld items'].comment).toBe('Number of items in the cart');
    expect(json.strings['Found %#@files@'].localizations.en.substitutions.files).toMatchObject({
      argNum: 1,
      formatSpecifier: 'lld',
      variations: { plural: { one: { stringUnit: { value: '%arg file' } } } },
    });
    expect(Object.keys(json.strings['Delete everything?'].localizations)).toEqual(['en']);
    const again = await read('IOS_XCSTRINGS', exported, 'de-DE');
    const expected = states(german);
    expect(states(again)).toEqual(expected);
    expect(sources(await read('IOS_XCSTRINGS', exported))).toEqual(sources(base));
  });

  it('writes a stale translation back as stale, so it reads back outdated', async () => {
    const catalog = fixture('Localizable.xcstrings');
    const russian = await read('IOS_XCSTRINGS', catalog, 'ru-RU');
    const exported = await write('IOS_XCSTRINGS', await read('IOS_XCSTRINGS', catalog), {
      file: russian,
      locale: 'ru-RU',
    });
    expect(JSON.parse(exported.toString()).strings['Hello, world'].localizations.ru).toEqual({
      stringUnit: { state: 'stale', value: 'Здравствуй, мир' },
    });
    expect(states(await read('IOS_XCSTRINGS', exported, 'ru-RU'))).toEqual(states(russian));
  });

  it('refuses what is not a string catalog', async () => {
    expect(await failure('IOS_XCSTRINGS', '{"strings": {}}')).toMatch(/not a string catalog/);
    expect(await failure('IOS_XCSTRINGS', '{"sourceLanguage": "en", "strings": {"a": 1}}')).toMatch(/not an object/);
    const noUnit = '{"sourceLanguage": "en", "strings": {"a": {"localizations": {"en": {"value": "x"}}}}}';
    expect(await failure('IOS_XCSTRINGS', noUnit)).toBe('"a" has no stringUnit with a value');
    expect(await failure('IOS_XCSTRINGS', '{"sourceLanguage":')).toMatch(/^not valid JSON/);
  });
});

describe('FLUTTER_ARB', () => {
  it('reads messages; metadata and @@ keys are not strings', async () => {
    const base = await read('FLUTTER_ARB', fixture('app_en.arb'));
    expect(Object.keys(texts(base))).toEqual(['appTitle', 'helloUser', 'itemCount', 'pronoun', 'logout']);
    expect(texts(base).itemCount).toBe('{count, plural, =0{No items} =1{One item} other{{count} items}}');
  });

  it('writes @@locale, and the metadata gen-l10n needs in the template', async () => {
    const base = await read('FLUTTER_ARB', fixture('app_en.arb'));
    const german = await read('FLUTTER_ARB', fixture('app_de.arb'), 'de-DE');
    const template = JSON.parse((await write('FLUTTER_ARB', base)).toString());
    expect(template).toEqual(
      JSON.parse(
        fixture('app_en.arb')
          .toString()
          .replace(/ *"@@last_modified".*\n/, ''),
      ),
    );
    const exported = await write('FLUTTER_ARB', base, { file: german, locale: 'de-DE' });
    expect(JSON.parse(exported.toString())).toEqual(JSON.parse(fixture('app_de.arb').toString()));
    expect(texts(await read('FLUTTER_ARB', exported, 'de-DE'))).toEqual(texts(german));
    const brazil = await read('FLUTTER_ARB', '{"@@locale": "pt_BR", "a": "b"}', 'pt-BR');
    expect(
      JSON.parse((await write('FLUTTER_ARB', brazil, { file: brazil, locale: 'pt-BR' })).toString())['@@locale'],
    ).toBe('pt_BR');
  });

  it('refuses messages that are not strings', async () => {
    expect(await failure('FLUTTER_ARB', '{"a": {"b": "c"}}')).toBe('the ARB message "a" is not a string');
    expect(await failure('FLUTTER_ARB', '["a"]')).toMatch(/one JSON object/);
    const deep = '{"a": "b", "@a": ' + '['.repeat(100_000) + ']'.repeat(100_000) + '}';
    expect(await failure('FLUTTER_ARB', deep)).toBe('FLUTTER_ARB nesting deeper than 64 levels');
  });
});

describe('plurals by CLDR category (.stringsdict, .xcstrings, Rails YAML)', () => {
  const formats: [FileFormat, (name: string) => string, Record<string, unknown>][] = [
    ['IOS_STRINGSDICT_XML', (name) => path('key', name), {}],
    ['IOS_XCSTRINGS', (name) => path(name), { sourceLanguage: 'en' }],
    ['RUBY_YAML', (name) => path('messages', name), { rootLocale: 'en' }],
  ];
  const text = textual(5).filter((form) => !NOT_XML.test(form));
  it.each(formats)(
    '%s: any source plural and any Russian plural with its other form read back the same',
    async (format, keyOf, meta) => {
      await fc.assert(
        fc.asyncProperty(
          fc.stringMatching(/^[a-z]{1,6}$/).filter((name) => !/^(zero|one|two|few|many|other)$/.test(name)),
          fc.array(text, { minLength: 4, maxLength: 4 }),
          fc.boolean(),
          async (name, forms, isBase) => {
            fc.pre(isBase || forms[3] !== '');
            const key = keyOf(name);
            const [one, other] = forms;
            const base: ParsedFile = {
              units: [{ key, context: null, source: one, sourcePlural: other, forms, fuzzy: false, stale: false }],
              meta,
            };
            const locale = isBase ? 'en-US' : 'ru-RU';
            const exported = await write(format, base, isBase ? undefined : { file: base, locale });
            const unit = (await read(format, exported, locale)).units.find((candidate) => candidate.key === key);
            if (isBase) expect([unit?.source, unit?.sourcePlural], exported.toString()).toEqual([one, other]);
            else expect(unit?.forms, exported.toString()).toEqual(forms);
          },
        ),
        { seed: 15, numRuns: 150 },
      );
    },
  );
});

describe('any input', () => {
  const NEW_FORMATS: FileFormat[] = [
    'JAVA_PROPERTIES',
    'RESX',
    'IOS_STRINGSDICT_XML',
    'RUBY_YAML',
    'CSV',
    'PHP',
    'INI',
    'IOS_XCSTRINGS',
    'FLUTTER_ARB',
  ];
  // Pieces of each format's syntax, so that the inputs get past the first character.
  const SYNTAX = [
    '<?php ',
    'return [',
    "'a' => ",
    '[',
    ']',
    '<root>',
    '<data name="a">',
    '<value>',
    '</value>',
    '</data>',
    '</root>',
    '<plist><dict>',
    '<key>a</key>',
    '<string>',
    '</string>',
    '</dict></plist>',
    '{',
    '}',
    '"a": ',
    ',',
    ':',
    '\n',
    'en:\n',
    '  a: ',
    'key,en\n',
    '"',
    '=',
    '\\u',
    '\\',
    '@a',
    '"stringUnit"',
    '"sourceLanguage": "en"',
    '"strings"',
  ];
  const input = fc.oneof(
    fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
    fc
      .array(fc.oneof(fc.constantFrom(...SYNTAX), fc.string({ maxLength: 3 })), { maxLength: 30 })
      .map((parts) => parts.join('')),
  );

  it.each(NEW_FORMATS)('%s reads any bytes to strings or refuses them with a FormatError', async (format) => {
    await fc.assert(
      fc.asyncProperty(input, async (content) => {
        try {
          await read(format, content);
        } catch (error) {
          expect((error as Error).name, (error as Error).stack).toBe('FormatError');
        }
      }),
      { seed: 15, numRuns: 300 },
    );
  });
});
