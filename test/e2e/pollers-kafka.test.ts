import { kafkaBrokers } from '../kafka/inject.js';
import { describePollers } from './pollers.js';

describePollers('Kafka stream, embedded ClickHouse', () => kafkaBrokers());
