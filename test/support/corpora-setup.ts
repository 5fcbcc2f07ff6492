/** Global set-up of the conformance suite: no corpora, no run (never a silent pass over nothing). */
import { requireCorpora } from './corpus.js';

export default function setup(): void {
  const dir = requireCorpora();
  console.info(`conformance suite: corpora at ${dir}`);
}
