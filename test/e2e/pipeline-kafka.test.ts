import { kafkaBrokers } from '../kafka/inject.js';
import { describePipeline } from './pipeline.js';

describePipeline('Kafka stream, embedded ClickHouse', () => kafkaBrokers());
