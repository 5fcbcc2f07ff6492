import type { Alert } from '../alert.js';

/**
 * Text for Slack's mrkdwn: `&`, `<` and `>` escaped as Slack asks, so a value from an event (a title
 * placeholder, a group key) cannot make a link or a mention (`<!channel>`).
 */
export function slackText(s: string): string {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** Body of a webhook request: the alert itself (json) or a Slack-compatible incoming-webhook message. */
export function webhookBody(alert: Alert, format: 'json' | 'slack'): string {
  if (format === 'json') return JSON.stringify(alert);
  const key = alert.key === '[]' ? '' : ` key ${alert.key}`;
  // A grouped alert is posted once, when it opens: say that further findings go into it, and until when.
  const grouped = alert.group_until
    ? `\ngrouped: further findings until ${alert.group_until} count into this alert`
    : '';
  const text = slackText(
    `*[${alert.severity.toUpperCase()}] ${alert.rule_title}*\n` +
      `org ${alert.org}${key} · ${alert.kind} · ${alert.count} event(s) · ${alert.event_time}${grouped}\n` +
      `rule \`${alert.rule_id}\` · alert \`${alert.alert_id}\``,
  );
  return JSON.stringify({ text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }] });
}
