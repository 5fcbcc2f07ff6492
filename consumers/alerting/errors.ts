import { HooklogError, type ErrorCode } from '../../platform/errors.js';

/**
 * Alerting's errors, on the shared closed list of codes: an invalid rule is
 * CONFIG_INVALID (it fails the boot, naming file and rule — never at match
 * time); a webhook that cannot take an alert is INTERNAL with `retriable`
 * set from the answer (network, time-out, 408, 429, 5xx: retriable; any
 * other 4xx is a refusal that retrying cannot change).
 */
export class AlertingError extends HooklogError {
  constructor(
    kind: 'rule_invalid' | 'output_failed',
    message: string,
    opts: { retriable?: boolean; cause?: unknown } = {},
  ) {
    const code: ErrorCode = kind === 'rule_invalid' ? 'CONFIG_INVALID' : 'INTERNAL';
    super(code, message, opts);
    this.name = 'AlertingError';
  }
}
