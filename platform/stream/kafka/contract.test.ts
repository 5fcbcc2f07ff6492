/** The shared Stream contract, against a real Kafka broker (see test/kafka/global-setup.ts). */
import { silentLogger } from '../../log.js';
import { randomName } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import { describeStreamContract } from '../contract.js';
import { openKafkaStream } from './index.js';

describeStreamContract('kafka', {
  open: () =>
    openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('contract'),
      logger: silentLogger(),
      heartbeatIntervalMs: 500,
      sessionTimeoutMs: 10_000,
    }),
});
