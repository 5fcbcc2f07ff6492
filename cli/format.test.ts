import { describe, expect, it } from 'vitest';
import { render } from './format.js';

const rs = {
  columns: ['a', 'b'],
  rows: [
    { a: 'x', b: 1 },
    { a: 'needs, "quotes"\nhere', b: null },
  ],
};

describe('render', () => {
  it('writes RFC 4180 CSV with a header row', () => {
    expect(render(rs, 'csv')).toBe('a,b\r\nx,1\r\n"needs, ""quotes""\nhere",\r\n');
  });
  it('writes JSON rows', () => {
    expect(JSON.parse(render(rs, 'json'))).toEqual(rs.rows);
  });
  it('aligns a table, one line per row, with a row count', () => {
    const lines = render(rs, 'table').trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(/^a\s+│ b$/);
    expect(lines[3]).toContain('needs, "quotes" here');
    expect(lines[4]).toBe('(2 rows)');
  });
  it('cuts long cells in a table, except in the columns the result set keeps whole', () => {
    const path = `/${'deep/'.repeat(40)}rules.yaml:12`;
    const cut = render({ columns: ['where', 'note'], rows: [{ where: path, note: 'x'.repeat(200) }] }, 'table');
    expect(cut).not.toContain(path);
    const kept = render(
      { columns: ['where', 'note'], rows: [{ where: path, note: 'x'.repeat(200) }], whole: ['where'] },
      'table',
    );
    expect(kept).toContain(path);
    expect(kept).toContain(`${'x'.repeat(119)}…`);
  });
});
