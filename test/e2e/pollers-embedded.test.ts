import { describePollers } from './pollers.js';

describePollers('embedded stream, embedded ClickHouse', () => undefined);
