// Lint: neostandard's rules (its style rules off: Prettier formats), with ESLint's and typescript-eslint's
// recommended sets. `npm run lint` checks both; `npm run format` rewrites the files.
import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import neostandard, { plugins } from 'neostandard';
import tseslint from 'typescript-eslint';
import { importCircles } from './eslint/import-circles.js';

// What the platform (src/config.ts, src/env.ts, src/http/, src/db/) may not import: a service's folder
// (../proxy/…, ../../users/…; relative imports are all that reach them) or a module that names them.
const PLATFORM_FORBIDDEN =
  /^(\.\.?\/)+(proxy|users|tasks|quotes|docs|devmint|fakeupstream)(\/|$)|(^|\/)(services|server|workers|cli)\.js$/;
const PLATFORM_FORBIDDEN_MESSAGE =
  'The platform imports no service: src/services.ts hands it what it needs of them (issue 28).';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'data/**',
      'coverage/**',
      'node_modules/**',
      'viewer/dist/**',
      'test/fixtures/**',
      'scratch/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...neostandard({ ts: true, noStyle: true }),
  {
    rules: {
      // TypeScript checks names itself; ESLint's own check does not know Node's or the DOM's globals.
      'no-undef': 'off',
      // Tests and benchmarks may poke at loose shapes; src/ below is stricter.
      '@typescript-eslint/no-explicit-any': 'off',
      // Control characters in patterns are deliberate: they find what a header or file may not hold.
      'no-control-regex': 'off',
      // Wire formats (OneSky's api_key, OpenAI's max_tokens) are snake_case; names follow them.
      camelcase: 'off',
      // `void promise` marks work started on purpose and not awaited; `return void send()` ends a hook.
      'no-void': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // Data from outside stays `unknown` until a check narrows it (src/json-fields.ts, and the viewer's
    // viewer/src/data.ts), so the compiler sees what it holds; the few `any` left say why (issue 28).
    files: ['src/**', 'viewer/src/**/*.ts', 'admin-ui/src/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    // The platform knows no service (issue 28): src/services.ts hands it each service's configuration,
    // migrations, tables and error shape. `import type` and `export … from` count too (a type import is
    // an edge of a circle); no-restricted-syntax adds `import()`, which no-restricted-imports does not see.
    files: ['src/config.ts', 'src/env.ts', 'src/http/**', 'src/db/**', 'src/logs/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: PLATFORM_FORBIDDEN.source, message: PLATFORM_FORBIDDEN_MESSAGE }] },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: `ImportExpression[source.value=${PLATFORM_FORBIDDEN}]`, message: PLATFORM_FORBIDDEN_MESSAGE },
      ],
    },
  },
  {
    // Prettier wraps code at 120 columns; this catches the strings and comments it leaves long.
    plugins: { '@stylistic': plugins['@stylistic'] },
    rules: {
      '@stylistic/max-len': ['error', { code: 120, ignoreUrls: true, ignoreRegExpLiterals: true }],
    },
  },
  // The proxy node's domains depend one way (forward → billing → keys → wallet → settings → common,
  // with lightning, usage, operator, admin and nostr on top, service.ts above everything), so
  // that each can be read and changed knowing only what is under it: a lower folder importing a
  // higher one, types included, or any import circle fails the lint (issue 28).
  layered('src/proxy', ['service.ts', 'wallet-routes.ts'], {
    common: ['settings', 'wallet', 'keys', 'billing', 'forward', 'lightning', 'usage', 'operator', 'admin', 'nostr'],
    settings: ['wallet', 'keys', 'billing', 'forward', 'lightning', 'usage', 'operator', 'admin', 'nostr'],
    wallet: ['keys', 'billing', 'forward', 'lightning', 'usage', 'operator', 'admin', 'nostr'],
    keys: ['billing', 'forward', 'lightning', 'usage', 'operator', 'admin', 'nostr'],
    billing: ['forward', 'lightning', 'usage', 'operator', 'admin', 'nostr'],
    forward: ['lightning', 'usage', 'operator', 'admin', 'nostr'],
    lightning: ['forward', 'usage', 'operator', 'admin', 'nostr'],
    usage: ['forward', 'lightning', 'operator', 'admin', 'nostr'],
    operator: ['admin', 'nostr'],
    admin: ['nostr'],
    nostr: ['forward', 'lightning', 'usage', 'operator', 'admin'],
  }),
  // The quotation API the same way: routes → files → jobs → projects and quotation → store, with
  // formats/ and common/ under them all.
  layered('src/quotes', ['service.ts'], {
    files: ['routes'],
    jobs: ['routes', 'files'],
    projects: ['routes', 'files', 'jobs', 'quotation'],
    quotation: ['routes', 'files', 'jobs', 'projects'],
    store: ['routes', 'files', 'jobs', 'projects', 'quotation'],
    formats: ['routes', 'files', 'jobs', 'projects', 'quotation', 'store'],
    common: ['routes', 'files', 'jobs', 'projects', 'quotation', 'store', 'formats'],
  }),
);

/**
 * Lint settings for a service whose folders are layered: `above` names, per folder, the folders
 * (and the `top` files) it may not import; any import circle inside `root` fails too.
 */
function layered(root, top, above) {
  return {
    files: [`${root}/**/*.ts`],
    plugins: { 'import-x': importX, quartet: { rules: { 'import-circles': importCircles } } },
    settings: {
      // .ts files are modules to follow (without this no-cycle skips them), parsed as TypeScript.
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      // TypeScript's `./x.js` names ./x.ts.
      'import-x/resolver-next': [
        createNodeResolver({ extensions: ['.ts', '.js', '.json'], extensionAlias: { '.js': ['.ts', '.js'] } }),
      ],
    },
    rules: {
      // src/services.ts loads each service with import() when SERVICES names it: a lazy load, not a
      // dependency a service's module has on its own start.
      'import-x/no-cycle': ['error', { ignoreExternal: true, allowUnsafeDynamicCyclicDependency: true }],
      // no-cycle leaves type-only imports out; this one counts them (eslint/import-circles.js).
      'quartet/import-circles': ['error', { root }],
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: Object.entries(above).map(([folder, higher]) => ({
            target: `./${root}/${folder}`,
            from: [...higher.map((name) => `./${root}/${name}`), ...top.map((file) => `./${root}/${file}`)],
            message: `${root}/${folder} may not import ${higher.join(', ')} or the top files: imports point one way.`,
          })),
        },
      ],
    },
  };
}
