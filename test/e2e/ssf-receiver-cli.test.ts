import { kafkaBrokers } from '../kafka/inject.js';
import { describeSsfCli } from './ssf-receiver.js';

// The compiled CLI on the real broker. (Alerting is left out here: the built CLI cannot read its built-in
// rule content from dist/ until issue 28 lands; the sources run it in ssf-receiver-rules.test.ts.)
describeSsfCli({ built: true, kafkaBrokers, alerting: false });
