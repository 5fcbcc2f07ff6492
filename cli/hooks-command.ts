/**
 * `hooklog hooks plan | apply | status`: the config's event and token hooks
 * (those with a `register:` section) against what each managing org holds,
 * through its management API (receivers/registration/). Results go to
 * stdout; each problem is one line on stderr naming the hook, and makes the
 * exit code 1.
 */
import { join } from 'node:path';
import { Option, type Command } from 'commander';
import { loadConfig } from './config/load.js';
import type { Config } from './config/schema.js';
import { render, type OutputFormat } from './format.js';
import { HooklogError } from '../platform/errors.js';
import { createLogger } from '../platform/log.js';
import {
  applyPlans,
  describePlan,
  hookOrgs,
  readOrg,
  type HookOutcome,
  type OrgState,
} from '../receivers/registration/index.js';
import { othersOf, statusRows } from '../receivers/registration/status.js';

interface Selection {
  readonly org?: string;
  readonly prune?: boolean;
}

const PAST: Record<string, string> = {
  create: 'created',
  update: 'updated',
  verify: 'verified',
  activate: 'activated',
  deactivate: 'deactivated',
  delete: 'deleted',
};

async function readAll(config: Config, sel: Selection, access: 'read' | 'manage'): Promise<OrgState[]> {
  if (sel.org !== undefined && !config.orgs.some((o) => o.id === sel.org))
    throw new HooklogError('CONFIG_INVALID', `--org ${sel.org}: there is no orgs[] entry with that id`);
  const by = hookOrgs(config, sel.org);
  // Nothing registered is no reason to refuse --prune: removing hooklog's last hooks is what it is for.
  const read = [...by].filter(([, o]) => o.desired.length > 0 || o.alsoList.size > 0 || sel.prune === true);
  if (read.length === 0)
    throw new HooklogError(
      'CONFIG_INVALID',
      sel.org !== undefined
        ? `--org ${sel.org}: no hook of the config is registered in that org, nor kept there without register:; ` +
            `\`--org ${sel.org} --prune\` lists its hooks and removes hooklog's own`
        : 'no event or token hook in the config has a `register:` section, nor is one kept without it in an orgs[] entry, ' +
            "so nothing says which org's hooks to read; to remove hooklog's hooks from an org, name it: `--org <id> --prune`",
    );
  const logger = createLogger({ level: 'warn', destination: process.stderr }).child({ component: 'hooks' });
  const states: OrgState[] = [];
  for (const [id, o] of read) {
    // hookOrgs names only orgs[] entries (registrationIssues refuses a register: naming another).
    const org = config.orgs.find((x) => x.id === id)!;
    states.push(
      await readOrg(config, org, o.desired, {
        access,
        prune: sel.prune === true,
        alsoList: o.alsoList,
        logger,
        announceWaits: true,
        budgetDir: join(config.data_dir, 'rate-budget'),
      }),
    );
  }
  for (const s of states) for (const n of s.notes) process.stderr.write(`note: ${n}\n`);
  return states;
}

function fail(lines: readonly string[]): void {
  for (const l of lines) process.stderr.write(`${l}\n`);
  if (lines.length) process.exitCode = 1;
}

function outcomeLine(o: HookOutcome): string | null {
  const p = o.plan;
  const id = o.done.find((d) => d.hook)?.hook?.id ?? p.registered?.id;
  const who = `${p.kind === 'event' ? 'event hook' : 'token hook'} "${p.id}" (org ${p.org}${id ? `, ${id}` : ''})`;
  if (o.done.length) return `${who}: ${o.done.map((d) => PAST[d.step]).join(', ')}`;
  if (p.foreign) return `${who}: left alone: ${p.foreign}`;
  if (!o.error && !p.refused && p.steps.length === 0 && p.desired) return `${who}: in sync`;
  // hooklog's own, no longer configured, left alone without --prune: say so, as plan does.
  if (!p.desired && p.steps.length === 0) return describePlan(p);
  return null;
}

