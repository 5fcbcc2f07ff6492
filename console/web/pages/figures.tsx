/** A breakdown table whose every count links to the events it counts. */
import { Table } from '../ui.js';

export interface Figure extends Record<string, unknown> {
  value: string;
  n: string;
  failed: string;
  last: string;
}

export interface TimePoint {
  t: string;
  success: string;
  failure: string;
  other: string;
}

export function Breakdown({
  caption,
  rows,
  link,
  page,
}: {
  caption: string;
  rows: readonly Figure[];
  link: (value: string) => string;
  /** The entity page of a value (an IP's, a user's), when there is one. */
  page?: (value: string) => string | undefined;
}) {
  return (
    <Table
      caption={caption}
      rows={rows}
      columns={[
        {
          key: 'value',
          label: 'Value',
          render: (r) => {
            const href = page?.(r.value);
            return href ? <a href={href}>{r.value || '(none)'}</a> : r.value || '(none)';
          },
        },
        { key: 'n', label: 'Events', numeric: true, render: (r) => <a href={link(r.value)}>{r.n}</a> },
        {
          key: 'failed',
          label: 'Failed',
          numeric: true,
          render: (r) => <a href={`${link(r.value)}&failed=1`}>{r.failed}</a>,
        },
        { key: 'last', label: 'Last seen' },
      ]}
    />
  );
}
