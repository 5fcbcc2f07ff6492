/**
 * Lays out the files of a Dockerfile's final stage on disk, the way `docker
 * build` would, without Docker (none on CI's machine): its COPY lines are
 * applied to a temporary root, from the build context (the repository minus
 * .dockerignore) or from an earlier stage that copied the context. What an
 * earlier stage generates (node_modules, dist) is not built here: its
 * directory is created empty, with the subdirectories `generated` names, so a
 * path can be resolved from where the compiled code will sit.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, posix, relative } from 'node:path';
import { globToRegExp } from '../../platform/assets.js';

export interface Copy {
  readonly from?: string;
  readonly sources: readonly string[];
  readonly dest: string;
}

export interface Stage {
  readonly name?: string;
  readonly workdir: string;
  readonly copies: readonly Copy[];
  /** Commands run (RUN lines), as written. */
  readonly runs: readonly string[];
}

/** The stages of a Dockerfile: FROM, WORKDIR, COPY and RUN lines (continuations joined, comments dropped). */
export function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: Array<{ name?: string; workdir: string; copies: Copy[]; runs: string[] }> = [];
  for (const line of lines) {
    const [instr, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    const cur = stages[stages.length - 1];
    switch (instr!.toUpperCase()) {
      case 'FROM': {
        const m = /\s+AS\s+(\S+)\s*$/i.exec(args);
        stages.push({ ...(m ? { name: m[1]! } : {}), workdir: '/', copies: [], runs: [] });
        break;
      }
      case 'WORKDIR':
        if (cur) cur.workdir = posix.resolve(cur.workdir, args);
        break;
      case 'RUN':
        cur?.runs.push(args);
        break;
      case 'COPY': {
        if (!cur) break;
        const words = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
        const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
        const paths = words.filter((w) => !w.startsWith('--'));
        cur.copies.push({ ...(from ? { from } : {}), sources: paths.slice(0, -1), dest: paths[paths.length - 1]! });
        break;
      }
    }
  }
  return stages;
}

export interface LayoutOptions {
  /** The build context (the repository). */
  readonly context: string;
  /** .dockerignore's patterns. */
  readonly ignore: readonly string[];
  /** Paths (relative to an earlier stage's workdir) that stage generates, with subdirectories to create. */
  readonly generated: Readonly<Record<string, readonly string[]>>;
  /** Where to lay the image out: the image's `/` becomes this directory. */
  readonly root: string;
}

function ignored(rel: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => {
    const pat = p.replace(/\/+$/, '');
    return rel === pat || rel.startsWith(`${pat}/`) || globToRegExp(pat).test(rel);
  });
}

/** Context-relative paths a COPY source names: a path, or a pattern with `*` in its last segment. */
function expand(context: string, source: string): string[] {
  const rel = posix
    .normalize(source)
    .replace(/^\.\/?/, '')
    .replace(/\/+$/, '');
  if (!basename(rel).includes('*')) return [rel === '' ? '.' : rel];
  const dir = posix.dirname(rel);
  const re = globToRegExp(posix.basename(rel));
  const abs = join(context, dir);
  return existsSync(abs)
    ? readdirSync(abs)
        .filter((f) => re.test(f))
        .map((f) => posix.join(dir, f))
    : [];
}

/**
 * Applies the final stage's COPY lines under `o.root`; returns the final
 * stage's workdir as a path under the root. A source copied from an earlier
 * stage must be what that stage copied from the context (`COPY . .`) or one of
 * its generated paths; anything else throws, naming the line.
 */
export function layOutFinalStage(stages: readonly Stage[], o: LayoutOptions): string {
  const final = stages[stages.length - 1]!;
  const onRoot = (p: string) => join(o.root, ...p.split('/').filter(Boolean));
  const workdir = onRoot(final.workdir);
  mkdirSync(workdir, { recursive: true });
  for (const c of final.copies) {
    let base = '';
    if (c.from !== undefined) {
      const stage = stages.find((s) => s.name === c.from);
      if (!stage) throw new Error(`COPY --from=${c.from}: no such stage`);
      if (!stage.copies.some((x) => x.from === undefined && x.sources.includes('.') && x.dest === '.'))
        throw new Error(`COPY --from=${c.from}: that stage does not copy the build context (COPY . .)`);
      base = stage.workdir;
    }
    const dest = posix.resolve(final.workdir, c.dest);
    const intoDir = c.dest.endsWith('/') || c.sources.length > 1;
    for (const source of c.sources) {
      const fromStage = c.from !== undefined ? posix.relative(base, posix.resolve(base, source)) : source;
      const gen = Object.keys(o.generated).find((g) => fromStage === g);
      if (gen !== undefined) {
        for (const sub of ['', ...o.generated[gen]!]) mkdirSync(join(onRoot(dest), sub), { recursive: true });
        continue;
      }
      for (const rel of expand(o.context, fromStage)) {
        if (ignored(rel, o.ignore)) continue;
        const src = join(o.context, rel);
        if (!existsSync(src)) throw new Error(`COPY ${source}: ${rel} is not in the build context`);
        const target = statSync(src).isDirectory() || !intoDir ? onRoot(dest) : join(onRoot(dest), basename(rel));
        mkdirSync(statSync(src).isDirectory() ? target : dirname(target), { recursive: true });
        cpSync(src, target, {
          recursive: true,
          filter: (f) => !ignored(relative(o.context, f), o.ignore),
        });
      }
    }
  }
  return workdir;
}
