import type { Alert } from '../alert.js';

/** Body of a webhook request: the alert itself (json) or a Slack-compatible incoming-webhook message. */
export function webhookBody(alert: Alert, format: 'json' | 'slack'): string {
  if (format === 'json') return JSON.stringify(alert);
  const key = alert.key === '[]' ? '' : ` key ${alert.key}`;
  const text =
    `*[${alert.severity.toUpperCase()}] ${alert.rule_title}*\n` +
    `org ${alert.org}${key} · ${alert.kind} · ${alert.count} event(s) · ${alert.event_time}\n` +
    `rule \`${alert.rule_id}\` · alert \`${alert.alert_id}\``;
  return JSON.stringify({ text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }] });
}
