/** Rows as a query returns them, with their column order: what commands print and the API answers. */
export interface ResultSet {
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<Readonly<Record<string, unknown>>>;
  /**
   * Columns a table shows whole, however long (file:line locations, whose tail is the point); other
   * cells are cut at a width. JSON and CSV never cut.
   */
  readonly whole?: readonly string[];
}
