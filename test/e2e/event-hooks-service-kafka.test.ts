import { kafkaBrokers } from '../kafka/inject.js';
import { describeServiceDrive } from './event-hooks-service.js';

describeServiceDrive('Kafka stream, embedded ClickHouse', () => kafkaBrokers());