export function registerHooksCommands(program: Command): void {
  const configPath = () => program.opts<{ config?: string }>().config;
  const hooks = program
    .command('hooks')
    .description(
      'Register the configured event and token hooks (those with `register:`) with the identity service, and compare what it holds with the config.',
    );

  hooks
    .command('plan')
    .description(
      'Show what `hooks apply` would change, hook by hook, like a diff (+ create, ~ change, - delete, = in sync). Changes nothing.',
    )
    .option(
      '--org <id>',
      'only this org (with --prune, any orgs[] entry, even one where nothing is registered any more)',
    )
    .option('--prune', "also plan the removal of hooklog's hooks that are no longer configured")
    .action(async (opts: Selection) => {
      const states = await readAll(loadConfig(configPath()).config, opts, 'read');
      // A plan of what could not be read is no plan ("0 to create" said nothing was missing): the errors only.
      if (states.some((s) => s.errors.length)) return fail(states.flatMap((s) => s.errors));
      const counts = { create: 0, change: 0, delete: 0, sync: 0, refused: 0, prunable: 0 };
      for (const s of states) {
        for (const p of s.plans) {
          process.stdout.write(`${describePlan(p)}\n`);
          if (p.refused) counts.refused++;
          else if (p.steps.includes('create')) counts.create++;
          else if (p.steps.includes('delete')) counts.delete++;
          else if (p.steps.length) counts.change++;
          else if (p.desired) counts.sync++;
          // Someone else's hook is left alone, --prune or not: it is named above, not counted as prunable.
          else if (!p.foreign) counts.prunable++;
        }
      }
      process.stdout.write(
        `Plan: ${counts.create} to create, ${counts.change} to change, ${counts.delete} to delete${counts.prunable ? ` (${counts.prunable} more with --prune)` : ''}, ${counts.sync} in sync, ${counts.refused} refused.\n`,
      );
      fail(states.flatMap((s) => s.plans.filter((p) => p.refused).map((p) => describePlan(p).slice(2))));
    });

  hooks
    .command('apply')
    .description(
      'Create what is missing, update what differs (the whole hook), verify and activate, as `hooks plan` shows. Never touches hooks hooklog did not create.',
    )
    .option(
      '--org <id>',
      'only this org (with --prune, any orgs[] entry, even one where nothing is registered any more)',
    )
    .option(
      '--prune',
      "also deactivate and delete hooklog's hooks that are no longer configured (the last ones too, with nothing registered)",
    )
    .action(async (opts: Selection) => {
      const states = await readAll(loadConfig(configPath()).config, opts, 'manage');
      const totals = new Map<string, number>(Object.values(PAST).map((v) => [v, 0]));
      let failed = 0;
      for (const s of states) {
        fail(s.errors);
        failed += s.errors.length;
        if (!s.service) continue;
        for (const o of await applyPlans(s.service, s.plans)) {
          const line = outcomeLine(o);
          if (line) process.stdout.write(`${line}\n`);
          for (const d of o.done) totals.set(PAST[d.step]!, (totals.get(PAST[d.step]!) ?? 0) + 1);
          const problem = o.error ?? (o.plan.refused ? describePlan(o.plan).slice(2) : null);
          if (problem) {
            failed++;
            fail([problem]);
          }
        }
      }
      process.stdout.write(`Apply: ${[...totals].map(([k, n]) => `${n} ${k}`).join(', ')}; ${failed} failed.\n`);
    });

  hooks
    .command('status')
    .description(
      "Per org, each registered hook: the service's status and verificationStatus, subscribed event types, URL, and how it differs from the config.",
    )
    .option('--org <id>', 'only the hooks this org manages')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
    .action(async (opts: Selection & { format: OutputFormat }) => {
      const config = loadConfig(configPath()).config;
      const states = await readAll(config, opts, 'read');
      // As plan: no table of what could not be read (its rows would be missing, not absent).
      if (states.some((s) => s.errors.length)) return fail(states.flatMap((s) => s.errors));
      const rows = statusRows(states);
      const columns = ['org', 'kind', 'hook', 'id', 'status', 'verification', 'events', 'uri', 'drift'];
      process.stdout.write(
        opts.format === 'json'
          ? JSON.stringify(rows, null, 2) + '\n'
          : render({ columns, rows: rows.map((r) => ({ ...r })) }, opts.format),
      );
      if (opts.format === 'table')
        for (const s of states) {
          const others = othersOf(s, config.hook_registration.name_prefix);
          if (others) process.stdout.write(`org ${s.org} also has ${others} hooklog does not manage.\n`);
        }
    });
}
