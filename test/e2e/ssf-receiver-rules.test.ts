import { describeSsfCli } from './ssf-receiver.js';

// The CLI from the sources on the embedded log, with a rule on the SETs' LogEvents.
describeSsfCli({ built: false, alerting: true });
