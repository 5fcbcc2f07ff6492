import { describeServiceDrive } from './event-hooks-service.js';

describeServiceDrive('embedded stream, embedded ClickHouse', () => undefined);
