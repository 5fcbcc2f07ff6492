/** What the engine knows of an event besides its fields: shared by the engine and its keyed state. */
export interface EventMeta {
  readonly org: string;
  /** Event time, epoch ms. */
  readonly timeMs: number;
  /** The event's uuid, or a stable stand-in (stream position) when it has none. */
  readonly id: string;
}
