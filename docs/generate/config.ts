/**
 * The configuration reference, from the JSON Schema `hooklog check-config
 * --schema` prints (cli/config/schema.ts): every key with its type, default,
 * description and whether it is a secret, one table per top-level section.
 */
import { configJsonSchema } from '../../cli/config/schema.js';
import { cell, code, preamble, table } from './markdown.js';

interface Node {
  readonly type?: string | readonly string[];
  readonly description?: string;
  readonly default?: unknown;
  readonly secret?: boolean;
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly properties?: Readonly<Record<string, Node>>;
  readonly additionalProperties?: Node | boolean;
  readonly items?: Node;
  readonly anyOf?: readonly Node[];
  readonly oneOf?: readonly Node[];
}

interface Row {
  path: string;
  types: Set<string>;
  default: unknown;
  secret: boolean;
  descriptions: Set<string>;
}

/** How a value of this node is written: its JSON type, an enumeration, or the variants of a union. */
function typeOf(n: Node): string {
  if (n.const !== undefined) return JSON.stringify(n.const);
  if (n.enum) return n.enum.map((v) => JSON.stringify(v)).join(' | ');
  const variants = n.anyOf ?? n.oneOf;
  if (variants) return [...new Set(variants.map(typeOf))].join(' | ');
  if (n.type === 'array') {
    if (!n.items) return 'array';
    const item = typeOf(n.items);
    return item.includes(' | ') ? `(${item})[]` : `${item}[]`;
  }
  if (n.type === 'object' && !n.properties && typeof n.additionalProperties === 'object')
    return `map of ${typeOf(n.additionalProperties)}`;
  return typeof n.type === 'string' ? n.type : (n.type ?? ['any']).join(' | ');
}

/** Every key under `n`, depth first: objects by their properties, lists and maps by their elements. */
function walk(n: Node, path: string, rows: Map<string, Row>, secret: boolean): void {
  const variants = n.anyOf ?? n.oneOf ?? [];
  const isSecret = secret || n.secret === true || variants.some((v) => v.secret === true);
  // A list's or map's element gets a row of its own only when it has keys of its own (or may be one of several).
  const scalarElement = /(\[\]|<name>)$/.test(path) && !n.properties && !variants.some((v) => v.properties);
  if (path !== '' && !scalarElement) {
    const row = rows.get(path) ?? {
      path,
      types: new Set<string>(),
      default: undefined,
      secret: false,
      descriptions: new Set<string>(),
    };
    row.types.add(typeOf(n));
    row.default ??= n.default;
    row.secret ||= isSecret;
    if (n.description) row.descriptions.add(n.description);
    rows.set(path, row);
  }
  // A union's variants (a token hook's header or OAuth auth, an API key's two forms) each add their keys.
  for (const m of [n, ...variants]) {
    // What is under a secret is secret; a variant's secrecy is its own (a bare-string API key, not the object form).
    const under = secret || n.secret === true || m.secret === true;
    for (const [key, child] of Object.entries(m.properties ?? {}))
      walk(child, path === '' ? key : `${path}.${key}`, rows, under);
    if (m.items) walk(m.items, `${path}[]`, rows, under);
    if (typeof m.additionalProperties === 'object' && !m.properties)
      walk(m.additionalProperties, `${path}.<name>`, rows, under);
  }
}

function defaultOf(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'object' && value !== null && Object.keys(value).length === 0 && !Array.isArray(value))
    return '';
  return code(JSON.stringify(value));
}

export function configReference(schema: Node = configJsonSchema() as Node): string {
  const rows = new Map<string, Row>();
  walk(schema, '', rows, false);
  const sections = Object.keys(schema.properties ?? {});
  const out = [
    preamble(
      'Configuration reference',
      'Every key of the configuration file, from the JSON Schema `hooklog check-config --schema` prints. A `[]` in a\n' +
        'path is an element of a list, `<name>` a key you choose. A default of an object section is the defaults of\n' +
        'its keys. Secrets (✓) are printed redacted by `check-config` and never logged; write them as `${ENV_VAR}`.\n' +
        'How to write the file: [Configuration](../operate/configuration.md).',
    ),
  ];
  for (const section of sections) {
    const own = [...rows.values()].filter(
      (r) => r.path === section || r.path.startsWith(`${section}.`) || r.path.startsWith(`${section}[]`),
    );
    out.push(
      `## ${section}\n\n` +
        table(
          ['Key', 'Type', 'Default', 'Secret', 'Description'],
          own.map((r) => [
            code(r.path),
            cell([...r.types].join(' | ')),
            defaultOf(r.default),
            r.secret ? '✓' : '',
            cell([...r.descriptions].join(' / ')),
          ]),
        ) +
        '\n',
    );
  }
  return out.join('\n');
}
