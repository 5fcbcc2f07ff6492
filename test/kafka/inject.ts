/**
 * How a test gets the Kafka broker the global set-up found or started. Tests that
 * need Kafka call `kafkaBrokers()`: when no broker could be had it throws the
 * set-up's reason, so those tests fail loudly (never skip) while tests that do
 * not need Kafka run as usual.
 */
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Comma-separated bootstrap address; empty when no broker could be had. */
    kafkaBrokers: string;
    /** Why there is no broker (empty when there is one). */
    kafkaSetupError: string;
  }
}

export const KAFKA_HELP =
  'Kafka tests need a real broker: set KAFKA_BROKERS=host:port to use a running one, ' +
  'or install Java 17+ and Maven so the test set-up can start one (test/kafka/broker.ts).';

/** The broker address (`host:port[,host:port]`); throws the set-up's failure when there is none. */
export function kafkaBrokers(): string {
  const brokers = inject('kafkaBrokers');
  if (!brokers) throw new Error(`${inject('kafkaSetupError') || 'no Kafka broker was set up'}\n${KAFKA_HELP}`);
  return brokers;
}

/** The same address as a list, the shape Kafka clients take. */
export function kafkaBrokerList(): string[] {
  return kafkaBrokers().split(',');
}
