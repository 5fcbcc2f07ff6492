/**
 * The layer rule of ARCHITECTURE.md ("Layers"), checked by `npm run lint`:
 *   floor 1  platform/, schemas/      the ground: imports nothing above it
 *   floor 2  receivers/, ingest/,     components: import floor 1 only, never each
 *            consumers/alerting/,     other (they talk through the stream and the store)
 *            consumers/clickhouse-sink/, consumers/response/, analytics/, console/
 *   floor 3  cli/                     assembles the process (config schema, HTTP app, commands)
 * and no import circles anywhere. Tests, test helpers (testing.ts, testing/, test/) and
 * benches may import from any floor: they assemble pieces the way cli/ does.
 */
const TESTS = '(\\.test\\.ts$|\\.fixture\\.ts$|/testing\\.ts$|/testing/|/global-setup\\.ts$|^test/|^bench/)';
const COMPONENTS = [
  'receivers',
  'ingest',
  'consumers/alerting',
  'consumers/clickhouse-sink',
  'consumers/response',
  'analytics',
  'console',
];

module.exports = {
  forbidden: [
    {
      name: 'ground-floor-imports-up',
      comment: 'platform/ and schemas/ are the ground floor: they import nothing from the components or cli/.',
      severity: 'error',
      from: { path: '^(platform|schemas)/', pathNot: TESTS },
      to: { path: '^(receivers|ingest|consumers|analytics|console|cli)/' },
    },
    ...COMPONENTS.map((c) => ({
      name: `component-imports-other-floor-2-or-up:${c}`,
      comment: `${c}/ is a component: it imports platform/ and schemas/ only, never another component or cli/ (talk through the stream and the store).`,
      severity: 'error',
      from: { path: `^${c}/`, pathNot: TESTS },
      to: { path: `^(${['cli', ...COMPONENTS.filter((o) => o !== c)].join('|')})/` },
    })),
    {
      name: 'no-circular',
      comment: 'No import circles: a circle makes load order matter and the pieces impossible to take apart.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|data|test/\\.kafka|\\.cache)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
