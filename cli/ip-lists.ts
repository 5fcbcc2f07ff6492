/**
 * The config's named IP lists (enrichment.ip_lists, platform/iplists/) as the processes that compile rules
 * use them: read once here (a list that does not load fails the command or the boot), and, for the
 * long-running ones, re-read on change with a failed reload logged and counted.
 */
import { IpLists } from '../platform/iplists/lists.js';
import { counter } from '../platform/metrics.js';
import type { Logger } from '../platform/log.js';
import type { Config } from './config/schema.js';

const reloadErrors = counter({
  name: 'hooklog_ip_list_reload_errors_total',
  help: 'Reloads of an enrichment.ip_lists file that failed (unreadable or a bad line); the last good list stays in use.',
  labelNames: ['list'],
});

/** The lists, read now; `watch` with a logger starts polling their files (stop it with `stop()`). */
export function openIpLists(config: Config, logger?: Logger): IpLists {
  const lists = new IpLists(config.enrichment, {
    onError: (name, err) => {
      reloadErrors.inc({ list: name });
      logger?.warn({ list: name, err: err.message }, 'ip list reload failed; the last good list stays in use');
    },
    onReload: (name) => logger?.info({ list: name }, 'ip list reloaded'),
  });
  if (logger) lists.start();
  return lists;
}
