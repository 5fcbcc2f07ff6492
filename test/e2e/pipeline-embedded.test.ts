import { describePipeline } from './pipeline.js';

describePipeline('embedded stream, embedded ClickHouse', () => undefined);
