/** Rows as a query returns them, with their column order: what commands print and the API answers. */
export interface ResultSet {
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<Readonly<Record<string, unknown>>>;
}
