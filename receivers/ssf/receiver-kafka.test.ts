import { silentLogger } from '../../platform/log.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { kafkaBrokerList } from '../../test/kafka/inject.js';
import { randomName } from '../../test/support/wait.js';
import { describeSsfReceiver } from '../../test/support/ssf-receiver-suite.js';

describeSsfReceiver('Kafka', () =>
  openKafkaStream({
    brokers: kafkaBrokerList(),
    clientId: randomName('ssf'),
    logger: silentLogger(),
    heartbeatIntervalMs: 500,
    sessionTimeoutMs: 10_000,
  }),
);
