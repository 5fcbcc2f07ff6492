/** A breakdown table whose every count links to the events it counts. */
import { Table, Value } from '../ui.js';

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
            return r.value ? <Value v={r.value} href={href} /> : '(none)';
          },
        },
        { key: 'n', label: 'Events', numeric: true, render: (r) => <Value v={r.n} href={link(r.value)} /> },
        {
          key: 'failed',
          label: 'Failed',
          numeric: true,
          render: (r) => <Value v={r.failed} href={`${link(r.value)}&failed=1`} />,
        },
        { key: 'last', label: 'Last seen' },
      ]}
    />
  );
}
