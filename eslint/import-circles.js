// A lint rule: no import circle among the files of a folder tree, type-only imports included.
// import-x/no-cycle leaves out `import type` by design, but a type circle ties two domains
// together just the same (one cannot be read or moved without the other), so this rule counts it.
// It reads the tree's imports once per lint run and reports each import that closes a circle.
import fs from 'node:fs';
import path from 'node:path';

const IMPORT = /\b(?:import|export)\b[^;'"]*?\bfrom\s*'(\.{1,2}\/[^']+)'|\bimport\s*(?:\(\s*)?'(\.{1,2}\/[^']+)'/g;

/** Where a relative import leads: TypeScript's `./x.js` names ./x.ts. */
function resolve(from, specifier) {
  const target = path.resolve(path.dirname(from), specifier);
  const ts = target.replace(/\.js$/, '.ts');
  if (ts !== target && fs.existsSync(ts)) return ts;
  return fs.existsSync(target) ? target : null;
}

function filesUnder(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Each file's strongly connected component (Tarjan): files of one component import each other. */
function components(root) {
  const edges = new Map();
  for (const file of filesUnder(root)) {
    const targets = new Set();
    for (const match of fs.readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = resolve(file, match[1] ?? match[2]);
      if (target && target.startsWith(root + path.sep)) targets.add(target);
    }
    edges.set(file, targets);
  }
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const componentOf = new Map();
  let counter = 0;
  const visit = (file) => {
    index.set(file, counter);
    low.set(file, counter++);
    stack.push(file);
    onStack.add(file);
    for (const next of edges.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file), low.get(next)));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file), index.get(next)));
    }
    if (low.get(file) !== index.get(file)) return;
    const members = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      members.push(member);
    } while (member !== file);
    const selfImport = edges.get(file)?.has(file);
    if (members.length > 1 || selfImport) for (const m of members) componentOf.set(m, members);
  };
  for (const file of edges.keys()) if (!index.has(file)) visit(file);
  return componentOf;
}

const cache = new Map();

export const importCircles = {
  meta: {
    type: 'problem',
    docs: { description: 'Forbids import circles (type-only imports included) inside a folder tree' },
    schema: [{ type: 'object', properties: { root: { type: 'string' } }, required: ['root'] }],
  },
  create(context) {
    const root = path.resolve(context.cwd, context.options[0].root);
    if (!cache.has(root)) cache.set(root, components(root));
    const circle = cache.get(root).get(context.filename);
    if (!circle) return {};
    const check = (node) => {
      const specifier = node.source?.value;
      if (typeof specifier !== 'string' || !specifier.startsWith('.')) return;
      const target = resolve(context.filename, specifier);
      if (!target || !circle.includes(target)) return;
      const names = circle.map((file) => path.relative(context.cwd, file)).sort();
      context.report({
        node: node.source,
        message:
          `This import closes an import circle (type imports included) of ${circle.length} files: ` +
          `${names.join(', ')}.`,
      });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};
