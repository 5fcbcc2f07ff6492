/**
 * vitest global set-up: one Kafka broker for the whole run. KAFKA_BROKERS picks a
 * running one; otherwise a broker is started from Maven-resolved jars. A failure
 * is recorded, not thrown, so tests that do not need Kafka still run, and tests
 * that do fail with the reason (see inject.ts). test/.kafka/last-run.json lets
 * .ci/run check afterwards that a real broker served this run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { brokerAnswers, startKafkaBroker, type KafkaBroker } from './broker.js';
import { KAFKA_HELP } from './inject.js';
import { KAFKA_STATE_DIR } from './libs.js';

let broker: KafkaBroker | undefined;

export interface LastRun {
  brokers: string | null;
  external: boolean;
  startedAt: string;
  error?: string;
}

function record(run: LastRun): void {
  mkdirSync(KAFKA_STATE_DIR, { recursive: true });
  writeFileSync(join(KAFKA_STATE_DIR, 'last-run.json'), `${JSON.stringify(run, null, 2)}\n`);
}

export async function setup(project: TestProject): Promise<void> {
  const startedAt = new Date().toISOString();
  const external = process.env.KAFKA_BROKERS?.trim();
  let brokers = '';
  let error = '';
  try {
    if (external) {
      if (!(await brokerAnswers(external, 15_000))) throw new Error(`KAFKA_BROKERS=${external} does not answer`);
      brokers = external;
    } else {
      broker = await startKafkaBroker();
      brokers = broker.brokers;
    }
  } catch (err) {
    error = `no Kafka broker for this run: ${(err as Error).message}`;
    console.error(`\n${error}\n${KAFKA_HELP}\n`);
  }
  project.provide('kafkaBrokers', brokers);
  project.provide('kafkaSetupError', error);
  record({ brokers: brokers || null, external: Boolean(external), startedAt, ...(error ? { error } : {}) });
}

export async function teardown(): Promise<void> {
  await broker?.stop();
  broker = undefined;
}
